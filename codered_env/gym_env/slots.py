"""Stable entity slots for the factored interface: every unit, case and hospital keeps one slot
for its whole episode.

- Declared maxima (``SlotMaxima``) fix the number of slots, and so the spaces, of an env:
  ``PRAKASHNAGAR_MAXIMA`` (Prakashnagar's own fleet and hospitals: the ``CodeRedFactored-taskN``
  spaces) or ``GENERATED_MAXIMA`` (the largest generated city: ``CodeRedFactored-gen-taskN``).
- ``SlotLayout``: where one city's entities sit in those slots (``layout_for(city, maxima)``).
- Units: the own fleet in the city's order from slot 0, then the mutual-aid units a task may get
  (``MA1``, ``MA2``) in the last slots, the same slots in every city; a slot with no unit of
  this city, or a unit not yet in service, is absent.
- Hospitals: the city's hospitals in its order from slot 0 (a slot beyond them stays zero).
- Cases: a call or a phase-1 patient takes the next free slot when the observation first shows
  it; a phase-2 patient takes the slot of the call it came from (the call "becomes" the
  patient), unless another patient already holds that slot. Slots are never reused, so a slot's
  entity never changes within an episode. ``MAX_CASES`` is a declared maximum; a case beyond it
  gets no slot (counted in ``unslotted``) and is left to the flat interface.

Everything is read from the observation view (``CodeRedSim.observation_view``), never the world.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from ..sim.catalogue import fixed_id_choices
from ..sim.city import PRAKASHNAGAR, City
from ..sim.cityparams import FLEET_RANGE, HOSPITALS_RANGE, TIER_TRAUMA_THEATRES_RANGE
from ..sim.params import MUTUAL_AID_UNIT_PREFIX

# Design choice: above the most cases one episode has had: 52 (task5, seeds 0-19, advising every
# caller, which brings the most callbacks; random and heuristic play reach 21).
# tests/gym_adapter/test_factored.py checks random and advise-all play never run out.
MAX_CASES = 64


_PRAKASHNAGAR_IDS = fixed_id_choices()
MUTUAL_AID_IDS: tuple[str, ...] = tuple(
    u for u in _PRAKASHNAGAR_IDS["ambulance"] if u.startswith(MUTUAL_AID_UNIT_PREFIX)
)


@dataclass(frozen=True)
class SlotMaxima:
    """The slots of an env: own-fleet units (the mutual-aid units come after them), hospitals,
    operating rooms per hospital (``preempt_or``'s parameter) and cases."""

    units: int
    hospitals: int
    ors: int
    cases: int = MAX_CASES

    def problems(self, city: City) -> list[str]:
        """What of ``city`` does not fit these slots (empty when it fits)."""
        ors = max((len(h.ors) for h in city.hospitals), default=0)
        sizes = (("units", len(city.fleet), self.units), ("hospitals", len(city.hospitals), self.hospitals),
                 ("operating rooms in one hospital", ors, self.ors))
        return [f"{n} {name} (at most {most})" for name, n, most in sizes if n > most]


PRAKASHNAGAR_MAXIMA = SlotMaxima(
    units=len(PRAKASHNAGAR.fleet),
    hospitals=len(PRAKASHNAGAR.hospitals),
    ors=len(_PRAKASHNAGAR_IDS["or"]),
)


# The largest generated city (``sim/cityparams.py``): 9 units, 5 hospitals, and the tertiary
# centre's cath lab beside its trauma theatres.
GENERATED_MAXIMA = SlotMaxima(
    units=FLEET_RANGE[1],
    hospitals=HOSPITALS_RANGE[1],
    ors=1 + max(hi for _, hi in TIER_TRAUMA_THEATRES_RANGE.values()),
)


MAXIMA_BY_NAME: dict[str, SlotMaxima] = {"prakashnagar": PRAKASHNAGAR_MAXIMA, "generated": GENERATED_MAXIMA}
_MAXIMA_FIELDS = tuple(f.name for f in fields(SlotMaxima))


def maxima_as_config(maxima: SlotMaxima) -> dict[str, int]:
    """``maxima`` as plain integers (what a saved policy stores; ``maxima_from_config`` reads it)."""
    return {name: int(getattr(maxima, name)) for name in _MAXIMA_FIELDS}


def maxima_from_config(value: object) -> SlotMaxima:
    """The ``SlotMaxima`` a stored value names: a mapping of every field to a positive integer
    (``maxima_as_config``), a name of ``MAXIMA_BY_NAME``, or None (Prakashnagar's). A ValueError
    says what is valid."""
    if value is None:
        return PRAKASHNAGAR_MAXIMA
    if isinstance(value, str) and value in MAXIMA_BY_NAME:
        return MAXIMA_BY_NAME[value]
    if isinstance(value, Mapping) and set(value) == set(_MAXIMA_FIELDS) and all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in value.values()
    ):
        return SlotMaxima(**{name: value[name] for name in _MAXIMA_FIELDS})
    names = ", ".join(map(repr, MAXIMA_BY_NAME))
    raise ValueError(
        f"unknown slot maxima {value!r}; valid: {names}, or a mapping of {', '.join(_MAXIMA_FIELDS)} "
        "to positive integers"
    )


class SlotLayout:
    """Where one city's units, hospitals, operating rooms and nodes sit (immutable, shared:
    ``layout_for``). ``unit_ids`` / ``hospital_ids`` / ``or_ids`` name the entity of each slot
    (None: no such entity in this city); ``node_index`` numbers the city's nodes."""

    __slots__ = ("city_key", "hospital_ids", "hospital_slot", "maxima", "node_index", "or_ids",
                 "unit_ids", "unit_slot")

    def __init__(self, city: City, maxima: SlotMaxima) -> None:
        problems = maxima.problems(city)
        if problems:
            raise ValueError(f"city {city.key!r} does not fit the declared slots: {'; '.join(problems)}")
        self.maxima = maxima
        self.city_key = city.key
        self.unit_ids: tuple[str | None, ...] = (*_padded(city.unit_ids, maxima.units), *MUTUAL_AID_IDS)
        self.hospital_ids: tuple[str | None, ...] = _padded(city.hospital_ids, maxima.hospitals)
        self.or_ids: tuple[str | None, ...] = _padded(fixed_id_choices(city)["or"], maxima.ors)
        self.unit_slot: dict[str, int] = {u: i for i, u in enumerate(self.unit_ids) if u is not None}
        self.hospital_slot: dict[str, int] = {h: i for i, h in enumerate(self.hospital_ids) if h is not None}
        self.node_index: dict[str, int] = {n: i for i, n in enumerate(city.node_ids)}

    @property
    def n_units(self) -> int:
        return len(self.unit_ids)

    @property
    def n_hospitals(self) -> int:
        return len(self.hospital_ids)


def _padded(ids: tuple[str, ...], slots: int) -> tuple[str | None, ...]:
    return (*ids, *([None] * (slots - len(ids))))


@functools.lru_cache(maxsize=1024)
def layout_for(city: City, maxima: SlotMaxima) -> SlotLayout:
    """The slot layout of ``city`` under ``maxima`` (the same object for the same pair; a
    ValueError if the city has more entities than the slots)."""
    return SlotLayout(city, maxima)


PRAKASHNAGAR_LAYOUT = layout_for(PRAKASHNAGAR, PRAKASHNAGAR_MAXIMA)


# Prakashnagar's hospital slots under their historical name (every id is present).
HOSPITAL_IDS: tuple[str, ...] = _PRAKASHNAGAR_IDS["hospital"]


class SlotTable:
    """The case slots of one episode (units and hospitals are fixed by its city's ``layout``).
    Slot ``k`` holds the call ``case_call[k]`` and the patient ``case_patient[k]`` (either None
    until known; a phase-1 patient has no call); ``slot_of`` maps each of those ids back to ``k``."""

    __slots__ = ("_names", "case_call", "case_patient", "layout", "max_cases", "slot_of", "unslotted")

    def __init__(self, layout: SlotLayout = PRAKASHNAGAR_LAYOUT) -> None:
        self.layout = layout
        self.max_cases = layout.maxima.cases
        self.slot_of: dict[str, int] = {}
        self.case_call: list[str | None] = []
        self.case_patient: list[str | None] = []
        self.unslotted: set[str] = set()
        self._names: dict[str, list[str | None]] | None = None

    def __len__(self) -> int:
        return len(self.case_call)

    def _new_slot(self, call_id: str | None, patient_id: str | None) -> int | None:
        if len(self.case_call) >= self.max_cases:
            self.unslotted.add(call_id or patient_id or "")
            return None
        slot = len(self.case_call)
        self._names = None
        self.case_call.append(call_id)
        self.case_patient.append(patient_id)
        self.slot_of[call_id or patient_id or ""] = slot
        return slot

    def wire_id(self, slot: int, param: str) -> str | None:
        """The id slot ``slot`` stands for as the wire parameter ``param`` (``call_id``,
        ``patient_id`` or ``target_id``: the patient once there is one); None if it has none."""
        if not 0 <= slot < len(self.case_call):
            return None
        if param == "call_id":
            return self.case_call[slot]
        if param == "patient_id":
            return self.case_patient[slot]
        return self.case_patient[slot] or self.case_call[slot]

    def update(self, calls: list[Mapping[str, Any]], patients: list[Mapping[str, Any]]) -> None:
        """Give every call and patient shown now a slot (the calls first: a patient follows its
        call)."""
        slot_of = self.slot_of
        for call in calls:
            call_id = call["call_id"]
            if call_id not in slot_of and call_id not in self.unslotted:
                self._new_slot(call_id, None)
        for p in patients:
            patient_id = p["patient_id"]
            if patient_id in slot_of or patient_id in self.unslotted:
                continue
            slot = slot_of.get(p["call_id"] or "")
            if slot is not None and self.case_patient[slot] is None:
                self.case_patient[slot] = patient_id
                slot_of[patient_id] = slot
                self._names = None
            else:
                self._new_slot(None, patient_id)

    def names(self) -> dict[str, list[str | None]]:
        """``info["slots"]``: the entity each slot names (units and hospitals by id, a case by
        its patient id once it has one, else its call id; None: no entity in the slot). Kept while no
        slot changes: read only."""
        if self._names is None:
            cases = [p or c for c, p in zip(self.case_call, self.case_patient, strict=True)]
            self._names = {
                "unit": list(self.layout.unit_ids),
                "case": cases + [None] * (self.max_cases - len(cases)),
                "hospital": list(self.layout.hospital_ids),
            }
        return self._names
