"""Hospital care: admission (with the readiness measured on arrival, or at the prompt-arrival
reference if that came first), treatment starting when door time, room, specialist and blood
allow, the fallback when the lab is unavailable, the end of treatment, and inter-facility
transfers (docs/MODEL.md §4.4-§4.6, §8.1)."""

from __future__ import annotations

import functools
import heapq
import math
from typing import TYPE_CHECKING

from ..conditions import CONDITIONS, Care, expected_outcome
from ..params import (
    CATH_LAB_PREP_RANGE,
    DECISION_COST_MIN,
    LIGHTS_AND_SIRENS_FACTOR,
    MEMO_ENTRIES,
    NO_BLOOD_QUALITY,
    NO_BLOOD_SURGERY_WAIT_MIN,
    O_NEG_RELEASE_MIN,
    OR_PREP_MIN_BY_TIER,
    PREP_LATE_ZERO_MIN,
    PROCEDURE_DURATION_MIN,
    SPECIALIST_PAGE_DELAY_BY_TIER,
    SPECIALIST_STAY_AFTER_CASE_MIN,
    TRANSFER_DOOR_IN_DOOR_OUT_MIN,
    TRANSPORT_FACTOR,
)
from ..types import PATIENT_STATES, Hospital, OperatingRoom, Patient
from .blood import issue_awaiting_sample, issue_on_arrival, transfuse
from .blood import readiness as blood_readiness
from .rooms import (
    acuity,
    best_care_refused,
    care_for,
    claim,
    door_minutes,
    or_readiness,
    room_for,
    room_wait,
    specialist_readiness,
)

if TYPE_CHECKING:
    from ..state import World


# statuses hospital care never acts on (the three branches below are the others)
_NOTHING_TO_DO = frozenset(PATIENT_STATES) - {"at_hospital", "transferring", "in_treatment"}


def advance(world: World, t: int) -> None:
    """Tick step 7: patients in the ED start treatment or leave for a transfer, transfers
    arrive, treatments end."""
    hospitals, nothing_to_do = world.hospitals, _NOTHING_TO_DO
    for p in world.patients.values():  # nothing below adds a patient
        status = p.status
        if status in nothing_to_do:
            continue
        if status == "at_hospital":
            h = hospitals[p.hospital or ""]
            care = care_for(p, h)
            if care is None:
                _maybe_transfer_out(world, p, h, t)
            else:
                waited = 0 if p.wait_started is None else t - p.wait_started
                activated = waited >= care.activation_min
                if (care.procedure and p.or_ref is None) or (activated and care.specialist):
                    claim(world, p, h, care, activated)  # the guard: what ``claim`` acts on
                if activated and care.procedure and p.or_ref is None and _lab_unavailable(world, p, h, care):
                    care = _fall_back(world, p, h)
                if care is not None and waited >= care.door_min:  # see _maybe_start_treatment
                    _maybe_start_treatment(world, p, h, care, t)
        elif status == "transferring" and p.transfer_arrives_at is not None and p.transfer_arrives_at <= t:
            h = world.hospitals[p.transfer_to or ""]
            world.event(f"{p.patient_id} arrived at {h.hospital_id} by inter-facility transfer")
            admit(world, p, h)
        elif (
            status == "in_treatment"
            and p.hospital is not None  # on-scene care ends when the crew leaves
            and p.treatment_end is not None
            and p.treatment_end <= t
        ):
            _finish_treatment(world, p)


def note_destination(world: World, p: Patient, hospital_id: str) -> None:
    """Record the destination and whether the relaxed (transfer) target applies to it."""
    cond = CONDITIONS[p.condition]
    care = cond.care_at(world.hospitals[hospital_id].tier)
    best = cond.best_care
    partial = best is not None and (care is None or care.quality < best.quality)
    p.destination = hospital_id
    p.relaxed_target = partial and best_care_refused(world, p)


def admit(world: World, p: Patient, h: Hospital) -> None:
    p.status, p.hospital, p.node = "at_hospital", h.hospital_id, h.node
    p.wait_started = world.clock
    p.blood_ready_at, p.or_ref = None, None
    h.ed_patients.append(p.patient_id)
    care = care_for(p, h)
    if p.first_hospital_arrival is None:
        p.first_hospital_arrival = world.clock
        p.arrival_prep = measure_prep(world, p, h, care)
    issue_awaiting_sample(world, p, h)
    if CONDITIONS[p.condition].needs_blood:
        issue_on_arrival(world, p, h)  # also to stabilise a patient awaiting transfer
    if care is None:
        p.transfer_to = transfer_target(world, p, h)
        p.transfer_arrives_at = None
        world.event(
            f"{h.hospital_id} cannot treat {p.patient_id} ({CONDITIONS[p.condition].label}): "
            f"transfer to {p.transfer_to} after stabilisation"
        )
        return
    claim(world, p, h, care, activated=care.activation_min == 0)


def note_prompt_reference(world: World, p: Patient) -> None:
    """What prep_ready's prompt reference needs from the moment ``p`` becomes known: the nearest
    unit's minutes to them and every hospital's minutes from them (the condition plays no part)."""
    net, node = world.net, p.node
    response = min((net.minutes(a.node, node) for a in world.ambulances.values()), default=math.inf)
    p.prompt_legs = (response, tuple((h.tier, net.minutes(node, h.node)) for h in world.hospitals.values()))


def prompt_reference(world: World, p: Patient, part_min: int) -> float:
    """The minute by which a part needing ``part_min`` minutes to ready could have been ready for
    ``p`` under prompt dispatch and preparation: not before the prompt arrival (the nearest unit
    at lights-and-sirens speed, the condition's scene time, the nearest hospital giving its best
    care; decision minutes), and not before ``part_min`` after the condition could first be known
    (at once in phase 1; when the prompt crew would reach a caller in phase 2)."""
    response, legs = p.prompt_legs or (0.0, ())
    return p.appeared_at + _prompt_offset(p.condition, p.call_id is not None, response, legs, part_min)


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _prompt_offset(condition: str, caller: bool, response: float, legs: tuple[tuple[int, float], ...],
                   part_min: int) -> float:
    """``prompt_reference`` minus the minute the patient became known (read only, memoised)."""
    cond = CONDITIONS[condition]
    best = cond.best_care
    best_q = best.quality if best else 1.0
    capable = [m for tier, m in legs if (care := cond.care_at(tier)) is not None and care.quality >= best_q]
    transport = min(capable or [m for _, m in legs] or [0.0])
    reach = DECISION_COST_MIN + LIGHTS_AND_SIRENS_FACTOR * response
    arrival = reach + cond.scene_min + TRANSPORT_FACTOR * transport
    known = reach if caller else 0.0
    return max(arrival, known + DECISION_COST_MIN + part_min)


def prep_credit(world: World, p: Patient, h: Hospital, care: Care, t: int) -> dict[str, float]:
    """Each readiness part the care needs, credited by how late it was ready against the prompt
    reference (1 on time, 0 at ``PREP_LATE_ZERO_MIN`` late): the room's ready minute, the
    specialist's arrival, the blood's issue; a part not ready by ``t`` counts as ready at ``t``.
    Arriving late never raises it: the reference does not move with the dispatch."""
    return {part: prep_part_credit(world, p, ready, need)
            for part, (ready, need) in parts_ready_at(world, p, h, care, t, earliest=False).items()}


def prep_part_credit(world: World, p: Patient, ready: float, need: int) -> float:
    """The credit of a part ready at minute ``ready`` that needs ``need`` minutes to ready."""
    return _lateness_credit(ready - prompt_reference(world, p, need))


def parts_ready_at(world: World, p: Patient, h: Hospital, care: Care, t: int,
                   earliest: bool) -> dict[str, tuple[float, int]]:
    """Each readiness part's ready minute and the minutes readying it takes. A part not ready by
    ``t`` counts as ready at ``t``; with ``earliest`` (the running preview, before treatment) at
    the earliest minute it could be as things stand -- when the room being readied or the paged
    specialist will be; a part nobody has started, once the hospital itself would start it (its
    activation, counted from now for a patient not there yet) and has readied it -- so a part
    nobody has started is not valued as if it were ready now."""
    parts: dict[str, tuple[float, int]] = {}
    waited = t - p.wait_started if p.hospital == h.hospital_id and p.wait_started is not None else 0
    start = t + max(0, care.activation_min - waited)  # when the hospital starts what nobody has
    if care.procedure:
        need = readying_minutes(care.procedure, h.tier)
        if earliest:
            ready = _room_ready_at(world, p, h, care.procedure, (t, start), need)
        else:
            ready = _room_ready_by(p, h, t)
        parts["or"] = ready, need
    if care.specialist:
        spec = h.specialists.get(care.specialist)
        need = SPECIALIST_PAGE_DELAY_BY_TIER[h.tier][0]
        if spec is not None and spec.state == "present":
            ready = min(spec.present_since, t)
        elif earliest and spec is not None and spec.state == "paged":
            ready = max(spec.until, t)
        else:
            ready = start + need if earliest else t
        parts["specialist"] = ready, need
    if CONDITIONS[p.condition].needs_blood:
        issued = p.blood_ready_at
        if earliest:
            ready = max(issued, t) if issued is not None else t + O_NEG_RELEASE_MIN
        else:
            ready = issued if issued is not None and issued <= t else t
        parts["blood"] = ready, O_NEG_RELEASE_MIN
    return parts


def readying_minutes(procedure: str, tier: int) -> int:
    """The fewest minutes readying a room for ``procedure`` takes at a hospital of ``tier``."""
    return CATH_LAB_PREP_RANGE[0] if procedure == "cath_lab" else OR_PREP_MIN_BY_TIER[tier]


def _room_ready_by(p: Patient, h: Hospital, t: int) -> float:
    room = h.or_by_id(p.or_ref[1]) if p.or_ref and p.or_ref[0] == h.hospital_id else None
    ready = room.ready_at if room is not None and room.state in ("ready", "in_use") else t
    return min(ready, t)


def _room_ready_at(world: World, p: Patient, h: Hospital, procedure: str, at: tuple[int, int],
                   need: int) -> float:
    """The earliest minute a room could be ready for ``p`` as dispatch can tell (a room's own
    readying time is not shown, so a room being readied counts ``need`` minutes from its start):
    theirs, else the one they would get (``room_for``; an idle one readied from ``start``), else
    their turn in the hospital's queue (``_queued_ready_at``); ``at`` is (now, start)."""
    t, start = at
    room = h.or_by_id(p.or_ref[1]) if p.or_ref and p.or_ref[0] == h.hospital_id else None
    room = room or room_for(world, h, procedure, p)
    if room is None:
        return _queued_ready_at(world, p, h, procedure, at, need)
    if room.state == "idle":
        return start + need
    if room.state in ("ready", "in_use"):
        return min(room.ready_at, t)
    return max(_nominal_until(room, need), t)


def _queued_ready_at(world: World, p: Patient, h: Hospital, procedure: str, at: tuple[int, int],
                    need: int) -> float:
    """``_room_ready_at`` of a patient with no room to take: as each room able to host
    ``procedure`` comes free, the hospital readies it for the most urgent patient there or
    arriving before it is ready (as urgent: the first there; ``_rivals``), each case readied and
    run at its nominal minutes, until it is ``p``'s turn. ``p`` counts from their own arrival and
    the answer is shifted back by it, as the preview values every patient at the door now."""
    t, start = at
    free = [_free_for_next(r, need, t) for r in h.ors if procedure in r.procedures]
    if not free:
        return max(start, t + world.task.horizon_min) + need
    heapq.heapify(free)
    lead = 0 if p.hospital == h.hospital_id else _minutes_to(world, p, h, t)
    mine = (acuity(p), start + lead, len(world.patients))
    pending = [*_rivals(world, p, h, procedure, t), mine]
    case = need + PROCEDURE_DURATION_MIN.get(procedure, 0)
    while True:
        opens = max(free[0], min(rank[1] for rank in pending))
        chosen = min(rank for rank in pending if rank[1] <= opens + need)
        if chosen is mine:
            return opens + need - lead
        pending.remove(chosen)
        heapq.heapreplace(free, opens + case)


_ON_THE_WAY = frozenset(("on_scene", "transporting"))  # with a crew, bound for a hospital


def _rivals(world: World, p: Patient, h: Hospital, procedure: str, t: int) -> list[tuple[int, int, int]]:
    """The other patients with no room held at ``h`` who need a ``procedure`` room there, waiting
    in it or on their way with a crew: (acuity, the minute they could claim one, their order)."""
    rivals = []
    for order, q in enumerate(world.patients.values()):
        if q is p or not q.visible or (q.or_ref and q.or_ref[0] == h.hospital_id):
            continue
        if q.status == "at_hospital" and q.hospital == h.hospital_id:
            lead = -(t - q.wait_started) if q.wait_started is not None else 0
        elif q.status in _ON_THE_WAY and q.hospital is None and q.destination == h.hospital_id:
            lead = _minutes_to(world, q, h, t)
        else:
            continue
        care = care_for(q, h)
        if care is not None and care.procedure == procedure:
            rivals.append((acuity(q), t + max(0, care.activation_min + lead), order))
    return rivals


def _minutes_to(world: World, p: Patient, h: Hospital, t: int) -> int:
    """Minutes until ``p`` could be at ``h`` as dispatch can tell: their ambulance's ETA, from a
    scene the road minutes at transport speed, else 0."""
    if p.status == "transporting":
        unit = world.ambulances.get(p.ambulance_id or "")
        if unit is not None and unit.trip is not None:
            return unit.trip.eta_minutes(t)
    if p.status == "on_scene" and p.node is not None:
        return round(world.net.minutes(p.node, h.node) * TRANSPORT_FACTOR)
    return 0


def _free_for_next(room: OperatingRoom, need: int, t: int) -> float:
    """When ``room`` could next be readied for another patient: after the case of a patient it is
    held for, else as ``_nominal_until``."""
    if room.patient_id is not None and room.state in ("preparing", "ready"):
        ready = room.ready_at if room.state == "ready" else _nominal_until(room, need)
        return max(ready, t) + PROCEDURE_DURATION_MIN.get(room.procedure or "", 0)
    return _nominal_until(room, need)


def _nominal_until(room: OperatingRoom, need: int) -> int:
    """When ``room`` is free or ready: ``need`` minutes from the start of a preparation, else the
    end of the case in it."""
    if room.state == "preparing":
        return room.until - room.prep_total + need
    return room.until


def _lateness_credit(late: float) -> float:
    return round(min(1.0, max(0.0, 1.0 - late / PREP_LATE_ZERO_MIN)), 4)


def measure_prep(world: World, p: Patient, h: Hospital, care: Care | None) -> dict[str, float]:
    """Readiness on arrival: OR, specialist and blood, each 0..1 (partial while preparing); marks
    ``prep_rule_zero`` where no preparation can earn credit (the grade reads ``prep_credit``)."""
    cond = CONDITIONS[p.condition]
    if not cond.needs_prep:
        return {}
    zeros = {"or": 0.0, "specialist": 0.0} | ({"blood": 0.0} if cond.needs_blood else {})
    if care is None:
        p.prep_rule_zero = True
        return zeros
    parts: dict[str, float] = {}
    if care.procedure:
        parts["or"] = or_readiness(world, h, care.procedure)
    if care.specialist:
        parts["specialist"] = specialist_readiness(world, h.specialists.get(care.specialist))
    if cond.needs_blood:
        parts["blood"] = blood_readiness(world, p, h)
    best = cond.best_care
    partial = best is not None and care.quality < best.quality
    if parts or not partial or p.relaxed_target or p.fallback:
        return parts  # empty: the care given needs nothing prepared and was the best on offer
    p.prep_rule_zero = True
    return zeros  # thrombolysis chosen while a hospital able to give PCI could take them


def transfer_target(world: World, p: Patient, h: Hospital) -> str:
    cond = CONDITIONS[p.condition]
    options = [x for x in world.hospitals.values() if cond.care_at(x.tier) and x is not h]
    options.sort(
        key=lambda x: (
            -cond.care_at(x.tier).quality,
            world.diverted(x.hospital_id),
            world.net.minutes(h.node, x.node),
            x.hospital_id,
        )
    )
    return options[0].hospital_id


def _lab_unavailable(world: World, p: Patient, h: Hospital, care: Care) -> bool:
    """Fallback care (thrombolysis) is given when the specialist is unavailable, or when no
    room for the procedure is free and the earliest the procedure could start gives a worse
    expected outcome than the fallback now (ESC: lysis when PCI would come too late)."""
    cond = CONDITIONS[p.condition]
    fallback = cond.fallback_care
    if fallback is None:
        return False
    spec = h.specialists.get(care.specialist or "")
    if spec is not None and spec.state == "unavailable":
        return True
    if room_for(world, h, care.procedure or "", p) is not None:
        return False
    wait = room_wait(world, h, care.procedure or "")
    prep = OR_PREP_MIN_BY_TIER[h.tier] if h.tier in OR_PREP_MIN_BY_TIER else CATH_LAB_PREP_RANGE[0]
    best_start = world.clock + wait + max(prep, CATH_LAB_PREP_RANGE[0]) + care.room_min
    arrived = world.clock if p.wait_started is None else p.wait_started
    lysis_start = max(world.clock, arrived + fallback.door_min)
    onset = p.onset_min
    procedure = expected_outcome(cond, best_start - p.appeared_at, care.quality, onset, care.therapy)
    lysis = expected_outcome(cond, lysis_start - p.appeared_at, fallback.quality, onset, fallback.therapy)
    return lysis > procedure


def _fall_back(world: World, p: Patient, h: Hospital) -> Care | None:
    p.fallback = True
    care = care_for(p, h)
    world.event(f"{h.hospital_id} lab unavailable for {p.patient_id}: {care.label if care else 'no care'}")
    return care


def _maybe_transfer_out(world: World, p: Patient, h: Hospital, t: int) -> None:
    if p.wait_started is None or t < p.wait_started + TRANSFER_DOOR_IN_DOOR_OUT_MIN:
        return
    target = world.hospitals[p.transfer_to or ""]
    minutes = world.net.minutes(h.node, target.node)
    if minutes == float("inf"):
        return
    transfuse(world, p, h)  # blood given to stabilise before the transfer counts as used
    h.ed_patients.remove(p.patient_id)
    p.status, p.hospital, p.transferred = "transferring", None, True
    p.transfer_arrives_at = t + max(1, round(minutes * TRANSPORT_FACTOR))
    eta = p.transfer_arrives_at
    world.event(f"{p.patient_id} leaves {h.hospital_id} for {target.hospital_id}, ETA t{eta}")


def _maybe_start_treatment(world: World, p: Patient, h: Hospital, care: Care | None, t: int) -> None:
    if care is None:
        return
    waited = 0 if p.wait_started is None else t - p.wait_started
    if waited < care.door_min:  # crowding only lengthens the door time (door_minutes)
        return
    if h.crowded and waited < door_minutes(care, h):
        return
    room = None
    if care.procedure:
        if p.or_ref is None:
            return
        room = h.or_by_id(p.or_ref[1])
        if room is None or room.state != "ready" or t < room.ready_at + care.room_min:
            return
    if care.specialist and h.specialists[care.specialist].state != "present":
        return
    quality = care.quality
    if CONDITIONS[p.condition].needs_blood and not p.has_blood(t):
        if waited < NO_BLOOD_SURGERY_WAIT_MIN:
            return
        quality *= NO_BLOOD_QUALITY
    _start_treatment(world, p, h, care, room, quality)


def _start_treatment(
    world: World, p: Patient, h: Hospital, care: Care, room: OperatingRoom | None, quality: float
) -> None:
    cond = CONDITIONS[p.condition]
    p.status, p.treatment_start = "in_treatment", world.clock
    p.treatment_quality, p.therapy = quality, care.therapy
    p.reserve_at_treatment = round(max(0.0, p.reserve), 3)
    if p.arrival_prep and not p.prep_rule_zero:
        p.prep_credit = prep_credit(world, p, h, care, world.clock)
    p.treatment_end = world.clock + cond.treatment_minutes(care)
    if room is not None:
        room.state, room.until, room.procedure = "in_use", p.treatment_end, care.procedure
        world.changed("rooms")
        world.due("timers", room.until)
        h.ed_patients.remove(p.patient_id)
    if care.specialist:
        h.specialists[care.specialist].used = True
    transfuse(world, p, h)
    delay = world.clock - p.appeared_at
    world.event(f"TREATMENT {p.patient_id} {care.label} started at {h.hospital_id} ({delay} min after call)")


def _finish_treatment(world: World, p: Patient) -> None:
    h = world.hospitals[p.hospital or ""]
    care = care_for(p, h)
    p.status = "treated"
    if p.or_ref:
        room = h.or_by_id(p.or_ref[1])
        if room is not None and room.patient_id == p.patient_id:
            room.state, room.patient_id, room.procedure = "idle", None, None
            world.changed("rooms")
            room.agent_prepared = False
            if room.failure_until > world.clock:
                room.state, room.until = "out_of_service", room.failure_until
                world.changed("rooms")
    elif p.patient_id in h.ed_patients:
        h.ed_patients.remove(p.patient_id)
    if care and care.specialist:
        spec = h.specialists[care.specialist]
        if spec.state == "present":
            spec.until = max(spec.until, world.clock + SPECIALIST_STAY_AFTER_CASE_MIN)
    if CONDITIONS[p.condition].true_priority == "P1":
        if h.icu_used < h.icu_beds:
            h.icu_used += 1
        else:
            h.boarders += 1
    world.event(f"{p.patient_id} treatment complete at {h.hospital_id}")
