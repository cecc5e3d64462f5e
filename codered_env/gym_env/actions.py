"""The fixed Discrete action space: legal actions enumerated in the catalogue's order (blood units
canonicalised), indexed lazily by segments and decoded back into wire actions."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from ..sim.catalogue import ACTION_NAMES, ACTIONS, MAINTAIN_PLAN

ACTION_ORDER: tuple[str, ...] = ACTION_NAMES  # the catalogue's order: maintain_plan is index 0


CANONICAL_UNITS: tuple[int, ...] = (1, 2, 4)


_BLOOD_ACTIONS = frozenset(a.name for a in ACTIONS if "units" in a.param_names)  # units canonicalised


MAINTAIN: dict[str, Any] = MAINTAIN_PLAN


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


_SEGMENT_TYPES = ACTION_ORDER[1:]  # maintain_plan is always index 0


OptionPart = tuple[tuple[str, ...], tuple[Sequence[Any], ...], int]  # names, values, actions


Segment = tuple[str, int, int, tuple[OptionPart, ...]]  # type, first index, actions, its options' parts


class LegalIndex(NamedTuple):
    """What the adapter needs from the legal-action dict, read in one pass (``index_legal``)."""

    segments: list[Segment]  # one per action type with at least one action, in enumeration order
    total: int  # the number of concrete actions, ``maintain_plan`` included
    slots: dict[tuple[str, str], set]  # (action type, parameter) -> every id it accepts now
    table: list[int]  # (count, first index) per type of ``ACTION_ORDER``, flat


# per action type: (its options as last seen, their parts, slot id sets, number of actions)
TypeParts = tuple[Any, tuple[OptionPart, ...], dict[tuple[str, str], set], int]


LegalMemo = dict[str, TypeParts]


def index_legal(legal: Mapping[str, Sequence[Mapping[str, Sequence[Any]]]],
                memo: LegalMemo | None = None) -> LegalIndex:
    """The segments of the enumeration, the per-slot id sets and the per-type table of ``legal``.

    With ``memo`` (one per environment), an action type whose options are (or equal) the ones it
    had at the previous call reuses their parsed parts; only the first indices are recomputed.
    The parts and id sets handed out are shared with later calls and must not be changed, and
    the option lists of ``legal`` must not be changed after the call (the memo keeps them)."""
    segments: list[Segment] = []
    slots: dict[tuple[str, str], set] = {}
    table = [0] * (2 * len(ACTION_ORDER))
    table[0] = 1
    start = 1
    get = legal.get
    for action_type, slot_keys, blood, column in _SEGMENT_PLAN:
        options = get(action_type)
        if not options:
            continue
        last = None if memo is None else memo.get(action_type)
        if last is None or (last[0] is not options and last[0] != options):
            last = (options, *_option_parts(options, slot_keys, blood))
            if memo is not None:
                memo[action_type] = last
        _, parts, type_slots, size = last
        if type_slots:
            slots.update(type_slots)  # keys are (type, parameter): no two types share one
        if size:
            segments.append((action_type, start, size, parts))
            table[column], table[column + 1] = size, start
            start += size
    return LegalIndex(segments, start, slots, table)


def _option_parts(options: Sequence[Mapping[str, Sequence[Any]]], slot_keys: dict[str, tuple[str, str]],
                  blood: bool) -> tuple[tuple[OptionPart, ...], dict[tuple[str, str], set], int]:
    """(names, values, size) of each option of one type with at least one action, the ids each
    slot parameter accepts, and the type's number of actions."""
    parts = []
    slots: dict[tuple[str, str], set] = {}
    total = 0
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
            total += size
    return tuple(parts), slots, total


def _canonical_units(values: Sequence[Any]) -> list[Any]:
    return [u for u in values if u in CANONICAL_UNITS]


def decode_action(segments: Sequence[Segment], index: int) -> dict[str, Any]:
    """The wire action at ``index`` of the enumeration described by ``segments``."""
    if index == 0:
        return dict(MAINTAIN)
    for action_type, start, size, parts in segments:
        if index < start + size:
            local = index - start
            for names, values, n in parts:
                if local < n:
                    return _decode_option(action_type, names, values, local)
                local -= n
    raise IndexError(f"action index {index} is not legal now")


def _decode_option(action_type: str, names: tuple[str, ...], values: tuple[Sequence[Any], ...],
                   local: int) -> dict[str, Any]:
    """Action ``local`` of one option's cross product (the last parameter varies fastest)."""
    picked: list[Any] = [None] * len(names)
    for k in range(len(names) - 1, -1, -1):
        local, r = divmod(local, len(values[k]))
        picked[k] = values[k][r]
    return {"action_type": action_type, **dict(zip(names, picked, strict=True))}


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
