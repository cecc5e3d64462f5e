"""What the agent sees: the structured observation and the currently legal actions.

Hidden on purpose: a caller's true condition (only the report is shown until a crew is on
scene), a patient's physiological reserve (shown only through vitals), blood types before a
lab result, per-OR timers (``query_or_status`` reveals them), and future calls.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterator, Mapping
from itertools import islice
from typing import Any, NamedTuple

from .city import PRAKASHNAGAR
from .conditions import CONDITIONS
from .dynamics.blood import COMPATIBLE_DONORS, emergency_group_o
from .dynamics.rooms import care_for
from .handlers import BEFORE_ARRIVAL, DISPATCHABLE
from .params import (
    GCS_MIN,
    MAX_BLOOD_UNITS_PER_ACTION,
    VITALS_AT_ZERO_RESERVE,
    VITALS_AT_ZERO_RESERVE_STROKE,
    VITALS_BASELINE,
)
from .rounding import round2
from .state import World
from .triage import PRIORITIES
from .types import FINAL_PATIENT_STATES, OPEN_CALL_STATES, Call, Hospital, Patient

MAX_UNITS = MAX_BLOOD_UNITS_PER_ACTION
Legal = dict[str, list[dict[str, list[Any]]]]
Memo = dict[str, Any]  # what an episode's views reuse (``ObservationView``)


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


def _patient(world: World, p: Patient, reserved: dict[str, int] | None = None) -> dict[str, Any]:
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


def _ambulance(world: World, amb) -> dict[str, Any]:
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


def _hospital(world: World, h, parts: tuple[Any, Any, Any] | None = None) -> dict[str, Any]:
    """A hospital's row; ``parts``: its rooms, specialists and blood parts when already made
    (``_hospital_reusing_row``), each made here when None."""
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


def _call(world: World, c) -> dict[str, Any]:
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


def _roads(world: World) -> dict[str, Any]:
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


def _alerts(world: World) -> list[str]:
    alerts = [f"{d.text} (until ~t{d.end})" for d in world.disruptions if d.active]
    for h in _overcrowded(world):
        alerts.append(f"{h.hospital_id} overcrowded: on diversion until t{h.diverted_until}")
    if world.news_cycle_at is not None:
        alerts.append(f"news cycle since t{world.news_cycle_at}: {world.news_cycle_reason}")
    return alerts


def alert_count(world: World) -> int:
    """``len(_alerts(world))`` without formatting the texts (the Gymnasium features)."""
    active = sum(1 for d in world.disruptions if d.active)
    return active + len(_overcrowded(world)) + (world.news_cycle_at is not None)


def _overcrowded(world: World) -> list:
    return [h for h in world.hospitals.values()
            if world.diverted(h.hospital_id) and h.diversion_reason == "overcrowded"]


def _mutual_aid(world: World) -> dict[str, Any]:
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


class StepContext(NamedTuple):
    """What the observation shows beside the world: the episode's own bookkeeping (a named tuple:
    made at every step, and a frozen dataclass is several times slower to make)."""

    step: int
    max_steps: int
    done: bool
    preview: float
    last_error: str | None
    events: list[str]
    minutes: int = 0  # simulated minutes the last decision took


# key -> how it is built, in the observation's key order (one source for the dict and the view)
_PARTS: dict[str, Callable[[World, StepContext], Any]] = {
    "task_id": lambda w, c: w.task.task_id,
    "seed": lambda w, c: w.seed,
    "step": lambda w, c: c.step,
    "max_steps": lambda w, c: c.max_steps,
    "clock_min": lambda w, c: w.clock,
    "minutes": lambda w, c: c.minutes,
    "horizon_min": lambda w, c: w.task.horizon_min,
    "phase": lambda w, c: w.task.phase,
    "done": lambda w, c: c.done,
    "patients": lambda w, c: [_patient(w, p) for p in w.patients.values() if p.visible],
    "ambulances": lambda w, c: [_ambulance(w, a) for a in w.ambulances.values()],
    "hospitals": lambda w, c: [_hospital(w, h) for h in w.hospitals.values()],
    "calls": lambda w, c: [_call(w, x) for x in visible_calls(w)],
    "roads": lambda w, c: _roads(w),
    "alerts": lambda w, c: _alerts(w),
    "events": lambda w, c: list(c.events),
    "mutual_aid": lambda w, c: _mutual_aid(w),
    "query_result": lambda w, c: w.query_result,
    "score_preview": lambda w, c: c.preview,
    "last_action_error": lambda w, c: c.last_error,
    "legal_actions": lambda w, c: {} if c.done else legal_actions(w),
}
# Every city but Prakashnagar (whose map is documented) shows its public map as well
# (``City.public_map``: nodes, roads and base minutes, riverside roads, hub, entry, stations).
_PARTS_WITH_MAP: dict[str, Callable[[World, StepContext], Any]] = _PARTS | {
    "city": lambda w, c: w.city.public_map,
}


def _parts_of(world: World) -> dict[str, Callable[[World, StepContext], Any]]:
    return _PARTS if world.city is PRAKASHNAGAR else _PARTS_WITH_MAP


def build_observation(
    world: World,
    *,
    step: int,
    max_steps: int,
    done: bool,
    preview: float,
    last_error: str | None,
    events: list[str],
    minutes: int = 0,
) -> dict[str, Any]:
    ctx = StepContext(step, max_steps, done, preview, last_error, events, minutes)
    return {key: part(world, ctx) for key, part in _parts_of(world).items()}


def _patients_reusing_rows(world: World, memo: dict[str, Any]) -> list[dict[str, Any]]:
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
            out.append(_patient(world, p, reserved.get(p.patient_id) or {}))
            continue
        key = (p.status, p.blood_type_known)
        cached = rows.get(p.patient_id)
        if cached is None or cached[0] != key:
            row = _patient(world, p, reserved.get(p.patient_id) or {})
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


def _hospitals_reusing_rows(world: World, memo: dict[str, Any]) -> list[dict[str, Any]]:
    """The hospitals' dicts, each reused (read only) while every field it shows is unchanged."""
    return [_hospital_reusing_row(world, h, memo) for h in world.hospitals.values()]


def _hospital_reusing_row(world: World, h: Hospital, memo: dict[str, Any]) -> dict[str, Any]:
    """``_hospital(world, h)``, reused (read only) from an earlier step while every field it shows
    is unchanged; when some changed, its rooms, specialists and blood parts still are while
    theirs are not."""
    key = _hospital_state(world, h)
    rows: dict[str, tuple[tuple, dict[str, Any]]] | None = memo.get("hospital_rows")
    if rows is None:
        rows = memo["hospital_rows"] = {}
    cached = rows.get(h.hospital_id)
    if cached is None:
        cached = rows[h.hospital_id] = (key, _hospital(world, h))
    elif cached[0] != key:  # the row again, with the parts of it that did not change
        (_, old_rooms, old_specialists, old_blood), old = cached
        _, rooms, specialists, blood = key
        parts = (old["ors"] if rooms == old_rooms else None,
                 old["specialists"] if specialists == old_specialists else None,
                 old["blood"] if blood == old_blood else None)
        cached = rows[h.hospital_id] = (key, _hospital(world, h, parts))
    return cached[1]


_REUSING: dict[str, Callable[[World, dict[str, Any]], list[dict[str, Any]]]] = {
    "patients": _patients_reusing_rows,
    "hospitals": _hospitals_reusing_rows,
    "calls": lambda world, memo: [_call(world, c) for c in open_calls(world, memo)],
}


#: The fields of the brief rows (``ObservationView.brief``): what a rule-based agent reads of a
#: patient or a unit (the heuristic and the planner's rollouts), in this order; a brief
#: patient's vitals hold only their score.
BRIEF_FIELDS: dict[str, tuple[str, ...]] = {
    "patients": ("patient_id", "condition", "priority", "status", "node", "sex", "age", "vitals",
                 "blood_type", "destination", "hospital", "eta_min", "blood_reserved",
                 "minutes_since_call", "minutes_since_onset"),
    "ambulances": ("ambulance_id", "kind", "status", "node", "next_node"),
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
            out.append({
                "ambulance_id": a.ambulance_id,
                "kind": a.kind,
                "status": a.status,
                "node": a.node,
                "next_node": trip.position(clock)[1] if trip else None,
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


_BRIEF: dict[str, Callable[[World, frozenset[str], Memo], list[dict[str, Any]]]] = {
    "patients": _patients_brief,
    "ambulances": _ambulances_brief,
    "calls": _calls_brief,
}


def _row_of(rows: list[dict[str, Any]], id_field: str, wanted: str) -> dict[str, Any]:
    """The row whose ``id_field`` is ``wanted`` (a KeyError if none is)."""
    for row in rows:
        if row[id_field] == wanted:
            return row
    raise KeyError(wanted)


class ObservationView(Mapping[str, Any]):
    """The observation, each top-level part built on first access (``CodeRedSim.observation_view``).

    Reading every key gives exactly ``build_observation``'s dict (tests/sim/test_incremental_core.py);
    an agent that reads only what it needs (the heuristic skips alerts, events, the query result)
    pays only for that: ``legal_actions`` is a ``LegalActionsView`` (only the sections asked
    about are built), ``brief`` gives the rows in some states restricted to the fields a
    rule-based agent reads, ``hospital`` one hospital's row and ``call`` one open call's
    (tests/sim/test_incremental_view.py).
    Parts that rarely change are reused from earlier views (``memo``, kept by the episode): the
    dicts of patients in a final state and of unchanged hospitals, the open calls, the blood
    options while the blood state behind them is the same. A view describes the world when it
    was made: read it before the next step, and never change what it returns."""

    __slots__ = ("_briefs", "_built", "_ctx", "_hospitals", "_memo", "_parts", "_world")

    def __init__(self, world: World, ctx: StepContext, memo: dict[str, Any]) -> None:
        self._world, self._ctx, self._memo = world, ctx, memo
        self._parts = _parts_of(world)
        self._built: dict[str, Any] = {}
        self._briefs: dict[tuple[str, frozenset[str]], list[dict[str, Any]]] = {}
        self._hospitals: dict[str, dict[str, Any]] = {}  # rows read one by one (``hospital``)

    def brief(self, key: str, statuses: frozenset[str]) -> list[dict[str, Any]]:
        """The rows of ``self[key]`` ("patients", "ambulances" or "calls") whose status is in ``statuses``,
        in order, each restricted to ``BRIEF_FIELDS[key]`` (a patient's vitals to their score):
        what a rule-based agent reads, at a fraction of the full rows' cost (no vitals, waiting
        list or rows of patients in other states are built). Built once per view."""
        rows = self._briefs.get((key, statuses))
        if rows is None:
            rows = self._briefs[key, statuses] = _BRIEF[key](self._world, statuses, self._memo)
        return rows

    def __getitem__(self, key: str) -> Any:
        built = self._built
        if key in built:
            return built[key]
        if key in _REUSING:
            value = built[key] = _REUSING[key](self._world, self._memo)
        elif key == "legal_actions":
            value = built[key] = {} if self._ctx.done else LegalActionsView(self._world, self._memo)
        else:
            value = built[key] = self._parts[key](self._world, self._ctx)
        return value

    def hospital(self, hospital_id: str) -> dict[str, Any]:
        """The row of ``self["hospitals"]`` of this hospital, without building the others'."""
        row = self._hospitals.get(hospital_id)
        if row is None:
            rows = self._built.get("hospitals")
            if rows is not None:
                row = _row_of(rows, "hospital_id", hospital_id)
            else:
                row = _hospital_reusing_row(self._world, self._world.hospitals[hospital_id], self._memo)
            self._hospitals[hospital_id] = row
        return row

    def call(self, call_id: str) -> dict[str, Any]:
        """The row of ``self["calls"]`` of this open call, without building the others'."""
        rows = self._built.get("calls")
        if rows is not None:
            return _row_of(rows, "call_id", call_id)
        call = self._world.calls.get(call_id)
        if call is None or call.status not in OPEN_CALL_STATES:  # a closed or future call: not shown
            raise KeyError(call_id)
        return _call(self._world, call)

    def travel_minutes(self) -> list[list[float]]:
        """Travel minutes by road now between every pair of nodes (``city.NODE_IDS`` order; inf:
        cut off), from what ``roads`` shows (closures, congestion, peak hour). Read only; the
        same table object while the road state is the same."""
        return self._world.net.minutes_table()

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self._parts else default

    def __contains__(self, key: object) -> bool:
        return key in self._parts

    def __iter__(self) -> Iterator[str]:
        return iter(self._parts)

    def __len__(self) -> int:
        return len(self._parts)


# ------------------------------------------------------------------------------ legal actions


def legal_actions(world: World, memo: dict[str, Any] | None = None) -> Legal:
    """Legal actions now: action_type -> list of options; each option maps every parameter to
    its allowed values, and every combination inside one option is legal. With ``memo`` (the
    observation view's), the blood options are reused, not copied, while their inputs are
    unchanged."""
    legal: Legal = {}
    visible = _visible_patients(world)
    for section, _ in _LEGAL_SECTIONS:
        section(world, legal, visible, memo)
    return legal


def _visible_patients(world: World) -> list[Patient]:
    visible = []  # a loop: a comprehension would cost a frame of its own
    for p in world.patients.values():
        if p.visible:
            visible.append(p)
    return visible


def _patient_dispatch_legal(world: World, legal: Legal, visible: list[Patient], memo: Memo | None) -> None:
    """Phase 1: any free unit to any patient waiting for one."""
    if world.task.phase != 1:
        return
    waiting = [p.patient_id for p in visible if p.status == "awaiting_unit"]
    units = [a.ambulance_id for a in world.ambulances.values() if a.status in DISPATCHABLE]
    if waiting and units:
        legal["dispatch_ambulance"] = [{"ambulance_id": units, "patient_id": waiting}]


def _call_dispatch_legal(world: World, legal: Legal, visible: list[Patient], memo: Memo | None) -> None:
    """Phase 2: units to calls by kind. Built every time: as quick as a key of what it reads
    (the free units and ``World.version("calls")``) would be to make."""
    if world.task.phase == 1:
        return
    pending = []
    for c in open_calls(world, memo):
        if c.status == "pending":
            pending.append(c.call_id)
    if not pending:
        return
    units: dict[str, list[str]] = {"ALS": [], "BLS": []}
    for a in world.ambulances.values():
        if a.status in DISPATCHABLE and a.kind in units:
            units[a.kind].append(a.ambulance_id)
    for kind, name in (("ALS", "dispatch_als"), ("BLS", "dispatch_bls")):
        if units[kind]:
            legal[name] = [{"ambulance_id": units[kind], "call_id": pending}]


def _triage_legal(world: World, legal: Legal, visible: list[Patient], memo: Memo | None) -> None:
    """Phase 2: the triage of open calls (a dispatched call not as P4). With ``memo``, reused
    (read only) while no call changed (``World.version("calls")``)."""
    if world.task.phase == 1:
        return
    if memo is None:
        _triage_options(world, legal, memo)
    else:
        legal.update(_kept(memo, "triage", world, world.version("calls"),
                           lambda part: _triage_options(world, part, memo)))


def _triage_options(world: World, legal: Legal, memo: Memo | None) -> None:
    pending, dispatched = [], []
    for c in open_calls(world, memo):
        if c.status == "pending":
            pending.append(c.call_id)
        elif c.status == "dispatched":
            dispatched.append(c.call_id)
    options = []
    if pending:
        options.append({"call_id": pending, "priority": list(PRIORITIES)})
    if dispatched:
        options.append({"call_id": dispatched, "priority": [q for q in PRIORITIES if q != "P4"]})
    if options:
        legal["triage_call"] = options


def _kept(memo: Memo, name: str, world: World, key: Any, build: Callable[[Legal], None]) -> Legal:
    """Section ``name`` of ``world`` kept in ``memo`` (read only), built again by ``build`` only
    when ``key`` (what it reads, or a version of it) changed."""
    kept = memo.get(name)
    if kept is not None:
        kept_world, kept_key, part = kept
        if kept_world is world and kept_key == key:
            return part
    part = {}
    build(part)
    memo[name] = (world, key, part)
    return part


def _assign_legal(world: World, legal: Legal, visible: list[Patient], memo: Memo | None) -> None:
    assignable = [p.patient_id for p in visible if p.status in BEFORE_ARRIVAL]
    open_ids = [h for h in world.hospitals if not world.diverted(h)]
    if assignable and open_ids:
        legal["assign_hospital"] = [{"patient_id": assignable, "hospital_id": open_ids}]


RoomOptions = Callable[[Hospital], dict[str, list[Any]] | None]


def _rooms_section(name: str, options_at: RoomOptions) -> _Section:
    """The section of the room action ``name``: an option per hospital that has one
    (``options_at``). With ``memo``, reused (read only) while ``World.version("rooms")`` is the same."""

    def section(world: World, legal: Legal, visible: list[Patient], memo: Memo | None) -> None:
        if memo is None:
            _room_options(world, legal, name, options_at)
        else:
            legal.update(_kept(memo, name, world, world.version("rooms"),
                               lambda part: _room_options(world, part, name, options_at)))

    return section


def _room_options(world: World, legal: Legal, name: str, options_at: RoomOptions) -> None:
    options = [option for h in world.hospitals.values() if (option := options_at(h)) is not None]
    if options:
        legal[name] = options


def _prepare_at(h: Hospital) -> dict[str, list[Any]] | None:
    procs = sorted({proc for r in h.ors if r.state == "idle" for proc in r.procedures})
    return {"hospital_id": [h.hospital_id], "procedure": procs} if procs else None


def _page_at(h: Hospital) -> dict[str, list[Any]] | None:
    on_call = [s.specialty for s in h.specialists.values() if s.state == "on_call"]
    return {"hospital_id": [h.hospital_id], "specialty": on_call} if on_call else None


def _preempt_at(h: Hospital) -> dict[str, list[Any]] | None:
    electives = [r.or_id for r in h.ors if r.state == "in_use" and r.elective]
    return {"hospital_id": [h.hospital_id], "or_id": electives} if electives else None


def _blood_section(world: World, legal: Legal, visible: list[Patient], memo: Memo | None) -> None:
    if memo is None:
        _blood_legal(world, legal, visible)
    else:
        _blood_legal_reused(world, legal, visible, memo)


def _mutual_aid_legal(world: World, legal: Legal, visible: list[Patient], memo: Memo | None) -> None:
    if world.task.mutual_aid_limit > len(world.mutual_aid):
        options: list[dict[str, list[Any]]] = [{}]
        targets = [p.patient_id for p in visible if p.status == "awaiting_unit"]
        targets += [c.call_id for c in open_calls(world, memo) if c.status == "pending"]
        if targets:
            options.append({"target_id": targets})
        legal["request_mutual_aid"] = options


def _always_legal(world: World, legal: Legal, visible: list[Patient], memo: Memo | None) -> None:
    """The same for the whole episode (a world's hospitals never change): kept in ``memo``."""
    if memo is None:
        _always_options(world, legal)
    else:
        legal.update(_kept(memo, "always", world, None, lambda part: _always_options(world, part)))


def _always_options(world: World, legal: Legal) -> None:
    legal["query_or_status"] = [{"hospital_id": list(world.hospitals)}]
    legal["maintain_plan"] = [{}]


#: ``legal_actions`` in independent sections, in the order of its keys, each with the action
#: types it decides (one section per type), so ``LegalActionsView`` builds just the sections of
#: the types it is asked about.
_Section = Callable[[World, Legal, list[Patient], Memo | None], None]
_LEGAL_SECTIONS: tuple[tuple[_Section, tuple[str, ...]], ...] = (
    (_patient_dispatch_legal, ("dispatch_ambulance",)),
    (_call_dispatch_legal, ("dispatch_als", "dispatch_bls")),
    (_triage_legal, ("triage_call",)),
    (_assign_legal, ("assign_hospital",)),
    (_rooms_section("prepare_or", _prepare_at), ("prepare_or",)),
    (_rooms_section("page_specialist", _page_at), ("page_specialist",)),
    (_rooms_section("preempt_or", _preempt_at), ("preempt_or",)),
    (_blood_section, ("allocate_blood", "query_blood_type", "transfer_blood")),
    (_mutual_aid_legal, ("request_mutual_aid",)),
    (_always_legal, ("query_or_status", "maintain_plan")),
)
_SECTION_OF: dict[str, int] = {name: i for i, (_, names) in enumerate(_LEGAL_SECTIONS) for name in names}


class LegalActionsView(Mapping[str, list[dict[str, list[Any]]]]):
    """``legal_actions(world, memo)`` of a running episode as a read-only mapping that builds
    only the sections (``_LEGAL_SECTIONS``) of the action types it is asked about: ``in``,
    ``[]`` and ``get`` of one type cost one section; iterating, ``len`` or comparing builds the
    whole dict once, in ``legal_actions``'s key order (tests/sim/test_incremental_view.py). A copy
    or a pickle is that plain dict. Never empty (``maintain_plan`` is always legal while the
    episode runs). Like the view, it describes the world when it was made."""

    __slots__ = ("_memo", "_sections", "_visible", "_whole", "_world")

    def __init__(self, world: World, memo: dict[str, Any]) -> None:
        self._world, self._memo = world, memo
        self._visible: list[Patient] | None = None
        self._sections: list[Legal | None] = [None] * len(_LEGAL_SECTIONS)
        self._whole: Legal | None = None

    def _section(self, index: int) -> Legal:
        part = self._sections[index]
        if part is None:
            visible = self._visible
            if visible is None:
                visible = self._visible = _visible_patients(self._world)
            part = self._sections[index] = {}
            _LEGAL_SECTIONS[index][0](self._world, part, visible, self._memo)
        return part

    def whole(self) -> Legal:
        """The plain dict (``legal_actions(world, memo)``), built once."""
        if self._whole is None:
            whole: Legal = {}
            for index in range(len(_LEGAL_SECTIONS)):
                whole.update(self._section(index))
            self._whole = whole
        return self._whole

    def __contains__(self, key: object) -> bool:
        index = _SECTION_OF.get(key) if isinstance(key, str) else None
        return index is not None and key in self._section(index)

    def __getitem__(self, key: str) -> list[dict[str, list[Any]]]:
        index = _SECTION_OF.get(key) if isinstance(key, str) else None
        if index is None:
            raise KeyError(key)
        return self._section(index)[key]

    def get(self, key: str, default: Any = None) -> Any:
        index = _SECTION_OF.get(key) if isinstance(key, str) else None
        return default if index is None else self._section(index).get(key, default)

    def __bool__(self) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self.whole())

    def __len__(self) -> int:
        return len(self.whole())

    def __repr__(self) -> str:
        return repr(self.whole())

    def __deepcopy__(self, memo: dict[int, Any]) -> Legal:
        return copy.deepcopy(self.whole(), memo)

    def __reduce__(self) -> tuple[type[dict], tuple[Legal]]:
        return dict, (self.whole(),)


def _blood_legal_reused(world: World, legal: Legal, visible: list[Patient], memo: Memo) -> None:
    """``_blood_legal`` keyed by everything it reads: each patient's donor types and whether a
    typing can be asked for, the stock (``World.version("stock")``), and which roads are closed.
    When that key changed, each hospital's part (``_HospitalBlood``) is still reused while its
    own stock and the closed roads are the same (a step changes one hospital's stock, or none)."""
    patients = tuple(
        (p.patient_id, p.blood_type) if p.blood_type_known
        else (p.patient_id, None, p.o_pos_safe(), p.blood_type_ready_at is None)
        for p in visible
        if p.status not in FINAL_PATIENT_STATES
    )
    closed = frozenset(world.net.closed)

    def build(part: Legal) -> None:
        kept = memo.get("blood_hospitals")
        if kept is None or kept[0] is not world:
            kept = memo["blood_hospitals"] = (world, {})
        _blood_legal(world, part, visible, (kept[1], closed))

    legal.update(_kept(memo, "blood", world, (patients, world.version("stock"), closed), build))


class _HospitalBlood(NamedTuple):
    """What the blood options read of one hospital: the types in stock with their units (in
    stock order), and its transfer option (None without stock or a reachable hospital)."""

    stock: dict[str, int]
    transfer: dict[str, list[Any]] | None
    # donor types -> (the types in stock, the units one allocation may take), None when none
    # is in stock: filled as donor groups are met (the part is dropped when its stock changes)
    allocations: dict[tuple[str, ...], tuple[list[str], list[int]] | None]


# hospital id -> ((its stock items, the closed roads) when its part was made, the part)
_BloodParts = dict[str, tuple[tuple[Any, frozenset], _HospitalBlood]]


def _hospital_blood(world: World, src: Hospital, hospitals: list[Hospital]) -> _HospitalBlood:
    stock = {t: n for t, n in src.blood.items() if n > 0}
    transfer = None
    if stock:
        minutes = world.net.minutes
        targets = [d.hospital_id for d in hospitals if d is not src and minutes(src.node, d.node) != math.inf]
        if targets:
            units = list(range(1, min(MAX_UNITS, min(stock.values())) + 1))
            transfer = {"from_hospital_id": [src.hospital_id], "to_hospital_id": targets,
                        "blood_type": list(stock), "units": units}
    return _HospitalBlood(stock, transfer, {})


def _allocation(part: _HospitalBlood, donors: tuple[str, ...]) -> tuple[list[str], list[int]] | None:
    """The donor types a hospital holds and the units one allocation may take (None: none held)."""
    if donors in part.allocations:
        return part.allocations[donors]
    stock = part.stock
    types = [t for t in donors if t in stock]
    found = part.allocations[donors] = (
        (types, list(range(1, min(MAX_UNITS, min([stock[t] for t in types])) + 1))) if types else None
    )
    return found


def _blood_legal(world: World, legal: Legal, visible: list[Patient],
                 reuse: tuple[_BloodParts, frozenset] | None = None) -> None:
    """The blood sections; with ``reuse`` (the kept hospital parts, the closed roads), a
    hospital's part is made again only when its stock or the roads changed."""
    by_donors: dict[tuple[str, ...], list[str]] = {}
    query = []
    for p in visible:
        if p.status in FINAL_PATIENT_STATES:
            continue
        if p.blood_type_known:
            donors = COMPATIBLE_DONORS[p.blood_type]
        else:
            if p.blood_type_ready_at is None:
                query.append(p.patient_id)
            donors = emergency_group_o(p)
        ids = by_donors.get(donors)
        if ids is None:
            by_donors[donors] = [p.patient_id]
        else:
            ids.append(p.patient_id)
    hospitals = list(world.hospitals.values())
    if reuse is None:
        blood = [_hospital_blood(world, h, hospitals) for h in hospitals]
    else:
        parts, closed = reuse
        blood = []
        for h in hospitals:
            inputs = (tuple(h.blood.items()), closed)
            kept = parts.get(h.hospital_id)
            if kept is None or kept[0] != inputs:
                kept = parts[h.hospital_id] = (inputs, _hospital_blood(world, h, hospitals))
            blood.append(kept[1])
    allocate = []
    for donors, patient_ids in by_donors.items():  # patients who can take the same types share an option
        for h, part in zip(hospitals, blood, strict=True):
            found = _allocation(part, donors)
            if found is not None:
                allocate.append({"patient_id": patient_ids, "hospital_id": [h.hospital_id],
                                 "blood_type": found[0], "units": found[1]})
    if allocate:
        legal["allocate_blood"] = allocate
    if query:
        legal["query_blood_type"] = [{"patient_id": query}]
    transfer = [part.transfer for part in blood if part.transfer is not None]
    if transfer:
        legal["transfer_blood"] = transfer
