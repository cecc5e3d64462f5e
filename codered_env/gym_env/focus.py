"""The *focused* action set (``CodeRedGymEnv(actions="focused")``): the legal actions minus the
ones that cannot change anything or serve no need the agent can see, for learners.

Why: along a heuristic episode of task4/task5 the full set offers 65-84 actions per decision, 26 of
them blood transfers (every hospital pair and type) and 15-19 blood allocations, against 0.6-2.9
dispatches; re-triaging a call to the priority it already has is legal too. PPO policies trained
on the full set spent 43-49 % of their decisions re-triaging and 16-21 % moving blood
(docs/TRAINING.md, phase 2). Every action removed here is still legal in the simulation; the
focused set is a subset of the legal set, read from what the observation shows (the agent's own
triage, visible patients' conditions, destinations, reservations and known blood types, stocks).

Removed:

- ``triage_call`` to the priority the call already has (a no-op);
- ``assign_hospital`` of a patient to the destination already set (it only re-evaluates whether
  the relaxed transfer target applies);
- ``query_or_status``: its answer (OR timers) is in the text observation but not in the adapter's
  features (only a flag that a result exists), so for a feature-based learner it is a minute spent
  on nothing; a PPO policy trained with it spent 48 % of its task3 decisions on it and scored 0.01;
- ``allocate_blood`` for a patient whose condition needs no blood (counted as unneeded blood), at a
  hospital other than the patient's destination once one is set, or once the patient has a full
  case (``BLOOD_UNITS_PER_CASE``) reserved there;
- ``query_blood_type`` for a patient who needs no blood;
- ``transfer_blood`` except to the destination of a patient who needs blood and has none reserved
  there, of a type that patient can take and that destination holds less than a case of.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from ..sim.conditions import CONDITIONS
from ..sim.dynamics.blood import COMPATIBLE_DONORS, emergency_group_o
from ..sim.params import BLOOD_UNITS_PER_CASE
from ..sim.types import FINAL_PATIENT_STATES, Patient
from ..sim.view import ObservationView

Legal = dict[str, list[dict[str, list[Any]]]]

Row = dict[str, Any]  # a patient row of the observation

ACTION_SETS: tuple[str, ...] = ("full", "focused")


def focus_legal(view: ObservationView, legal: Mapping[str, Sequence[Mapping[str, Sequence[Any]]]]) -> Legal:
    """``legal`` (the view's ``legal_actions``) without the actions the module docstring lists;
    an action type left with no option is dropped. ``legal`` itself is not changed."""
    out: Legal = {name: [dict(o) for o in options] for name, options in legal.items()}
    patients = {p["patient_id"]: p for p in view["patients"]}
    needy = _blood_needs(patients)
    if "triage_call" in out:
        priority = {c["call_id"]: c["priority"] for c in view["calls"]}.__getitem__
        _set(out, "triage_call", _without_current(out["triage_call"], "call_id", "priority", priority))
    _set(out, "assign_hospital", _without_current(out.get("assign_hospital", []), "patient_id", "hospital_id",
                                                  lambda patient_id: patients[patient_id]["destination"]))
    out.pop("query_or_status", None)
    _set(out, "allocate_blood", _allocate(out.get("allocate_blood", []), needy))
    _set(out, "query_blood_type", [
        {**o, "patient_id": [p for p in o["patient_id"] if p in needy]}
        for o in out.get("query_blood_type", [])
    ])
    _set(out, "transfer_blood", _transfer(view, out.get("transfer_blood", []), needy))
    return out


def _set(out: Legal, name: str, options: list[dict[str, list[Any]]]) -> None:
    kept = [o for o in options if all(o.values())]
    if kept:
        out[name] = kept
    else:
        out.pop(name, None)


def _without_current(options: list[dict[str, list[Any]]], subject: str, value: str,
                     current: Callable[[str], str | None]) -> list[dict[str, list[Any]]]:
    """Each option split by its subjects' ``current`` value, which is taken out of ``value``
    (a call's priority, a patient's destination: setting it again changes nothing)."""
    split = []
    for option in options:
        by_current: dict[str | None, list[str]] = {}
        for subject_id in option[subject]:
            by_current.setdefault(current(subject_id), []).append(subject_id)
        for now, subject_ids in by_current.items():
            split.append({subject: subject_ids, value: [v for v in option[value] if v != now]})
    return split


def _blood_needs(patients: Mapping[str, Row]) -> dict[str, Row]:
    """Visible patients still in care whose condition needs blood, by id."""
    return {
        pid: p for pid, p in patients.items()
        if p["status"] not in FINAL_PATIENT_STATES and CONDITIONS[p["condition"]].needs_blood
    }


def _allocate(options: list[dict[str, list[Any]]], needy: Mapping[str, Row]) -> list[dict[str, list[Any]]]:
    kept = []
    for option in options:
        hospital_id = option["hospital_id"][0]
        ids = [pid for pid in option["patient_id"] if pid in needy
               and needy[pid]["destination"] in (None, hospital_id)
               and needy[pid]["blood_reserved"].get(hospital_id, 0) < BLOOD_UNITS_PER_CASE]
        kept.append({**option, "patient_id": ids})
    return kept


class _Shown(NamedTuple):
    """What ``Patient.o_pos_safe`` reads of a patient, from their row."""

    sex: str
    age: int
    o_pos_safe = Patient.o_pos_safe


def _acceptable(p: Row) -> tuple[str, ...]:
    blood_type = p["blood_type"]  # None until known
    if blood_type is not None:
        return COMPATIBLE_DONORS[blood_type]
    return emergency_group_o(_Shown(p["sex"], p["age"]))  # type: ignore[arg-type]


def _transfer(view: ObservationView, options: list[dict[str, list[Any]]],
              needy: Mapping[str, Row]) -> list[dict[str, list[Any]]]:
    """One option per (source, target) pair that serves a need, with only the types it lacks."""
    wanted: dict[str, set[str]] = {}  # destination -> types some patient there could use
    for p in needy.values():
        dest = p["destination"]
        if dest is not None and not p["blood_reserved"].get(dest, 0):
            stock = view.hospital(dest)["blood"]
            wanted.setdefault(dest, set()).update(
                t for t in _acceptable(p) if stock.get(t, 0) < BLOOD_UNITS_PER_CASE)
    kept = []
    for option in options:
        for target in option["to_hospital_id"]:
            types = [t for t in option["blood_type"] if t in wanted.get(target, ())]
            kept.append({**option, "to_hospital_id": [target], "blood_type": types})
    return kept
