"""Disruptions starting and ending on schedule: road closures and accident congestion (units
on the road are rerouted), hospital diversions, OR failures and absent specialists
(docs/MODEL.md §4.1 and §3.8)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..params import ACCIDENT_CONGESTION_FACTOR
from ..types import Disruption
from .travel import reroute_all

if TYPE_CHECKING:
    from ..state import World


def start_and_end(world: World, t: int) -> None:
    """Tick step 1: disruptions due now start, those past their end clear; the next minute one
    does is entered in the calendar ("disruptions")."""
    due = math.inf
    for d in world.disruptions:
        if not d.active and d.start <= t < d.end:
            d.active = True
            apply(world, d, True)
            world.event(f"ALERT {d.text} (until ~t{d.end})")
        elif d.active and t >= d.end:
            d.active = False
            apply(world, d, False)
            world.event(f"CLEARED {d.text}")
        if d.active:
            due = min(due, d.end)
        elif d.end > t:  # not started: it would have above if its start had come
            due = min(due, d.start)
    world.clear_due("disruptions")
    world.due("disruptions", due)


def apply(world: World, d: Disruption, on: bool) -> None:
    if d.kind == "road_closure":
        for a, b in d.edges:
            (world.net.close if on else world.net.reopen)(a, b)
        reroute_all(world)
    elif d.kind == "accident_congestion":
        for a, b in d.edges:
            world.net.set_congestion(a, b, ACCIDENT_CONGESTION_FACTOR if on else 1.0)
        reroute_all(world)
    elif d.kind == "hospital_diversion":
        h = world.hospitals[d.hospital_id or ""]
        if on:
            h.diverted_until, h.diversion_reason = max(h.diverted_until, d.end), "ED beds full"
    elif d.kind == "or_failure":
        _or_failure(world, d, on)
    elif d.kind == "specialist_unavailable":
        spec = world.hospitals[d.hospital_id or ""].specialists[d.specialty or ""]
        if on:
            spec.state, spec.until, spec.agent_paged = "unavailable", d.end, False
            world.changed("rooms")
        elif spec.state == "unavailable":
            spec.state = "on_call"
            world.changed("rooms")


def _or_failure(world: World, d: Disruption, on: bool) -> None:
    room = world.hospitals[d.hospital_id or ""].or_by_id(d.or_id or "")
    if room is None:
        return
    if not on:
        room.failure_until = 0
        if room.state == "out_of_service":
            room.state, room.procedure, room.until = "idle", None, 0
            world.changed("rooms")
        return
    if room.state == "in_use" and room.patient_id:
        room.failure_until = d.end  # the running case finishes; the room fails afterwards
        return
    if room.patient_id and room.patient_id in world.patients:
        world.patients[room.patient_id].or_ref = None
    room.state, room.until, room.elective, room.patient_id = "out_of_service", d.end, False, None
    room.agent_prepared, room.procedure = False, None
    world.changed("rooms")
