"""``FeatureBuilder``: the numeric observation of the observation view
(``CodeRedSim.observation_view``), and the observation space."""

from __future__ import annotations

import operator
import struct
from typing import Any

import numpy as np
from gymnasium import spaces

from ..sim.env import CodeRedSim
from ..sim.view import ObservationView
from .actions import ACTION_ORDER, LegalIndex, index_legal
from .changes import ChangeMarks, change_marks
from .hospital_rows import _H_DYNAMIC, _hospitals, _roads, hospital_flag_sets
from .row_parts import _Rows
from .rows import (
    _A_DYNAMIC,
    _C_DYNAMIC,
    _P_DYNAMIC,
    _ambulances,
    _calls,
    _patients,
    _slot_patients,
    call_flag_sets,
    call_waiting,
)
from .schema import (
    ACTION_FEATURES,
    AMBULANCE_FEATURES,
    CALL_FEATURES,
    EDGE_KEYS,
    GLOBAL_FEATURES,
    HOSPITAL_FEATURES,
    LARGEST_STEP_BUDGET,
    LONGEST_HORIZON_MIN,
    MAX_AMBULANCES,
    MAX_CALLS,
    MAX_PATIENTS,
    N_HOSPITALS,
    PATIENT_FEATURES,
    ROAD_FEATURES,
)

# the observation's arrays in one float32 buffer: (name, first value, last value + 1, shape)
_SHAPES: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("global", (len(GLOBAL_FEATURES),)),
    ("ambulances", (MAX_AMBULANCES, len(AMBULANCE_FEATURES))),
    ("patients", (MAX_PATIENTS, len(PATIENT_FEATURES))),
    ("calls", (MAX_CALLS, len(CALL_FEATURES))),
    ("hospitals", (N_HOSPITALS, len(HOSPITAL_FEATURES))),
    ("roads", (len(EDGE_KEYS), len(ROAD_FEATURES))),
    ("actions", (len(ACTION_ORDER), len(ACTION_FEATURES))),
)


def _layout() -> tuple[tuple[str, int, int, tuple[int, ...]], ...]:
    out, start = [], 0
    for name, shape in _SHAPES:
        size = int(np.prod(shape))
        out.append((name, start, start + size, shape))
        start += size
    return tuple(out)


_LAYOUT = _layout()


_SPAN = {name: (start, stop) for name, start, stop, _ in _LAYOUT}


_BUFFER_SIZE = _LAYOUT[-1][2]


# number of values -> its struct packer (a pure memo: at most one per possible count)
_PACKERS: dict[int, struct.Struct] = {}


_VIEWS = tuple((name, slice(start, stop), shape) for name, start, stop, shape in _LAYOUT)


class FeatureBuilder:
    """Numeric features of the observation view, field by field.

    Only the observation is read (``CodeRedSim.observation_view``; which parts changed since the
    last build: ``changes.change_marks``): visible patients (a phase-2 caller stays a call with
    its report until a crew is on scene), displayed vitals, agent triage, OR/specialist states,
    blood stock, active disruptions. Future calls, hidden conditions, reserves, unknown blood
    types and OR timers are not in it (tests perturb them and compare).

    Incremental: the builder keeps every array of the previous build in one float32 buffer. A
    row's discrete part (one-hots and action flags, a pure function of a small key) is copied in
    from a memo only when the key at that slot changed; the per-minute values (vitals, minutes,
    ETAs, waiting, load ..., the global features and the per-type action table) of the build are
    gathered in one list and written with one indexed assignment. Each build returns views of
    one fresh copy of the buffer, and a new builder produces the same bytes (tests compare them
    over many episodes).
    """

    def __init__(self, max_actions: int) -> None:
        self._setup(max_actions)

    def _setup(self, max_actions: int) -> None:
        self.max_actions = max_actions
        self._buffer = np.zeros(_BUFFER_SIZE, np.float32)
        views = {name: self._buffer[start:stop].reshape(shape) for name, start, stop, shape in _LAYOUT}
        self._ambulances = _Rows(views["ambulances"], _SPAN["ambulances"][0], _A_DYNAMIC)
        self._patients = _Rows(views["patients"], _SPAN["patients"][0], _P_DYNAMIC)
        self._calls = _Rows(views["calls"], _SPAN["calls"][0], _C_DYNAMIC)
        self._hospitals = _Rows(views["hospitals"], _SPAN["hospitals"][0], _H_DYNAMIC, parts=4)
        self._roads = views["roads"]
        self._roads_written = False
        self._indices: dict[tuple[int, int, int], np.ndarray] = {}
        # (change marks, flag id sets) the hospital rows' room, blood and flag parts were last
        # read at (a copy or pickle reads them again)
        self._hospitals_seen: tuple[ChangeMarks, tuple] | None = None
        # (change marks, flag id sets, minutes received, open calls) of the call rows' last full
        # read (``_call_rows``)
        self._calls_seen: tuple[ChangeMarks, tuple, tuple[int, ...], int] | None = None

    def _groups(self) -> tuple[_Rows, ...]:
        return (self._ambulances, self._patients, self._calls, self._hospitals)

    def __getstate__(self) -> dict[str, Any]:
        """The kept rows without their views (a copy or pickle rebuilds the views of its own buffer)."""
        return {"max_actions": self.max_actions, "buffer": self._buffer, "roads_written": self._roads_written,
                "groups": [(group.keys, group.n) for group in self._groups()]}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._setup(state["max_actions"])
        self._buffer[:] = state["buffer"]
        self._roads_written = state["roads_written"]
        for group, (keys, n) in zip(self._groups(), state["groups"], strict=True):
            group.keys, group.n = keys, n

    def build(self, view: ObservationView, index: LegalIndex, n_legal: int) -> dict[str, np.ndarray]:
        """The observation of ``view`` given its legal actions (``index_legal``) and their count."""
        slots, marks, clock = index.slots, change_marks(view), view["clock_min"]
        patients = _slot_patients(view["patients"])
        values: list[float] = []  # in the order of ``_dynamic_index``
        n_ambulances = _ambulances(self._ambulances, view["ambulances"], slots, values)
        n_patients = _patients(self._patients, patients, slots, values)
        n_calls, n_open_calls = self._call_rows(view, marks, slots, values)
        counts = (n_ambulances, n_patients, n_calls)
        self._hospital_rows(view, marks, slots, values)
        values += self._global(view, len(patients), n_open_calls, n_legal)
        m = self.max_actions  # counts and starts are never negative: ``_c(v / m)`` is ``v / m`` capped at 1
        values += [v / m if v < m else 1.0 for v in index.table]
        indices = self._indices.get(counts)
        if indices is None:
            indices = self._indices[counts] = self._dynamic_index(counts)
        packer = _PACKERS.get(len(values))
        if packer is None:
            packer = _PACKERS[len(values)] = struct.Struct(f"{len(values)}d")
        buffer = self._buffer
        # float64 (packed by struct: exact, and cheaper than numpy's conversion of a list) then
        # cast on assignment: the float32 values of writing each one directly
        buffer[indices] = np.frombuffer(packer.pack(*values), np.float64)
        roads = view["roads"]
        if self._roads_written or roads["closed"] or roads["congested"]:
            if self._roads_written:
                self._roads.fill(0.0)
            self._roads_written = _roads(self._roads, roads, clock)
        out = buffer.copy()
        arrays = {}
        for name, span, shape in _VIEWS:
            array = arrays[name] = out[span]
            array.shape = shape  # a view of ``out`` (cheaper than ``reshape``)
        return arrays

    def _hospital_rows(self, view: ObservationView, marks: ChangeMarks, slots: dict[tuple[str, str], set],
                       values: list[float]) -> None:
        """The hospital rows (``_hospitals``), their room, blood and flag parts read only when
        the rooms' or the stock's change mark or a flag's id set moved."""
        flag_sets = hospital_flag_sets(slots)
        seen = self._hospitals_seen
        if seen is None or seen[0].episode is not marks.episode:
            unchanged = (False, False, False)
        else:
            unchanged = (seen[0].rooms == marks.rooms, seen[0].stock == marks.stock,
                         all(map(operator.is_, seen[1], flag_sets)))
        _hospitals(self._hospitals, view["hospitals"], view["clock_min"], flag_sets, values, unchanged)
        self._hospitals_seen = (marks, flag_sets)

    def _call_rows(self, view: ObservationView, marks: ChangeMarks, slots: dict[tuple[str, str], set],
                   values: list[float]) -> tuple[int, int]:
        """The call rows (``_calls``): not even read while no call changed (the calls' change
        mark) and the flags' id sets equal those of the last build; then only the waiting times
        move. Returns how many rows are present and how many calls are open."""
        flag_sets = call_flag_sets(slots)
        seen, clock = self._calls_seen, view["clock_min"]
        if (seen is not None and seen[0].episode is marks.episode and seen[0].calls == marks.calls
                and seen[1] == flag_sets):
            call_waiting(seen[2], clock, values)
            return len(seen[2]), seen[3]
        calls = view["calls"]
        received = _calls(self._calls, calls, flag_sets, clock, values)
        self._calls_seen = (marks, flag_sets, received, len(calls))
        return len(received), len(calls)

    def _dynamic_index(self, counts: tuple[int, int, int]) -> np.ndarray:
        """Flat buffer indices of a build's values given how many ambulances, patients and calls
        are present: their per-build columns, the hospitals', the global features, the table."""
        groups = (self._ambulances, self._patients, self._calls)
        parts = [group.dynamic[:n * group.per_row] for group, n in zip(groups, counts, strict=True)]
        parts.append(self._hospitals.dynamic)
        parts += [np.arange(_SPAN[name][0], _SPAN[name][1]) for name in ("global", "actions")]
        return np.concatenate(parts).astype(np.intp)

    def _global(self, view: ObservationView, n_patients: int, n_calls: int, n_legal: int) -> list[float]:
        aid, horizon, max_steps = view["mutual_aid"], view["horizon_min"], view["max_steps"]
        values = (
            view["clock_min"] / horizon,
            view["step"] / max_steps,
            view["phase"] == 2,
            view["score_preview"],
            aid["remaining"] / 2,
            aid["limit"] / 2,
            len(aid["pending"]) / 2,
            view["roads"]["peak_hour"],
            n_patients / MAX_PATIENTS,
            n_calls / MAX_CALLS,
            view.alert_count() / 5,
            view["last_action_error"] is not None,
            view["query_result"] is not None,
            n_legal / self.max_actions,
            horizon / LONGEST_HORIZON_MIN,
            max_steps / LARGEST_STEP_BUDGET,
        )
        return [0.0 if v < 0 else 1.0 if v > 1 else float(v) for v in values]  # ``_c(float(v))``


def sim_features(sim: CodeRedSim, max_actions: int = 256) -> dict[str, np.ndarray]:
    """The Gymnasium observation of ``sim`` as it stands (what ``CodeRedGymEnv`` returns)."""
    view = sim.observation_view()
    index = index_legal({} if sim.done else view["legal_actions"])
    return FeatureBuilder(max_actions).build(view, index, min(index.total, max_actions))


def _box(*shape: int) -> spaces.Box:
    return spaces.Box(low=0.0, high=1.0, shape=shape, dtype=np.float32)


def observation_space() -> spaces.Dict:
    """The compact observation space (the same for every task and ``max_actions``)."""
    return spaces.Dict({name: _box(*shape) for name, shape in _SHAPES})
