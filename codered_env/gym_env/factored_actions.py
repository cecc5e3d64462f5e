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
preempt_or          --      --                     hospital         operating room (``OR_IDS``)
allocate_blood      --      patient                hospital         blood type x units
transfer_blood      --      --                     from hospital    to hospital x blood type x units
request_mutual_aid  --      target (parameter 1)   --               0: no target, 1: for the case
query_blood_type    --      patient                --               --
query_or_status     --      --                     hospital         --
==================  ======  =====================  ===============  =================================

``legal_combos`` turns the simulation's legal actions into the array of every legal component
vector (one row per concrete legal action, every blood unit count included); each action
type's rows are kept while that type's options are unchanged.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..sim.catalogue import ACTION_NAMES, MAINTAIN_PLAN
from ..sim.params import BLOOD_TYPES, MAX_BLOOD_UNITS_PER_ACTION, PROCEDURES, SPECIALTIES
from ..sim.triage import PRIORITIES
from .slots import HOSPITAL_IDS, HOSPITAL_SLOT, MAX_CASES, OR_IDS, UNIT_IDS, UNIT_SLOT, SlotTable

COMPONENTS: tuple[str, ...] = ("type", "unit", "case", "hospital", "parameter")


TYPE_INDEX: dict[str, int] = {name: i for i, name in enumerate(ACTION_NAMES)}


UNITS = tuple(range(1, MAX_BLOOD_UNITS_PER_ACTION + 1))


# per action type: the wire parameters its parameter component stands for, and every value of
# them in parameter-component order (the cross product, the last parameter varying fastest)
PARAMETER_TABLE: dict[str, tuple[tuple[str, ...], tuple[tuple[Any, ...], ...]]] = {
    "triage_call": (("priority",), tuple((p,) for p in PRIORITIES)),
    "prepare_or": (("procedure",), tuple((p,) for p in PROCEDURES)),
    "page_specialist": (("specialty",), tuple((s,) for s in SPECIALTIES)),
    "preempt_or": (("or_id",), tuple((o,) for o in OR_IDS)),
    "allocate_blood": (("blood_type", "units"), tuple(itertools.product(BLOOD_TYPES, UNITS))),
    "transfer_blood": (("to_hospital_id", "blood_type", "units"),
                       tuple(itertools.product(HOSPITAL_IDS, BLOOD_TYPES, UNITS))),
    "request_mutual_aid": ((), ((), ())),  # 0: no target, 1: for the case in the case component
}


# per action type: the wire parameter in the unit, case and hospital components (None: unused)
SLOT_PARAMS: dict[str, tuple[str | None, str | None, str | None]] = {
    "maintain_plan": (None, None, None),
    "dispatch_ambulance": ("ambulance_id", "patient_id", None),
    "dispatch_als": ("ambulance_id", "call_id", None),
    "dispatch_bls": ("ambulance_id", "call_id", None),
    "triage_call": (None, "call_id", None),
    "assign_hospital": (None, "patient_id", "hospital_id"),
    "prepare_or": (None, None, "hospital_id"),
    "page_specialist": (None, None, "hospital_id"),
    "preempt_or": (None, None, "hospital_id"),
    "allocate_blood": (None, "patient_id", "hospital_id"),
    "transfer_blood": (None, None, "from_hospital_id"),
    "request_mutual_aid": (None, "target_id", None),
    "query_blood_type": (None, "patient_id", None),
    "query_or_status": (None, None, "hospital_id"),
}


assert tuple(SLOT_PARAMS) == ACTION_NAMES, "a row per catalogue action, in its order"


N_PARAMETERS = max(len(values) for _, values in PARAMETER_TABLE.values())


NVEC: tuple[int, ...] = (len(ACTION_NAMES), len(UNIT_IDS), MAX_CASES, len(HOSPITAL_IDS), N_PARAMETERS)


# the first column of each component in a flat mask of length ``sum(NVEC)``
OFFSETS: tuple[int, ...] = tuple(int(x) for x in np.cumsum((0, *NVEC[:-1])))


_PARAMETER_INDEX: dict[str, dict[tuple[Any, ...], int]] = {
    name: {values: i for i, values in enumerate(table)} for name, (_, table) in PARAMETER_TABLE.items()
}


def combo_key(combos: np.ndarray) -> np.ndarray:
    """One integer per component vector (mixed radix over ``NVEC``), for membership tests."""
    key = combos[..., 0].astype(np.int64)
    for k in range(1, len(NVEC)):
        key = key * NVEC[k] + combos[..., k]
    return key


def encode(wire: Mapping[str, Any], slots: SlotTable) -> np.ndarray:
    """The component vector of a wire action (a ValueError naming what cannot be encoded)."""
    action_type = wire.get("action_type")
    if action_type not in TYPE_INDEX:
        raise ValueError(f"unknown action_type {action_type!r}; valid: {', '.join(ACTION_NAMES)}")
    out = np.zeros(len(NVEC), np.int64)
    out[0] = TYPE_INDEX[action_type]
    unit_p, case_p, hospital_p = SLOT_PARAMS[action_type]
    if unit_p is not None:
        out[1] = _lookup(UNIT_SLOT, wire.get(unit_p), unit_p)
    target = None
    if case_p is not None:
        target = wire.get(case_p)
        if action_type == "request_mutual_aid":
            target = wire.get("target_id", wire.get("patient_id", wire.get("call_id")))
        if target is not None or action_type != "request_mutual_aid":
            out[2] = _lookup(slots.slot_of, target, case_p)
    if hospital_p is not None:
        out[3] = _lookup(HOSPITAL_SLOT, wire.get(hospital_p), hospital_p)
    if action_type == "request_mutual_aid":
        out[4] = int(target is not None)
    elif action_type in PARAMETER_TABLE:
        names, _ = PARAMETER_TABLE[action_type]
        values = tuple(wire.get(n) for n in names)
        index = _PARAMETER_INDEX[action_type].get(values)
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
    values = [int(v) for v in combo]
    for name, v, n in zip(COMPONENTS, values, NVEC, strict=True):
        if not 0 <= v < n:
            raise ValueError(f"component {name}={v} is out of range 0..{n - 1}")
    action_type = ACTION_NAMES[values[0]]
    if action_type == "maintain_plan":
        return dict(MAINTAIN_PLAN)
    wire: dict[str, Any] = {"action_type": action_type}
    unit_p, case_p, hospital_p = SLOT_PARAMS[action_type]
    if unit_p is not None:
        wire[unit_p] = UNIT_IDS[values[1]]
    if case_p is not None and (action_type != "request_mutual_aid" or values[4] == 1):
        case_id = slots.wire_id(values[2], case_p)
        if case_id is None:
            raise ValueError(f"{action_type}: case slot {values[2]} holds no {case_p.removesuffix('_id')}")
        wire[case_p] = case_id
    if hospital_p is not None:
        wire[hospital_p] = HOSPITAL_IDS[values[3]]
    if action_type in PARAMETER_TABLE and action_type != "request_mutual_aid":
        names, table = PARAMETER_TABLE[action_type]
        if values[4] >= len(table):
            raise ValueError(f"{action_type}: parameter {values[4]} is out of range 0..{len(table) - 1}")
        wire.update(zip(names, table[values[4]], strict=True))
    elif values[4] > (1 if action_type == "request_mutual_aid" else 0):
        raise ValueError(f"{action_type}: parameter must be 0{' or 1' if action_type == 'request_mutual_aid' else ''}")
    return wire


# --------------------------------------------------------------------------- legal combinations
def _option_columns(action_type: str, option: Mapping[str, Sequence[Any]],
                    slot_of: Mapping[str, int]) -> list[list[int]] | None:
    """Per component (unit, case, hospital, parameter), the values one legal option allows
    (None when an id in it has no slot)."""
    unit_p, case_p, hospital_p = SLOT_PARAMS[action_type]
    unit = [UNIT_SLOT[u] for u in option[unit_p]] if unit_p else [0]
    if case_p is not None and case_p in option:
        case = [slot_of[c] for c in option[case_p] if c in slot_of]
    else:
        case = [0]
    hospital = [HOSPITAL_SLOT[h] for h in option[hospital_p]] if hospital_p else [0]
    if action_type == "request_mutual_aid":
        parameter = [1 if case_p in option else 0]
    elif action_type in PARAMETER_TABLE:
        names, _ = PARAMETER_TABLE[action_type]
        index = _PARAMETER_INDEX[action_type]
        parameter = [index[values] for values in itertools.product(*(option[n] for n in names))]
    else:
        parameter = [0]
    return [unit, case, hospital, parameter]


def _type_combos(action_type: str, options: Sequence[Mapping[str, Sequence[Any]]],
                 slot_of: Mapping[str, int]) -> np.ndarray:
    """Every legal component vector of one action type (rows), in option order."""
    type_index = TYPE_INDEX[action_type]
    parts = []
    for option in options:
        columns = _option_columns(action_type, option, slot_of)
        if columns is None or not all(columns):
            continue
        grid = np.meshgrid(*columns, indexing="ij")
        rows = np.empty((grid[0].size, len(NVEC)), np.int64)
        rows[:, 0] = type_index
        for k, g in enumerate(grid, 1):
            rows[:, k] = g.ravel()
        parts.append(rows)
    return np.concatenate(parts) if parts else np.empty((0, len(NVEC)), np.int64)


class FactoredLegal:
    """The legal component vectors of one episode, step by step (``update``), with the
    per-type rows kept while that type's options are unchanged (the observation view hands back
    the same option lists while their inputs are the same)."""

    def __init__(self) -> None:
        self._memo: dict[str, tuple[Any, np.ndarray]] = {}
        self.combos = np.zeros((1, len(NVEC)), np.int64)  # maintain_plan
        self.keys = combo_key(self.combos)

    def reset(self) -> None:
        self._memo.clear()

    def update(self, legal: Mapping[str, Sequence[Mapping[str, Sequence[Any]]]],
               slot_of: Mapping[str, int]) -> np.ndarray:
        """The legal vectors now (rows; ``maintain_plan`` first), from ``legal_actions``."""
        parts = [_MAINTAIN_ROW]
        memo = self._memo
        for action_type in ACTION_NAMES[1:]:
            options = legal.get(action_type)
            if not options:
                continue
            kept = memo.get(action_type)
            if kept is None or (kept[0] is not options and kept[0] != options):
                kept = memo[action_type] = (options, _type_combos(action_type, options, slot_of))
            if len(kept[1]):
                parts.append(kept[1])
        self.combos = np.concatenate(parts) if len(parts) > 1 else _MAINTAIN_ROW
        self.keys = combo_key(self.combos)
        return self.combos

    def finish(self) -> np.ndarray:
        self.combos, self.keys = _MAINTAIN_ROW, combo_key(_MAINTAIN_ROW)
        return self.combos

    def contains(self, combo: np.ndarray) -> bool:
        return bool((self.keys == combo_key(combo)).any())


_MAINTAIN_ROW = np.zeros((1, len(NVEC)), np.int64)


def masks_of(combos: np.ndarray, out_flat: np.ndarray, out_types: np.ndarray) -> None:
    """Write the masks of the legal vectors ``combos``: ``out_flat`` (``sum(NVEC)``,) the legal
    types and, per other component, the values some legal action uses; ``out_types``
    (types, ``sum(NVEC[1:])``) the same per chosen type (exact for that type)."""
    out_flat.fill(False)
    out_types.fill(False)
    types = combos[:, 0]
    out_flat[types] = True
    for k in range(1, len(NVEC)):
        column = combos[:, k] + (OFFSETS[k] - NVEC[0])
        out_types[types, column] = True
        out_flat[column + NVEC[0]] = True
