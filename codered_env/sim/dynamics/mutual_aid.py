"""Mutual aid: a requested unit from the neighbouring district arrives at the city's entry node
(Prakashnagar: the NH-48 toll plaza N7) and, if the request named a target still waiting, drives
there at once (docs/MODEL.md
§3.8)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..types import Ambulance
from .dispatch import send_unit

if TYPE_CHECKING:
    from ..state import World


def arrivals(world: World, t: int) -> None:
    """Tick step 3: requested units due now arrive; the next minute one does is entered in the
    calendar ("aid")."""
    due = math.inf
    for req in world.mutual_aid:
        if req.arrived:
            continue
        if req.arrives_at > t:
            due = min(due, req.arrives_at)
            continue
        req.arrived = True
        entry = world.city.entry_node
        amb = Ambulance(req.unit_id, "ALS", entry, entry, mutual_aid=True)
        world.ambulances[req.unit_id] = amb
        world.event(f"MUTUAL AID {req.unit_id} (ALS) arrived at {entry} {world.city.node_names[entry]}")
        if req.target_id:
            _auto_dispatch(world, amb, req.target_id)
    world.clear_due("aid")
    world.due("aid", due)


def _auto_dispatch(world: World, amb: Ambulance, target_id: str) -> None:
    call = world.calls.get(target_id)
    if call is not None and call.status == "pending":
        send_unit(world, amb, world.patients[call.patient_id], call)
    elif target_id in world.patients and world.patients[target_id].status == "awaiting_unit":
        send_unit(world, amb, world.patients[target_id], None)
