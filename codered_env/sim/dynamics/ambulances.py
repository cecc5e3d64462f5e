"""Units moving: arriving on scene, at a hospital (handover) or home, leaving the scene when
their on-scene time is up, clearing after handover (docs/MODEL.md §4.3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..params import CROWDED_HANDOVER_FACTOR, HANDOVER_JITTER_MIN, HANDOVER_MIN
from ..types import Ambulance
from . import scene
from .care import admit
from .dispatch import return_home
from .travel import MOVING

if TYPE_CHECKING:
    from ..world import World


def move(world: World, t: int) -> None:
    """Tick step 6: arrivals at the end of a trip, scene and handover timers."""
    for amb in world.ambulances.values():
        status = amb.status
        if status == "available":
            continue
        if status in MOVING:
            trip = amb.trip
            if trip is None or t < trip.times[-1]:  # trip.arrival, without a property call per unit
                continue
            amb.node = trip.nodes[-1]
            if trip.nodes[-1] != trip.target:
                amb.held = True
                continue
            amb.trip, amb.held = None, False
            if status == "en_route":
                scene.arrive(world, amb)
            elif status == "transporting":
                _arrive_hospital(world, amb)
            else:
                amb.status = "available"
                world.event(f"{amb.ambulance_id} available at {amb.node}")
        elif status == "on_scene" and t >= amb.busy_until:
            scene.leave(world, amb)
        elif status == "at_hospital" and t >= amb.busy_until:
            world.event(f"{amb.ambulance_id} clear at {amb.node}, free for a new job")
            return_home(world, amb)


def _arrive_hospital(world: World, amb: Ambulance) -> None:
    p = world.patients[amb.patient_id or ""]
    h = world.hospitals[amb.node]
    handover = HANDOVER_MIN + world.travel_rng.randint(-HANDOVER_JITTER_MIN, HANDOVER_JITTER_MIN)
    if h.crowded:
        handover = round(handover * CROWDED_HANDOVER_FACTOR)
    amb.status, amb.busy_until = "at_hospital", world.clock + handover
    world.event(f"{amb.ambulance_id} arrived at {h.hospital_id} with {p.patient_id}")
    if p.status == "deceased":
        return
    admit(world, p, h)
