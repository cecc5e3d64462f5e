"""Gymnasium adapter for CodeRedEnv: a fixed ``Discrete`` action space with action masking and a
numeric ``Dict`` observation, on top of ``CodeRedSim`` (which itself knows nothing of gymnasium).

gymnasium is a dev dependency of this project, so it is imported only here::

    import gymnasium
    import codered_env.gym_env  # registers CodeRedEnv-task1-v1 .. CodeRedEnv-task5-v1

    env = gymnasium.make("CodeRedEnv-task3-v1")

The compact observation is built by ``FeatureBuilder`` straight from the world, reading only what
``CodeRedSim.observation()`` shows (no hidden state). The full spec is docs/GYM.md.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np

try:
    import gymnasium
    from gymnasium import spaces
except ImportError as exc:  # pragma: no cover - exercised only without the dev group
    raise ImportError(
        "codered_env.gym_env needs gymnasium, which is not installed: run `pip install gymnasium` "
        "(or `uv sync --group dev`)."
    ) from exc

from .sim.catalogue import ACTION_NAMES, ACTIONS, NOOP, fixed_id_choices
from .sim.city import EDGES, NODE_IDS, edge_key
from .sim.conditions import CONDITIONS
from .sim.env import CodeRedSim
from .sim.observation import _waiting_for as waiting_for
from .sim.observation import alert_count, legal_actions, shown_reserve, visible_calls, vitals_values
from .sim.params import BLOOD_TYPES, GCS_MIN, MEMO_ENTRIES, PROCEDURES, SPECIALTIES
from .sim.tasks import TASK_IDS, TASKS
from .sim.triage import PRIORITIES
from .sim.types import AMBULANCE_STATES, OR_STATES, PATIENT_STATES, SPECIALIST_STATES, Patient
from .sim.world import World

# ------------------------------------------------------------------------------ action catalogue
ACTION_ORDER: tuple[str, ...] = ACTION_NAMES  # the catalogue's order: maintain_plan is index 0
CANONICAL_UNITS: tuple[int, ...] = (1, 2, 4)
_BLOOD_ACTIONS = frozenset(a.name for a in ACTIONS if "units" in a.param_names)  # units canonicalised
MAINTAIN: dict[str, Any] = {"action_type": NOOP}


def _param_values(action_type: str, name: str, values: Sequence[Any]) -> list[Any]:
    if action_type in _BLOOD_ACTIONS and name == "units":
        return [u for u in values if u in CANONICAL_UNITS]
    return list(values)


def _expand(action_type: str, option: Mapping[str, Sequence[Any]]) -> Iterator[dict[str, Any]]:
    """Every concrete action of one legal option (the cross product of its parameter values)."""
    names = list(option)
    choices = [_param_values(action_type, n, option[n]) for n in names]
    for combo in itertools.product(*choices):
        yield {"action_type": action_type, **dict(zip(names, combo, strict=True))}


def enumerate_actions(legal: Mapping[str, Sequence[Mapping[str, Sequence[Any]]]]) -> list[dict[str, Any]]:
    """The concrete legal actions, in a stable order: ``maintain_plan`` first, then by
    ``ACTION_ORDER``, then option order, then the cross product in parameter order."""
    actions = [dict(MAINTAIN)]
    seen = {frozenset(MAINTAIN.items())}
    for action_type in ACTION_ORDER[1:]:
        for option in legal.get(action_type, ()):
            for action in _expand(action_type, option):
                key = frozenset(action.items())
                if key not in seen:
                    seen.add(key)
                    actions.append(action)
    return actions


# ------------------------------------------------------------------------------ observation layout
MAX_AMBULANCES = len(fixed_id_choices()["ambulance"])  # own units + the most mutual-aid units
MAX_PATIENTS = 16
MAX_CALLS = 16
# Normalisers of the task-level features: the largest values in the task table, so every task's
# budget and horizon read differently (v1: the budget was divided by 60 and read 1.0 on tasks 3-5).
LARGEST_STEP_BUDGET = max(t.max_steps for t in TASKS.values())
LONGEST_HORIZON_MIN = max(t.horizon_min for t in TASKS.values())
HOSPITAL_IDS: tuple[str, ...] = fixed_id_choices()["hospital"]
N_HOSPITALS = len(HOSPITAL_IDS)
CONDITION_IDS: tuple[str, ...] = tuple(CONDITIONS)
EDGE_KEYS: tuple[tuple[str, str], ...] = tuple(edge_key(a, b) for a, b, _, _ in EDGES)
_EDGE_INDEX = {k: i for i, k in enumerate(EDGE_KEYS)}
_NODE_INDEX = {n: i for i, n in enumerate(NODE_IDS)}
_FINISHED = frozenset({"treated", "released", "deceased"})
# Symptom cues read from the caller's report (a bag of words, not a triage rule).
REPORT_CUES: tuple[tuple[str, ...], ...] = (
    ("chest",),
    ("into the arm", "into the jaw"),
    ("sweat",),
    ("short of breath", "breathing fast", "get breath"),
    ("vomit", "throwing up"),
    ("collapsed", "fell down suddenly"),
    ("not responding", "not waking", "not breathing properly", "gasping"),
    ("one side weak", "face drooping", "lift one arm"),
    ("slurred", "talking strangely", "confused", "where they are"),
    ("headache", "head hurting"),
    ("accident", "had a fall", "hit by"),
    ("bleeding a lot", "lot of blood"),
    ("pale and drowsy", "cold and sleepy"),
    ("badly hurt", "broken", "cannot move the leg"),
    ("pregnant", "labour pains", "water broke", "contractions"),
    ("fever", "hot body"),
    ("stomach", "acidity"),
    ("panicky", "tingling", "shaking"),
    ("some days", "what to do", "advice"),
    ("passer-by calling",),
)
_AGE_SEX = re.compile(r"(\d+)([MF]) at ")

GLOBAL_FEATURES: tuple[str, ...] = (
    "clock_frac",
    "step_frac",
    "phase2",
    "score_preview",
    "mutual_aid_remaining",
    "mutual_aid_limit",
    "mutual_aid_pending",
    "peak_hour",
    "n_patients",
    "n_calls",
    "n_alerts",
    "last_action_error",
    "query_result",
    "n_legal_actions",
    "horizon",
    "max_steps",
)
AMBULANCE_FEATURES: tuple[str, ...] = (
    "present",
    "als",
    "mutual_aid",
    *(f"status_{s}" for s in AMBULANCE_STATES),
    *(f"node_{n}" for n in NODE_IDS),
    *(f"dest_{n}" for n in NODE_IDS),
    "eta",
    "busy",
    "has_job",
    "held",
    "can_dispatch",
)
PATIENT_FEATURES: tuple[str, ...] = (
    "present",
    *(f"priority_{p}" for p in PRIORITIES),
    *(f"condition_{c}" for c in CONDITION_IDS),
    *(f"status_{s}" for s in PATIENT_STATES),
    "hr",
    "sbp",
    "spo2",
    "rr",
    "gcs",
    "vitals_score",
    "minutes_since_call",
    "eta",
    "has_unit",
    "has_destination",
    *(f"dest_{h}" for h in HOSPITAL_IDS),
    *(f"at_{h}" for h in HOSPITAL_IDS),
    "waiting_or",
    "waiting_specialist",
    "waiting_blood",
    "waiting_transfer",
    "blood_type_known",
    "blood_reserved",
    "secondary",
    *(f"node_{n}" for n in NODE_IDS),
    "can_dispatch_to",
    "can_assign_hospital",
    "can_allocate_blood",
    "can_query_blood_type",
    "can_mutual_aid",
)
CALL_FEATURES: tuple[str, ...] = (
    "present",
    "waiting",
    *(f"triaged_{p}" for p in PRIORITIES),
    "untriaged",
    "pending",
    "dispatched",
    "has_unit",
    *(f"node_{n}" for n in NODE_IDS),
    "age",
    "male",
    "callback",
    *(f"cue_{cues[0].replace(' ', '_')}" for cues in REPORT_CUES),
    "can_dispatch_als",
    "can_dispatch_bls",
    "can_triage",
    "can_mutual_aid",
)
HOSPITAL_FEATURES: tuple[str, ...] = (
    "load",
    "crowded",
    "diverted",
    "diversion_left",
    *(f"or_{s}" for s in OR_STATES),
    *(f"preparing_{p}" for p in PROCEDURES),
    *(f"ready_{p}" for p in PROCEDURES),
    *(f"{sp}_{st}" for sp in SPECIALTIES for st in SPECIALIST_STATES),
    "icu_free",
    *(f"blood_{t}" for t in BLOOD_TYPES),
    "blood_total",
    "can_assign_to",
    "can_prepare_or",
    "can_page",
    "can_preempt",
    "can_allocate_from",
    "can_transfer_from",
)
ROAD_FEATURES: tuple[str, ...] = ("closed", "congested", "congestion_factor", "minutes_left")
ACTION_FEATURES: tuple[str, ...] = ("count", "start")


def _index(names: tuple[str, ...]) -> dict[str, int]:
    return {n: i for i, n in enumerate(names)}


_G, _A, _P, _C, _H = (
    _index(GLOBAL_FEATURES),
    _index(AMBULANCE_FEATURES),
    _index(PATIENT_FEATURES),
    _index(CALL_FEATURES),
    _index(HOSPITAL_FEATURES),
)


def _columns(index: dict[str, int], prefix: str) -> dict[str, int]:
    """value -> column of the one-hot ``{prefix}_{value}`` (precomputed: f-strings per step cost)."""
    return {name[len(prefix) + 1:]: i for name, i in index.items() if name.startswith(f"{prefix}_")}


_A_STATUS, _A_NODE, _A_DEST = _columns(_A, "status"), _columns(_A, "node"), _columns(_A, "dest")
_P_PRIORITY, _P_CONDITION = _columns(_P, "priority"), _columns(_P, "condition")
_P_STATUS = _columns(_P, "status")
_P_NODE, _P_DEST, _P_AT = _columns(_P, "node"), _columns(_P, "dest"), _columns(_P, "at")
_C_NODE, _C_TRIAGED = _columns(_C, "node"), _columns(_C, "triaged")
_H_OR, _H_BLOOD = _columns(_H, "or"), _columns(_H, "blood")
_H_ROOM: dict[tuple[str, str | None], int] = {
    (state, proc): _H[f"{state}_{proc}"] for state in ("preparing", "ready") for proc in PROCEDURES
}
_H_SPECIALIST = {(sp, st): _H[f"{sp}_{st}"] for sp in SPECIALTIES for st in SPECIALIST_STATES}
_SEGMENT_TYPES = ACTION_ORDER[1:]  # maintain_plan is always index 0


# ------------------------------------------------------------------------------ legal actions, lazily
Segment = tuple[str, tuple[str, ...], tuple[Sequence[Any], ...], int, int]  # type, names, values, start, n


class LegalIndex(NamedTuple):
    """What the adapter needs from the legal-action dict, read in one pass (``index_legal``)."""

    segments: list[Segment]  # one per option with at least one action, in enumeration order
    total: int  # the number of concrete actions, ``maintain_plan`` included
    slots: dict[tuple[str, str], set]  # (action type, parameter) -> every id it accepts now
    table: list[int]  # (count, first index) per type of ``ACTION_ORDER``, flat


# per action type: (its options as last seen, their (names, values, size) and slot id sets)
OptionParts = tuple[list[tuple[tuple[str, ...], tuple[Any, ...], int]], dict[tuple[str, str], set]]
LegalMemo = dict[str, tuple[Any, OptionParts]]


def index_legal(legal: Mapping[str, Sequence[Mapping[str, Sequence[Any]]]],
                memo: LegalMemo | None = None) -> LegalIndex:
    """The segments of the enumeration, the per-slot id sets and the per-type table of ``legal``.

    With ``memo`` (one per environment), an action type whose options equal the ones it had at
    the previous call reuses their parsed parts; only the first indices are recomputed. The id
    sets handed out are shared with later calls and must not be changed."""
    segments: list[Segment] = []
    slots: dict[tuple[str, str], set] = {}
    table = [0] * (2 * len(ACTION_ORDER))
    table[0] = 1
    start = 1
    for action_type, slot_keys, blood, column in _SEGMENT_PLAN:
        options = legal.get(action_type)
        if not options:
            continue
        last = None if memo is None else memo.get(action_type)
        if last is not None and last[0] == options:
            parts, type_slots = last[1]
        else:
            parts, type_slots = _option_parts(options, slot_keys, blood)
            if memo is not None:
                memo[action_type] = (options, (parts, type_slots))
        slots.update(type_slots)  # keys are (type, parameter): no two types share one
        first = start
        for names, values, size in parts:
            segments.append((action_type, names, values, start, size))
            start += size
        if start > first:
            table[column], table[column + 1] = start - first, first
    return LegalIndex(segments, start, slots, table)


def _option_parts(options: Sequence[Mapping[str, Sequence[Any]]], slot_keys: dict[str, tuple[str, str]],
                  blood: bool) -> OptionParts:
    """(names, values, size) of each option of one type with at least one action, and the ids
    each slot parameter accepts."""
    parts = []
    slots: dict[tuple[str, str], set] = {}
    for option in options:
        for name, values in option.items():
            key = slot_keys.get(name)
            if key is not None:
                ids = slots.get(key)
                if ids is None:
                    slots[key] = set(values)
                else:
                    ids.update(values)
        if blood:
            values = tuple([_canonical_units(v) if n == "units" else v for n, v in option.items()])
        else:
            values = tuple(option.values())
        size = 1
        for vals in values:
            size *= len(vals)
        if size:
            parts.append((tuple(option), values, size))
    return parts, slots


def _canonical_units(values: Sequence[Any]) -> list[Any]:
    return [u for u in values if u in CANONICAL_UNITS]


def decode_action(segments: Sequence[Segment], index: int) -> dict[str, Any]:
    """The wire action at ``index`` of the enumeration described by ``segments``."""
    if index == 0:
        return dict(MAINTAIN)
    for action_type, names, values, start, size in segments:
        if index < start + size:
            local, picked = index - start, [None] * len(names)
            for k in range(len(names) - 1, -1, -1):
                local, r = divmod(local, len(values[k]))
                picked[k] = values[k][r]
            return {"action_type": action_type, **dict(zip(names, picked, strict=True))}
    raise IndexError(f"action index {index} is not legal now")


_NO_SLOT_FLAGS = frozenset({"maintain_plan", "query_or_status"})
_SLOT_PARAMS = frozenset({"ambulance_id", "patient_id", "call_id", "hospital_id", "target_id",
                          "from_hospital_id"})
# per segment type in enumeration order: (type, slot parameter -> (type, parameter) key of its id
# set, blood units to canonicalise, column of its count in the per-type table)
_SEGMENT_PLAN = tuple(
    (action_type, {} if action_type in _NO_SLOT_FLAGS else {n: (action_type, n) for n in _SLOT_PARAMS},
     action_type in _BLOOD_ACTIONS, 2 * i)
    for i, action_type in enumerate(_SEGMENT_TYPES, 1)
)


# ------------------------------------------------------------------------------ feature builder
class FeatureBuilder:
    """Numeric features straight from the ``World``, mirroring ``sim.observation`` field by field.

    Only what ``build_observation`` shows is read: visible patients (a phase-2 caller stays a
    call with its report until a crew is on scene), displayed vitals, agent triage, OR/specialist
    states, blood stock, active disruptions. Future calls, hidden conditions, reserves, unknown
    blood types and OR timers are never touched (tests perturb them and compare).

    Incremental: the builder keeps the rows of the previous build. A row's discrete part (one-hots
    and action flags, a pure function of a small key) is copied in from a memo only when the key
    at that slot changed; the per-minute columns (vitals, minutes, ETAs, waiting, load ...) of
    every present row are rewritten each build in one block per group. Each build returns fresh
    arrays, and a new builder produces the same bytes (tests compare them over many episodes).
    """

    def __init__(self, max_actions: int) -> None:
        self.max_actions = max_actions
        self._ambulances = _Rows(MAX_AMBULANCES, len(AMBULANCE_FEATURES))
        self._patients = _Rows(MAX_PATIENTS, len(PATIENT_FEATURES))
        self._calls = _Rows(MAX_CALLS, len(CALL_FEATURES))
        self._hospitals = _Rows(N_HOSPITALS, len(HOSPITAL_FEATURES), parts=4)

    def build(self, sim: CodeRedSim, index: LegalIndex, n_legal: int) -> dict[str, np.ndarray]:
        """The observation of ``sim`` given its legal actions (``index_legal``) and their count."""
        world, slots = sim.world, index.slots
        patients = _slot_patients([p for p in world.patients.values() if p.visible])
        calls = visible_calls(world)
        return {
            "global": self._global(sim, len(patients), len(calls), n_legal),
            "ambulances": _ambulances(self._ambulances, world, slots),
            "patients": _patients(self._patients, world, patients, slots),
            "calls": _calls(self._calls, world, calls, slots),
            "hospitals": _hospitals(self._hospitals, world, slots),
            "roads": _roads(world),
            "actions": self._actions(index.table),
        }

    def _global(self, sim: CodeRedSim, n_patients: int, n_calls: int, n_legal: int) -> np.ndarray:
        world, task = sim.world, sim.world.task
        pending = sum(1 for r in world.mutual_aid if not r.arrived)
        values = (
            world.clock / task.horizon_min,
            sim.step_count / sim.max_steps,
            task.phase == 2,
            sim.score_preview,
            (task.mutual_aid_limit - len(world.mutual_aid)) / 2,
            task.mutual_aid_limit / 2,
            pending / 2,
            world.peak_hour,
            n_patients / MAX_PATIENTS,
            n_calls / MAX_CALLS,
            alert_count(world) / 5,
            sim.last_error is not None,
            world.query_result is not None,
            n_legal / self.max_actions,
            task.horizon_min / LONGEST_HORIZON_MIN,
            sim.max_steps / LARGEST_STEP_BUDGET,
        )
        return np.array([_c(float(v)) for v in values], np.float32)

    def _actions(self, table: list[int]) -> np.ndarray:
        """Per action type: how many legal indices it has and where they start (/max_actions)."""
        # the counts and starts are never negative: ``_c(v / max_actions)`` is this float64 minimum
        scaled = np.minimum(np.array(table, np.float64) / self.max_actions, 1.0)
        return scaled.astype(np.float32).reshape(len(ACTION_ORDER), 2)


Span = tuple[slice, slice]  # (columns of a row, the matching slice of a row's per-build values)
_ROW = slice(None)


class _Rows:
    """One entity group's rows, kept between builds. A row is made of parts (the whole row by
    default): ``keys[part][i]`` is the key whose memoised columns slot ``i`` holds for that part
    (``None``: zeros); ``n`` rows are present."""

    __slots__ = ("keys", "n", "rows")

    def __init__(self, n_rows: int, width: int, parts: int = 1) -> None:
        self.rows = np.zeros((n_rows, width), np.float32)
        self.keys: list[list[Any]] = [[None] * n_rows for _ in range(parts)]
        self.n = 0

    def put(self, i: int, key: Any, columns_of: Callable[[Any], np.ndarray], part: int = 0,
            columns: slice = _ROW) -> None:
        """Slot ``i`` holds ``columns_of(key)`` in ``columns`` (written only when its key changed)."""
        keys = self.keys[part]
        if keys[i] != key:
            keys[i] = key
            self.rows[i, columns] = columns_of(key)

    def clear(self, start: int, stop: int) -> None:
        self.rows[start:stop] = 0.0
        for keys in self.keys:
            keys[start:stop] = [None] * (stop - start)

    def finish(self, n: int, spans: tuple[Span, ...], values: list[float]) -> np.ndarray:
        """``n`` rows present; ``values`` holds their per-build columns, row after row, laid out
        by ``spans``. Returns a fresh copy of the rows."""
        rows = self.rows
        if n < self.n:
            self.clear(n, self.n)
        self.n = n
        if n:  # float64 then cast on assignment: the float32 values of writing each one directly
            block = np.array(values, np.float64).reshape(n, -1)
            for columns, part in spans:
                rows[:n, columns] = block[:, part]
        return rows.copy()


def _frozen_row(row: Sequence[float]) -> np.ndarray:
    out = np.array(row, np.float32)
    out.flags.writeable = False  # shared by every slot that copies it
    return out


def _slot_patients(patients: list[Patient]) -> list[Patient]:
    """At most MAX_PATIENTS, in observation order; finished patients are dropped first."""
    extra = len(patients) - MAX_PATIENTS
    if extra <= 0:
        return patients
    finished = [i for i, p in enumerate(patients) if p.status in _FINISHED]
    drop = set(finished[:extra])
    return [p for i, p in enumerate(patients) if i not in drop][:MAX_PATIENTS]


def _c(x: float) -> float:
    """Clip a scaled count into [0, 1]."""
    return 0.0 if x < 0 else 1.0 if x > 1 else x


def _ambulances(group: _Rows, world: World, slots: dict[tuple[str, str], set]) -> np.ndarray:
    clock = world.clock
    dynamic: list[float] = []
    dispatchable = (
        slots.get(("dispatch_ambulance", "ambulance_id"), set())
        | slots.get(("dispatch_als", "ambulance_id"), set())
        | slots.get(("dispatch_bls", "ambulance_id"), set())
    )
    patients = world.patients
    for i, amb in enumerate(list(world.ambulances.values())[:MAX_AMBULANCES]):
        trip, status = amb.trip, amb.status
        known = amb.patient_id is not None and patients[amb.patient_id].visible
        group.put(i, (amb.kind == "ALS", amb.mutual_aid, status, amb.node,
                      None if trip is None else trip.target, known or amb.call_id is not None,
                      amb.held, amb.ambulance_id in dispatchable), _ambulance_row)
        eta = 0.0 if trip is None else _c(trip.eta_minutes(clock) / 30)
        busy = _c(max(0, amb.busy_until - clock) / 30) if status in ("on_scene", "at_hospital") else 0.0
        dynamic += (eta, busy)
    return group.finish(len(dynamic) // 2, _A_DYNAMIC, dynamic)


_A_ETA, _A_BUSY = _A["eta"], _A["busy"]
_A_DYNAMIC = ((slice(_A_ETA, _A_BUSY + 1), slice(0, 2)),)
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


def _patient_eta(world: World, p: Patient) -> int:
    status = p.status
    if status == "unit_en_route" or status == "transporting":
        amb = world.ambulances.get(p.ambulance_id or "")
        if amb is not None and amb.trip is not None:
            return amb.trip.eta_minutes(world.clock)
    elif status == "transferring" and p.transfer_arrives_at is not None:
        return max(0, p.transfer_arrives_at - world.clock)
    return 0


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


def _patients(group: _Rows, world: World, patients: list[Patient],
              slots: dict[tuple[str, str], set]) -> np.ndarray:
    f0, f1, f2, f3, f4 = (slots.get(key, ()) for _, key in _PATIENT_FLAGS)
    reserved = _reserved_units(world) if world.allocations else None
    dynamic: list[float] = []
    for i, p in enumerate(patients):
        pid = p.patient_id
        group.put(i, (p.condition, p.status, p.destination, p.hospital, p.node, p.ambulance_id is not None,
                      p.blood_type_known, p.secondary, pid in f0, pid in f1, pid in f2, pid in f3, pid in f4),
                  _patient_row)
        dynamic += _patient_dynamic(world, p, reserved)
    return group.finish(len(patients), _P_DYNAMIC, dynamic)


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
# the per-build columns: ``_patient_dynamic`` returns these 8 + 6 values
_P_DYNAMIC = ((slice(_P_VITALS, _P_VITALS + 8), slice(0, 8)),
              (slice(_P_WAITING, _P_WAITING + 6), slice(8, 14)))
_NOT_WAITING = (0.0, 0.0, 0.0, 0.0)


def _patient_dynamic(world: World, p: Patient, reserved: dict[str, int] | None) -> tuple[float, ...]:
    """A patient's vitals, minutes since the call, ETA, what they wait for, whether the blood type
    is known and the units reserved (the ``_P_DYNAMIC`` columns)."""
    if p.status == "deceased":
        vitals = _DEAD_VITALS
    else:
        key = (shown_reserve(p), p.hr0, p.sbp0, p.condition == "stroke")
        last = _LAST_VITALS.get(p.patient_id)
        if last is None or last[0] != key:
            last = _LAST_VITALS[p.patient_id] = (key, _vitals_columns(*key))
        vitals = last[1]
    waiting_cols = _NOT_WAITING
    if p.status == "at_hospital":
        waiting = waiting_for(world, p)
        if waiting:
            waiting_cols = (
                float("or" in waiting),
                float(any(w in SPECIALTIES for w in waiting)),
                float("blood" in waiting),
                float(any(w.startswith("transfer") for w in waiting)),
            )
    blood = 0.0 if reserved is None else _c(reserved.get(p.patient_id, 0) / 6)
    return (*vitals, _c((world.clock - p.appeared_at) / 180), _c(_patient_eta(world, p) / 30),
            *waiting_cols, float(p.blood_type_known), blood)


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


def _vitals_scaled(hr: float, sbp: float, spo2: float, rr: float, gcs: float,
                   score: float) -> tuple[float, ...]:
    return (_c(hr / 200), _c(sbp / 200), _c(spo2 / 100), _c(rr / 40), _c(gcs / 15), _c(score))


def _vitals_columns(r: float, hr0: int, sbp0: int, stroke: bool) -> tuple[float, ...]:
    """hr, sbp, spo2, rr, gcs and vitals score columns of a living patient (``displayed_vitals``)."""
    return _vitals_scaled(*vitals_values(r, hr0, sbp0, stroke))


# patient id -> (inputs, columns) of the last vitals computed for that id: a pure memo (the inputs
# are compared), hit whenever a patient's shown reserve has not moved since the last step.
_LAST_VITALS: dict[str, tuple[tuple[float, int, int, bool], tuple[float, ...]]] = {}


_DEAD_VITALS = _vitals_scaled(0, 0, 0, 0, GCS_MIN, 0.0)


@functools.lru_cache(maxsize=4096)
def _report_row(report: str) -> tuple[float, ...]:
    """A call row holding only what the caller's report says (reports never change)."""
    text, row = report.lower(), [0.0] * len(CALL_FEATURES)
    row[_C["callback"]] = float(text.startswith("callback"))
    match = _AGE_SEX.search(report)
    if match:
        row[_C["age"]] = _c(int(match.group(1)) / 100)
        row[_C["male"]] = float(match.group(2) == "M")
    for column, cues in _CUE_COLUMNS:
        for cue in cues:
            if cue in text:
                row[column] = 1.0
                break
    return tuple(row)


_CUE_COLUMNS = tuple((_C[f"cue_{cues[0].replace(' ', '_')}"], cues) for cues in REPORT_CUES)


_CALL_FLAGS = tuple(
    (_C[name], key)
    for name, key in (
        ("can_dispatch_als", ("dispatch_als", "call_id")),
        ("can_dispatch_bls", ("dispatch_bls", "call_id")),
        ("can_triage", ("triage_call", "call_id")),
        ("can_mutual_aid", ("request_mutual_aid", "target_id")),
    )
)


def _calls(group: _Rows, world: World, calls: list, slots: dict[tuple[str, str], set]) -> np.ndarray:
    clock = world.clock
    dynamic: list[float] = []
    f0, f1, f2, f3 = (slots.get(key, ()) for _, key in _CALL_FLAGS)
    for i, call in enumerate(calls[:MAX_CALLS]):
        cid = call.call_id
        group.put(i, (call.report, call.priority, call.status, call.ambulance_id is not None, call.node,
                      cid in f0, cid in f1, cid in f2, cid in f3), _call_row)
        dynamic.append(_c((clock - call.received_at) / 60))
    return group.finish(len(dynamic), _C_DYNAMIC, dynamic)


_C_WAITING = _C["waiting"]
_C_DYNAMIC = ((slice(_C_WAITING, _C_WAITING + 1), slice(0, 1)),)


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


def _hospitals(group: _Rows, world: World, slots: dict[tuple[str, str], set]) -> np.ndarray:
    """Hospital rows in four memoised parts (rooms, specialists, blood, action flags), each
    rewritten only when its own key changed, and the per-build load, diversion and ICU columns."""
    clock = world.clock
    dynamic: list[float] = []
    flag_sets = [slots.get(key, ()) for _, key in _HOSPITAL_FLAGS]
    for i, hospital_id in enumerate(HOSPITAL_IDS):
        h = world.hospitals.get(hospital_id)
        if h is None:  # every scenario has all three; a zero row otherwise
            group.clear(i, i + 1)
            dynamic += _NO_HOSPITAL
            continue
        group.put(i, tuple([(room.state, room.procedure) for room in h.ors]), _rooms_columns, 0, _H_ROOMS)
        group.put(i, tuple([(sp.specialty, sp.state) for sp in h.specialists.values()]), _specialist_columns,
                  1, _H_SPECIALISTS)
        group.put(i, tuple(h.blood.items()), _blood_columns, 2, _H_BLOOD_STOCK)
        group.put(i, tuple([hospital_id in ids for ids in flag_sets]), _hospital_flag_columns, 3, _H_FLAGS)
        diverted = h.diverted_until > clock  # ``world.diverted``
        left = _c((h.diverted_until - clock) / 60) if diverted else 0.0
        dynamic += (_c(h.occupancy / (2 * h.capacity)), float(h.crowded), float(diverted), left,
                    _c(max(0, h.icu_beds - h.icu_used) / 4))
    return group.finish(len(HOSPITAL_IDS), _H_DYNAMIC, dynamic)


_H_LOAD, _H_CROWDED, _H_DIVERTED = _H["load"], _H["crowded"], _H["diverted"]
_H_DIVERSION_LEFT, _H_ICU = _H["diversion_left"], _H["icu_free"]
assert (_H_LOAD, _H_CROWDED, _H_DIVERTED, _H_DIVERSION_LEFT) == (0, 1, 2, 3)
_H_DYNAMIC = ((slice(0, 4), slice(0, 4)), (slice(_H_ICU, _H_ICU + 1), slice(4, 5)))
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


def _roads(world: World) -> np.ndarray:
    out = np.zeros((len(EDGE_KEYS), len(ROAD_FEATURES)), np.float32)
    for d in world.disruptions:
        if not d.active or d.kind not in ("road_closure", "accident_congestion"):
            continue
        for a, b in d.edges:
            row = out[_EDGE_INDEX[edge_key(a, b)]]
            if d.kind == "road_closure":
                row[0] = 1
            else:
                row[1] = 1
                row[2] = _c((world.net.congestion.get((a, b), 1.0) - 1.0) / 2)
            row[3] = _c((d.end - world.clock) / 60)
    return out


#: The memoised rows kept between builds (the row caches of ``_Rows`` slots hold their outputs).
ROW_MEMOS = (_patient_row, _call_row, _ambulance_row, _rooms_columns, _specialist_columns,
             _blood_columns, _hospital_flag_columns)
#: Every feature memo of this module (tests clear them to prove results never depend on them).
FEATURE_MEMOS = (_patient_static, _call_static, _report_row, *ROW_MEMOS)


def sim_features(sim: CodeRedSim, max_actions: int = 256) -> dict[str, np.ndarray]:
    """The Gymnasium observation of ``sim`` as it stands (what ``CodeRedGymEnv`` returns)."""
    legal = {} if sim.done else legal_actions(sim.world)
    index = index_legal(legal)
    return FeatureBuilder(max_actions).build(sim, index, min(index.total, max_actions))


def _box(*shape: int) -> spaces.Box:
    return spaces.Box(low=0.0, high=1.0, shape=shape, dtype=np.float32)


def observation_space() -> spaces.Dict:
    """The compact observation space (the same for every task and ``max_actions``)."""
    return spaces.Dict(
        {
            "global": _box(len(GLOBAL_FEATURES)),
            "ambulances": _box(MAX_AMBULANCES, len(AMBULANCE_FEATURES)),
            "patients": _box(MAX_PATIENTS, len(PATIENT_FEATURES)),
            "calls": _box(MAX_CALLS, len(CALL_FEATURES)),
            "hospitals": _box(N_HOSPITALS, len(HOSPITAL_FEATURES)),
            "roads": _box(len(EDGE_KEYS), len(ROAD_FEATURES)),
            "actions": _box(len(ACTION_ORDER), len(ACTION_FEATURES)),
        }
    )


# ------------------------------------------------------------------------------ the environment
class CodeRedGymEnv(gymnasium.Env):
    """CodeRedEnv as a Gymnasium environment with a masked ``Discrete`` action space.

    One episode of ``CodeRedSim(task_id, seed)``. The full specification (action enumeration,
    every observation feature, reward, episode end, info keys) is docs/GYM.md.

    - Actions: ``Discrete(max_actions)``; index 0 is ``maintain_plan``, then the legal concrete
      actions in ``ACTION_ORDER`` (see ``enumerate_actions``). The legal indices are always a
      prefix ``0..n-1``: ``action_masks()`` (bool) and ``info["action_mask"]`` (int8).
      ``wire_action(i)`` is what index ``i`` does now; ``info["actions"]`` lists them all only
      when built with ``info_actions=True`` (vector envs deep-copy infos every step).
    - Observation: a ``Dict`` of float32 arrays in [0, 1] (``observation_space()``), built by
      ``FeatureBuilder`` from the visible state only.
    - Reward: the change of the running score preview; an episode's rewards sum to its grade.
    - End: ``terminated=True`` for every end, the step budget included (the simulation plays the
      rest of the world before the last reward, so nothing is left to bootstrap);
      ``info["termination_reason"]`` is ``resolved``, ``horizon`` or ``step_budget``. With
      ``truncate_on_step_budget=True`` a budget end is reported as ``truncated`` (the old
      behaviour; value bootstrapping then adds a value no update ever fits).
    - Rendering: ``"ansi"`` returns ``CodeRedSim.render_text()``; any other mode (SB3 passes
      ``"rgb_array"``) is accepted and ``render()`` warns and returns ``None``, as Gymnasium's own
      environments do for a mode they cannot draw.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        task_id: str = "task1",
        render_mode: str | None = None,
        max_actions: int = 256,
        *,
        info_actions: bool = False,
        truncate_on_step_budget: bool = False,
    ) -> None:
        if task_id not in TASKS:
            raise ValueError(f"unknown task_id {task_id!r}; valid: {', '.join(TASK_IDS)}")
        if max_actions < 1:
            raise ValueError("max_actions must be at least 1")
        self.task_id = task_id
        self.render_mode = render_mode
        self.max_actions = max_actions
        self.info_actions = info_actions
        self.truncate_on_step_budget = truncate_on_step_budget
        self.action_space = spaces.Discrete(max_actions)
        self.observation_space = observation_space()
        self._features = FeatureBuilder(max_actions)
        self.sim = CodeRedSim(task_id, 0)
        self._segments: list[Segment] = []
        self._legal_memo: LegalMemo = {}
        self._n_legal = 1
        self._end_reason: str | None = None

    # -------------------------------------------------------------- gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        task_id = (options or {}).get("task_id", self.task_id)
        if task_id not in TASKS:
            raise ValueError(f"unknown task_id {task_id!r}; valid: {', '.join(TASK_IDS)}")
        self.task_id = task_id
        sim_seed = seed if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
        self.sim = CodeRedSim(task_id, sim_seed)
        self._end_reason = None
        self._legal_memo.clear()
        return self._observe(), self._info()

    def step(self, action: int) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        result = self.sim.step(self._wire(int(action)))
        obs = self._observe()
        info = self._info()
        info["last_action_error"] = result.error  # also set when the episode was already over
        terminated = truncated = False
        if result.done:
            reason = self._end_reason = self._end_reason or self.sim.end_reason
            truncated = self.truncate_on_step_budget and reason == "step_budget"
            terminated = not truncated
            info["termination_reason"] = reason
            info["grade"] = self.sim.grade()
        return obs, float(result.reward), terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Legal indices now (the sb3-contrib MaskablePPO convention), as a boolean array."""
        mask = np.zeros(self.max_actions, dtype=bool)
        mask[: self._n_legal] = True
        return mask

    def wire_action(self, index: int) -> dict[str, Any]:
        """The wire action index ``index`` stands for now (``IndexError`` if it is not legal)."""
        if not 0 <= index < self._n_legal:
            raise IndexError(f"action index {index} is not legal now; legal: 0..{self._n_legal - 1}")
        return decode_action(self._segments, index)

    def legal_wire_actions(self) -> list[dict[str, Any]]:
        """Every legal index's wire action, in index order."""
        return [decode_action(self._segments, i) for i in range(self._n_legal)]

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self.sim.render_text()
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode; use render_mode='ansi'")
        else:
            gymnasium.logger.warn(f"render_mode {self.render_mode!r} is not supported (only 'ansi')")
        return None

    # -------------------------------------------------------------- helpers
    def _observe(self) -> dict[str, np.ndarray]:
        sim = self.sim
        legal = {} if sim.done else legal_actions(sim.world)
        index = index_legal(legal, self._legal_memo)
        self._segments, self._n_legal = index.segments, min(index.total, self.max_actions)
        return self._features.build(sim, index, self._n_legal)

    def _info(self) -> dict[str, Any]:
        mask = np.zeros(self.max_actions, dtype=np.int8)
        mask[: self._n_legal] = 1
        info: dict[str, Any] = {
            "action_mask": mask,
            "score_preview": self.sim.score_preview,
            "last_action_error": self.sim.last_error,
            "step": self.sim.step_count,
            "clock_min": self.sim.clock,
        }
        if self.info_actions:
            info["actions"] = self.legal_wire_actions()
        return info

    def _wire(self, index: int) -> dict[str, Any]:
        if 0 <= index < self._n_legal and not self.sim.done:
            return decode_action(self._segments, index)
        return {"action_type": f"masked_out_gym_action_{index}"}


# ------------------------------------------------------------------------------ registration
def register_envs() -> list[str]:
    """Register ``CodeRedEnv-task1-v1`` .. ``CodeRedEnv-task5-v1`` (idempotent); returns the ids.

    v1 (issue 21): the ``max_steps`` feature is the budget over the largest budget in the task
    table (v0 divided by 60, so tasks 3-5 all read 1.0)."""
    ids = []
    for task_id in TASK_IDS:
        env_id = f"CodeRedEnv-{task_id}-v1"
        if env_id not in gymnasium.registry:
            gymnasium.register(
                id=env_id,
                entry_point="codered_env.gym_env:CodeRedGymEnv",
                kwargs={"task_id": task_id},
            )
        ids.append(env_id)
    return ids


register_envs()
