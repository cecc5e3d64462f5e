"""Typed OpenEnv client for a CodeRedEnv server (WebSocket ``/ws``; async or ``.sync()``).

Example::

    from codered_env import CodeRedAction, CodeRedEnv

    with CodeRedEnv(base_url="http://localhost:8000").sync() as env:
        result = env.reset(task_id="task1", seed=0, city="prakashnagar", episode_id="my-episode")
        while not result.done:
            result = env.step(CodeRedAction(action_type="maintain_plan"))
        print(env.state().score)

``step`` also accepts a plain wire dict (``{"action_type": ..., **params}``); it is validated
locally before it is sent.

The client survives a server restart or a dropped connection: when the socket fails, a reply
does not come within ``message_timeout_s`` (default 20 s), or the server is full or restarting,
it reconnects with its ``session_id`` (pauses of 0.25 s doubling to 2 s, with jitter) until
``reconnect_timeout_s`` have passed since the first failure, and repeats the request; a step
carries ``expect_step``, so a step whose answer was lost is answered again by the server rather
than applied twice (docs/SERVER.md, "Restarts").
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Mapping
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from websockets.exceptions import ConnectionClosed

from codered_env.models import CodeRedAction, CodeRedObservation, CodeRedState

RETRIED_MESSAGES = ("reset", "step", "state", "grade")
RETRIED_CODES = ("CAPACITY_REACHED",)  # a full or restarting server says when to come back
RECONNECT_PAUSE_S = 0.25  # first pause between attempts; doubles up to MAX_PAUSE_S
MAX_PAUSE_S = 2.0
# A step is answered in milliseconds (a reset or a grade in well under a second, even on a busy
# server): a reply this late means the connection or the server is stuck, so the request is
# repeated on a new connection instead of waiting out OpenEnv's 60 s (design choice).
MESSAGE_TIMEOUT_S = 20.0
CONNECT_TIMEOUT_S = 5.0
_JITTER = random.Random()  # its own generator: a caller's seeded global ``random`` stays untouched


class CodeRedEnv(EnvClient[CodeRedAction, CodeRedObservation, CodeRedState]):
    """Client for one CodeRedEnv session (one WebSocket connection = one episode at a time)."""

    def __init__(self, *args: Any, reconnect_timeout_s: float = 60.0, **kwargs: Any) -> None:
        kwargs.setdefault("message_timeout_s", MESSAGE_TIMEOUT_S)
        kwargs.setdefault("connect_timeout_s", CONNECT_TIMEOUT_S)
        super().__init__(*args, **kwargs)
        self.reconnect_timeout_s = reconnect_timeout_s
        self.session_id: str | None = None
        self._step_count: int | None = None
        self._plain_ws_url = self._ws_url

    async def _send_and_receive(self, message: dict[str, Any]) -> dict[str, Any]:
        """One request, repeated over a new connection (same session) when the old one fails,
        for up to ``reconnect_timeout_s`` after the first failure."""
        retried = message.get("type") in RETRIED_MESSAGES and self.reconnect_timeout_s > 0
        deadline: float | None = None
        pause = RECONNECT_PAUSE_S
        while True:
            try:
                response = await self._exchange(self._with_expectation(message))
            except (ConnectionError, ConnectionClosed, OSError):  # OSError: TimeoutError too
                deadline = deadline or time.monotonic() + self.reconnect_timeout_s
                if not retried or time.monotonic() + pause > deadline:
                    raise
                await self._drop_socket()
                await asyncio.sleep(_jittered(pause))
                pause = min(MAX_PAUSE_S, pause * 2)
                continue
            if response.get("type") == "error":
                data = response.get("data", {})
                deadline = deadline or time.monotonic() + self.reconnect_timeout_s
                wait = data.get("retry_after_s")
                if retried and data.get("code") in RETRIED_CODES and time.monotonic() + pause < deadline:
                    await self._drop_socket()
                    wait_s = float(wait) if isinstance(wait, (int, float)) and wait > 0 else _jittered(pause)
                    await asyncio.sleep(min(wait_s, max(0.0, deadline - time.monotonic())))
                    pause = min(MAX_PAUSE_S, pause * 2)
                    continue
                message_text, code = data.get("message", "Unknown error"), data.get("code", "UNKNOWN")
                raise RuntimeError(f"Server error: {message_text} (code: {code})")
            self._remember(message, response)
            return response

    async def _exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        with contextlib.suppress(ConnectionClosed):  # a refusal frame may be queued: read it below
            await self._send(message)
        return await self._receive()

    async def _drop_socket(self) -> None:
        ws, self._ws, self._ws_loop = self._ws, None, None
        if ws is not None:
            self._schedule_socket_close(ws)

    def _with_expectation(self, message: dict[str, Any]) -> dict[str, Any]:
        data = message.get("data")
        if message.get("type") != "step" or self._step_count is None:
            return message
        if isinstance(data, dict) and "type" in data:  # a tool step: counted by the server only
            self._step_count = None
            return message
        return {**message, "expect_step": self._step_count}

    def _remember(self, message: dict[str, Any], response: dict[str, Any]) -> None:
        """The session id (to resume) and the step count (for ``expect_step``) from a reply."""
        data = response.get("data") or {}
        if not isinstance(data, dict):
            return
        session_id = data.get("session_id")
        if isinstance(session_id, str) and session_id != self.session_id:
            self.session_id = session_id
            self._ws_url = f"{self._plain_ws_url}?session_id={session_id}"
        count = data.get("step_count")
        if isinstance(count, int) and not isinstance(count, bool):
            self._step_count = count
        elif message.get("type") == "step":
            self._step_count = None

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


def _jittered(pause: float) -> float:
    """A pause of 50-100 % of ``pause``: clients cut off together do not reconnect in step."""
    return pause * (0.5 + _JITTER.random() / 2)


# OpenEnv's AutoEnv infers class names from the package name (codered_env -> "CoderedEnv", and
# "CoderedAction"/"CoderedObservation" where no manifest is installed, as in an editable install);
# these aliases let it find them (docs/SERVER.md, "AutoEnv").
CoderedEnv = CodeRedEnv
CoderedAction = CodeRedAction
CoderedObservation = CodeRedObservation
