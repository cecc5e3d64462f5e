"""The memoised row encoders: each group's discrete part is a pure function of a small key (cached),
its per-minute columns are rewritten every build (``_Rows`` keeps the previous build)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from operator import attrgetter
from typing import Any

import numpy as np

from ..sim.city import edge_key
from ..sim.conditions import CONDITIONS
from ..sim.obs_rows import ETA_STATES, patient_eta, shown_reserve, vitals_values, waiting_for
from ..sim.params import BLOOD_TYPES, GCS_MIN, MEMO_ENTRIES, PROCEDURES, SPECIALTIES
from ..sim.state import World
from ..sim.triage import CALLBACK_PREFIX, report_facts
from ..sim.types import OR_STATES, OUTCOME_PATIENT_STATES, SPECIALIST_STATES, Patient
from .schema import (
    _A,
    _A_DEST,
    _A_NODE,
    _A_STATUS,
    _C,
    _C_NODE,
    _C_TRIAGED,
    _EDGE_INDEX,
    _H,
    _H_BLOOD,
    _H_OR,
    _H_ROOM,
    _H_SPECIALIST,
    _P,
    _P_AT,
    _P_CONDITION,
    _P_DEST,
    _P_NODE,
    _P_PRIORITY,
    _P_STATUS,
    AMBULANCE_FEATURES,
    BYSTANDER_CUE,
    CALL_FEATURES,
    HOSPITAL_FEATURES,
    HOSPITAL_IDS,
    MAX_AMBULANCES,
    MAX_CALLS,
    MAX_PATIENTS,
    PATIENT_FEATURES,
    REPORT_CUES,
)


class _Rows:
    """One entity group's rows (a view into the builder's buffer), kept between builds. A row is
    made of parts (the whole row by default): ``keys[part][i]`` is the key whose memoised columns
    slot ``i`` holds for that part (``None``: zeros); ``n`` rows are present. The per-build
    columns are not written here: each group appends their values to the build's list, in the
    order of its ``dynamic`` flat indices (``FeatureBuilder`` writes them all at once)."""

    __slots__ = ("dynamic", "keys", "n", "per_row", "rows", "waiting")

    def __init__(self, rows: np.ndarray, offset: int, columns: np.ndarray, parts: int = 1) -> None:
        self.rows = rows
        n_rows, width = rows.shape
        self.keys: list[list[Any]] = [[None] * n_rows for _ in range(parts)]
        self.n = 0
        self.waiting: dict[str, tuple[Any, ...]] = {}  # patient rows: ``_kept_waiting`` (not copied)
        self.per_row = len(columns)
        # flat buffer index of every per-build value, row after row (the first n rows' are used)
        self.dynamic = (offset + np.arange(n_rows)[:, None] * width + columns[None, :]).ravel()

    def clear(self, start: int, stop: int) -> None:
        self.rows[start:stop] = 0.0
        for keys in self.keys:
            keys[start:stop] = [None] * (stop - start)

    def finish(self, n: int) -> int:
        """``n`` rows are present now (the rows after them are cleared); returns ``n``."""
        if n < self.n:
            self.clear(n, self.n)
        self.n = n
        return n


def _dynamic_columns(*spans: slice) -> np.ndarray:
    """The column indices of a group's per-build values, in the order they are produced."""
    return np.array([c for span in spans for c in range(span.start, span.stop)], np.intp)


def _frozen_row(row: Sequence[float]) -> np.ndarray:
    out = np.array(row, np.float32)
    out.flags.writeable = False  # shared by every slot that copies it
    return out


def _slot_patients(patients: list[Patient]) -> list[Patient]:
    """At most MAX_PATIENTS, in observation order; finished patients are dropped first."""
    extra = len(patients) - MAX_PATIENTS
    if extra <= 0:
        return patients
    finished = [i for i, p in enumerate(patients) if p.status in OUTCOME_PATIENT_STATES]
    drop = set(finished[:extra])
    return [p for i, p in enumerate(patients) if i not in drop][:MAX_PATIENTS]


def _c(x: float) -> float:
    """Clip a scaled count into [0, 1]."""
    return 0.0 if x < 0 else 1.0 if x > 1 else x


def _ambulances(group: _Rows, world: World, slots: dict[tuple[str, str], set], dynamic: list[float]) -> int:
    """Write the ambulance rows' memoised parts, append their ``_A_DYNAMIC`` values; returns how
    many rows are present."""
    clock = world.clock
    n = 0
    dispatchable = (
        slots.get(("dispatch_ambulance", "ambulance_id"), set())
        | slots.get(("dispatch_als", "ambulance_id"), set())
        | slots.get(("dispatch_bls", "ambulance_id"), set())
    )
    patients = world.patients
    keys, rows = group.keys[0], group.rows
    for i, amb in enumerate(list(world.ambulances.values())[:MAX_AMBULANCES]):
        trip, status = amb.trip, amb.status
        known = amb.patient_id is not None and patients[amb.patient_id].visible
        key = (amb.kind == "ALS", amb.mutual_aid, status, amb.node, None if trip is None else trip.target,
               known or amb.call_id is not None, amb.held, amb.ambulance_id in dispatchable)
        if keys[i] != key:
            keys[i] = key
            rows[i] = _ambulance_row(key)
        eta = 0.0 if trip is None else _c(trip.eta_minutes(clock) / 30)
        busy = _c(max(0, amb.busy_until - clock) / 30) if status in _BUSY_STATES else 0.0
        dynamic += (eta, busy)
        n += 1
    return group.finish(n)


_BUSY_STATES = frozenset({"on_scene", "at_hospital"})


_A_ETA, _A_BUSY = _A["eta"], _A["busy"]


_A_DYNAMIC = _dynamic_columns(slice(_A_ETA, _A_BUSY + 1))


assert _A_BUSY == _A_ETA + 1


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _ambulance_row(key: tuple[bool, bool, str, str, str | None, bool, bool, bool]) -> np.ndarray:
    return _frozen_row(_ambulance_static(*key))


def _ambulance_static(als: bool, mutual_aid: bool, status: str, node: str, destination: str | None,
                      has_job: bool, held: bool, can_dispatch: bool) -> tuple[float, ...]:
    """An ambulance row but for its ETA and busy time (``destination`` None without a trip)."""
    row = [0.0] * len(AMBULANCE_FEATURES)
    row[_A["present"]] = 1.0
    row[_A["als"]] = float(als)
    row[_A["mutual_aid"]] = float(mutual_aid)
    row[_A_STATUS[status]] = 1.0
    row[_A_NODE[node]] = 1.0
    if destination is not None:
        row[_A_DEST[destination]] = 1.0
    row[_A["has_job"]] = float(has_job)
    row[_A["held"]] = float(held)
    row[_A["can_dispatch"]] = float(can_dispatch)
    return tuple(row)


_PATIENT_FLAGS = tuple(
    (_P[name], key)
    for name, key in (
        ("can_dispatch_to", ("dispatch_ambulance", "patient_id")),
        ("can_assign_hospital", ("assign_hospital", "patient_id")),
        ("can_allocate_blood", ("allocate_blood", "patient_id")),
        ("can_query_blood_type", ("query_blood_type", "patient_id")),
        ("can_mutual_aid", ("request_mutual_aid", "target_id")),
    )
)


def _patients(group: _Rows, world: World, patients: list[Patient], slots: dict[tuple[str, str], set],
              dynamic: list[float]) -> int:
    """Write the patient rows' memoised parts; append each patient's ``_P_DYNAMIC`` values: vitals,
    minutes since the call, ETA, what they wait for, whether the blood type is known, the units
    reserved."""
    f0, f1, f2, f3, f4 = (slots.get(key, ()) for _, key in _PATIENT_FLAGS)
    reserved = _reserved_units(world) if world.allocations else None
    keys, rows, kept_waiting = group.keys[0], group.rows, group.waiting
    clock, last_vitals = world.clock, _LAST_VITALS
    for i, p in enumerate(patients):  # the hottest loop of a build: ``_Rows.put`` inlined
        pid, status = p.patient_id, p.status
        key = (p.condition, status, p.destination, p.hospital, p.node, p.ambulance_id is not None,
               p.blood_type_known, p.secondary, pid in f0, pid in f1, pid in f2, pid in f3, pid in f4)
        if keys[i] != key:
            keys[i] = key
            rows[i] = _patient_row(key)
        if status == "deceased":
            dynamic += _DEAD_VITALS
        else:
            inputs = (shown_reserve(p), p.hr0, p.sbp0, p.condition == "stroke")
            last = last_vitals.get(pid)
            if last is None or last[0] != inputs:
                last = last_vitals[pid] = (inputs, _vitals_columns(*inputs))
            dynamic += last[1]
        minutes = (clock - p.appeared_at) / 180
        dynamic += (0.0 if minutes < 0 else 1.0 if minutes > 1 else minutes,
                    _c((patient_eta(world, p) or 0) / 30) if status in ETA_STATES else 0.0)
        dynamic += _kept_waiting(world, p, kept_waiting) if status == "at_hospital" else _NOT_WAITING
        dynamic += (1.0 if p.blood_type_known else 0.0,
                    0.0 if reserved is None else _c(reserved.get(pid, 0) / 6))
    return group.finish(len(patients))


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _patient_row(key: tuple[Any, ...]) -> np.ndarray:
    """The discrete columns of a patient row: ``_patient_static`` of ``key[:8]`` and the action
    flags ``key[8:]`` (``_PATIENT_FLAGS`` order)."""
    row = list(_patient_static(*key[:8]))
    for (column, _), on in zip(_PATIENT_FLAGS, key[8:], strict=True):
        if on:
            row[column] = 1.0
    return _frozen_row(row)


def _reserved_units(world: World) -> dict[str, int]:
    """patient id -> units the agent has reserved for them, not yet transfused (``_reserved``
    summed over hospitals, for every patient in one pass)."""
    out: dict[str, int] = {}
    for a in world.allocations:
        if a.by_agent and not a.used:
            out[a.patient_id] = out.get(a.patient_id, 0) + a.units
    return out


_P_VITALS = _P["hr"]  # hr, sbp, spo2, rr, gcs, vitals_score are consecutive columns


assert PATIENT_FEATURES[_P_VITALS:_P_VITALS + 6] == ("hr", "sbp", "spo2", "rr", "gcs", "vitals_score")


_P_MINUTES, _P_ETA = _P["minutes_since_call"], _P["eta"]


_P_WAITING = _P["waiting_or"]  # waiting_or/specialist/blood/transfer, blood_type_known, blood_reserved


assert PATIENT_FEATURES[_P_WAITING:_P_WAITING + 6] == (
    "waiting_or", "waiting_specialist", "waiting_blood", "waiting_transfer", "blood_type_known",
    "blood_reserved",
)


assert (_P_MINUTES, _P_ETA) == (_P_VITALS + 6, _P_VITALS + 7)


# the per-build columns: ``_patients`` appends these 8 + 6 values per patient
_P_DYNAMIC = _dynamic_columns(slice(_P_VITALS, _P_VITALS + 8), slice(_P_WAITING, _P_WAITING + 6))


_NOT_WAITING = (0.0, 0.0, 0.0, 0.0)


def _kept_waiting(world: World, p: Patient,
                  kept: dict[str, tuple[Any, ...]]) -> tuple[float, float, float, float]:
    """``_waiting_columns`` of a patient in the ED, kept while everything ``waiting_for`` reads is
    the same: where they are, their fallback care, claimed room, transfer target, whether their
    blood is at hand, and the rooms' and specialists' states (``World.version("rooms")``)."""
    ready = p.blood_ready_at
    key = (world.version("rooms"), p.hospital, p.fallback, p.or_ref, p.transfer_to,
           ready is not None and ready <= world.clock)  # the patient pins the world
    got = kept.get(p.patient_id)
    if got is None or got[0] is not p or got[1] != key:
        got = kept[p.patient_id] = (p, key, _waiting_columns(world, p))
    return got[2]


def _waiting_columns(world: World, p: Patient) -> tuple[float, float, float, float]:
    """Whether a patient in the ED waits for an OR, a specialist, blood, a transfer."""
    waiting = waiting_for(world, p)
    if not waiting:
        return _NOT_WAITING
    return _waiting_flags(tuple(waiting))


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _waiting_flags(waiting: tuple[str, ...]) -> tuple[float, float, float, float]:
    return (
        float("or" in waiting),
        float(any(w in SPECIALTIES for w in waiting)),
        float("blood" in waiting),
        float(any(w.startswith("transfer") for w in waiting)),
    )


@functools.lru_cache(maxsize=4096)
def _patient_static(condition: str, status: str, destination: str | None, hospital: str | None, node: str,
                    has_unit: bool, blood_type_known: bool, secondary: bool) -> tuple[float, ...]:
    """The columns of a patient row that follow from these discrete fields alone."""
    row = [0.0] * len(PATIENT_FEATURES)
    row[_P["present"]] = 1.0
    row[_P_PRIORITY[CONDITIONS[condition].true_priority]] = 1.0
    row[_P_CONDITION[condition]] = 1.0
    row[_P_STATUS[status]] = 1.0
    row[_P["has_unit"]] = float(has_unit)
    if destination is not None:
        row[_P["has_destination"]] = 1.0
        row[_P_DEST[destination]] = 1.0
    if hospital is not None:
        row[_P_AT[hospital]] = 1.0
    row[_P["blood_type_known"]] = float(blood_type_known)
    row[_P["secondary"]] = float(secondary)
    row[_P_NODE[node]] = 1.0
    return tuple(row)


# memoised on the displayed vitals (ints and a score rounded to 0.01: few distinct rows); equal
# keys give equal bytes because the shown reserve is never negative, so the score is never -0.0
@functools.lru_cache(maxsize=4096)
def _vitals_scaled(hr: float, sbp: float, spo2: float, rr: float, gcs: float,
                   score: float) -> tuple[float, ...]:
    return (_c(hr / 200), _c(sbp / 200), _c(spo2 / 100), _c(rr / 40), _c(gcs / 15), _c(score))


def _vitals_columns(r: float, hr0: int, sbp0: int, stroke: bool) -> tuple[float, ...]:
    """hr, sbp, spo2, rr, gcs and vitals score columns of a living patient (``displayed_vitals``):
    ``_vitals_scaled`` of its displayed vitals, the clipping inlined (a living patient's reserve
    moves every minute, so a memo of the scaled values missed a third of the time)."""
    hr, sbp, spo2, rr, gcs, score = vitals_values(r, hr0, sbp0, stroke)
    hr, sbp, spo2, rr, gcs = hr / 200, sbp / 200, spo2 / 100, rr / 40, gcs / 15
    return (0.0 if hr < 0 else 1.0 if hr > 1 else hr, 0.0 if sbp < 0 else 1.0 if sbp > 1 else sbp,
            0.0 if spo2 < 0 else 1.0 if spo2 > 1 else spo2, 0.0 if rr < 0 else 1.0 if rr > 1 else rr,
            0.0 if gcs < 0 else 1.0 if gcs > 1 else gcs, 0.0 if score < 0 else 1.0 if score > 1 else score)


# patient id -> (inputs, columns) of the last vitals computed for that id: a pure memo (the inputs
# are compared), hit whenever a patient's shown reserve has not moved since the last step.
_LAST_VITALS: dict[str, tuple[tuple[float, int, int, bool], tuple[float, ...]]] = {}


_DEAD_VITALS = _vitals_scaled(0, 0, 0, 0, GCS_MIN, 0.0)


@functools.lru_cache(maxsize=4096)
def _report_row(report: str) -> tuple[float, ...]:
    """A call row holding only what the caller's report says (reports never change), from the
    report model's reading of it (``triage.report_facts``)."""
    row = [0.0] * len(CALL_FEATURES)
    row[_C["callback"]] = float(report.startswith(CALLBACK_PREFIX))
    facts = report_facts(report)
    if facts is None:
        return tuple(row)
    row[_C["age"]] = _c(facts.age / 100)
    row[_C["male"]] = float(facts.sex == "M")
    row[_C_BYSTANDER] = float(facts.caller == "bystander")
    for column, features in _CUE_COLUMNS:
        if features & facts.features:
            row[column] = 1.0
    return tuple(row)


_CUE_COLUMNS = tuple((_C[f"cue_{name}"], features) for name, features in REPORT_CUES)


_C_BYSTANDER = _C[f"cue_{BYSTANDER_CUE}"]


_CALL_FLAGS = tuple(
    (_C[name], key)
    for name, key in (
        ("can_dispatch_als", ("dispatch_als", "call_id")),
        ("can_dispatch_bls", ("dispatch_bls", "call_id")),
        ("can_triage", ("triage_call", "call_id")),
        ("can_mutual_aid", ("request_mutual_aid", "target_id")),
    )
)


def call_flag_sets(slots: dict[tuple[str, str], set]) -> tuple[Any, ...]:
    """The id sets of the call rows' action flags (``_CALL_FLAGS`` order; shared by
    ``index_legal`` from step to step while a type's options are unchanged)."""
    return tuple([slots.get(key, ()) for _, key in _CALL_FLAGS])


def _calls(group: _Rows, world: World, calls: list, flag_sets: tuple[Any, ...],
           dynamic: list[float]) -> tuple[int, ...]:
    """Write the rows of the first ``MAX_CALLS`` calls' memoised parts, append their waiting
    times (``call_waiting``); returns the minutes those calls were received."""
    f0, f1, f2, f3 = flag_sets
    keys, rows = group.keys[0], group.rows
    shown = calls[:MAX_CALLS]
    for i, call in enumerate(shown):
        cid = call.call_id
        key = (call.report, call.priority, call.status, call.ambulance_id is not None, call.node,
               cid in f0, cid in f1, cid in f2, cid in f3)
        if keys[i] != key:
            keys[i] = key
            rows[i] = _call_row(key)
    group.finish(len(shown))
    received = tuple([call.received_at for call in shown])
    call_waiting(received, world.clock, dynamic)
    return received


def call_waiting(received: tuple[int, ...], clock: int, dynamic: list[float]) -> None:
    """Append each shown call's minutes waiting (``_C_DYNAMIC``) given the minutes they came in."""
    for minute in received:
        waiting = (clock - minute) / 60
        dynamic.append(0.0 if waiting < 0 else 1.0 if waiting > 1 else waiting)


_C_WAITING = _C["waiting"]


_C_DYNAMIC = _dynamic_columns(slice(_C_WAITING, _C_WAITING + 1))


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _call_row(key: tuple[Any, ...]) -> np.ndarray:
    """The discrete columns of a call row: ``_call_static`` of ``key[:5]`` and the action flags
    ``key[5:]`` (``_CALL_FLAGS`` order)."""
    row = list(_call_static(*key[:5]))
    for (column, _), on in zip(_CALL_FLAGS, key[5:], strict=True):
        if on:
            row[column] = 1.0
    return _frozen_row(row)


@functools.lru_cache(maxsize=4096)
def _call_static(report: str, priority: str | None, status: str, has_unit: bool,
                 node: str) -> tuple[float, ...]:
    """A call row but for the waiting time and the action flags."""
    row = list(_report_row(report))
    row[_C["present"]] = 1.0
    row[_C["untriaged"] if priority is None else _C_TRIAGED[priority]] = 1.0
    row[_C["pending"]] = float(status == "pending")
    row[_C["dispatched"]] = float(status == "dispatched")
    row[_C["has_unit"]] = float(has_unit)
    row[_C_NODE[node]] = 1.0
    return tuple(row)


_HOSPITAL_FLAGS = tuple(
    (_H[name], key)
    for name, key in (
        ("can_assign_to", ("assign_hospital", "hospital_id")),
        ("can_prepare_or", ("prepare_or", "hospital_id")),
        ("can_page", ("page_specialist", "hospital_id")),
        ("can_preempt", ("preempt_or", "hospital_id")),
        ("can_allocate_from", ("allocate_blood", "hospital_id")),
        ("can_transfer_from", ("transfer_blood", "from_hospital_id")),
    )
)


def hospital_flag_sets(slots: dict[tuple[str, str], set]) -> tuple[Any, ...]:
    """The id sets of the hospital rows' action flags (``_HOSPITAL_FLAGS`` order)."""
    return tuple([slots.get(key, ()) for _, key in _HOSPITAL_FLAGS])


def _hospitals(group: _Rows, world: World, flag_sets: tuple[Any, ...], dynamic: list[float],
               unchanged: tuple[bool, bool, bool] = (False, False, False)) -> int:
    """Hospital rows in four memoised parts (rooms, specialists, blood, action flags), each
    rewritten only when its own key changed; appends the per-build load, diversion and ICU values.
    ``unchanged``: whether no room or specialist state was set, no stock changed since the last
    build of these rows (``World.version`` of "rooms" and "stock"), and the flags' id sets are
    the very ones of that build; those parts are then not even read."""
    clock = world.clock
    rooms_unchanged, stock_unchanged, flags_unchanged = unchanged
    rooms_keys, specialist_keys, blood_keys, flag_keys = group.keys
    rows = group.rows
    hospitals = world.hospitals
    for i, hospital_id in enumerate(HOSPITAL_IDS):
        h = hospitals.get(hospital_id)
        if h is None:  # every scenario has all three; a zero row otherwise
            group.clear(i, i + 1)
            dynamic += _NO_HOSPITAL
            continue
        key: tuple
        if not rooms_unchanged:
            key = tuple(map(_ROOM_KEY, h.ors))
            if rooms_keys[i] != key:
                rooms_keys[i] = key
                rows[i, _H_ROOMS] = _rooms_columns(key)
            key = tuple(map(_SPECIALIST_KEY, h.specialists.values()))
            if specialist_keys[i] != key:
                specialist_keys[i] = key
                rows[i, _H_SPECIALISTS] = _specialist_columns(key)
        if not stock_unchanged:
            key = tuple(h.blood.items())
            if blood_keys[i] != key:
                blood_keys[i] = key
                rows[i, _H_BLOOD_STOCK] = _blood_columns(key)
        if not flags_unchanged:
            key = tuple([hospital_id in ids for ids in flag_sets])
            if flag_keys[i] != key:
                flag_keys[i] = key
                rows[i, _H_FLAGS] = _hospital_flag_columns(key)
        until = h.diverted_until
        diverted = until > clock  # ``world.diverted``
        dynamic += (_c(h.occupancy / (2 * h.capacity)), 1.0 if h.crowded else 0.0,
                    1.0 if diverted else 0.0, _c((until - clock) / 60) if diverted else 0.0,
                    _c(max(0, h.icu_beds - h.icu_used) / 4))
    return group.finish(len(HOSPITAL_IDS))


_ROOM_KEY = attrgetter("state", "procedure")


_SPECIALIST_KEY = attrgetter("specialty", "state")


_H_LOAD, _H_CROWDED, _H_DIVERTED = _H["load"], _H["crowded"], _H["diverted"]


_H_DIVERSION_LEFT, _H_ICU = _H["diversion_left"], _H["icu_free"]


assert (_H_LOAD, _H_CROWDED, _H_DIVERTED, _H_DIVERSION_LEFT) == (0, 1, 2, 3)


_H_DYNAMIC = _dynamic_columns(slice(0, 4), slice(_H_ICU, _H_ICU + 1))


_NO_HOSPITAL = (0.0, 0.0, 0.0, 0.0, 0.0)


def _span(first: str, last: str, size: int) -> slice:
    """The columns ``first``..``last`` of a hospital row (checked to be ``size`` consecutive ones)."""
    assert _H[last] - _H[first] + 1 == size, (first, last)
    return slice(_H[first], _H[last] + 1)


_H_ROOMS = _span(f"or_{OR_STATES[0]}", f"ready_{PROCEDURES[-1]}", len(OR_STATES) + 2 * len(PROCEDURES))


_H_SPECIALISTS = _span(
    f"{SPECIALTIES[0]}_{SPECIALIST_STATES[0]}", f"{SPECIALTIES[-1]}_{SPECIALIST_STATES[-1]}",
    len(SPECIALTIES) * len(SPECIALIST_STATES),
)


_H_BLOOD_STOCK = _span(f"blood_{BLOOD_TYPES[0]}", "blood_total", len(BLOOD_TYPES) + 1)


_H_FLAGS = _span("can_assign_to", "can_transfer_from", len(_HOSPITAL_FLAGS))


assert [column for column, _ in _HOSPITAL_FLAGS] == list(range(_H_FLAGS.start, _H_FLAGS.stop))


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _rooms_columns(rooms: tuple[tuple[str, str | None], ...]) -> np.ndarray:
    """A hospital row's OR columns from (state, procedure) per room."""
    row = [0.0] * len(HOSPITAL_FEATURES)
    for state, procedure in rooms:
        column = _H_OR[state]
        row[column] = min(1.0, row[column] + 1 / 3)
        room_column = _H_ROOM.get((state, procedure))
        if room_column is not None:
            row[room_column] = 1.0
    return _frozen_row(row[_H_ROOMS])


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _specialist_columns(specialists: tuple[tuple[str, str], ...]) -> np.ndarray:
    """A hospital row's specialist columns from (specialty, state) per specialist."""
    row = [0.0] * len(HOSPITAL_FEATURES)
    for specialty, state in specialists:
        column = _H_SPECIALIST.get((specialty, state))
        if column is not None:
            row[column] = 1.0
    return _frozen_row(row[_H_SPECIALISTS])


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _blood_columns(blood: tuple[tuple[str, int], ...]) -> np.ndarray:
    """A hospital row's blood columns: units per type, then the total."""
    row, total = [0.0] * (len(BLOOD_TYPES) + 1), 0
    for blood_type, units in blood:
        if units > 0:
            row[_BLOOD_INDEX[blood_type]] = _c(units / 12)
            total += units
    row[-1] = _c(total / 60)
    return _frozen_row(row)


_BLOOD_INDEX = {t: i for i, t in enumerate(BLOOD_TYPES)}


assert all(_H_BLOOD[t] == _H_BLOOD_STOCK.start + i for t, i in _BLOOD_INDEX.items())


@functools.lru_cache(maxsize=64)
def _hospital_flag_columns(flags: tuple[bool, ...]) -> np.ndarray:
    return _frozen_row([float(on) for on in flags])


def _roads(out: np.ndarray, world: World) -> bool:
    """Write the road rows of the active closures and congestion into ``out`` (zeros); returns
    whether any was written."""
    written = False
    for d in world.disruptions:
        if not d.active or d.kind not in ("road_closure", "accident_congestion"):
            continue
        written = True
        for a, b in d.edges:
            row = out[_EDGE_INDEX[edge_key(a, b)]]
            if d.kind == "road_closure":
                row[0] = 1
            else:
                row[1] = 1
                row[2] = _c((world.net.congestion.get((a, b), 1.0) - 1.0) / 2)
            row[3] = _c((d.end - world.clock) / 60)
    return written


#: The memoised rows kept between builds (the row caches of ``_Rows`` slots hold their outputs).
ROW_MEMOS = (_patient_row, _call_row, _ambulance_row, _rooms_columns, _specialist_columns,
             _blood_columns, _hospital_flag_columns)


#: Every feature memo of this module (tests clear them to prove results never depend on them).
FEATURE_MEMOS = (_patient_static, _call_static, _report_row, _vitals_scaled, _waiting_flags, *ROW_MEMOS)
