"""The rows of the observation: vitals, patients, units, hospitals, calls, roads, alerts.

What a row shows is all the agent learns of its record. Hidden on purpose: a caller's true
condition (only the report is shown until a crew is on scene), a patient's physiological
reserve (shown only through vitals), blood types before a lab result, per-OR timers
(``query_or_status`` reveals them), and future calls.

Besides the plain rows (``patient_row`` ...), the rows an episode's views reuse while what they
show is unchanged (``*_reused``, kept in the view's ``Memo``) and the brief rows a rule-based
agent reads (``BRIEF_FIELDS``).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice
from typing import Any

from .conditions import CONDITIONS
from .dynamics.rooms import care_for
from .params import GCS_MIN, VITALS_AT_ZERO_RESERVE, VITALS_AT_ZERO_RESERVE_STROKE, VITALS_BASELINE
from .rounding import round2
from .state import World
from .types import FINAL_PATIENT_STATES, OPEN_CALL_STATES, Call, Hospital, Patient

Memo = dict[str, Any]  # what an episode's views reuse (``view.ObservationView``)


def displayed_vitals(p: Patient) -> dict[str, float | int]:
    """Vitals derived from the hidden reserve (1 stable .. 0 dead) and the patient's baseline."""
    if p.status == "deceased":
        return {"hr": 0, "sbp": 0, "spo2": 0, "rr": 0, "gcs": GCS_MIN, "score": 0.0}
    hr, sbp, spo2, rr, gcs, score = vitals_values(shown_reserve(p), p.hr0, p.sbp0, p.condition == "stroke")
    return {"hr": hr, "sbp": sbp, "spo2": spo2, "rr": rr, "gcs": gcs, "score": score}


def shown_reserve(p: Patient) -> float:
    """The reserve the vitals show: frozen at the start of treatment, never below 0."""
    return p.reserve_at_treatment if p.reserve_at_treatment is not None else max(0.0, p.reserve)


def vitals_values(r: float, hr0: int, sbp0: int, stroke: bool) -> tuple[int, int, int, int, int, float]:
    """(hr, sbp, spo2, rr, gcs, score) of a living patient at shown reserve ``r``."""
    loss = 1.0 - r
    hr, sbp, spo2, rr, gcs = _SHIFTS[stroke]
    return (
        round(hr0 + hr * loss),
        round(sbp0 + sbp * loss),
        round(_BASE_SPO2 + spo2 * loss),
        round(_BASE_RR + rr * loss),
        max(GCS_MIN, _BASE_GCS + round(gcs * loss)),
        round2(r),
    )


_VITALS = ("hr", "sbp", "spo2", "rr", "gcs")
_SHIFTS = {stroke: tuple(table[v] for v in _VITALS)
           for stroke, table in ((False, VITALS_AT_ZERO_RESERVE), (True, VITALS_AT_ZERO_RESERVE_STROKE))}
_BASE_SPO2, _BASE_RR, _BASE_GCS = VITALS_BASELINE["spo2"], VITALS_BASELINE["rr"], VITALS_BASELINE["gcs"]


def waiting_for(world: World, p: Patient) -> list[str]:
    if p.status != "at_hospital" or p.hospital is None:
        return []
    h = world.hospitals[p.hospital]
    care = care_for(p, h)
    if care is None:
        return [f"transfer to {p.transfer_to}"]
    needs = []
    if care.procedure:
        room = h.or_by_id(p.or_ref[1]) if p.or_ref else None
        if room is None or room.state != "ready":
            needs.append("or")
    if care.specialist and h.specialists[care.specialist].state != "present":
        needs.append(care.specialist)
    if CONDITIONS[p.condition].needs_blood and not p.has_blood(world.clock):
        needs.append("blood")
    return needs


def _reserved(world: World, p: Patient) -> dict[str, int]:
    """Units the agent has reserved for this patient, per hospital (not yet transfused)."""
    out: dict[str, int] = {}
    for a in world.allocations:
        if a.patient_id == p.patient_id and a.by_agent and not a.used:
            out[a.hospital_id] = out.get(a.hospital_id, 0) + a.units
    return out


def patient_row(world: World, p: Patient, reserved: dict[str, int] | None = None) -> dict[str, Any]:
    """A visible patient's row; ``reserved``: their reservations when already gathered
    (``_reserved_by_patient``), else looked up."""
    cond = CONDITIONS[p.condition]
    clock = world.clock
    status = p.status
    return {
        "patient_id": p.patient_id,
        "condition": p.condition,
        "label": cond.label,
        "priority": cond.true_priority,
        "secondary": p.secondary,
        "status": status,
        "node": p.node,
        "call_id": p.call_id,
        "sex": p.sex,
        "age": p.age,
        "vitals": displayed_vitals(p),
        "blood_type": p.blood_type if p.blood_type_known else None,
        "ambulance_id": p.ambulance_id,
        "destination": p.destination,
        "hospital": p.hospital,
        "eta_min": patient_eta(world, p),
        "waiting_for": waiting_for(world, p),
        "blood_reserved": _reserved(world, p) if reserved is None else reserved,
        "minutes_since_call": clock - p.appeared_at,
        "minutes_since_onset": clock - p.appeared_at + p.onset_min,
        "treatment_start_min": p.treatment_start,
    }


#: The patient statuses with an ETA (a unit on its way to them or with them, or a transfer).
ETA_STATES = frozenset(("unit_en_route", "transporting", "transferring"))


def patient_eta(world: World, p: Patient) -> int | None:
    """Minutes until the unit reaches the patient or the hospital, or the transfer arrives
    (None outside ``ETA_STATES``)."""
    status = p.status
    if status in ("unit_en_route", "transporting"):
        amb = world.ambulances.get(p.ambulance_id or "")
        if amb is not None and amb.trip is not None:
            return amb.trip.eta_minutes(world.clock)
    elif status == "transferring" and p.transfer_arrives_at is not None:
        return max(0, p.transfer_arrives_at - world.clock)
    return None


def _known(world: World, patient_id: str | None) -> bool:
    return patient_id is not None and world.patients[patient_id].visible


def ambulance_row(world: World, amb) -> dict[str, Any]:
    trip = amb.trip
    nxt = trip.position(world.clock)[1] if trip else None
    busy = amb.busy_until - world.clock if amb.status in ("on_scene", "at_hospital") else None
    return {
        "ambulance_id": amb.ambulance_id,
        "kind": amb.kind,
        "mutual_aid": amb.mutual_aid,
        "status": amb.status,
        "node": amb.node,
        "next_node": nxt,
        "destination": trip.target if trip else None,
        "eta_min": trip.eta_minutes(world.clock) if trip else None,
        "busy_min": None if busy is None else max(0, busy),
        "patient_id": amb.patient_id if _known(world, amb.patient_id) else None,
        "call_id": amb.call_id,
        "held": amb.held,
    }


def hospital_row(world: World, h, parts: tuple[Any, Any, Any] | None = None) -> dict[str, Any]:
    """A hospital's row; ``parts``: its rooms, specialists and blood parts when already made
    (``hospital_row_reused``), each made here when None."""
    rooms, specialists, blood = parts or (None, None, None)
    return {
        "hospital_id": h.hospital_id,
        "name": h.name,
        "tier": h.tier,
        "node": h.node,
        "occupancy": h.occupancy,
        "capacity": h.capacity,
        "crowded": h.crowded,
        "diverted_until": h.diverted_until if world.diverted(h.hospital_id) else None,
        "ors": _room_rows(h) if rooms is None else rooms,
        "specialists": _specialist_rows(h) if specialists is None else specialists,
        "icu_free": max(0, h.icu_beds - h.icu_used),
        "blood": {t: n for t, n in h.blood.items() if n > 0} if blood is None else blood,
    }


def _room_rows(h: Hospital) -> list[dict[str, Any]]:
    return [
        {
            "or_id": r.or_id,
            "procedures": list(r.procedures),
            "state": r.state,
            "procedure": r.procedure,
            "patient_id": r.patient_id,
            "elective": r.elective,
        }
        for r in h.ors
    ]


def _specialist_rows(h: Hospital) -> dict[str, dict[str, Any]]:
    return {
        s.specialty: {
            "state": s.state,
            "until": s.until if s.state in ("paged", "present", "unavailable") else None,
        }
        for s in h.specialists.values()
    }


def call_row(world: World, c) -> dict[str, Any]:
    return {
        "call_id": c.call_id,
        "received_min": c.received_at,
        "waiting_min": world.clock - c.received_at,
        "node": c.node,
        "report": c.report,
        "priority": c.priority,
        "status": c.status,
        "ambulance_id": c.ambulance_id,
        "patient_id": c.patient_id if c.status == "on_scene" else None,
    }


def road_state(world: World) -> dict[str, Any]:
    closed, congested = [], []
    for d in world.disruptions:
        if not d.active:
            continue
        for a, b in d.edges:
            if d.kind == "road_closure":
                closed.append({"edge": [a, b], "until": d.end})
            elif d.kind == "accident_congestion":
                congested.append(
                    {"edge": [a, b], "factor": world.net.congestion.get((a, b), 1.0), "until": d.end}
                )
    return {"closed": closed, "congested": congested, "peak_hour": world.peak_hour}


def alert_texts(world: World) -> list[str]:
    alerts = [f"{d.text} (until ~t{d.end})" for d in world.disruptions if d.active]
    for h in _overcrowded(world):
        alerts.append(f"{h.hospital_id} overcrowded: on diversion until t{h.diverted_until}")
    if world.news_cycle_at is not None:
        alerts.append(f"news cycle since t{world.news_cycle_at}: {world.news_cycle_reason}")
    return alerts


def alert_count(world: World) -> int:
    """``len(alert_texts(world))`` without formatting the texts (the Gymnasium features)."""
    active = sum(1 for d in world.disruptions if d.active)
    return active + len(_overcrowded(world)) + (world.news_cycle_at is not None)


def _overcrowded(world: World) -> list:
    return [h for h in world.hospitals.values()
            if world.diverted(h.hospital_id) and h.diversion_reason == "overcrowded"]


def mutual_aid_state(world: World) -> dict[str, Any]:
    limit = world.task.mutual_aid_limit
    return {
        "limit": limit,
        "used": len(world.mutual_aid),
        "remaining": limit - len(world.mutual_aid),
        "pending": [
            {"unit_id": r.unit_id, "arrives_min": r.arrives_at, "target_id": r.target_id}
            for r in world.mutual_aid
            if not r.arrived
        ],
    }


def visible_calls(world: World) -> list:
    return [c for c in world.calls.values() if c.status in OPEN_CALL_STATES]


def open_calls(world: World, memo: Memo | None = None) -> list[Call]:
    """``visible_calls(world)``; with ``memo`` (an episode's view memo) without looking at the
    closed calls again: a call that has a crew on scene or was closed never reopens, and new
    calls are added at the end of ``world.calls`` (tests/sim/test_incremental_view.py); the
    same list (read only) while ``World.version("calls")`` is unchanged."""
    if memo is None:
        return visible_calls(world)
    calls = world.calls
    known_world, version, seen, still_open = memo.get("open_calls", (None, None, 0, []))
    if known_world is world and version == world.version("calls"):
        return still_open
    if known_world is not world:
        seen, still_open = 0, []
    if len(calls) != seen:
        still_open = still_open + list(islice(calls.values(), seen, None))
    kept = []  # a loop: a comprehension would cost a frame of its own
    for c in still_open:
        if c.status in OPEN_CALL_STATES:
            kept.append(c)
    memo["open_calls"] = (world, world.version("calls"), len(calls), kept)
    return kept


def patient_rows_reused(world: World, memo: dict[str, Any]) -> list[dict[str, Any]]:
    """The visible patients' dicts (equal to ``_patient``'s), the reservations gathered in one
    pass over the allocations; the dict of a patient in a final state is reused (shallow-copied,
    read only) from an earlier step: once treated, released or dead, only the minutes since the
    call move (and the blood type, when a lab result comes in)."""
    rows: dict[str, tuple[tuple, dict[str, Any]]] = memo.setdefault("rows", {})
    reserved = _reserved_by_patient(world) if world.allocations else {}
    out = []
    clock = world.clock
    for p in world.patients.values():
        if not p.visible:
            continue
        if p.status not in FINAL_PATIENT_STATES:
            out.append(patient_row(world, p, reserved.get(p.patient_id) or {}))
            continue
        key = (p.status, p.blood_type_known)
        cached = rows.get(p.patient_id)
        if cached is None or cached[0] != key:
            row = patient_row(world, p, reserved.get(p.patient_id) or {})
            rows[p.patient_id] = (key, row)
        else:
            row = dict(cached[1])
            since = clock - p.appeared_at
            row["minutes_since_call"], row["minutes_since_onset"] = since, since + p.onset_min
        out.append(row)
    return out


def _reserved_by_patient(world: World) -> dict[str, dict[str, int]]:
    """``_reserved`` of every patient with a reservation, in one pass over the allocations."""
    out: dict[str, dict[str, int]] = {}
    for a in world.allocations:
        if a.by_agent and not a.used:
            mine = out.setdefault(a.patient_id, {})
            mine[a.hospital_id] = mine.get(a.hospital_id, 0) + a.units
    return out


def _hospital_state(world: World, h: Hospital) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    """What can change in a hospital's row (``_hospital``): its own fields, its rooms', its
    specialists' and its blood stock, each flat (compared, never hashed; made in one frame: the
    quickest to build). A hospital's name, tier, node, capacity and ICU beds, its rooms, a
    room's id and procedures, its specialties and the blood types held never change, so every
    value keeps its place."""
    diverted = h.diverted_until > world.clock  # World.diverted
    rooms: list[Any] = []
    for r in h.ors:
        rooms += (r.state, r.procedure, r.patient_id, r.elective)
    specialists: list[Any] = []
    for s in h.specialists.values():
        specialists += (s.state, s.until)
    return [h, h.occupancy, h.diverted_until, h.icu_used, diverted], rooms, specialists, [*h.blood.values()]


def hospital_rows_reused(world: World, memo: dict[str, Any]) -> list[dict[str, Any]]:
    """The hospitals' dicts, each reused (read only) while every field it shows is unchanged."""
    return [hospital_row_reused(world, h, memo) for h in world.hospitals.values()]


def hospital_row_reused(world: World, h: Hospital, memo: dict[str, Any]) -> dict[str, Any]:
    """``hospital_row(world, h)``, reused (read only) from an earlier step while every field it shows
    is unchanged; when some changed, its rooms, specialists and blood parts still are while
    theirs are not."""
    key = _hospital_state(world, h)
    rows: dict[str, tuple[tuple, dict[str, Any]]] | None = memo.get("hospital_rows")
    if rows is None:
        rows = memo["hospital_rows"] = {}
    cached = rows.get(h.hospital_id)
    if cached is None:
        cached = rows[h.hospital_id] = (key, hospital_row(world, h))
    elif cached[0] != key:  # the row again, with the parts of it that did not change
        (_, old_rooms, old_specialists, old_blood), old = cached
        _, rooms, specialists, blood = key
        parts = (old["ors"] if rooms == old_rooms else None,
                 old["specialists"] if specialists == old_specialists else None,
                 old["blood"] if blood == old_blood else None)
        cached = rows[h.hospital_id] = (key, hospital_row(world, h, parts))
    return cached[1]


#: The fields of the brief rows (``ObservationView.brief``): what a rule-based agent reads of a
#: patient or a unit (the heuristic and the planner's rollouts), in this order; a brief
#: patient's vitals hold only their score.
BRIEF_FIELDS: dict[str, tuple[str, ...]] = {
    "patients": ("patient_id", "condition", "priority", "status", "node", "sex", "age", "vitals",
                 "blood_type", "destination", "hospital", "eta_min", "blood_reserved",
                 "minutes_since_call", "minutes_since_onset"),
    "ambulances": ("ambulance_id", "kind", "status", "node", "next_node", "busy_min", "patient_id"),
    "calls": ("call_id", "node", "report", "priority", "status", "waiting_min"),
}


def _patients_brief(world: World, statuses: frozenset[str], memo: Memo) -> list[dict[str, Any]]:
    """The brief rows of the visible patients in ``statuses`` (``BRIEF_FIELDS``)."""
    reserved = _reserved_by_patient(world) if world.allocations else {}
    clock = world.clock
    out = []
    for p in world.patients.values():
        status = p.status
        if status not in statuses or not p.visible:
            continue
        since = clock - p.appeared_at
        out.append({
            "patient_id": p.patient_id,
            "condition": p.condition,
            "priority": CONDITIONS[p.condition].true_priority,
            "status": status,
            "node": p.node,
            "sex": p.sex,
            "age": p.age,
            "vitals": {"score": 0.0 if status == "deceased" else round2(shown_reserve(p))},
            "blood_type": p.blood_type if p.blood_type_known else None,
            "destination": p.destination,
            "hospital": p.hospital,
            "eta_min": patient_eta(world, p) if status in ETA_STATES else None,
            "blood_reserved": reserved.get(p.patient_id) or {},
            "minutes_since_call": since,
            "minutes_since_onset": since + p.onset_min,
        })
    return out


def _ambulances_brief(world: World, statuses: frozenset[str], memo: Memo) -> list[dict[str, Any]]:
    """The brief rows of the units in ``statuses`` (``BRIEF_FIELDS``); a loop, not a
    comprehension (which costs a frame of its own: a sixth of this, with so few rows)."""
    clock = world.clock
    out = []
    for a in world.ambulances.values():
        if a.status in statuses:
            trip = a.trip
            busy = a.busy_until - clock if a.status in ("on_scene", "at_hospital") else None
            out.append({
                "ambulance_id": a.ambulance_id,
                "kind": a.kind,
                "status": a.status,
                "node": a.node,
                "next_node": trip.position(clock)[1] if trip else None,
                "busy_min": None if busy is None else max(0, busy),
                "patient_id": a.patient_id if _known(world, a.patient_id) else None,
            })
    return out


def _calls_brief(world: World, statuses: frozenset[str], memo: Memo) -> list[dict[str, Any]]:
    """The brief rows of the open calls in ``statuses`` (``BRIEF_FIELDS``); a loop, like
    ``_ambulances_brief``."""
    clock = world.clock
    out = []
    for c in open_calls(world, memo):
        if c.status in statuses:
            out.append({
                "call_id": c.call_id,
                "node": c.node,
                "report": c.report,
                "priority": c.priority,
                "status": c.status,
                "waiting_min": clock - c.received_at,
            })
    return out


BRIEF_ROWS: dict[str, Callable[[World, frozenset[str], Memo], list[dict[str, Any]]]] = {
    "patients": _patients_brief,
    "ambulances": _ambulances_brief,
    "calls": _calls_brief,
}


