"""The order of a simulated minute, and the start of an episode.

``tick`` moves a ``World`` (state.py) one minute on, one ``dynamics`` module per step, in the
order docs/MODEL.md §4.1 documents (MODEL.md#41-time-decisions-ticks-and-maintain_plan,
"Order inside a tick"):

0. ``dispatch.charge_waiting``: the rubric's charge for callers left waiting while a unit stood
   free, for the minute now ending;
1. ``disruptions.start_and_end``: disruptions start and clear (roads, diversions, ORs,
   specialists);
2. ``spawns.release_due``: new calls and casualties;
3. ``mutual_aid.arrivals``: mutual-aid units arriving;
4. ``blood.results_and_transfers``: lab results, blood transfers arriving;
5. ``rooms.timers``: OR and specialist timers;
6. ``ambulances.move``: arrivals, scene, handover, return;
7. ``care.advance``: hospital care (treatment start and end, transfers); then
   ``rooms.note_best_care_open``: whether each condition's best care is on offer this minute;
8. ``physiology.deteriorate``: one minute of deterioration;
9. ``cascades.advance``: overcrowding, escalation, news cycle (only in tasks with cascades).

A step is skipped in a minute the world's calendar (``World.is_due``) says it has nothing to do.
"""

from __future__ import annotations

from .city import PRAKASHNAGAR, City
from .dynamics import (
    ambulances,
    blood,
    care,
    cascades,
    dispatch,
    disruptions,
    mutual_aid,
    physiology,
    rooms,
    spawns,
)
from .dynamics.vitals import band
from .state import World
from .tasks import TaskSpec


def new_world(task: TaskSpec, seed: int, city: City = PRAKASHNAGAR) -> World:
    """The world of ``task`` and ``seed`` at minute 0: the first disruptions and calls in."""
    world = World(task, seed, city)
    for p in world.patients.values():
        p.band = band(p.reserve)
        care.note_prompt_reference(world, p)
    disruptions.start_and_end(world, 0)
    spawns.release_due(world, 0)
    rooms.note_best_care_open(world, 0)
    return world


def tick(world: World) -> None:
    """One simulated minute. The calendar is read here as ``World.is_due`` reads it, without the
    call: this runs every simulated minute of every episode and rollout."""
    dispatch.charge_waiting(world)  # the minute now ending, as the agent's decisions left it
    world.clock += 1
    t = world.clock
    due = world.calendar
    if t >= due["disruptions"]:
        disruptions.start_and_end(world, t)
    if world.spawns and world.spawns[0].at <= t:
        spawns.release_due(world, t)
    if t >= due["aid"]:
        mutual_aid.arrivals(world, t)
    if world.transfers or t >= due["labs"]:
        blood.results_and_transfers(world, t)
    if t >= due["timers"]:
        rooms.timers(world, t)
    if t >= due["units"]:
        ambulances.move(world, t)
    care.advance(world, t)
    rooms.note_best_care_open(world, t)
    physiology.deteriorate(world)
    if world.task.cascades:
        cascades.advance(world, t)
