"""The heuristic never plays again an action the environment refused ("Actions refused once are
not repeated", agents/heuristic.py), whatever the caller did to the action it was handed; and a
refusal reported after a planner's choice refuses that choice (the key the planner sets)."""

from __future__ import annotations

import json
import random

import pytest

from codered_env.agents import make_agent
from codered_env.agents.base import MAINTAIN
from codered_env.sim import TASK_IDS, CodeRedSim


def _key(action: dict) -> str:
    return json.dumps(action, sort_keys=True)


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_a_refused_action_is_never_played_again(task_id: str) -> None:
    rng = random.Random(task_id)
    sim, agent = CodeRedSim(task_id, 4), make_agent("heuristic", 4)
    agent.reset(task_id, 4)
    refused: set[str] = set()
    last: str | None = None
    while not sim.done:
        obs = sim.observation()
        if last is not None and rng.random() < 0.5:  # as if the environment refused it
            obs["last_action_error"] = "refused for the test"
            refused.add(last)
        action = agent.act(obs)
        key = _key(action)
        assert key not in refused, key
        last = None if action == MAINTAIN else key
        sim.step(dict(action))
        action["action_type"] = "changed by the caller"  # remembered is what was handed out
    assert refused, "the test refused nothing"


def test_the_key_a_planner_sets_is_the_one_refused() -> None:
    sim, agent = CodeRedSim("task2", 3), make_agent("heuristic", 3)
    agent.reset("task2", 3)
    while not sim.done:
        proposal = agent.act(sim.observation())
        if proposal != MAINTAIN:
            break
        sim.step(proposal)
    chosen = dict(MAINTAIN)
    agent._last = _key(chosen)  # what PlannerAgent.act does after choosing
    obs = sim.observation()
    obs["last_action_error"] = "refused for the test"
    assert agent.act(obs) == proposal  # the proposal was not what was refused
    assert agent._refused == {_key(chosen)}
