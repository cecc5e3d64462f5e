"""The typed client's resume path (codered_env/client.py) against a scripted WebSocket server:
a dropped or stuck connection is retried on a new connection with the same ``session_id`` and
``expect_step``; connection failures are retried with short pauses, for a bounded time."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve

from codered_env import CodeRedEnv
from codered_env.server.environment import CodeRedEnvironment

MAINTAIN = {"action_type": "maintain_plan"}


@dataclass
class Script:
    """A one-session server: ``drop_after`` steps close the socket after applying a step
    (its reply is lost), ``stall_after`` ones apply it and never answer."""

    env: CodeRedEnvironment = field(default_factory=CodeRedEnvironment)
    drop_after: set[int] = field(default_factory=set)
    stall_after: set[int] = field(default_factory=set)
    paths: list[str] = field(default_factory=list)
    expects: list[Any] = field(default_factory=list)

    def reply(self, message: dict[str, Any]) -> dict[str, Any]:
        if message["type"] == "reset":
            data = self.env.reset(**message["data"]).model_dump()
            return {"type": "observation", "data": {"observation": data, "reward": None, "done": False,
                                                    "session_id": "s1", "step_count": 0}}
        expect = message.get("expect_step")
        self.expects.append(expect)
        count = self.env.step_count
        if expect == count - 1 and self.env.last_step_matches(message["data"]):
            observation = self.env.last_step_observation()
        else:
            assert expect == count, (expect, count)
            observation = self.env.step_wire(message["data"])
        data = observation.model_dump()
        return {"type": "observation", "data": {"observation": data, "reward": data["reward"],
                                                "done": data["done"], "step_count": self.env.step_count}}


async def _handler(script: Script, ws: ServerConnection) -> None:
    script.paths.append(ws.request.path if ws.request else "")
    async for raw in ws:
        message = json.loads(raw)
        if message["type"] == "close":
            return
        answer = script.reply(message)
        step = script.env.step_count
        if message["type"] == "step" and step in script.drop_after:
            script.drop_after.discard(step)
            await ws.close()
            return
        if message["type"] == "step" and step in script.stall_after:
            script.stall_after.discard(step)
            await ws.wait_closed()  # never answered: the client gives up on this connection
            return
        await ws.send(json.dumps(answer))


@asynccontextmanager
async def _server(script: Script, port: int = 0) -> AsyncIterator[int]:
    async with serve(lambda ws: _handler(script, ws), "127.0.0.1", port) as server:
        yield server.sockets[0].getsockname()[1]


def _reference(steps: int) -> list[float]:
    env = CodeRedEnvironment()
    env.reset(task_id="task2", seed=3)
    return [float(env.step_wire(MAINTAIN).reward or 0.0) for _ in range(steps)]


def test_a_lost_or_stuck_reply_is_retried_once_on_the_same_session() -> None:
    async def scenario() -> None:
        script = Script(drop_after={2}, stall_after={4})
        async with _server(script) as port:
            env = CodeRedEnv(base_url=f"http://127.0.0.1:{port}", message_timeout_s=0.3,
                             reconnect_timeout_s=5)
            await env.reset(task_id="task2", seed=3)
            began = time.monotonic()
            rewards = [float((await env.step(MAINTAIN)).reward or 0.0) for _ in range(6)]
            took = time.monotonic() - began
            await env.close()
        assert rewards == _reference(6)  # each step applied exactly once
        assert script.env.step_count == 6
        assert script.paths == ["/ws", "/ws?session_id=s1", "/ws?session_id=s1"]
        assert script.expects == [0, 1, 1, 2, 3, 3, 4, 5]  # the two retries repeat their count
        assert took < 2.5, took  # a stuck reply costs message_timeout_s, not a minute

    asyncio.run(scenario())


def test_a_server_down_then_back_is_waited_for_with_short_pauses() -> None:
    async def scenario() -> None:
        script = Script()
        async with _server(script) as port:
            env = CodeRedEnv(base_url=f"http://127.0.0.1:{port}", reconnect_timeout_s=10)
            await env.reset(task_id="task2", seed=3)
        # the server is gone before the first step; it is back on the same port 1 s later
        restarted = asyncio.Event()

        async def restart() -> None:
            await asyncio.sleep(1.0)
            async with _server(script, port):
                restarted.set()
                await asyncio.sleep(3)

        back = asyncio.create_task(restart())
        began = time.monotonic()
        reward = (await env.step(MAINTAIN)).reward
        waited = time.monotonic() - began
        assert restarted.is_set() and 1.0 <= waited < 3.5, waited  # pauses of at most 2 s
        assert reward == _reference(1)[0] and script.env.step_count == 1
        await env.close()
        back.cancel()

    asyncio.run(scenario())


def test_retries_stop_after_reconnect_timeout_s() -> None:
    async def scenario() -> None:
        script = Script()
        async with _server(script) as port:
            env = CodeRedEnv(base_url=f"http://127.0.0.1:{port}", reconnect_timeout_s=0.8)
            await env.reset(task_id="task2", seed=3)
        began = time.monotonic()
        with pytest.raises(ConnectionError):
            await env.step(MAINTAIN)
        assert time.monotonic() - began < 2.0
        await env.close()

    asyncio.run(scenario())
