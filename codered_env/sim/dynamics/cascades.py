"""Cascades (tasks with ``cascades``): overcrowded hospitals go on diversion, an unattended
incident escalates, and a long wait or a known death can start a news cycle that brings a surge
of calls (docs/MODEL.md §3.8)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..generator import escalation_casualty, surge_calls
from ..params import (
    CROWDING_DIVERSION_MIN,
    INCIDENT_ESCALATION_MIN,
    NEWS_CYCLE_DEATH_PROBABILITY,
    NEWS_CYCLE_WAIT_MIN,
)
from .spawns import next_patient_id, schedule

if TYPE_CHECKING:
    from ..state import World


def advance(world: World, t: int) -> None:
    """Tick step 9 (only in tasks with cascades)."""
    for h in world.hospitals.values():
        if h.crowded and h.diverted_until <= t:  # crowded: occupancy >= capacity + 1
            occupancy = h.occupancy
            h.diverted_until, h.diversion_reason = t + CROWDING_DIVERSION_MIN, "overcrowded"
            h.overcrowding_events += 1
            world.event(
                f"ALERT {h.hospital_id} overcrowded ({occupancy}/{h.capacity}): "
                f"on diversion until t{h.diverted_until}"
            )
    if world.incident_node and not world.escalated and t >= world.incident_start + INCIDENT_ESCALATION_MIN:
        _maybe_escalate_incident(world, t)
    if world.task.phase == 2 and world.news_cycle_at is None:
        call = world.oldest_pending_call()
        if call is not None and t - call.received_at >= NEWS_CYCLE_WAIT_MIN:
            news_cycle(world, f"caller {call.call_id} waited {t - call.received_at} min for a unit")


def _maybe_escalate_incident(world: World, t: int) -> None:
    world.escalated = True
    if any(world.patients[pid].first_unit_at is not None for pid in world.mci if pid in world.patients):
        return
    spawn = escalation_casualty(
        world.narrative_draw("escalation"), next_patient_id(world),
        world.incident_node or world.city.hub, t + 1, world.task.phase, world.city,
    )
    world.mci.add(spawn.patient.patient_id)
    world.escalation_casualty = spawn.patient.patient_id
    schedule(world, spawn)
    world.event(
        f"ALERT incident at {world.incident_node} unattended for {INCIDENT_ESCALATION_MIN} min: "
        "a bystander has been hurt"
    )


def maybe_news_after_death(world: World, patient_id: str) -> None:
    """A death becomes known (in view, or found by a crew) and may make the news."""
    if (
        world.task.cascades
        and world.task.phase == 2
        and world.news_cycle_at is None
        and world.narrative_draw(f"news:{patient_id}").random() < NEWS_CYCLE_DEATH_PROBABILITY
    ):
        news_cycle(world, f"death of {patient_id}")


def news_cycle(world: World, reason: str) -> None:
    world.news_cycle_at, world.news_cycle_reason = world.clock, reason
    spawns = surge_calls(world.narrative_draw("surge"), world.id_counters[0], world.clock, world.city)
    world.id_counters[0] += len(spawns)
    for spawn in spawns:
        schedule(world, spawn)
    world.event(f"ALERT news cycle after {reason}: call volume surging")
