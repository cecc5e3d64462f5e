"""Stable entity slots for the factored interface: every unit, case and hospital keeps one slot
for its whole episode.

- Units: one slot per id that can exist in any episode (own fleet, then the mutual-aid units),
  from the action catalogue's fixed ids; a unit not yet in service is absent.
- Hospitals: one slot per hospital id, always present.
- Cases: a call or a phase-1 patient takes the next free slot when the observation first shows
  it; a phase-2 patient takes the slot of the call it came from (the call "becomes" the
  patient), unless another patient already holds that slot. Slots are never reused, so a slot's
  entity never changes within an episode. ``MAX_CASES`` is a declared maximum; a case beyond it
  gets no slot (counted in ``unslotted``) and is left to the flat interface.

Everything is read from the observation view (``CodeRedSim.observation_view``), never the world.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..sim.catalogue import fixed_id_choices

UNIT_IDS: tuple[str, ...] = fixed_id_choices()["ambulance"]


HOSPITAL_IDS: tuple[str, ...] = fixed_id_choices()["hospital"]


OR_IDS: tuple[str, ...] = fixed_id_choices()["or"]


# Design choice: above the most cases one episode has had: 52 (task5, seeds 0-19, advising every
# caller, which brings the most callbacks; random and heuristic play reach 21).
# tests/gym_adapter/test_factored.py checks random and advise-all play never run out.
MAX_CASES = 64


UNIT_SLOT: dict[str, int] = {u: i for i, u in enumerate(UNIT_IDS)}


HOSPITAL_SLOT: dict[str, int] = {h: i for i, h in enumerate(HOSPITAL_IDS)}


class SlotTable:
    """The case slots of one episode (units and hospitals are fixed: ``UNIT_SLOT``,
    ``HOSPITAL_SLOT``). Slot ``k`` holds the call ``case_call[k]`` and the patient
    ``case_patient[k]`` (either None until known; a phase-1 patient has no call); ``slot_of``
    maps each of those ids back to ``k``."""

    __slots__ = ("_names", "case_call", "case_patient", "slot_of", "unslotted")

    def __init__(self) -> None:
        self.slot_of: dict[str, int] = {}
        self.case_call: list[str | None] = []
        self.case_patient: list[str | None] = []
        self.unslotted: set[str] = set()
        self._names: dict[str, list[str | None]] | None = None

    def __len__(self) -> int:
        return len(self.case_call)

    def _new_slot(self, call_id: str | None, patient_id: str | None) -> int | None:
        if len(self.case_call) >= MAX_CASES:
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
        its patient id once it has one, else its call id; None: no entity yet). Kept while no
        slot changes: read only."""
        if self._names is None:
            cases = [p or c for c, p in zip(self.case_call, self.case_patient, strict=True)]
            self._names = {
                "unit": list(UNIT_IDS),
                "case": cases + [None] * (MAX_CASES - len(cases)),
                "hospital": list(HOSPITAL_IDS),
            }
        return self._names
