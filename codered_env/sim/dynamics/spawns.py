"""Calls and casualties arriving when their minute comes, the ids they get, and the callbacks of
callers closed with advice (docs/MODEL.md §4.1, §4.7)."""

from __future__ import annotations

from random import Random
from typing import TYPE_CHECKING

from ..conditions import CONDITIONS
from ..triage import callback_plan, callback_report
from ..types import Call, Patient, PendingSpawn
from .care import note_prompt_reference
from .vitals import band

if TYPE_CHECKING:
    from ..state import World


def callback_spawn(call: Call, p: Patient, at: int) -> PendingSpawn:
    """The caller behind ``call`` (closed with advice) ringing back at minute ``at``."""
    new = Call(
        "",
        at,
        call.node,
        callback_report(call.report, call.call_id),
        p.patient_id,
        call.true_priority,
        secondary=call.secondary,
        callback_of=call.call_id,
    )
    return PendingSpawn(at, p, new, "callback")


def release_due(world: World, t: int) -> None:
    """Tick step 2: every spawn due by minute ``t`` arrives, in scheduling order."""
    spawns = world.spawns
    while spawns and spawns[0].at <= t:
        add_spawn(world, spawns.pop(0))


def add_spawn(world: World, spawn: PendingSpawn) -> None:
    p = spawn.patient
    if p.patient_id not in world.patients:
        p.band = band(p.reserve)
        world.patients[p.patient_id] = p
        note_prompt_reference(world, p)
    if spawn.call is not None:
        call = spawn.call
        call.call_id = next_call_id(world)
        world.calls[call.call_id] = call
        world.changed("calls")
        p.call_id = call.call_id
        world.event(f'NEW CALL {call.call_id}: "{call.report}"')
    else:
        world.event(
            f"NEW PATIENT {p.patient_id} at {p.node}: {CONDITIONS[p.condition].label} ({spawn.reason})"
        )


def schedule(world: World, spawn: PendingSpawn) -> None:
    world.spawns.append(spawn)
    world.spawns.sort(key=lambda s: s.at)  # stable: same-minute spawns keep scheduling order


def next_patient_id(world: World) -> str:
    world.id_counters[0] += 1
    return f"P{world.id_counters[0]}"


def next_call_id(world: World) -> str:
    world.id_counters[1] += 1
    return f"C{world.id_counters[1]}"


def schedule_callback(world: World, call: Call) -> None:
    """A caller advised at P4 may ring back. Whether and when comes from the report alone
    (triage.callback_plan, on a stream seeded per call), never from the hidden truth."""
    rng = Random(f"codered:{world.task.task_id}:{world.seed}:callback:{call.call_id}")
    delay = callback_plan(call.report, rng)
    if delay is None:
        return
    schedule(world, callback_spawn(call, world.patients[call.patient_id], world.clock + delay))
