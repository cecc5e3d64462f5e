"""Units moving: arriving on scene, at a hospital (handover) or home, leaving the scene when
their on-scene time is up, clearing after handover (docs/MODEL.md §4.3)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..params import CROWDED_HANDOVER_FACTOR, HANDOVER_JITTER_MIN, HANDOVER_MIN
from ..types import Ambulance
from . import scene
from .care import admit
from .dispatch import return_home
from .travel import MOVING

if TYPE_CHECKING:
    from ..state import World


def move(world: World, t: int) -> None:
    """Tick step 6 (when "units" are due): arrivals at the end of a trip, scene and handover
    timers; the scan enters the earliest still to come in the calendar."""
    world.clear_due("units")  # units acting below enter their own next minute
    due = math.inf
    for amb in world.ambulances.values():
        status = amb.status
        if status == "available":
            continue
        if status in MOVING:
            trip = amb.trip
            if trip is None:
                continue
            arrival = trip.times[-1]  # trip.arrival, without a property call per unit
            if t < arrival:
                if arrival < due:
                    due = arrival
                continue
            amb.node = trip.nodes[-1]
            if trip.nodes[-1] != trip.target:
                amb.held, due = True, t  # held: looked at again next minute
                continue
            amb.trip, amb.held = None, False
            if status == "en_route":
                scene.arrive(world, amb)
            elif status == "transporting":
                _arrive_hospital(world, amb)
            else:
                amb.status = "available"
                world.event(f"{amb.ambulance_id} available at {amb.node}")
        elif t < amb.busy_until:  # on scene or at a hospital
            if amb.busy_until < due:
                due = amb.busy_until
        elif status == "on_scene":
            scene.leave(world, amb)
        else:
            world.event(f"{amb.ambulance_id} clear at {amb.node}, free for a new job")
            return_home(world, amb)
    world.due("units", due)


def _arrive_hospital(world: World, amb: Ambulance) -> None:
    p = world.patients[amb.patient_id or ""]
    h = world.hospitals[amb.node]
    handover = HANDOVER_MIN + world.travel_rng.randint(-HANDOVER_JITTER_MIN, HANDOVER_JITTER_MIN)
    if h.crowded:
        handover = round(handover * CROWDED_HANDOVER_FACTOR)
    amb.status, amb.busy_until = "at_hospital", world.clock + handover
    world.due("units", amb.busy_until)
    world.event(f"{amb.ambulance_id} arrived at {h.hospital_id} with {p.patient_id}")
    if p.status == "deceased":
        return
    admit(world, p, h)
