"""Trips over the road network: planned on the current shortest path, slowed by one lognormal
traffic-noise factor per trip (drawn from the ``travel`` stream), re-planned after a road change
(docs/MODEL.md §4.2)."""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING

from ..params import TRAVEL_NOISE_CV
from ..types import Ambulance, Trip

if TYPE_CHECKING:
    from ..state import World

MOVING = frozenset({"en_route", "transporting", "returning"})
NOISE_SIGMA = math.sqrt(math.log(1.0 + TRAVEL_NOISE_CV**2))
NOISE_MU = -math.log(math.sqrt(1.0 + TRAVEL_NOISE_CV**2))  # -sigma^2 / 2: mean factor 1


def draw_noise(world: World) -> float:
    return world.travel_rng.lognormvariate(NOISE_MU, NOISE_SIGMA)


def plan_trip(
    world: World, origin: str, target: str, depart: int, purpose: str, speed: float, noise: float
) -> Trip | None:
    net = world.net
    route = net.path(origin, target)
    if route is None:
        return None
    times = [depart]
    acc = float(depart)
    for a, b in itertools.pairwise(route):
        acc += net.edge_minutes(a, b) * speed * noise
        times.append(max(times[-1], round(acc)))
    if times[-1] <= depart:
        times[-1] = depart + 1  # turn-out / short hop takes at least a minute
    return Trip(route, times, noise, speed, purpose, target)


def departure_point(world: World, amb: Ambulance) -> tuple[str, int]:
    """Where and when a unit can start a new route (finishes its current road segment)."""
    node, depart, _ = split_point(world, amb)
    return node, depart


def split_point(world: World, amb: Ambulance) -> tuple[str, int, int]:
    """(node, departure minute, index of that node in the current trip; -1 without a trip)."""
    trip = amb.trip
    if trip is None:
        return amb.node, world.clock, -1
    i = min(trip.last_index(world.clock) + 1, len(trip.nodes) - 1)
    return trip.nodes[i], max(world.clock, trip.times[i]), i


def reroute(world: World, amb: Ambulance) -> None:
    """Re-plan a moving unit after a road change, keeping its trip noise."""
    trip = amb.trip
    if trip is None:
        return
    node, depart, k = split_point(world, amb)
    new = plan_trip(world, node, trip.target, depart, trip.purpose, trip.speed_factor, trip.noise)
    head_nodes, head_times = trip.nodes[: k + 1], trip.times[: k + 1]
    if new is None:
        amb.trip = Trip(head_nodes, head_times, trip.noise, trip.speed_factor, trip.purpose, trip.target)
        amb.held = True
        world.due("units", head_times[-1])
        return
    amb.held = False
    old_arrival = trip.arrival
    amb.trip = Trip(
        head_nodes + new.nodes[1:],
        head_times + new.times[1:],
        trip.noise,
        trip.speed_factor,
        trip.purpose,
        trip.target,
    )
    world.due("units", amb.trip.times[-1])
    if amb.trip.arrival != old_arrival:
        eta = world.clock + amb.trip.eta_minutes(world.clock)
        world.event(f"{amb.ambulance_id} rerouted via {'-'.join(amb.trip.nodes)}, ETA ~t{eta}")


def reroute_all(world: World) -> None:
    for amb in world.ambulances.values():
        if amb.status in MOVING:
            reroute(world, amb)
