"""Action handlers: check an action against the world, then apply it.

Each handler returns ``None`` on success or an error message. A handler changes the world only
after every check has passed, so a refused action leaves the world exactly as it was. Messages
say what was wrong and what would be valid now.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .actions import PHASE_OF
from .conditions import CONDITIONS
from .dynamics.blood import COMPATIBLE_DONORS, emergency_group_o, request_blood_type
from .dynamics.care import note_destination
from .dynamics.dispatch import DISPATCHABLE, can_reach, charge_advice, send_unit
from .dynamics.spawns import schedule_callback
from .dynamics.travel import reroute
from .params import (
    BLOOD_COURIER_DISPATCH_MIN,
    MUTUAL_AID_DELAY_RANGE,
    MUTUAL_AID_UNIT_PREFIX,
    O_NEG_RELEASE_MIN,
    OR_PREP_MIN_BY_TIER,
    TYPE_SPECIFIC_MIN,
)
from .state import World
from .types import (
    FINAL_PATIENT_STATES,
    OPEN_CALL_STATES,
    Ambulance,
    BloodAllocation,
    BloodTransfer,
    Hospital,
    MutualAidRequest,
    Patient,
)

BEFORE_ARRIVAL = ("awaiting_unit", "unit_en_route", "on_scene", "transporting")


def _ids(items: list[str]) -> str:
    return ", ".join(items) if items else "none"


def _free_units(world: World, kind: str | None = None) -> list[str]:
    return [
        a.ambulance_id
        for a in world.ambulances.values()
        if a.status in DISPATCHABLE and (kind is None or a.kind == kind)
    ]


def _ambulance(world: World, amb_id: str, kind: str | None) -> tuple[Ambulance | None, str | None]:
    amb = world.ambulances.get(amb_id)
    if amb is None:
        return None, f"no ambulance {amb_id!r}; units: {_ids(list(world.ambulances))}"
    if kind and amb.kind != kind:
        return None, f"{amb_id} is a {amb.kind} unit; free {kind} units now: {_ids(_free_units(world, kind))}"
    if amb.status not in DISPATCHABLE:
        job = f" ({_job_label(world, amb)})" if amb.patient_id else ""
        return None, (
            f"{amb_id} is {amb.status}{job} and cannot take a job; free units now: "
            f"{_ids(_free_units(world, kind))}"
        )
    return amb, None


def _job_label(world: World, amb: Ambulance) -> str:
    """What a unit is busy with, as the agent may know it (a call until the crew is on scene)."""
    p = world.patients.get(amb.patient_id or "")
    if p is not None and not p.visible and amb.call_id:
        return amb.call_id
    return amb.patient_id or ""


def _visible_patient(world: World, pid: str) -> tuple[Patient | None, str | None]:
    p = world.patients.get(pid)
    if p is None or not p.visible:
        known = [q.patient_id for q in world.patients.values() if q.visible]
        return None, f"no known patient {pid!r}; known patients: {_ids(known)}"
    return p, None


def _hospital(world: World, hid: str) -> tuple[Hospital | None, str | None]:
    h = world.hospitals.get(hid)
    if h is None:
        return None, f"no hospital {hid!r}; hospitals: {_ids(list(world.hospitals))}"
    return h, None


def _route_error(world: World, amb: Ambulance, p: Patient) -> str | None:
    if not can_reach(world, amb, p):
        return f"no open road from {amb.ambulance_id}'s position to {p.node} right now"
    return None


# ---------------------------------------------------------------- dispatch and triage
def dispatch_ambulance(world: World, a: Any) -> str | None:
    amb, err = _ambulance(world, a.ambulance_id, None)
    if amb is None:
        return err
    p, err = _visible_patient(world, a.patient_id)
    if p is None:
        return err
    if p.status != "awaiting_unit":
        waiting = [q.patient_id for q in world.patients.values() if q.visible and q.status == "awaiting_unit"]
        return f"{p.patient_id} is {p.status} and needs no unit; patients waiting: {_ids(waiting)}"
    err = _route_error(world, amb, p)
    if err:
        return err
    send_unit(world, amb, p, None)
    return None


def _dispatch_call(world: World, a: Any, kind: str) -> str | None:
    amb, err = _ambulance(world, a.ambulance_id, kind)
    if amb is None:
        return err
    call = world.calls.get(a.call_id)
    if call is None or call.status != "pending":
        pending = [c.call_id for c in world.calls.values() if c.status == "pending"]
        state = f"no call {a.call_id!r}" if call is None else f"call {call.call_id} is {call.status}"
        return f"{state}; pending calls: {_ids(pending)}"
    p = world.patients[call.patient_id]
    err = _route_error(world, amb, p)
    if err:
        return err
    send_unit(world, amb, p, call)
    return None


def dispatch_als(world: World, a: Any) -> str | None:
    return _dispatch_call(world, a, "ALS")


def dispatch_bls(world: World, a: Any) -> str | None:
    return _dispatch_call(world, a, "BLS")


def triage_call(world: World, a: Any) -> str | None:
    call = world.calls.get(a.call_id)
    if call is None or call.status not in OPEN_CALL_STATES:
        open_calls = [c.call_id for c in world.calls.values() if c.status in OPEN_CALL_STATES]
        state = f"no call {a.call_id!r}" if call is None else f"call {call.call_id} is {call.status}"
        return f"{state}; calls open for triage: {_ids(open_calls)}"
    if a.priority == "P4" and call.status == "dispatched":
        return (
            f"call {call.call_id} already has {call.ambulance_id} on the way; "
            "P4 (advice only) needs a call without a unit"
        )
    call.priority = a.priority
    world.changed("calls")
    p = world.patients[call.patient_id]
    if a.priority == "P1" and call.coded_p1_at is None:
        call.coded_p1_at = world.clock  # when telephone CPR would start (fork.py replays it)
    if a.priority == "P1" and p.cpr_from is None and CONDITIONS[p.condition].key == "cardiac_arrest":
        p.cpr_from = world.clock  # a coded Echo call gets telephone CPR instructions
    if a.priority == "P4":
        charge_advice(world, call)
        call.status, call.closed_at = "closed_advice", world.clock
        world.changed("calls")
        if call.true_priority == "P4":
            p.status = "released"
        schedule_callback(world, call)
    return None


# ---------------------------------------------------------------- hospital choice and readiness
def assign_hospital(world: World, a: Any) -> str | None:
    p, err = _visible_patient(world, a.patient_id)
    if p is None:
        return err
    h, err = _hospital(world, a.hospital_id)
    if h is None:
        return err
    if p.status not in BEFORE_ARRIVAL:
        return f"{p.patient_id} is {p.status}; a destination can be set only before arrival at a hospital"
    if world.diverted_for(h.hospital_id, p.condition):
        open_ids = [x for x in world.hospitals if not world.diverted(x)]
        return (
            f"{h.hospital_id} is on diversion ({h.diversion_reason}) until t{h.diverted_until}; "
            f"open hospitals: {_ids(open_ids)}"
        )
    note_destination(world, p, h.hospital_id)
    amb = world.ambulances.get(p.ambulance_id or "")
    if p.status == "transporting" and amb is not None and amb.trip is not None:
        amb.trip.target = h.node
        reroute(world, amb)
    return None


def prepare_or(world: World, a: Any) -> str | None:
    h, err = _hospital(world, a.hospital_id)
    if h is None:
        return err
    capable = [r for r in h.ors if a.procedure in r.procedures]
    if not capable:
        offered = sorted({p for r in h.ors for p in r.procedures})
        return f"{h.hospital_id} has no OR for {a.procedure}; it offers: {_ids(offered)}"
    idle = [r for r in capable if r.state == "idle"]
    if not idle:
        states = ", ".join(f"{r.or_id} {r.state}" for r in capable)
        return (
            f"no idle OR for {a.procedure} at {h.hospital_id} ({states}); "
            "preempt_or frees an elective case, query_or_status shows the timers"
        )
    room = idle[0]
    if "cath_lab" not in room.procedures:
        room.prep_total = OR_PREP_MIN_BY_TIER[h.tier]
    room.state, room.procedure, room.until = "preparing", a.procedure, world.clock + room.prep_total
    world.changed("rooms")
    world.due("timers", room.until)
    room.agent_prepared, room.patient_id = True, None
    return None


def page_specialist(world: World, a: Any) -> str | None:
    h, err = _hospital(world, a.hospital_id)
    if h is None:
        return err
    spec = h.specialists.get(a.specialty)
    if spec is None:
        return f"{h.hospital_id} has no {a.specialty} on call; on call there: {_ids(list(h.specialists))}"
    if spec.state != "on_call":
        when = {"paged": "arrives", "present": "present until", "unavailable": "unavailable until"}[
            spec.state
        ]
        return f"{h.hospital_id} {a.specialty} is already {spec.state} ({when} t{spec.until})"
    spec.state, spec.until, spec.agent_paged, spec.used = "paged", world.clock + spec.page_delay, True, False
    world.changed("rooms")
    world.due("timers", spec.until)
    return None


def preempt_or(world: World, a: Any) -> str | None:
    h, err = _hospital(world, a.hospital_id)
    if h is None:
        return err
    room = h.or_by_id(a.or_id)
    if room is None:
        return f"{h.hospital_id} has no {a.or_id!r}; its ORs: {_ids([r.or_id for r in h.ors])}"
    if room.state != "in_use" or not room.elective:
        electives = [r.or_id for r in h.ors if r.state == "in_use" and r.elective]
        return (
            f"{h.hospital_id} {room.or_id} is {room.state}, not running an elective case; "
            f"elective cases there: {_ids(electives)}"
        )
    room.state, room.elective, room.procedure, room.until = "idle", False, None, 0
    world.changed("rooms")
    world.count("preempt_or")
    return None


# ---------------------------------------------------------------- blood
def allocate_blood(world: World, a: Any) -> str | None:
    p, err = _visible_patient(world, a.patient_id)
    if p is None:
        return err
    h, err = _hospital(world, a.hospital_id)
    if h is None:
        return err
    if p.status in FINAL_PATIENT_STATES:
        return f"{p.patient_id} is {p.status}; blood can be reserved only before treatment"
    emergency = emergency_group_o(p)
    if p.blood_type_known:
        if a.blood_type not in COMPATIBLE_DONORS[p.blood_type]:
            return (
                f"{a.blood_type} is incompatible with {p.patient_id}'s type {p.blood_type}; "
                f"compatible: {_ids(list(COMPATIBLE_DONORS[p.blood_type]))}"
            )
    elif a.blood_type not in emergency:
        why = "" if p.o_pos_safe() else " (O+ is unsafe uncross-matched for a woman of child-bearing age)"
        return (
            f"{p.patient_id}'s blood type is unknown: only {_ids(list(emergency))} can be given "
            f"uncross-matched{why}; query_blood_type takes 5 min"
        )
    stock = h.blood.get(a.blood_type, 0)
    if stock < a.units:
        return f"{h.hospital_id} has {stock} unit(s) of {a.blood_type}; asked for {a.units}"
    # Uncross-matched group O is released at once; type-specific units need an immediate-spin
    # cross-match on the patient's sample, which reaches this lab only with the patient.
    sample_here = p.status == "at_hospital" and p.hospital == h.hospital_id
    uncrossmatched = a.blood_type in emergency
    ready_at = world.clock + (O_NEG_RELEASE_MIN if uncrossmatched else TYPE_SPECIFIC_MIN)
    world.allocations.append(
        BloodAllocation(
            p.patient_id,
            h.hospital_id,
            a.blood_type,
            a.units,
            world.clock,
            ready_at=ready_at,
            by_agent=True,
            awaiting_sample=not uncrossmatched and not sample_here,
        )
    )
    h.blood[a.blood_type] -= a.units
    world.changed("stock")
    if not CONDITIONS[p.condition].needs_blood:
        world.count("unneeded_blood")
    if sample_here:
        current = p.blood_ready_at if p.blood_ready_at is not None else ready_at
        p.blood_ready_at = min(current, ready_at)
    return None


def transfer_blood(world: World, a: Any) -> str | None:
    src, err = _hospital(world, a.from_hospital_id)
    if src is None:
        return err
    dst, err = _hospital(world, a.to_hospital_id)
    if dst is None:
        return err
    if src is dst:
        return "from_hospital_id and to_hospital_id must differ"
    stock = src.blood.get(a.blood_type, 0)
    if stock < a.units:
        return f"{src.hospital_id} has {stock} unit(s) of {a.blood_type}; asked for {a.units}"
    minutes = world.net.minutes(src.node, dst.node)
    if minutes == float("inf"):
        return f"no open road from {src.hospital_id} to {dst.hospital_id} right now"
    arrives = world.clock + BLOOD_COURIER_DISPATCH_MIN + round(minutes)
    src.blood[a.blood_type] -= a.units
    world.changed("stock")
    world.transfers.append(BloodTransfer(src.hospital_id, dst.hospital_id, a.blood_type, a.units, arrives))
    return None


# ---------------------------------------------------------------- mutual aid and queries
def _waiting_ids(world: World) -> list[str]:
    ids = [p.patient_id for p in world.patients.values() if p.visible and p.status == "awaiting_unit"]
    return ids + [c.call_id for c in world.calls.values() if c.status == "pending"]


def _unserved(world: World) -> int:
    """Patients and calls waiting for a unit (the demand side of the mutual-aid test)."""
    patients = sum(1 for p in world.patients.values() if p.visible and p.status == "awaiting_unit")
    calls = sum(1 for c in world.calls.values() if c.status == "pending" and c.priority != "P4")
    return patients + calls


def request_mutual_aid(world: World, a: Any) -> str | None:
    limit = world.task.mutual_aid_limit
    if limit == 0:
        return f"{world.task.task_id} has no mutual-aid agreement; use your own units"
    if len(world.mutual_aid) >= limit:
        return f"all {limit} mutual-aid request(s) for this task are used"
    target = a.resolved("target_id")
    if target is not None:
        call_ok = target in world.calls and world.calls[target].status == "pending"
        patient_ok = (
            target in world.patients
            and world.patients[target].visible
            and world.patients[target].status == "awaiting_unit"
        )
        if not (call_ok or patient_ok):
            waiting = _ids(_waiting_ids(world))
            return f"{target!r} is not a patient or call waiting for a unit; waiting now: {waiting}"
    coming = sum(1 for r in world.mutual_aid if not r.arrived)
    unneeded = _unserved(world) < len(_free_units(world)) + coming
    delay = world.narrative_rng.randint(*MUTUAL_AID_DELAY_RANGE)
    unit_id = f"{MUTUAL_AID_UNIT_PREFIX}{len(world.mutual_aid) + 1}"
    world.mutual_aid.append(MutualAidRequest(unit_id, world.clock, world.clock + delay, target, unneeded))
    world.due("aid", world.clock + delay)
    world.event(f"MUTUAL AID requested: {unit_id} (ALS) expected at N7 around t{world.clock + delay}")
    return None


def query_blood_type(world: World, a: Any) -> str | None:
    p, err = _visible_patient(world, a.patient_id)
    if p is None:
        return err
    if p.status == "deceased":
        return f"{p.patient_id} has died"
    if p.blood_type_known:
        return f"{p.patient_id}'s blood type is already known: {p.blood_type}"
    if p.blood_type_ready_at is not None:
        return f"{p.patient_id}'s blood type result is due at t{p.blood_type_ready_at}"
    request_blood_type(world, p)
    return None


def query_or_status(world: World, a: Any) -> str | None:
    h, err = _hospital(world, a.hospital_id)
    if h is None:
        return err
    rooms = []
    for r in h.ors:
        remaining = (
            max(0, r.until - world.clock)
            if r.state in ("preparing", "ready", "in_use", "out_of_service")
            else None
        )
        rooms.append(
            {
                "or_id": r.or_id,
                "procedures": list(r.procedures),
                "state": r.state,
                "procedure": r.procedure,
                "minutes_left": remaining,
                "elective": r.elective,
                "patient_id": r.patient_id,
            }
        )
    world.query_result = {"hospital_id": h.hospital_id, "at": world.clock, "ors": rooms}
    return None


def maintain_plan(world: World, a: Any) -> str | None:
    return None


HANDLERS: dict[str, Callable[[World, Any], str | None]] = {
    "dispatch_ambulance": dispatch_ambulance,
    "dispatch_als": dispatch_als,
    "dispatch_bls": dispatch_bls,
    "triage_call": triage_call,
    "assign_hospital": assign_hospital,
    "prepare_or": prepare_or,
    "page_specialist": page_specialist,
    "preempt_or": preempt_or,
    "allocate_blood": allocate_blood,
    "transfer_blood": transfer_blood,
    "request_mutual_aid": request_mutual_aid,
    "query_blood_type": query_blood_type,
    "query_or_status": query_or_status,
    "maintain_plan": maintain_plan,
}


def apply_action(world: World, action: Any) -> str | None:
    """Check the phase, then run the handler. Returns an error message or None."""
    phase = PHASE_OF[action.action_type]
    if phase is not None and phase != world.task.phase:
        hint = (
            "dispatch_ambulance(ambulance_id, patient_id)"
            if world.task.phase == 1
            else "triage_call, dispatch_als or dispatch_bls with a call_id"
        )
        return (
            f"{action.action_type} is a phase-{phase} action; {world.task.task_id} is phase "
            f"{world.task.phase}: use {hint}"
        )
    return HANDLERS[action.action_type](world, action)
