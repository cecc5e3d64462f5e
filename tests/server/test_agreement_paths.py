"""One (task, seed, actions) gives one grade through every path: in-process ``grade_episode``,
the Gymnasium adapter, the OpenEnv WebSocket server and the TRL tool environment."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support_server import RunningServer

from codered_env import CodeRedAction, CodeRedEnv
from codered_env.sim import grade_episode
from codered_env.trl import CodeRedToolEnv

gymnasium = pytest.importorskip("gymnasium")
from codered_env.gym_env import CodeRedGymEnv  # noqa: E402


def gym_episode(task_id: str, seed: int) -> tuple[list[dict[str, Any]], float]:
    """A masked-random Gymnasium episode: its wire actions and the grade the adapter reports."""
    env, rng = CodeRedGymEnv(task_id), np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    actions = []
    while True:
        index = int(rng.integers(info["action_mask"].sum()))
        actions.append(env.wire_action(index))
        _, _, terminated, truncated, info = env.step(index)
        if terminated or truncated:
            return actions, info["grade"]["score"]


def ws_grade(server: RunningServer, task_id: str, seed: int, actions: list[dict[str, Any]]) -> float:
    with CodeRedEnv(base_url=server.base_url).sync() as env:
        result = env.reset(task_id=task_id, seed=seed)
        for action in actions:
            result = env.step(CodeRedAction(**action))
        assert result.done
        return env.state().score


def trl_grade(task_id: str, seed: int, actions: list[dict[str, Any]]) -> float:
    env = CodeRedToolEnv()
    env.reset(task_id=task_id, seed=seed)
    for action in actions:
        params = {k: v for k, v in action.items() if k != "action_type"}
        getattr(env, action["action_type"])(**params)
    return env.get_reward()


@pytest.mark.parametrize(("task_id", "seed"), [("task1", 0), ("task3", 2), ("task4", 1), ("task5", 3)])
def test_same_actions_same_grade_on_every_path(server: RunningServer, task_id: str, seed: int) -> None:
    actions, gym_score = gym_episode(task_id, seed)
    assert len({a["action_type"] for a in actions}) > 2  # a varied episode, not just waiting
    reference = grade_episode(task_id, seed, actions)["score"]
    assert gym_score == reference
    assert trl_grade(task_id, seed, actions) == reference
    assert ws_grade(server, task_id, seed, actions) == pytest.approx(reference, abs=1e-12)
