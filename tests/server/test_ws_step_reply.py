"""A WebSocket step reply (``CodeRedEnvironment.step_reply``, built from the observation view and
encoded once) is byte for byte the reply OpenEnv's ``serialize_observation`` makes of the
observation model, on every task, with random and heuristic play (invalid actions included)."""

from __future__ import annotations

from typing import Any

import pytest
from openenv.core.env_server.serialization import serialize_observation
from pydantic_core import to_json

from codered_env.agents import make_agent
from codered_env.server.environment import CodeRedEnvironment
from codered_env.sim import TASK_IDS

STEPS = 25


def _wire(action: Any) -> dict[str, Any]:
    return dict(action) if isinstance(action, dict) else action.model_dump(exclude_none=True)


@pytest.mark.parametrize("agent_name", ["random", "heuristic"])
@pytest.mark.parametrize("text", [True, False])
def test_the_direct_reply_equals_the_serialized_observation(agent_name: str, text: bool) -> None:
    for index, task_id in enumerate(TASK_IDS):
        seed = 11 + index
        reference, served = CodeRedEnvironment(), CodeRedEnvironment()
        observation = reference.reset(task_id=task_id, seed=seed, episode_id="e")
        served.reset(task_id=task_id, seed=seed, episode_id="e")
        agent = make_agent(agent_name, seed=seed)
        agent.reset(task_id, seed)
        for step in range(STEPS):
            if reference.finished:
                break
            action = _wire(agent.act(observation.model_dump()))
            if step == 3:
                action = {"action_type": "dispatch_ambulance", "ambulance_id": "NOPE", "patient_id": "P1"}
            observation = reference.step_wire(action)
            expected = serialize_observation(observation)
            if not text:
                expected["observation"]["text"] = ""
            reply = served.step_reply(action, action, text=text)
            assert to_json(reply) == to_json(expected), (task_id, step)
        assert served.state == reference.state
