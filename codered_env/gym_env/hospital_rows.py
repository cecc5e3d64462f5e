"""The memoised row encoders of the hospitals and the roads, read from the observation's
``hospitals`` and ``roads`` (the other groups: ``rows``)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..sim.city import edge_key
from ..sim.params import BLOOD_TYPES, MEMO_ENTRIES, PROCEDURES, SPECIALTIES
from ..sim.types import OR_STATES, SPECIALIST_STATES
from .row_parts import _c, _dynamic_columns, _frozen_row, _Rows
from .schema import _EDGE_INDEX, _H, _H_BLOOD, _H_OR, _H_ROOM, _H_SPECIALIST, HOSPITAL_FEATURES, HOSPITAL_IDS

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


def _hospitals(group: _Rows, hospitals: list[dict[str, Any]], clock: int, flag_sets: tuple[Any, ...],
               dynamic: list[float], unchanged: tuple[bool, bool, bool] = (False, False, False)) -> int:
    """Hospital rows (from the observation's hospital rows) in four memoised parts (rooms,
    specialists, blood, action flags), each rewritten only when its own key changed; appends the
    per-build load, diversion and ICU values. ``unchanged``: whether no room or specialist state
    was set, no stock changed since the last build of these rows (``changes.change_marks``),
    and the flags' id sets are the very ones of that build; those parts are then not read."""
    rooms_unchanged, stock_unchanged, flags_unchanged = unchanged
    rooms_keys, specialist_keys, blood_keys, flag_keys = group.keys
    rows = group.rows
    by_id = {h["hospital_id"]: h for h in hospitals}
    for i, hospital_id in enumerate(HOSPITAL_IDS):
        h = by_id.get(hospital_id)
        if h is None:  # every scenario has all three; a zero row otherwise
            group.clear(i, i + 1)
            dynamic += _NO_HOSPITAL
            continue
        key: tuple
        if not rooms_unchanged:
            key = tuple([(r["state"], r["procedure"]) for r in h["ors"]])
            if rooms_keys[i] != key:
                rooms_keys[i] = key
                rows[i, _H_ROOMS] = _rooms_columns(key)
            key = tuple([(specialty, s["state"]) for specialty, s in h["specialists"].items()])
            if specialist_keys[i] != key:
                specialist_keys[i] = key
                rows[i, _H_SPECIALISTS] = _specialist_columns(key)
        if not stock_unchanged:
            key = tuple(h["blood"].items())
            if blood_keys[i] != key:
                blood_keys[i] = key
                rows[i, _H_BLOOD_STOCK] = _blood_columns(key)
        if not flags_unchanged:
            key = tuple([hospital_id in ids for ids in flag_sets])
            if flag_keys[i] != key:
                flag_keys[i] = key
                rows[i, _H_FLAGS] = _hospital_flag_columns(key)
        until = h["diverted_until"]  # None: not diverted now
        dynamic += (_c(h["occupancy"] / (2 * h["capacity"])), 1.0 if h["crowded"] else 0.0,
                    0.0 if until is None else 1.0, 0.0 if until is None else _c((until - clock) / 60),
                    _c(h["icu_free"] / 4))
    return group.finish(len(HOSPITAL_IDS))


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


def _roads(out: np.ndarray, roads: dict[str, Any], clock: int) -> bool:
    """Write the road rows of the active closures and congestion (the observation's ``roads``)
    into ``out`` (zeros); returns whether any was written."""
    for closed in roads["closed"]:
        row = out[_EDGE_INDEX[edge_key(*closed["edge"])]]
        row[0] = 1
        row[3] = _c((closed["until"] - clock) / 60)
    for congested in roads["congested"]:
        row = out[_EDGE_INDEX[edge_key(*congested["edge"])]]
        row[1] = 1
        row[2] = _c((congested["factor"] - 1.0) / 2)
        row[3] = _c((congested["until"] - clock) / 60)
    return bool(roads["closed"] or roads["congested"])


#: The memoised hospital row parts kept between builds.
HOSPITAL_ROW_MEMOS = (_rooms_columns, _specialist_columns, _blood_columns, _hospital_flag_columns)
