"""The memoised row encoders of the ambulances, patients and calls (hospitals and roads:
``hospital_rows``), read from the observation's rows: each group's discrete part is a pure
function of a small key (cached), its per-minute columns are rewritten every build (``_Rows``
keeps the previous build)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..sim.conditions import CONDITIONS
from ..sim.params import MEMO_ENTRIES, SPECIALTIES
from ..sim.triage import CALLBACK_PREFIX, report_facts
from ..sim.types import OUTCOME_PATIENT_STATES
from .hospital_rows import HOSPITAL_ROW_MEMOS
from .row_parts import _c, _dynamic_columns, _frozen_row, _Rows
from .schema import (
    _A,
    _A_DEST,
    _A_NODE,
    _A_STATUS,
    _C,
    _C_NODE,
    _C_TRIAGED,
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
    MAX_AMBULANCES,
    MAX_CALLS,
    MAX_PATIENTS,
    PATIENT_FEATURES,
    REPORT_CUES,
)


def _slot_patients(patients: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """At most MAX_PATIENTS, in observation order; finished patients are dropped first."""
    extra = len(patients) - MAX_PATIENTS
    if extra <= 0:
        return patients
    finished = [i for i, p in enumerate(patients) if p["status"] in OUTCOME_PATIENT_STATES]
    drop = set(finished[:extra])
    return [p for i, p in enumerate(patients) if i not in drop][:MAX_PATIENTS]


def _ambulances(group: _Rows, ambulances: list[dict[str, Any]], slots: dict[tuple[str, str], set],
                dynamic: list[float]) -> int:
    """Write the ambulance rows' memoised parts from the observation's ambulance rows, append
    their ``_A_DYNAMIC`` values; returns how many rows are present."""
    n = 0
    dispatchable = (
        slots.get(("dispatch_ambulance", "ambulance_id"), set())
        | slots.get(("dispatch_als", "ambulance_id"), set())
        | slots.get(("dispatch_bls", "ambulance_id"), set())
    )
    keys, rows = group.keys[0], group.rows
    for i, amb in enumerate(ambulances[:MAX_AMBULANCES]):
        key = (amb["kind"] == "ALS", amb["mutual_aid"], amb["status"], amb["node"], amb["destination"],
               amb["patient_id"] is not None or amb["call_id"] is not None, amb["held"],
               amb["ambulance_id"] in dispatchable)
        if keys[i] != key:
            keys[i] = key
            rows[i] = _ambulance_row(key)
        eta, busy = amb["eta_min"], amb["busy_min"]  # busy: None but on scene or at a hospital
        dynamic += (0.0 if eta is None else _c(eta / 30), 0.0 if busy is None else _c(busy / 30))
        n += 1
    return group.finish(n)


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


def _patients(group: _Rows, patients: list[dict[str, Any]], slots: dict[tuple[str, str], set],
              dynamic: list[float]) -> int:
    """Write the patient rows' memoised parts from the observation's patient rows; append each
    patient's ``_P_DYNAMIC`` values: vitals, minutes since the call, ETA, what they wait for,
    whether the blood type is known, the units reserved."""
    f0, f1, f2, f3, f4 = (slots.get(key, ()) for _, key in _PATIENT_FLAGS)
    keys, rows = group.keys[0], group.rows
    for i, p in enumerate(patients):  # the hottest loop of a build: ``_Rows.put`` inlined
        pid, status = p["patient_id"], p["status"]
        known = p["blood_type"] is not None
        key = (p["condition"], status, p["destination"], p["hospital"], p["node"],
               p["ambulance_id"] is not None, known, p["secondary"],
               pid in f0, pid in f1, pid in f2, pid in f3, pid in f4)
        if keys[i] != key:
            keys[i] = key
            rows[i] = _patient_row(key)
        v = p["vitals"]
        dynamic += _vitals_scaled(v["hr"], v["sbp"], v["spo2"], v["rr"], v["gcs"], v["score"])
        minutes, eta = p["minutes_since_call"] / 180, p["eta_min"]
        dynamic += (0.0 if minutes < 0 else 1.0 if minutes > 1 else minutes,
                    0.0 if eta is None else _c(eta / 30))
        waiting = p["waiting_for"]
        dynamic += _waiting_flags(tuple(waiting)) if waiting else _NOT_WAITING
        reserved = p["blood_reserved"]
        dynamic += (1.0 if known else 0.0, _c(sum(reserved.values()) / 6) if reserved else 0.0)
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


# memoised on the displayed vitals (ints and a score rounded to 0.01: few distinct rows; a
# deceased patient's are fixed); equal keys give equal bytes because the shown reserve is never
# negative, so the score is never -0.0
@functools.lru_cache(maxsize=4096)
def _vitals_scaled(hr: float, sbp: float, spo2: float, rr: float, gcs: float,
                   score: float) -> tuple[float, ...]:
    return (_c(hr / 200), _c(sbp / 200), _c(spo2 / 100), _c(rr / 40), _c(gcs / 15), _c(score))


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


def _calls(group: _Rows, calls: list[dict[str, Any]], flag_sets: tuple[Any, ...], clock: int,
           dynamic: list[float]) -> tuple[int, ...]:
    """Write the rows of the first ``MAX_CALLS`` open calls' memoised parts (the observation's
    call rows), append their waiting times (``call_waiting``); returns the minutes those calls
    were received."""
    f0, f1, f2, f3 = flag_sets
    keys, rows = group.keys[0], group.rows
    shown = calls[:MAX_CALLS]
    for i, call in enumerate(shown):
        cid = call["call_id"]
        key = (call["report"], call["priority"], call["status"], call["ambulance_id"] is not None,
               call["node"], cid in f0, cid in f1, cid in f2, cid in f3)
        if keys[i] != key:
            keys[i] = key
            rows[i] = _call_row(key)
    group.finish(len(shown))
    received = tuple([call["received_min"] for call in shown])
    call_waiting(received, clock, dynamic)
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


#: The memoised rows kept between builds (the row caches of ``_Rows`` slots hold their outputs).
ROW_MEMOS = (_patient_row, _call_row, _ambulance_row, *HOSPITAL_ROW_MEMOS)


#: Every feature memo of the rows (tests clear them to prove results never depend on them).
FEATURE_MEMOS = (_patient_static, _call_static, _report_row, _vitals_scaled, _waiting_flags, *ROW_MEMOS)
