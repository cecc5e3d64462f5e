"""Charges and allowances the score decides from what was on offer when the agent acted, so that
holding an action back cannot change them: a mutual-aid request is judged when made, and the
relaxed transfer target needs best care to have been refused since the patient's call."""

from __future__ import annotations

from typing import Any

import pytest

from codered_env.agents import make_agent
from codered_env.sim import CodeRedSim
from codered_env.sim.dynamics.care import note_destination
from codered_env.sim.dynamics.rooms import PARTIAL_CARE_CONDITIONS, best_care_available
from codered_env.sim.params import MUTUAL_AID_PENALTY_UNNEEDED

WAIT: dict[str, Any] = {"action_type": "maintain_plan"}


def test_partial_care_conditions_are_the_ones_some_tier_treats_less_well() -> None:
    assert set(PARTIAL_CARE_CONDITIONS) == {"stemi", "stroke", "trauma_haemorrhage", "trauma_major"}


def test_the_relaxed_target_needs_best_care_refused_since_the_call() -> None:
    """task2 seed 0: the cath lab is busy from the start. Had it been free at the STEMI's call and
    taken since, sending them to lysis earns no relaxed target: assigned at once, it would not
    have either."""
    sim = CodeRedSim("task2", 0)
    world = sim.world
    stemi = world.patients["P2"]
    assert not best_care_available(world, "stemi")
    world.best_care_open_at["stemi"] = stemi.appeared_at
    note_destination(world, stemi, "H2")
    assert not stemi.relaxed_target


def test_the_relaxed_target_applies_when_best_care_was_never_on_offer() -> None:
    sim = CodeRedSim("task2", 0)
    world = sim.world
    stemi = world.patients["P2"]
    assert "stemi" not in world.best_care_open_at  # the lab was busy at every minute so far
    note_destination(world, stemi, "H2")
    assert stemi.relaxed_target
    note_destination(world, stemi, "H1")  # best care itself: nothing is relaxed
    assert not stemi.relaxed_target


@pytest.mark.parametrize("task_id", ["task2", "task3"])
def test_best_care_open_is_recorded_every_minute_it_is_on_offer(task_id: str) -> None:
    sim = CodeRedSim(task_id, 3)
    agent = make_agent("heuristic", 3)
    agent.reset(task_id, 3)
    seen_open = 0
    while not sim.done:
        sim.step(agent.act(sim.observation()))
        for condition in PARTIAL_CARE_CONDITIONS:
            last_open = sim.world.best_care_open_at.get(condition, -1)
            if best_care_available(sim.world, condition):
                assert last_open == sim.clock, condition
                seen_open += 1
            else:
                assert last_open <= sim.clock, condition  # an action may take the room after the tick
    assert seen_open


def test_an_unneeded_request_is_charged_when_made() -> None:
    sim = CodeRedSim("task2", 0)
    before = sim.grade()["mutual_aid_penalty"]
    result = sim.step({"action_type": "request_mutual_aid"})
    assert result.error is None
    assert sim.world.mutual_aid[0].unneeded
    assert sim.grade()["mutual_aid_penalty"] == pytest.approx(before + MUTUAL_AID_PENALTY_UNNEEDED)
    while not sim.done:
        sim.step(WAIT)
    assert sim.grade()["mutual_aid_penalty"] == pytest.approx(MUTUAL_AID_PENALTY_UNNEEDED)


def test_a_needed_request_costs_nothing_even_if_its_unit_goes_unused() -> None:
    """Judged when made, never after the fact: a request made while callers outnumbered the
    units free or coming is not charged, whether or not its unit is ever dispatched."""
    sim = CodeRedSim("task3", 0)  # five patients waiting, five units free
    world = sim.world
    dispatch = {"action_type": "dispatch_ambulance", "ambulance_id": "ALS1", "patient_id": "P2"}
    assert sim.step(dispatch).error is None
    assert sim.step({"action_type": "request_mutual_aid"}).error is None
    assert not world.mutual_aid[0].unneeded  # four waiting, four units free, none coming
    while not sim.done:
        sim.step(WAIT)
    unit = world.mutual_aid[0].unit_id
    assert unit in world.ambulances  # it arrived, and nobody sent it anywhere
    assert all(p.ambulance_id != unit for p in world.patients.values())
    assert sim.grade()["mutual_aid_penalty"] == 0.0
