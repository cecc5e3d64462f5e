"""Typed OpenEnv client for a CodeRedEnv server (WebSocket ``/ws``; async or ``.sync()``).

Example::

    from codered_env import CodeRedAction, CodeRedEnv

    with CodeRedEnv(base_url="http://localhost:8000").sync() as env:
        result = env.reset(task_id="task1", seed=0, episode_id="my-episode")
        while not result.done:
            result = env.step(CodeRedAction(action_type="maintain_plan"))
        print(env.state().score)

``step`` also accepts a plain wire dict (``{"action_type": ..., **params}``); it is validated
locally before it is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from codered_env.models import CodeRedAction, CodeRedObservation, CodeRedState


class CodeRedEnv(EnvClient[CodeRedAction, CodeRedObservation, CodeRedState]):
    """Client for one CodeRedEnv session (one WebSocket connection = one episode at a time)."""

    def _step_payload(self, action: CodeRedAction | Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(action, CodeRedAction):
            action = CodeRedAction.model_validate(dict(action))
        return action.to_wire()

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[CodeRedObservation]:
        reward = payload.get("reward")
        done = bool(payload.get("done", False))
        observation = CodeRedObservation.model_validate(
            {**payload.get("observation", {}), "reward": reward, "done": done}
        )
        return StepResult(
            observation=observation,
            reward=None if reward is None else float(reward),
            done=done,
            metadata=payload.get("metadata"),
        )

    def _parse_state(self, payload: dict[str, Any]) -> CodeRedState:
        return CodeRedState.model_validate(payload)


# OpenEnv's AutoEnv infers class names from the package name (codered_env -> "CoderedEnv", and
# "CoderedAction"/"CoderedObservation" where no manifest is installed, as in an editable install);
# these aliases let it find them (docs/SERVER.md, "AutoEnv").
CoderedEnv = CodeRedEnv
CoderedAction = CodeRedAction
CoderedObservation = CodeRedObservation
