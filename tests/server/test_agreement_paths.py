"""One (task, seed, actions) gives one grade through every path: in-process ``grade_episode``,
the Gymnasium adapter, the OpenEnv WebSocket endpoint and the TRL tool environment.

The WebSocket episode speaks the raw ``/ws`` protocol to the server's ASGI app in-process
(Starlette's test client): the same endpoint and session code as under uvicorn, without a
subprocess whose start-up can time out on a loaded machine."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from starlette.testclient import TestClient

from codered_env.server.app import app
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


def ws_grade(task_id: str, seed: int, actions: list[dict[str, Any]]) -> float:
    with TestClient(app) as client, client.websocket_connect("/ws") as ws:
        ws.send_json({"type": "reset", "data": {"task_id": task_id, "seed": seed}})
        assert ws.receive_json()["type"] == "observation"
        for action in actions:
            ws.send_json({"type": "step", "data": action})
            reply = ws.receive_json()
            assert reply["type"] == "observation", reply
        assert reply["data"]["done"]
        ws.send_json({"type": "state"})
        return ws.receive_json()["data"]["score"]


def trl_grade(task_id: str, seed: int, actions: list[dict[str, Any]]) -> float:
    env = CodeRedToolEnv()
    env.reset(task_id=task_id, seed=seed)
    for action in actions:
        params = {k: v for k, v in action.items() if k != "action_type"}
        getattr(env, action["action_type"])(**params)
    return env.get_reward()


@pytest.mark.parametrize(("task_id", "seed"), [("task1", 0), ("task3", 2), ("task4", 1), ("task5", 3)])
def test_same_actions_same_grade_on_every_path(task_id: str, seed: int) -> None:
    actions, gym_score = gym_episode(task_id, seed)
    assert len({a["action_type"] for a in actions}) > 2  # a varied episode, not just waiting
    reference = grade_episode(task_id, seed, actions)["score"]
    assert gym_score == reference
    assert trl_grade(task_id, seed, actions) == reference
    assert ws_grade(task_id, seed, actions) == pytest.approx(reference, abs=1e-12)
