"""Physiology: one minute of deterioration of every patient not yet in a final state, slowed by
the care they are getting, and death at zero reserve (docs/MODEL.md §3.6-§3.7)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..clinical import TELEPHONE_CPR_FACTOR
from ..conditions import CONDITIONS
from ..params import (
    ALS_DETERIORATION_FACTOR,
    BLOOD_TRANSFUSION_FACTOR,
    BLS_DETERIORATION_FACTOR,
    CROWDING_HAZARD,
    ED_DETERIORATION_FACTOR,
    VITALS_BANDS,
)
from ..types import FINAL_PATIENT_STATES, Patient
from .cascades import maybe_news_after_death
from .vitals import band

if TYPE_CHECKING:
    from ..state import World


_RATE = {name: cond.deterioration_per_min for name, cond in CONDITIONS.items()}
_UNREACHED = frozenset({"awaiting_unit", "unit_en_route"})
_NEXT_BAND_AT = (*VITALS_BANDS, -math.inf)  # the reserve below which band b becomes b + 1


def deteriorate(world: World) -> None:
    """Tick step 8: one minute of deterioration."""
    final, rates, unreached, next_band_at = FINAL_PATIENT_STATES, _RATE, _UNREACHED, _NEXT_BAND_AT
    for p in world.patients.values():
        status = p.status
        if status in final:
            continue
        rate = rates[p.condition]
        if rate == 0.0:
            continue
        if status in unreached and p.cpr_from is None:
            reserve = p.reserve - rate  # care_factor is 1.0 here (the same float as rate * 1.0)
        else:
            reserve = p.reserve - rate * care_factor(world, p)
        p.reserve = reserve
        if reserve <= 0.0:
            _death(world, p)
        elif reserve < next_band_at[p.band]:
            p.band = band(reserve)
            if p.visible:
                world.event(f"VITALS {p.patient_id} worsening (vitals score {reserve:.2f})")


def care_factor(world: World, p: Patient) -> float:
    """How much slower than untreated the patient deteriorates where they are now."""
    status = p.status
    factor = 1.0
    if p.cpr_from is not None and status in ("awaiting_unit", "unit_en_route"):
        return TELEPHONE_CPR_FACTOR
    if status in ("on_scene", "transporting") and p.ambulance_id:
        kind = world.ambulances[p.ambulance_id].kind
        factor = ALS_DETERIORATION_FACTOR if kind == "ALS" else BLS_DETERIORATION_FACTOR
    elif status in ("at_hospital", "transferring"):
        factor = ED_DETERIORATION_FACTOR
        if status == "at_hospital" and world.hospitals[p.hospital or ""].crowded:
            factor *= CROWDING_HAZARD
        if CONDITIONS[p.condition].needs_blood and p.has_blood(world.clock):
            factor *= BLOOD_TRANSFUSION_FACTOR
    return factor


def _death(world: World, p: Patient) -> None:
    p.reserve, p.status, p.died_at = 0.0, "deceased", world.clock
    if p.hospital and p.patient_id in world.hospitals[p.hospital].ed_patients:
        world.hospitals[p.hospital].ed_patients.remove(p.patient_id)
    if p.or_ref:
        room = world.hospitals[p.or_ref[0]].or_by_id(p.or_ref[1])
        if room is not None and room.patient_id == p.patient_id and room.state != "in_use":
            room.patient_id = None
        p.or_ref = None
    if not p.visible:
        return  # nobody knows yet: a crew will find out on scene
    world.event(f"DEATH {p.patient_id} died")
    maybe_news_after_death(world, p.patient_id)
