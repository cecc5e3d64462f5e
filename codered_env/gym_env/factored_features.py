"""The factored interface's observation: per-slot rows of units, cases and hospitals, travel
minutes between them, and the action masks, all read from the observation view.

Each array is written in place into buffers the caller owns (``Buffers``; the vector
env hands out its batch rows), and only the rows that can have changed are written: the units,
the open calls, the patients still in care and those whose status moved, the hospitals whose
row the view rebuilt. Column names are the ``*_COLUMNS`` tuples below.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np
from gymnasium import spaces

from ..sim.city import PRAKASHNAGAR
from ..sim.conditions import CONDITIONS
from ..sim.params import BLOOD_TYPES, PROCEDURES, SPECIALTIES
from ..sim.triage import CALLBACK_PREFIX, PRIORITIES, report_facts
from ..sim.types import AMBULANCE_STATES, FINAL_PATIENT_STATES, OR_STATES, PATIENT_STATES, SPECIALIST_STATES
from ..sim.view import ObservationView
from .factored_actions import NVEC, SLOT_PARAMS, TYPE_INDEX, action_tables
from .schema import BYSTANDER_CUE, CONDITION_IDS, LARGEST_STEP_BUDGET, LONGEST_HORIZON_MIN, REPORT_CUES
from .slots import PRAKASHNAGAR_LAYOUT, PRAKASHNAGAR_MAXIMA, SlotLayout, SlotMaxima, SlotTable, layout_for

GLOBAL_COLUMNS: tuple[str, ...] = (
    "clock_frac",
    "step_frac",
    "phase2",
    "score_preview",
    "mutual_aid_remaining",
    "mutual_aid_limit",
    "mutual_aid_pending",
    "peak_hour",
    "n_alerts",
    "last_action_error",
    "query_result",
    "n_cases",
    "horizon",
    "max_steps",
)

UNIT_COLUMNS: tuple[str, ...] = (
    "present",
    "als",
    "mutual_aid",
    *(f"status_{s}" for s in AMBULANCE_STATES),
    "free",
    "eta",
    "busy",
    "has_job",
    "held",
)

_CALL_PART = (*(f"triaged_{p}" for p in PRIORITIES), "untriaged", "pending", "dispatched", "call_has_unit")

_REPORT_PART = (
    "age",
    "male",
    "callback",
    *(f"cue_{name}" for name, _ in REPORT_CUES),
    f"cue_{BYSTANDER_CUE}",
)

def _hospital_names(n_hospitals: int) -> tuple[str, ...]:
    """Column names of the hospital slots (``H1`` for slot 0: Prakashnagar's ids)."""
    return tuple(f"H{i}" for i in range(1, n_hospitals + 1))


def _patient_part(n_hospitals: int) -> tuple[str, ...]:
    hospitals = _hospital_names(n_hospitals)
    return (
    *(f"priority_{p}" for p in PRIORITIES),
    *(f"condition_{c}" for c in CONDITION_IDS),
    *(f"status_{s}" for s in PATIENT_STATES),
    "hr",
    "sbp",
    "spo2",
    "rr",
    "gcs",
    "vitals_score",
    "eta",
    "has_unit",
    *(f"dest_{h}" for h in hospitals),
    *(f"at_{h}" for h in hospitals),
    "waiting_or",
    "waiting_specialist",
    "waiting_blood",
    "waiting_transfer",
    "blood_type_known",
    "blood_reserved",
    "secondary",
    )


def case_columns(maxima: SlotMaxima = PRAKASHNAGAR_MAXIMA) -> tuple[str, ...]:
    """The case row's columns under ``maxima`` (``dest_Hk`` / ``at_Hk``: the hospital of slot k-1)."""
    return ("present", "open_call", "patient", "done", "waited", *_CALL_PART, *_REPORT_PART,
            *_patient_part(maxima.hospitals))


_PATIENT_PART = _patient_part(PRAKASHNAGAR_MAXIMA.hospitals)


CASE_COLUMNS: tuple[str, ...] = case_columns()

# what each hospital can take part in now: its component of the exact masks of every action type
# with a hospital component
_HOSPITAL_ACTIONS = tuple(name for name, (_, _, hospital) in SLOT_PARAMS.items() if hospital is not None)

HOSPITAL_COLUMNS: tuple[str, ...] = (
    "load",
    "crowded",
    "diverted",
    "diversion_left",
    *(f"or_{s}" for s in OR_STATES),
    *(f"ready_{p}" for p in PROCEDURES),
    *(f"can_prepare_{p}" for p in PROCEDURES),
    *(f"{sp}_{st}" for sp in SPECIALTIES for st in SPECIALIST_STATES),
    "icu_free",
    *(f"blood_{t}" for t in BLOOD_TYPES),
    "blood_total",
    *(f"can_{a}" for a in _HOSPITAL_ACTIONS),
)

#: Minutes that read as 1.0 in the travel arrays (and any longer or cut-off route); design choice:
#: the longest shortest route of the city at peak hour is under an hour.
TRAVEL_SCALE_MIN = 60.0

Shapes = dict[str, tuple[tuple[int, ...], Any]]


@functools.lru_cache(maxsize=16)
def shapes(maxima: SlotMaxima = PRAKASHNAGAR_MAXIMA) -> Shapes:
    """Every observation array's shape and dtype under ``maxima`` (read only)."""
    layout = layout_for(PRAKASHNAGAR, maxima)  # every city's layout has the same sizes
    nvec = action_tables(layout).nvec
    units, cases, hospitals = layout.n_units, maxima.cases, maxima.hospitals
    return {
        "global": ((len(GLOBAL_COLUMNS),), np.float32),
        "units": ((units, len(UNIT_COLUMNS)), np.float32),
        "cases": ((cases, len(case_columns(maxima))), np.float32),
        "hospitals": ((hospitals, len(HOSPITAL_COLUMNS)), np.float32),
        "unit_case_minutes": ((units, cases), np.float32),
        "case_hospital_minutes": ((cases, hospitals), np.float32),
        "unit_present": ((units,), np.int8),
        "case_present": ((cases,), np.int8),
        "action_mask": ((sum(nvec),), np.bool_),
        "type_masks": ((nvec[0], sum(nvec[1:])), np.bool_),
    }


SHAPES: Shapes = shapes()


def factored_observation_space(maxima: SlotMaxima = PRAKASHNAGAR_MAXIMA) -> spaces.Dict:
    """Every array is a ``Box`` in [0, 1] (float32 features, int8 presence, bool masks)."""
    return spaces.Dict(
        {name: spaces.Box(0, 1, shape, dtype) for name, (shape, dtype) in shapes(maxima).items()}
    )


class Buffers:
    """Every observation array (``arrays``, zeroed, with leading ``batch`` dimensions); ``copy``
    copies each (quicker than one copy of a shared buffer cut into views again)."""

    def __init__(self, batch: tuple[int, ...] = (), maxima: SlotMaxima = PRAKASHNAGAR_MAXIMA) -> None:
        self.arrays = {
            name: np.zeros(batch + shape, dtype) for name, (shape, dtype) in shapes(maxima).items()
        }

    def copy(self) -> dict[str, np.ndarray]:
        return {name: array.copy() for name, array in self.arrays.items()}


def _index(columns: tuple[str, ...]) -> dict[str, int]:
    return {c: i for i, c in enumerate(columns)}


_U, _K, _H = _index(UNIT_COLUMNS), _index(CASE_COLUMNS), _index(HOSPITAL_COLUMNS)
_CALL_START, _REPORT_START, _PATIENT_START = _K[_CALL_PART[0]], _K["age"], _K[_PATIENT_PART[0]]
_HOSPITAL_TYPE_ROWS = np.array([TYPE_INDEX[a] for a in _HOSPITAL_ACTIONS])
_HOSPITAL_TYPES = frozenset(TYPE_INDEX[a] for a in _HOSPITAL_ACTIONS)
_CAN_START = _H[f"can_{_HOSPITAL_ACTIONS[0]}"]
_DIVERSION_LEFT = _H["diversion_left"]
#: every action type (``write``'s default: all masks may have changed)
ALL_TYPES = frozenset(range(NVEC[0]))


def _c(x: float) -> float:
    return 0.0 if x < 0 else 1.0 if x > 1 else x


def _one_hot(values: tuple[str, ...], value: Any) -> list[float]:
    return [1.0 if v == value else 0.0 for v in values]


@functools.lru_cache(maxsize=4096)
def report_columns(report: str) -> tuple[float, ...]:
    """The report part of a case row: what the caller said (the report model's reading)."""
    facts = report_facts(report)
    callback = float(report.startswith(CALLBACK_PREFIX))
    if facts is None:
        return (0.0, 0.0, callback, *([0.0] * (len(REPORT_CUES) + 1)))
    cues = [1.0 if features & facts.features else 0.0 for _, features in REPORT_CUES]
    return (_c(facts.age / 100), float(facts.sex == "M"), callback, *cues, float(facts.caller == "bystander"))


@functools.lru_cache(maxsize=4096)
def _call_columns(priority: str | None, status: str, has_unit: bool) -> tuple[float, ...]:
    return (
        *_one_hot(PRIORITIES, priority),
        float(priority is None),
        float(status == "pending"),
        float(status == "dispatched"),
        float(has_unit),
    )


_NO_CALL = (0.0,) * len(_CALL_PART)


@functools.lru_cache(maxsize=8192)
def _patient_static(
    condition: str,
    status: str,
    destination: str | None,
    hospital: str | None,
    has_unit: bool,
    hospital_ids: tuple[str | None, ...],
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The patient part's discrete columns before and after the vitals and ETA."""
    head = (
        *_one_hot(PRIORITIES, CONDITIONS[condition].true_priority),
        *_one_hot(CONDITION_IDS, condition),
        *_one_hot(PATIENT_STATES, status),
    )
    tail = (float(has_unit), *_one_hot(hospital_ids, destination), *_one_hot(hospital_ids, hospital))
    return head, tail


@functools.lru_cache(maxsize=256)
def _waiting_columns(waiting: tuple[str, ...]) -> tuple[float, ...]:
    return (
        float("or" in waiting),
        float(any(w in SPECIALTIES for w in waiting)),
        float("blood" in waiting),
        float(any(w.startswith("transfer") for w in waiting)),
    )


_NO_PATIENT = (0.0,) * len(_PATIENT_PART)


def _patient_columns(p: Mapping[str, Any], hospital_ids: tuple[str | None, ...]) -> tuple[float, ...]:
    has_unit = p["ambulance_id"] is not None
    head, tail = _patient_static(
        p["condition"], p["status"], p["destination"], p["hospital"], has_unit, hospital_ids
    )
    v = p["vitals"]
    eta = p["eta_min"]
    reserved = sum(p["blood_reserved"].values())
    return (
        *head,
        _c(v["hr"] / 200),
        _c(v["sbp"] / 200),
        _c(v["spo2"] / 100),
        _c(v["rr"] / 40),
        _c(v["gcs"] / 15),
        _c(v["score"]),
        0.0 if eta is None else _c(eta / 30),
        *tail,
        *_waiting_columns(tuple(p["waiting_for"])),
        float(p["blood_type"] is not None),
        _c(reserved / 6),
        float(p["secondary"]),
    )


@functools.lru_cache(maxsize=1024)
def _hospital_static(
    rooms: tuple[tuple[str, str | None, tuple[str, ...]], ...], specialists: tuple[tuple[str, str], ...]
) -> tuple[float, ...]:
    """OR state counts, ready rooms and rooms that could be readied per procedure, specialists."""
    counts = [0.0] * len(OR_STATES)
    ready = [0.0] * len(PROCEDURES)
    can_prepare = [0.0] * len(PROCEDURES)
    for state, procedure, procedures in rooms:
        counts[OR_STATES.index(state)] += 1 / 3
        if state == "ready" and procedure in PROCEDURES:
            ready[PROCEDURES.index(procedure)] = 1.0
        if state == "idle":
            for proc in procedures:
                can_prepare[PROCEDURES.index(proc)] = 1.0
    staff = dict(specialists)
    people = [float(staff.get(sp) == st) for sp in SPECIALTIES for st in SPECIALIST_STATES]
    return (*[min(1.0, c) for c in counts], *ready, *can_prepare, *people)


def _diversion_left(until: int, clock: int) -> float:
    return _c((until - clock) / 60)


def _rooms_and_staff(h: Mapping[str, Any]) -> tuple[float, ...]:
    rooms = tuple((r["state"], r["procedure"], tuple(r["procedures"])) for r in h["ors"])
    specialists = tuple((sp, s["state"]) for sp, s in h["specialists"].items())
    return _hospital_static(rooms, specialists)


def _blood_columns(blood: Mapping[str, int]) -> tuple[float, ...]:
    return (*(_c(blood.get(t, 0) / 12) for t in BLOOD_TYPES), _c(sum(blood.values()) / 60))


def _hospital_columns(
    h: Mapping[str, Any], clock: int, rooms_and_staff: tuple[float, ...], blood: tuple[float, ...]
) -> list[float]:
    until = h["diverted_until"]
    return [
        _c(h["occupancy"] / max(1, h["capacity"])),
        float(h["crowded"]),
        float(until is not None),
        0.0 if until is None else _diversion_left(until, clock),
        *rooms_and_staff,
        _c(h["icu_free"] / 4),
        *blood,
        *([0.0] * len(_HOSPITAL_ACTIONS)),
    ]


@functools.lru_cache(maxsize=8192)
def _unit_row(
    kind: str, mutual_aid: bool, status: str, eta: int | None, busy: int | None, has_job: bool, held: bool
) -> tuple[float, ...]:
    return (
        1.0,
        float(kind == "ALS"),
        float(mutual_aid),
        *_one_hot(AMBULANCE_STATES, status),
        float(status in ("available", "returning")),
        0.0 if eta is None else _c(eta / 30),
        0.0 if busy is None else _c(busy / 30),
        float(has_job),
        float(held),
    )


class FactoredFeatures:
    """One episode's observation writer (``reset`` between episodes, with the layout of the
    episode's city). ``write(view, out, changed)`` fills the arrays of ``out`` (``Buffers().arrays``
    or a vector env's rows of its batch; their shapes are the layout's maxima's)."""

    def __init__(self, layout: SlotLayout = PRAKASHNAGAR_LAYOUT) -> None:
        self._set_layout(layout)
        self._case_state: dict[int, tuple[Any, ...]] = {}  # slot -> what its row was written from
        self._open_calls: set[int] = set()  # the slots of calls no patient has taken over
        # slot -> the patient's status and columns last written
        self._patient_written: list[Any] = [None] * layout.maxima.cases
        self._travel: tuple[Any, np.ndarray] | None = None

    def _set_layout(self, layout: SlotLayout) -> None:
        self.layout = layout
        self.slots = SlotTable(layout)
        self._tables = action_tables(layout)
        self._node = layout.node_index
        self._no_node = len(layout.node_index)  # the all-zero row and column of the padded travel table
        self._case_node = np.full(layout.maxima.cases, self._no_node, np.intp)
        self._hospital_rows: list[Any] = [None] * layout.n_hospitals
        # slot -> the rooms, specialists and blood parts of its row (the view hands back the same
        # objects while they are unchanged) and the columns made from them
        self._hospital_parts: list[Any] = [None] * layout.n_hospitals
        self._hospital_nodes = np.full(layout.n_hospitals, self._no_node, np.intp)
        # where each hospital's can_* columns are in the flattened ``type_masks``
        hospital_columns = np.arange(layout.n_hospitals) + self._tables.offsets[3] - NVEC[0]
        width = sum(self._tables.nvec[1:])
        self._hospital_mask_index = _HOSPITAL_TYPE_ROWS[None, :] * width + hospital_columns[:, None]
        self._unit_node = np.full(layout.n_units, self._no_node, np.intp)
        self._unit_rows: list[Any] = [None] * layout.n_units  # slot -> the row written (lru-cached tuples)
        self._travel_inputs: tuple[Any, ...] | None = None  # what the travel arrays were written from
        self._episode: tuple[Any, ...] | None = None  # the global columns fixed for the episode

    def reset(self, out: Mapping[str, np.ndarray], layout: SlotLayout | None = None) -> None:
        """A new episode (in the city of ``layout``, when given; its maxima must be the same)."""
        if layout is not None and layout.maxima != self.layout.maxima:
            raise ValueError(f"slot maxima {layout.maxima} differ from this writer's {self.layout.maxima}")
        self._set_layout(layout or self.layout)
        self._case_state.clear()
        self._open_calls.clear()
        self._patient_written = [None] * self.layout.maxima.cases
        for array in out.values():
            array.fill(0)

    def update_slots(self, view: ObservationView) -> None:
        self.slots.update(view["calls"], view["patients"])

    def write(
        self, view: ObservationView, out: Mapping[str, np.ndarray], changed: AbstractSet[int] = ALL_TYPES
    ) -> None:
        """The observation of ``view`` into ``out``; ``update_slots(view)`` came first and the
        masks of its legal actions are in ``out`` already (``FactoredLegal.update``, which says
        which types' masks changed)."""
        clock = view["clock_min"]
        unit_nodes = self._units(view, out)
        self._cases(view, out, clock)
        self._hospitals(view, out, clock, not _HOSPITAL_TYPES.isdisjoint(changed))
        self._travel_minutes(view, unit_nodes, out)
        out["global"][:] = self._global(view)

    def _units(self, view: ObservationView, out: Mapping[str, np.ndarray]) -> np.ndarray:
        """The unit rows (each written only when it changed); returns each slot's node index
        (the padded zero row: absent)."""
        rows, present, nodes, kept = out["units"], out["unit_present"], self._unit_node, self._unit_rows
        unit_slot, node = self.layout.unit_slot, self._node
        for a in view["ambulances"]:
            i = unit_slot[a["ambulance_id"]]
            row = _unit_row(
                a["kind"],
                a["mutual_aid"],
                a["status"],
                a["eta_min"],
                a["busy_min"],
                a["patient_id"] is not None or a["call_id"] is not None,
                a["held"],
            )
            if kept[i] is not row:
                rows[i] = row
                present[i] = 1
                kept[i] = row
            nodes[i] = node[a["node"]]
        return nodes

    def _cases(self, view: ObservationView, out: Mapping[str, np.ndarray], clock: int) -> None:
        """The case rows: a call's or a patient's columns written only when they changed (the
        minutes waited, which move every minute, always)."""
        calls_now = self._call_rows(view, out)
        self._patient_rows(view, out)
        cases = out["cases"]
        for slot in self._open_calls - calls_now:  # a call closed without a patient
            cases[slot, :_REPORT_START] = (1.0, 0.0, 0.0, 1.0, 0.0, *_NO_CALL)
            self._case_node[slot] = self._no_node
            self._case_state[slot] = ("closed",)
        self._open_calls = calls_now

    def _call_rows(self, view: ObservationView, out: Mapping[str, np.ndarray]) -> set[int]:
        """The rows of the calls no patient has taken over; returns their slots."""
        slots, state = self.slots, self._case_state
        cases, present, node_of, node = out["cases"], out["case_present"], self._case_node, self._node
        written: set[int] = set()
        for call in view["calls"]:
            slot = slots.slot_of.get(call["call_id"])
            if slot is None or slots.case_patient[slot] is not None:
                continue
            written.add(slot)
            key = ("call", call["priority"], call["status"], call["ambulance_id"] is not None)
            if state.get(slot) != key:
                if slot not in state:
                    cases[slot, _REPORT_START:_PATIENT_START] = report_columns(call["report"])
                    present[slot] = 1
                    node_of[slot] = node[call["node"]]
                cases[slot, :_REPORT_START] = (1.0, 1.0, 0.0, 0.0, 0.0, *_call_columns(*key[1:]))
                state[slot] = key
            cases[slot, 4] = _c(call["waiting_min"] / 120)
        return written

    def _patient_rows(self, view: ObservationView, out: Mapping[str, np.ndarray]) -> None:
        slots, state, hospital_ids = self.slots, self._case_state, self.layout.hospital_ids
        cases, present, node_of = out["cases"], out["case_present"], self._case_node
        for p in view["patients"]:
            slot = slots.slot_of.get(p["patient_id"])
            if slot is None:
                continue
            status = p["status"]
            final = status in FINAL_PATIENT_STATES
            since = _c(p["minutes_since_call"] / 120)
            if final and state.get(slot) == ("patient", status):
                cases[slot, 4] = since
                continue
            if slot not in state:
                present[slot] = 1
                cases[slot, _REPORT_START : _REPORT_START + 2] = (_c(p["age"] / 100), float(p["sex"] == "M"))
            columns = _patient_columns(p, hospital_ids)
            if self._patient_written[slot] != (status, columns):
                cases[slot, :_REPORT_START] = (1.0, 0.0, 1.0, float(final), since, *_NO_CALL)
                cases[slot, _PATIENT_START:] = columns
                self._patient_written[slot] = (status, columns)
            else:
                cases[slot, 4] = since
            node_of[slot] = self._no_node if final else self._node[p["node"]]
            state[slot] = ("patient", status)
            self._open_calls.discard(slot)

    def _hospitals(
        self, view: ObservationView, out: Mapping[str, np.ndarray], clock: int, masks_changed: bool
    ) -> None:
        """A hospital's row written when the view made it anew (the view reuses an unchanged
        one), the minutes of diversion left of a diverted one every step; the can_* columns when
        the masks of an action type with a hospital changed."""
        hospitals, hospital_slot, rewritten = out["hospitals"], self.layout.hospital_slot, False
        for h in view["hospitals"]:
            i = hospital_slot[h["hospital_id"]]
            if self._hospital_rows[i] is not h:
                hospitals[i] = self._hospital_row(i, h, clock)  # its can_* columns zeroed
                self._hospital_rows[i] = h
                self._hospital_nodes[i] = self._node[h["node"]]
                rewritten = True
            elif h["diverted_until"] is not None:
                hospitals[i, _DIVERSION_LEFT] = _diversion_left(h["diverted_until"], clock)
        if masks_changed or rewritten:
            hospitals[:, _CAN_START:] = np.take(out["type_masks"], self._hospital_mask_index)

    def _hospital_row(self, i: int, h: Mapping[str, Any], clock: int) -> list[float]:
        rooms, staff, blood = h["ors"], h["specialists"], h["blood"]
        kept = self._hospital_parts[i]
        same_rooms = kept is not None and kept[0] is rooms and kept[1] is staff
        rooms_and_staff = kept[2] if same_rooms else _rooms_and_staff(h)
        blood_columns = kept[4] if kept is not None and kept[3] is blood else _blood_columns(blood)
        self._hospital_parts[i] = (rooms, staff, rooms_and_staff, blood, blood_columns)
        return _hospital_columns(h, clock, rooms_and_staff, blood_columns)

    def _travel_minutes(
        self, view: ObservationView, unit_nodes: np.ndarray, out: Mapping[str, np.ndarray]
    ) -> None:
        table = view.travel_minutes()
        if self._travel is None or self._travel[0] is not table:
            n = self._no_node
            scaled = np.zeros((n + 1, n + 1), np.float32)  # padded: absent reads 0
            scaled[:n, :n] = np.minimum(np.asarray(table, np.float64) / TRAVEL_SCALE_MIN, 1.0)
            self._travel = (table, scaled)
        scaled = self._travel[1]
        cases = self._case_node
        # most steps move no unit or case to another node: the arrays then stay as written
        inputs = (table, unit_nodes.tobytes(), cases.tobytes(), self._hospital_nodes.tobytes())
        written = self._travel_inputs
        if written is not None and written[0] is table and written[1:] == inputs[1:]:
            return
        self._travel_inputs = inputs
        out["unit_case_minutes"][:] = scaled[unit_nodes[:, None], cases[None, :]]
        out["case_hospital_minutes"][:] = scaled[cases[:, None], self._hospital_nodes[None, :]]

    def _global(self, view: ObservationView) -> list[float]:
        episode = self._episode
        if episode is None:  # what stays the same for the whole episode, read once
            horizon, max_steps = view["horizon_min"], view["max_steps"]
            episode = self._episode = (
                horizon, max_steps, view["phase"] == 2, view["mutual_aid"]["limit"] / 2,
                view["roads"]["peak_hour"], horizon / LONGEST_HORIZON_MIN, max_steps / LARGEST_STEP_BUDGET,
            )
        horizon, max_steps, phase2, aid_limit, peak_hour, horizon_frac, budget_frac = episode
        aid = view["mutual_aid"]
        values = (
            view["clock_min"] / horizon,
            view["step"] / max_steps,
            phase2,
            view["score_preview"],
            aid["remaining"] / 2,
            aid_limit,
            len(aid["pending"]) / 2,
            peak_hour,
            view.alert_count() / 5,
            view["last_action_error"] is not None,
            view["query_result"] is not None,
            len(self.slots) / self.slots.max_cases,
            horizon_frac,
            budget_frac,
        )
        return [_c(float(v)) for v in values]
