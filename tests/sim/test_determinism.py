"""Same task, seed and actions -> the same episode, byte for byte."""

from __future__ import annotations

import json

import pytest

from codered_env.agents import make_agent
from codered_env.sim import TASK_IDS, CodeRedSim, grade_episode


def transcript(task_id: str, seed: int, agent_name: str) -> tuple[str, list]:
    sim = CodeRedSim(task_id, seed)
    agent = make_agent(agent_name, seed)
    agent.reset(task_id, seed)
    frames = [json.dumps(sim.observation(), sort_keys=True)]
    while not sim.done:
        out = sim.step(agent.act(sim.observation()))
        frames.append(
            json.dumps(
                [out.reward, out.done, out.error, sim.observation(), sim.render_text()], sort_keys=True
            )
        )
    frames.append(json.dumps(sim.grade(), sort_keys=True))
    return "\n".join(frames), list(sim.action_log)


@pytest.mark.parametrize("task_id", TASK_IDS)
@pytest.mark.parametrize("agent_name", ["random", "heuristic"])
def test_same_inputs_same_episode(task_id: str, agent_name: str) -> None:
    first, actions = transcript(task_id, 7, agent_name)
    second, _ = transcript(task_id, 7, agent_name)
    assert first == second
    sim = CodeRedSim(task_id, 7)
    for action in actions:
        sim.step(action)
    assert json.dumps(sim.grade(), sort_keys=True) == json.dumps(
        grade_episode(task_id, 7, actions), sort_keys=True
    )


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_seed_changes_the_scenario(task_id: str) -> None:
    a = json.dumps(CodeRedSim(task_id, 1).observation(), sort_keys=True)
    b = json.dumps(CodeRedSim(task_id, 2).observation(), sort_keys=True)
    assert a != b


def test_bad_constructor_arguments_are_rejected_clearly() -> None:
    with pytest.raises(ValueError, match="task6"):
        CodeRedSim("task6", 0)
    for bad in (-1, True, 1.5, "3"):
        with pytest.raises(ValueError, match="seed"):
            CodeRedSim("task1", bad)  # type: ignore[arg-type]
