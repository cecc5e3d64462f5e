"""The actions legal now, as a dict (``legal_actions``) or a lazy mapping (``LegalActionsView``).

Each action type maps to a list of options; each option maps every parameter to its allowed
values, and every combination inside one option is legal. The sections that rarely change are
kept in the view's memo and reused while what they read is unchanged (the world's change
record, ``World.version``); those built every step hand out their last list again while it is
equal (``_same``), so the identity of a section says it is unchanged.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from .dynamics.blood import COMPATIBLE_DONORS, emergency_group_o
from .dynamics.dispatch import DISPATCHABLE
from .handlers import BEFORE_ARRIVAL
from .obs_rows import Memo, open_calls
from .params import MAX_BLOOD_UNITS_PER_ACTION
from .state import World
from .triage import PRIORITIES
from .types import FINAL_PATIENT_STATES, Hospital, Patient

MAX_UNITS = MAX_BLOOD_UNITS_PER_ACTION
Legal = dict[str, list[dict[str, list[Any]]]]


def legal_actions(world: World, memo: dict[str, Any] | None = None) -> Legal:
    """Legal actions now: action_type -> list of options; each option maps every parameter to
    its allowed values, and every combination inside one option is legal. With ``memo`` (the
    observation view's), the blood options are reused, not copied, while their inputs are
    unchanged."""
    legal: Legal = {}
    visible = _visible_patients(world)
    for section, _ in _LEGAL_SECTIONS:
        section(world, legal, visible, memo)
    return legal


def _visible_patients(world: World) -> list[Patient]:
    visible = []  # a loop: a comprehension would cost a frame of its own
    for p in world.patients.values():
        if p.visible:
            visible.append(p)
    return visible


def _patient_dispatch_legal(world: World, legal: Legal, visible: list[Patient], memo: Memo | None) -> None:
    """Phase 1: any free unit to any patient waiting for one."""
    if world.task.phase != 1:
        return
    waiting = [p.patient_id for p in visible if p.status == "awaiting_unit"]
    units = [a.ambulance_id for a in world.ambulances.values() if a.status in DISPATCHABLE]
    if waiting and units:
        legal["dispatch_ambulance"] = _same(memo, "dispatch_ambulance", world,
                                            [{"ambulance_id": units, "patient_id": waiting}])


def _call_dispatch_legal(world: World, legal: Legal, visible: list[Patient], memo: Memo | None) -> None:
    """Phase 2: units to calls by kind. Built every time (as quick as a key of what it reads, the
    free units and ``World.version("calls")``, would be to make), handed out by ``_same``."""
    if world.task.phase == 1:
        return
    pending = []
    for c in open_calls(world, memo):
        if c.status == "pending":
            pending.append(c.call_id)
    if not pending:
        return
    units: dict[str, list[str]] = {"ALS": [], "BLS": []}
    for a in world.ambulances.values():
        if a.status in DISPATCHABLE and a.kind in units:
            units[a.kind].append(a.ambulance_id)
    for kind, name in (("ALS", "dispatch_als"), ("BLS", "dispatch_bls")):
        if units[kind]:
            legal[name] = _same(memo, name, world, [{"ambulance_id": units[kind], "call_id": pending}])


def _triage_legal(world: World, legal: Legal, visible: list[Patient], memo: Memo | None) -> None:
    """Phase 2: the triage of open calls (a dispatched call not as P4). With ``memo``, reused
    (read only) while no call changed (``World.version("calls")``)."""
    if world.task.phase == 1:
        return
    if memo is None:
        _triage_options(world, legal, memo)
    else:
        legal.update(_kept(memo, "triage", world, world.version("calls"),
                           lambda part: _triage_options(world, part, memo)))


def _triage_options(world: World, legal: Legal, memo: Memo | None) -> None:
    pending, dispatched = [], []
    for c in open_calls(world, memo):
        if c.status == "pending":
            pending.append(c.call_id)
        elif c.status == "dispatched":
            dispatched.append(c.call_id)
    options = []
    if pending:
        options.append({"call_id": pending, "priority": list(PRIORITIES)})
    if dispatched:
        options.append({"call_id": dispatched, "priority": [q for q in PRIORITIES if q != "P4"]})
    if options:
        legal["triage_call"] = options


def _kept(memo: Memo, name: str, world: World, key: Any, build: Callable[[Legal], None]) -> Legal:
    """Section ``name`` of ``world`` kept in ``memo`` (read only), built again by ``build`` only
    when ``key`` (what it reads, or a version of it) changed."""
    kept = memo.get(name)
    if kept is not None:
        kept_world, kept_key, part = kept
        if kept_world is world and kept_key == key:
            return part
    part = {}
    build(part)
    memo[name] = (world, key, part)
    return part


def _same(memo: Memo | None, name: str, world: World, options: list[dict[str, list[Any]]]
          ) -> list[dict[str, list[Any]]]:
    """``options`` of a section built every step, or the equal list handed out for ``name`` the
    last time (read only): its identity then says it is unchanged, so what is derived from it
    (its text, derived.py) is reused."""
    if memo is None:
        return options
    handed_out = memo.get("same_sections")
    if handed_out is None:
        handed_out = memo["same_sections"] = {}
    kept = handed_out.get(name)
    if kept is not None and kept[0] is world and kept[1] == options:
        return kept[1]  # type: ignore[no-any-return]
    handed_out[name] = (world, options)
    return options


def _assign_legal(world: World, legal: Legal, visible: list[Patient], memo: Memo | None) -> None:
    """Any open hospital; every hospital for a patient whom no open hospital can treat
    (``World.diverted_for``)."""
    assignable = [p for p in visible if p.status in BEFORE_ARRIVAL]
    open_ids = [h for h in world.hospitals if not world.diverted(h)]
    if not assignable:
        return
    waived: list[str] = []
    turned_away: list[str] = []
    every_one_open = len(open_ids) == len(world.hospitals)
    for p in assignable:
        waiver = not every_one_open and world.diversion_waived(p.condition)
        (waived if waiver else turned_away).append(p.patient_id)
    options = []
    if turned_away and open_ids:
        options.append({"patient_id": turned_away, "hospital_id": open_ids})
    if waived:
        options.append({"patient_id": waived, "hospital_id": list(world.hospitals)})
    if options:
        legal["assign_hospital"] = _same(memo, "assign_hospital", world, options)


RoomOptions = Callable[[Hospital], dict[str, list[Any]] | None]


def _rooms_section(name: str, options_at: RoomOptions) -> _Section:
    """The section of the room action ``name``: an option per hospital that has one
    (``options_at``). With ``memo``, reused (read only) while ``World.version("rooms")`` is the same."""

    def section(world: World, legal: Legal, visible: list[Patient], memo: Memo | None) -> None:
        if memo is None:
            _room_options(world, legal, name, options_at)
        else:
            legal.update(_kept(memo, name, world, world.version("rooms"),
                               lambda part: _room_options(world, part, name, options_at)))

    return section


def _room_options(world: World, legal: Legal, name: str, options_at: RoomOptions) -> None:
    options = [option for h in world.hospitals.values() if (option := options_at(h)) is not None]
    if options:
        legal[name] = options


def _prepare_at(h: Hospital) -> dict[str, list[Any]] | None:
    procs = sorted({proc for r in h.ors if r.state == "idle" for proc in r.procedures})
    return {"hospital_id": [h.hospital_id], "procedure": procs} if procs else None


def _page_at(h: Hospital) -> dict[str, list[Any]] | None:
    on_call = [s.specialty for s in h.specialists.values() if s.state == "on_call"]
    return {"hospital_id": [h.hospital_id], "specialty": on_call} if on_call else None


def _preempt_at(h: Hospital) -> dict[str, list[Any]] | None:
    electives = [r.or_id for r in h.ors if r.state == "in_use" and r.elective]
    return {"hospital_id": [h.hospital_id], "or_id": electives} if electives else None


def _blood_section(world: World, legal: Legal, visible: list[Patient], memo: Memo | None) -> None:
    if memo is None:
        _blood_legal(world, legal, visible)
    else:
        _blood_legal_reused(world, legal, visible, memo)


def _mutual_aid_legal(world: World, legal: Legal, visible: list[Patient], memo: Memo | None) -> None:
    if world.task.mutual_aid_limit > len(world.mutual_aid):
        options: list[dict[str, list[Any]]] = [{}]
        targets = [p.patient_id for p in visible if p.status == "awaiting_unit"]
        targets += [c.call_id for c in open_calls(world, memo) if c.status == "pending"]
        if targets:
            options.append({"target_id": targets})
        legal["request_mutual_aid"] = _same(memo, "request_mutual_aid", world, options)


def _always_legal(world: World, legal: Legal, visible: list[Patient], memo: Memo | None) -> None:
    """The same for the whole episode (a world's hospitals never change): kept in ``memo``."""
    if memo is None:
        _always_options(world, legal)
    else:
        legal.update(_kept(memo, "always", world, None, lambda part: _always_options(world, part)))


def _always_options(world: World, legal: Legal) -> None:
    legal["query_or_status"] = [{"hospital_id": list(world.hospitals)}]
    legal["maintain_plan"] = [{}]


#: ``legal_actions`` in independent sections, in the order of its keys, each with the action
#: types it decides (one section per type), so ``LegalActionsView`` builds just the sections of
#: the types it is asked about.
_Section = Callable[[World, Legal, list[Patient], Memo | None], None]
_LEGAL_SECTIONS: tuple[tuple[_Section, tuple[str, ...]], ...] = (
    (_patient_dispatch_legal, ("dispatch_ambulance",)),
    (_call_dispatch_legal, ("dispatch_als", "dispatch_bls")),
    (_triage_legal, ("triage_call",)),
    (_assign_legal, ("assign_hospital",)),
    (_rooms_section("prepare_or", _prepare_at), ("prepare_or",)),
    (_rooms_section("page_specialist", _page_at), ("page_specialist",)),
    (_rooms_section("preempt_or", _preempt_at), ("preempt_or",)),
    (_blood_section, ("allocate_blood", "query_blood_type", "transfer_blood")),
    (_mutual_aid_legal, ("request_mutual_aid",)),
    (_always_legal, ("query_or_status", "maintain_plan")),
)
_SECTION_OF: dict[str, int] = {name: i for i, (_, names) in enumerate(_LEGAL_SECTIONS) for name in names}


class LegalActionsView(Mapping[str, list[dict[str, list[Any]]]]):
    """``legal_actions(world, memo)`` of a running episode as a read-only mapping that builds
    only the sections (``_LEGAL_SECTIONS``) of the action types it is asked about: ``in``,
    ``[]`` and ``get`` of one type cost one section; iterating, ``len`` or comparing builds the
    whole dict once, in ``legal_actions``'s key order (tests/sim/test_incremental_view.py). A copy
    or a pickle is that plain dict. Never empty (``maintain_plan`` is always legal while the
    episode runs). Like the view, it describes the world when it was made."""

    __slots__ = ("_memo", "_sections", "_visible", "_whole", "_world")

    def __init__(self, world: World, memo: dict[str, Any]) -> None:
        self._world, self._memo = world, memo
        self._visible: list[Patient] | None = None
        self._sections: list[Legal | None] = [None] * len(_LEGAL_SECTIONS)
        self._whole: Legal | None = None

    def _section(self, index: int) -> Legal:
        part = self._sections[index]
        if part is None:
            visible = self._visible
            if visible is None:
                visible = self._visible = _visible_patients(self._world)
            part = self._sections[index] = {}
            _LEGAL_SECTIONS[index][0](self._world, part, visible, self._memo)
        return part

    def whole(self) -> Legal:
        """The plain dict (``legal_actions(world, memo)``), built once."""
        if self._whole is None:
            whole: Legal = {}
            for index in range(len(_LEGAL_SECTIONS)):
                whole.update(self._section(index))
            self._whole = whole
        return self._whole

    def __contains__(self, key: object) -> bool:
        index = _SECTION_OF.get(key) if isinstance(key, str) else None
        return index is not None and key in self._section(index)

    def __getitem__(self, key: str) -> list[dict[str, list[Any]]]:
        index = _SECTION_OF.get(key) if isinstance(key, str) else None
        if index is None:
            raise KeyError(key)
        return self._section(index)[key]

    def get(self, key: str, default: Any = None) -> Any:
        index = _SECTION_OF.get(key) if isinstance(key, str) else None
        return default if index is None else self._section(index).get(key, default)

    def __bool__(self) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self.whole())

    def __len__(self) -> int:
        return len(self.whole())

    def __repr__(self) -> str:
        return repr(self.whole())

    def __deepcopy__(self, memo: dict[int, Any]) -> Legal:
        return copy.deepcopy(self.whole(), memo)

    def __reduce__(self) -> tuple[type[dict], tuple[Legal]]:
        return dict, (self.whole(),)


def _blood_legal_reused(world: World, legal: Legal, visible: list[Patient], memo: Memo) -> None:
    """``_blood_legal`` keyed by everything it reads: each patient's donor types and whether a
    typing can be asked for, the stock (``World.version("stock")``), and which roads are closed.
    When that key changed, each hospital's part (``_HospitalBlood``) is still reused while its
    own stock and the closed roads are the same (a step changes one hospital's stock, or none)."""
    patients = tuple(
        (p.patient_id, p.blood_type) if p.blood_type_known
        else (p.patient_id, None, p.o_pos_safe(), p.blood_type_ready_at is None)
        for p in visible
        if p.status not in FINAL_PATIENT_STATES
    )
    closed = frozenset(world.net.closed)

    def build(part: Legal) -> None:
        kept = memo.get("blood_hospitals")
        if kept is None or kept[0] is not world:
            kept = memo["blood_hospitals"] = (world, {})
        _blood_legal(world, part, visible, (kept[1], closed))

    legal.update(_kept(memo, "blood", world, (patients, world.version("stock"), closed), build))


class _HospitalBlood(NamedTuple):
    """What the blood options read of one hospital: the types in stock with their units (in
    stock order), and its transfer option (None without stock or a reachable hospital)."""

    stock: dict[str, int]
    transfer: dict[str, list[Any]] | None
    # donor types -> (the types in stock, the units one allocation may take), None when none
    # is in stock: filled as donor groups are met (the part is dropped when its stock changes)
    allocations: dict[tuple[str, ...], tuple[list[str], list[int]] | None]


# hospital id -> ((its stock items, the closed roads) when its part was made, the part)
_BloodParts = dict[str, tuple[tuple[Any, frozenset], _HospitalBlood]]


def _hospital_blood(world: World, src: Hospital, hospitals: list[Hospital]) -> _HospitalBlood:
    stock = {t: n for t, n in src.blood.items() if n > 0}
    transfer = None
    if stock:
        minutes = world.net.minutes
        targets = [d.hospital_id for d in hospitals if d is not src and minutes(src.node, d.node) != math.inf]
        if targets:
            units = list(range(1, min(MAX_UNITS, min(stock.values())) + 1))
            transfer = {"from_hospital_id": [src.hospital_id], "to_hospital_id": targets,
                        "blood_type": list(stock), "units": units}
    return _HospitalBlood(stock, transfer, {})


def _allocation(part: _HospitalBlood, donors: tuple[str, ...]) -> tuple[list[str], list[int]] | None:
    """The donor types a hospital holds and the units one allocation may take (None: none held)."""
    if donors in part.allocations:
        return part.allocations[donors]
    stock = part.stock
    types = [t for t in donors if t in stock]
    found = part.allocations[donors] = (
        (types, list(range(1, min(MAX_UNITS, min([stock[t] for t in types])) + 1))) if types else None
    )
    return found


def _blood_legal(world: World, legal: Legal, visible: list[Patient],
                 reuse: tuple[_BloodParts, frozenset] | None = None) -> None:
    """The blood sections; with ``reuse`` (the kept hospital parts, the closed roads), a
    hospital's part is made again only when its stock or the roads changed."""
    by_donors: dict[tuple[str, ...], list[str]] = {}
    query = []
    for p in visible:
        if p.status in FINAL_PATIENT_STATES:
            continue
        if p.blood_type_known:
            donors = COMPATIBLE_DONORS[p.blood_type]
        else:
            if p.blood_type_ready_at is None:
                query.append(p.patient_id)
            donors = emergency_group_o(p)
        ids = by_donors.get(donors)
        if ids is None:
            by_donors[donors] = [p.patient_id]
        else:
            ids.append(p.patient_id)
    hospitals = list(world.hospitals.values())
    if reuse is None:
        blood = [_hospital_blood(world, h, hospitals) for h in hospitals]
    else:
        parts, closed = reuse
        blood = []
        for h in hospitals:
            inputs = (tuple(h.blood.items()), closed)
            kept = parts.get(h.hospital_id)
            if kept is None or kept[0] != inputs:
                kept = parts[h.hospital_id] = (inputs, _hospital_blood(world, h, hospitals))
            blood.append(kept[1])
    allocate = []
    for donors, patient_ids in by_donors.items():  # patients who can take the same types share an option
        for h, part in zip(hospitals, blood, strict=True):
            found = _allocation(part, donors)
            if found is not None:
                allocate.append({"patient_id": patient_ids, "hospital_id": [h.hospital_id],
                                 "blood_type": found[0], "units": found[1]})
    if allocate:
        legal["allocate_blood"] = allocate
    if query:
        legal["query_blood_type"] = [{"patient_id": query}]
    transfer = [part.transfer for part in blood if part.transfer is not None]
    if transfer:
        legal["transfer_blood"] = transfer
