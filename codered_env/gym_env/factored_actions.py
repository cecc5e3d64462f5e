"""The factored action space: ``MultiDiscrete([type, unit, case, hospital, parameter])``.

Each action type of the catalogue (``ACTION_NAMES`` order: ``maintain_plan`` is type 0) uses some
of the components; the components it does not use are ignored and encode as 0.

==================  ======  =====================  ===============  =================================
type                unit    case                   hospital         parameter
==================  ======  =====================  ===============  =================================
maintain_plan       --      --                     --               --
dispatch_ambulance  unit    patient                --               --
dispatch_als/bls    unit    call                   --               --
triage_call         --      call                   --               priority
assign_hospital     --      patient                hospital         --
prepare_or          --      --                     hospital         procedure
page_specialist     --      --                     hospital         specialty
preempt_or          --      --                     hospital         operating room (by slot)
allocate_blood      --      patient                hospital         blood type x units
transfer_blood      --      --                     from hospital    to hospital x blood type x units
request_mutual_aid  --      target (parameter 1)   --               0: no target, 1: for the case
query_blood_type    --      patient                --               --
query_or_status     --      --                     hospital         --
==================  ======  =====================  ===============  =================================

``FactoredLegal`` turns the simulation's legal actions into the masks, each option into
component codes once; the array of every legal component vector (one row per concrete legal
action, every blood unit count included) is put together only when asked for.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..sim.catalogue import ACTION_NAMES, ACTIONS, MAINTAIN_PLAN, ActionSpec, ParamSpec
from .slots import PRAKASHNAGAR_LAYOUT, SlotLayout, SlotTable

COMPONENTS: tuple[str, ...] = ("type", "unit", "case", "hospital", "parameter")


TYPE_INDEX: dict[str, int] = {name: i for i, name in enumerate(ACTION_NAMES)}


def _values(param: ParamSpec, layout: SlotLayout) -> tuple[Any, ...]:
    """Every value a parameter can take (enums, integer ranges, the layout's ids by slot: None
    for a slot this city leaves empty)."""
    if param.kind == "enum":
        return param.choices
    if param.kind == "int":
        assert param.minimum is not None and param.maximum is not None
        return tuple(range(param.minimum, param.maximum + 1))
    return {"hospital": layout.hospital_ids, "or": layout.or_ids}[param.id_of or ""]


def _components(spec: ActionSpec) -> tuple[tuple[str | None, str | None, str | None], tuple[str, ...]]:
    """Which wire parameter of an action goes into the unit, case and hospital components (the
    first of each kind), and the ones the parameter component stands for (the rest)."""
    slots: list[str | None] = [None, None, None]
    rest = []
    for param in spec.params:
        component = _SLOT_KINDS.get(param.id_of or "")
        if component is not None and slots[component] is None:
            slots[component] = param.name
        else:
            rest.append(param.name)
    return (slots[0], slots[1], slots[2]), tuple(rest)


_SLOT_KINDS = {"ambulance": 0, "patient": 1, "call": 1, "patient_or_call": 1, "hospital": 2}


_SPLIT = {spec.name: _components(spec) for spec in ACTIONS}


#: per action type: the wire parameter in the unit, case and hospital components (None: unused)
SLOT_PARAMS: dict[str, tuple[str | None, str | None, str | None]] = {
    n: split[0] for n, split in _SPLIT.items()
}


ParameterTable = dict[str, tuple[tuple[str, ...], tuple[tuple[Any, ...], ...]]]


def _parameter_table(layout: SlotLayout) -> ParameterTable:
    table: ParameterTable = {}
    for spec in ACTIONS:
        names = _SPLIT[spec.name][1]
        if names:
            values = (_values(p, layout) for p in spec.params if p.name in names)
            table[spec.name] = (names, tuple(itertools.product(*values)))
    table.update(
        {
            spec.name: ((), ((), ()))
            for spec in ACTIONS
            if any(not p.required and p.name in SLOT_PARAMS[spec.name] for p in spec.params)
        }
    )
    return table


class ActionTables:
    """The codes of one slot layout: ``nvec`` (its ``MultiDiscrete``), ``offsets`` (the first
    column of each component in a flat mask of length ``sum(nvec)``), the parameter table and its
    index (a value naming an empty slot has no index)."""

    __slots__ = ("column_shift", "layout", "nvec", "offsets", "parameter_index", "parameter_table")

    def __init__(self, layout: SlotLayout) -> None:
        self.layout = layout
        self.parameter_table = _parameter_table(layout)
        self.parameter_index: dict[str, dict[tuple[Any, ...], int]] = {
            name: {values: i for i, values in enumerate(table) if None not in values}
            for name, (_, table) in self.parameter_table.items()
        }
        n_parameters = max(len(values) for _, values in self.parameter_table.values())
        self.nvec: tuple[int, ...] = (
            len(ACTION_NAMES), layout.n_units, layout.maxima.cases, layout.n_hospitals, n_parameters
        )
        self.offsets: tuple[int, ...] = tuple(int(x) for x in np.cumsum((0, *self.nvec[:-1])))
        # component k's first column in a type's row of ``type_masks``
        self.column_shift = np.array(self.offsets[1:], np.int64) - self.nvec[0]


@functools.lru_cache(maxsize=1024)
def action_tables(layout: SlotLayout) -> ActionTables:
    """The codes of ``layout`` (the same object for the same layout)."""
    return ActionTables(layout)


_PRAKASHNAGAR_TABLES = action_tables(PRAKASHNAGAR_LAYOUT)


#: per action type with a parameter component: the wire parameters it stands for and every
#: value of them in component order (the cross product, the last parameter varying fastest).
#: An optional case (``request_mutual_aid``'s target) is parameter 0 (none) or 1 (the case).
#: Prakashnagar's; a city's hospitals and rooms by slot in ``action_tables(layout)``.
PARAMETER_TABLE: ParameterTable = _PRAKASHNAGAR_TABLES.parameter_table


_ALIASES = {spec.name: tuple(a.name for a in spec.aliases) for spec in ACTIONS}


#: the action types whose case component is optional (parameter 1: given)
OPTIONAL_CASE = frozenset(n for n, (names, table) in PARAMETER_TABLE.items() if not names and len(table) == 2)


#: Prakashnagar's ``MultiDiscrete`` (``CodeRedFactored-taskN``; ``ActionTables.nvec`` of others)
NVEC: tuple[int, ...] = _PRAKASHNAGAR_TABLES.nvec


OFFSETS: tuple[int, ...] = _PRAKASHNAGAR_TABLES.offsets


def encode(wire: Mapping[str, Any], slots: SlotTable) -> np.ndarray:
    """The component vector of a wire action (a ValueError naming what cannot be encoded)."""
    action_type = wire.get("action_type")
    if action_type not in TYPE_INDEX:
        raise ValueError(f"unknown action_type {action_type!r}; valid: {', '.join(ACTION_NAMES)}")
    layout = slots.layout
    tables = action_tables(layout)
    out = np.zeros(len(NVEC), np.int64)
    out[0] = TYPE_INDEX[action_type]
    unit_p, case_p, hospital_p = SLOT_PARAMS[action_type]
    if unit_p is not None:
        out[1] = _lookup(layout.unit_slot, wire.get(unit_p), unit_p)
    target = None
    if case_p is not None:
        target = wire.get(case_p)
        for alias in _ALIASES[action_type]:
            target = wire.get(alias) if target is None else target
        if target is not None or action_type not in OPTIONAL_CASE:
            out[2] = _lookup(slots.slot_of, target, case_p)
    if hospital_p is not None:
        out[3] = _lookup(layout.hospital_slot, wire.get(hospital_p), hospital_p)
    if action_type in OPTIONAL_CASE:
        out[4] = int(target is not None)
    elif action_type in PARAMETER_TABLE:
        names, _ = PARAMETER_TABLE[action_type]
        values = tuple(wire.get(n) for n in names)
        index = tables.parameter_index[action_type].get(values)
        if index is None:
            raise ValueError(f"{action_type}: no parameter value for {dict(zip(names, values, strict=True))}")
        out[4] = index
    return out


def _lookup(table: Mapping[str, int], entity_id: Any, param: str) -> int:
    slot = table.get(entity_id) if isinstance(entity_id, str) else None
    if slot is None:
        raise ValueError(f"{param}={entity_id!r} has no slot")
    return slot


def decode(combo: Sequence[int], slots: SlotTable) -> dict[str, Any]:
    """The wire action of a component vector (a ValueError saying which component is wrong).
    Legality is not checked here (``FactoredLegal.error`` does)."""
    if len(combo) != len(NVEC):
        raise ValueError(f"a factored action has {len(NVEC)} components {COMPONENTS}, got {len(combo)}")
    layout = slots.layout
    tables = action_tables(layout)
    values = [int(v) for v in combo]
    for name, v, n in zip(COMPONENTS, values, tables.nvec, strict=True):
        if not 0 <= v < n:
            raise ValueError(f"component {name}={v} is out of range 0..{n - 1}")
    action_type = ACTION_NAMES[values[0]]
    if action_type == "maintain_plan":
        return dict(MAINTAIN_PLAN)
    wire: dict[str, Any] = {"action_type": action_type}
    unit_p, case_p, hospital_p = SLOT_PARAMS[action_type]
    if unit_p is not None:
        unit_id = layout.unit_ids[values[1]]
        if unit_id is None:
            raise ValueError(f"{action_type}: unit slot {values[1]} holds no unit in this city")
        wire[unit_p] = unit_id
    if case_p is not None and (action_type not in OPTIONAL_CASE or values[4] == 1):
        case_id = slots.wire_id(values[2], case_p)
        if case_id is None:
            raise ValueError(f"{action_type}: case slot {values[2]} holds no {case_p.removesuffix('_id')}")
        wire[case_p] = case_id
    if hospital_p is not None:
        hospital_id = layout.hospital_ids[values[3]]
        if hospital_id is None:
            raise ValueError(f"{action_type}: hospital slot {values[3]} holds no hospital in this city")
        wire[hospital_p] = hospital_id
    if action_type in PARAMETER_TABLE and action_type not in OPTIONAL_CASE:
        names, table = tables.parameter_table[action_type]
        if values[4] >= len(table):
            raise ValueError(f"{action_type}: parameter {values[4]} is out of range 0..{len(table) - 1}")
        if None in table[values[4]]:
            raise ValueError(f"{action_type}: parameter {values[4]} names an empty slot in this city")
        wire.update(zip(names, table[values[4]], strict=True))
    elif values[4] > (1 if action_type in OPTIONAL_CASE else 0):
        raise ValueError(
            f"{action_type}: parameter must be 0{' or 1' if action_type in OPTIONAL_CASE else ''}"
        )
    return wire


# --------------------------------------------------------------------------- legal combinations
_Part = tuple[tuple[int, ...], list[int]]  # one component's codes and the type_masks columns they mark
_Parts = tuple[_Part, _Part, _Part, _Part]  # an option's: unit, case, hospital, parameter


class _OptionCoder:
    """Turns the options of one episode into codes, component by component: every combination
    of an option's unit, case, hospital and parameter codes is legal. Each component's codes are
    kept by its values (slots never change within an episode), so an option whose id list
    changed is coded from the parts it shares with earlier options (the same hospitals, blood
    types and unit counts recur in the options of many patients)."""

    def __init__(self, tables: ActionTables) -> None:
        self.tables = tables
        self._shift: list[int] = tables.column_shift.tolist()
        self._parts: dict[tuple[Any, ...], _Part] = {}
        self._zero = tuple(self._part((k, 0, None), [0]) for k in range(4))  # an unused component
        self._given = self._part((3, 1, None), [1])  # an optional case given

    def parts(
        self, action_type: str, option: Mapping[str, Sequence[Any]], slot_of: Mapping[str, int]
    ) -> _Parts:
        unit_p, case_p, hospital_p = SLOT_PARAMS[action_type]
        layout, zero = self.tables.layout, self._zero
        unit = self._ids(0, option[unit_p], layout.unit_slot) if unit_p else zero[0]
        case = self._ids(1, option[case_p], slot_of) if case_p is not None and case_p in option else zero[1]
        hospital = self._ids(2, option[hospital_p], layout.hospital_slot) if hospital_p else zero[2]
        if action_type in OPTIONAL_CASE:
            parameter = self._given if case_p in option else zero[3]
        elif action_type in PARAMETER_TABLE:
            parameter = self._parameter(action_type, option)
        else:
            parameter = zero[3]
        return unit, case, hospital, parameter

    def _part(self, key: tuple[Any, ...], codes: list[int]) -> _Part:
        shift = self._shift[key[0]]
        part = self._parts[key] = (tuple(codes), [code + shift for code in codes])
        return part

    def _ids(self, component: int, ids: Sequence[str], slot_of: Mapping[str, int]) -> _Part:
        """The slots of ``ids`` (an id without a slot is left out)."""
        key = (component, *ids)
        return self._parts.get(key) or self._part(key, [slot_of[i] for i in ids if i in slot_of])

    def _parameter(self, action_type: str, option: Mapping[str, Sequence[Any]]) -> _Part:
        names, _ = PARAMETER_TABLE[action_type]
        key = (3, action_type, *(tuple(option[n]) for n in names))
        part = self._parts.get(key)
        if part is None:
            index = self.tables.parameter_index[action_type]
            part = self._part(key, [index[values] for values in itertools.product(*key[2:])])
        return part


def _option_rows(action_type: str, parts: _Parts) -> np.ndarray:
    """Every legal component vector of one option (rows; the last component varies fastest)."""
    t = TYPE_INDEX[action_type]
    (units, _), (cases, _), (hospitals, _), (parameters, _) = parts
    rows = [(t, u, c, h, p) for u in units for c in cases for h in hospitals for p in parameters]
    return np.array(rows, np.int64).reshape(len(rows), len(NVEC))


_MAINTAIN_ROW = np.zeros((1, len(NVEC)), np.int64)


_DECISIONS = ACTION_NAMES[1:]


class _TypeNow:
    """One action type's legal options as the simulation gave them, in codes, with the columns
    its ``type_masks`` row marks (an option with a component left empty marks none); its rows
    are put together only when asked for."""

    __slots__ = ("_rows", "action_type", "coded", "columns", "options")

    def __init__(self, action_type: str, options: Any, coded: list[_Parts]) -> None:
        self.action_type, self.options, self.coded = action_type, options, coded
        self.columns: list[int] = []
        for unit, case, hospital, parameter in coded:
            if unit[0] and case[0] and hospital[0] and parameter[0]:
                self.columns += unit[1] + case[1] + hospital[1] + parameter[1]
        self._rows: np.ndarray | None = None

    @property
    def rows(self) -> np.ndarray:
        if self._rows is None:
            parts = [_option_rows(self.action_type, option) for option in self.coded]
            self._rows = parts[0] if len(parts) == 1 else np.concatenate(parts)
        return self._rows

    def contains(self, unit: int, case: int, hospital: int, parameter: int) -> bool:
        return any(
            unit in units[0] and case in cases[0] and hospital in hospitals[0] and parameter in parameters[0]
            for units, cases, hospitals, parameters in self.coded
        )


class FactoredLegal:
    """The legal component vectors of one episode, step by step (``update``), and their masks
    written in place. Options are turned into codes component by component (``_OptionCoder``),
    and a type's mask row is written only when its options changed (the observation view hands
    back the same option lists while their inputs are the same). The masks are written from
    the codes; the rows of every legal vector (``combos``) are put together only when asked
    for, and a played action is checked against the codes of its own type alone
    (``contains``)."""

    def __init__(self, layout: SlotLayout = PRAKASHNAGAR_LAYOUT) -> None:
        self._memo: dict[str, _TypeNow] = {}  # type -> its options when last legal
        self._coder = _OptionCoder(action_tables(layout))
        self._now: dict[str, _TypeNow] = {}  # the types legal now (maintain_plan aside)
        self._combos: np.ndarray | None = _MAINTAIN_ROW
        self._fresh = True  # the masks hold nothing yet (a new episode)
        self.tables = action_tables(layout)

    def reset(self, layout: SlotLayout | None = None) -> None:
        """A new episode (in the city of ``layout``, when given): slots (and so the codes of an
        option) start again; the mask arrays were zeroed by the caller."""
        self._memo.clear()
        self._now.clear()
        self._combos = _MAINTAIN_ROW
        self._fresh = True
        if layout is not None:
            self.tables = action_tables(layout)
        self._coder = _OptionCoder(self.tables)

    @property
    def combos(self) -> np.ndarray:
        """Every legal vector now (rows; ``maintain_plan`` first, then by type). Read only."""
        if self._combos is None:
            now = self._now
            parts = [_MAINTAIN_ROW, *(now[t].rows for t in _DECISIONS if t in now)]
            self._combos = np.concatenate(parts) if len(parts) > 1 else _MAINTAIN_ROW
        return self._combos

    def update(
        self,
        legal: Mapping[str, Sequence[Mapping[str, Sequence[Any]]]],
        slot_of: Mapping[str, int],
        out_flat: np.ndarray,
        out_types: np.ndarray,
    ) -> set[int]:
        """Take the legal actions now (``legal_actions``) and write their masks into ``out_flat``
        (the legal types, then per component the values some legal action uses) and ``out_types``
        (per type, the values of each other component its legal actions use: exact for the chosen
        type; a type is legal exactly when its row marks anything). Every id in ``legal`` has
        had its slot given (or refused) already, so codes never go stale. Returns the types whose
        masks changed (their indices)."""
        changed = self._start(out_types)
        memo, now = self._memo, self._now
        for action_type in _DECISIONS:
            options = legal.get(action_type)
            if not options:
                if action_type in now:
                    del now[action_type]
                    out_types[TYPE_INDEX[action_type]] = False
                    changed.add(TYPE_INDEX[action_type])
                continue
            kept = memo.get(action_type)
            if kept is None or (kept.options is not options and kept.options != options):
                coded = [self._coder.parts(action_type, option, slot_of) for option in options]
                kept = memo[action_type] = _TypeNow(action_type, options, coded)
            elif now.get(action_type) is kept:
                continue
            changed.add(TYPE_INDEX[action_type])
            row = out_types[TYPE_INDEX[action_type]]
            row[:] = False
            row[kept.columns] = True
            now[action_type] = kept
        if changed:
            self._combos = None
            _flat_mask(out_types, out_flat)
        return changed

    def _start(self, out_types: np.ndarray) -> set[int]:
        """The types changed so far: maintain_plan's, marked once an episode."""
        if not self._fresh:
            return set()
        self._fresh = False
        out_types[0, self.tables.column_shift] = True  # maintain_plan: every component 0
        return {0}

    def finish(self, out_flat: np.ndarray, out_types: np.ndarray) -> set[int]:
        """The episode is over: only the wait is legal (and marked). Returns every type (their
        masks may have changed)."""
        self._start(out_types)
        self._now.clear()
        self._memo.clear()
        self._combos = _MAINTAIN_ROW
        out_types[1:] = False
        _flat_mask(out_types, out_flat)
        return set(range(len(out_types)))

    def contains(self, combo: np.ndarray) -> bool:
        t, unit, case, hospital, parameter = combo.tolist()
        if t == 0:
            return not (unit or case or hospital or parameter)
        kept = self._now.get(ACTION_NAMES[t]) if 0 < t < len(ACTION_NAMES) else None
        return kept is not None and kept.contains(unit, case, hospital, parameter)


def _flat_mask(out_types: np.ndarray, out_flat: np.ndarray) -> None:
    out_types.any(axis=1, out=out_flat[: NVEC[0]])
    out_types.any(axis=0, out=out_flat[NVEC[0] :])
