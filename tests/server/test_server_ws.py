"""Episodes over the OpenEnv WebSocket /ws: typed client, generic client, raw frames."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from openenv.core import GenericEnvClient
from support_server import RunningServer, ws_call
from websockets.asyncio.client import connect as async_connect
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from codered_env import CodeRedAction, CodeRedEnv, CodeRedObservation, CodeRedState

MAINTAIN = {"action_type": "maintain_plan"}


def test_typed_client_plays_a_full_episode_sync(server: RunningServer) -> None:
    with CodeRedEnv(base_url=server.base_url).sync() as env:
        result = env.reset(task_id="task1", seed=0, episode_id="typed-sync")
        assert isinstance(result.observation, CodeRedObservation)
        steps = 0
        while not result.done:
            result = env.step(CodeRedAction(action_type="maintain_plan"))
            steps += 1
            assert isinstance(result.reward, float)
        state = env.state()
        assert isinstance(state, CodeRedState)
        assert (state.episode_id, state.step_count, state.done) == ("typed-sync", steps, True)
        assert state.score == pytest.approx(result.observation.score_preview)


def test_typed_client_async_accepts_dict_actions_and_reports_errors(server: RunningServer) -> None:
    async def play() -> tuple[Any, Any]:
        async with CodeRedEnv(base_url=server.base_url) as env:
            await env.reset(task_id="task4", seed=2)
            bad_id = await env.step({"action_type": "triage_call", "call_id": "C999", "priority": "P1"})
            return bad_id, await env.state()

    result, state = asyncio.run(play())
    assert "C999" in result.observation.last_action_error
    assert state.step_count == 1 and state.invalid_actions == 1


def test_typed_client_validates_actions_before_sending(server: RunningServer) -> None:
    with CodeRedEnv(base_url=server.base_url).sync() as env:
        env.reset()
        with pytest.raises(ValueError, match="unknown action_type"):
            env.step({"action_type": "fly"})
        assert env.state().step_count == 0


def test_generic_client_plays_an_episode(server: RunningServer) -> None:
    with GenericEnvClient(base_url=server.base_url).sync() as env:
        result = env.reset(task_id="task2", seed=3, episode_id="generic")
        assert result.observation["task_id"] == "task2"
        rewards = []
        while not result.done:
            result = env.step(MAINTAIN)
            rewards.append(result.reward)
        state = env.state()
        assert state["episode_id"] == "generic" and state["step_count"] == len(rewards)
        assert sum(rewards) == pytest.approx(state["score"], abs=1e-6)


def test_schema_invalid_step_is_a_validation_error_and_the_session_survives(
    server: RunningServer,
) -> None:
    with connect(server.ws_url) as ws:
        assert ws_call(ws, {"type": "reset", "data": {"episode_id": "survivor"}})["type"] == ("observation")
        for bad in ({"action_type": "warp"}, {"action_type": "maintain_plan", "units": 2}):
            reply = ws_call(ws, {"type": "step", "data": bad})
            assert reply["type"] == "error" and reply["data"]["code"] == "VALIDATION_ERROR"
        junk = ws.send("{not json") or json.loads(ws.recv(timeout=10))
        assert junk["data"]["code"] == "INVALID_JSON"
        step = ws_call(ws, {"type": "step", "data": MAINTAIN})
        assert step["type"] == "observation"
        state = ws_call(ws, {"type": "state"})["data"]
        assert (state["episode_id"], state["step_count"]) == ("survivor", 1)


def test_bad_reset_and_step_before_reset_are_clear_execution_errors(server: RunningServer) -> None:
    with connect(server.ws_url) as ws:
        early = ws_call(ws, {"type": "step", "data": MAINTAIN})
        assert early["data"]["code"] == "EXECUTION_ERROR" and "reset" in early["data"]["message"]
        bad = ws_call(ws, {"type": "reset", "data": {"task_id": "task0"}})
        assert bad["data"]["code"] == "EXECUTION_ERROR" and "task_id" in bad["data"]["message"]
        assert ws_call(ws, {"type": "reset", "data": {}})["type"] == "observation"


async def _episode(url: str, index: int) -> dict[str, Any]:
    task = f"task{index % 5 + 1}"
    episode_id = f"concurrent-{index}"
    async with async_connect(url, max_size=1 << 22) as ws:

        async def call(message: dict[str, Any]) -> dict[str, Any]:
            await ws.send(json.dumps(message))
            reply: dict[str, Any] = json.loads(await ws.recv())
            assert reply["type"] != "error", reply
            return reply

        await call({"type": "reset", "data": {"seed": index, "task_id": task, "episode_id": episode_id}})
        steps, done, rewards = 0, False, []
        while not done:
            data = (await call({"type": "step", "data": MAINTAIN}))["data"]
            steps, done = steps + 1, data["done"]
            rewards.append(data["reward"])
        state = (await call({"type": "state"}))["data"]
        return {"state": state, "steps": steps, "task": task, "episode_id": episode_id, "rewards": rewards}


def test_64_concurrent_episodes_are_isolated(server: RunningServer) -> None:
    async def run_all() -> list[dict[str, Any]]:
        return await asyncio.gather(*(_episode(server.ws_url, i) for i in range(64)))

    results = asyncio.run(run_all())
    for index, result in enumerate(results):
        state = result["state"]
        assert state["episode_id"] == result["episode_id"]
        assert state["task_id"] == result["task"] and state["seed"] == index
        assert state["step_count"] == result["steps"] and state["done"] is True
    # Same (task, seed) played alone gives the same rewards: sessions did not interfere.
    alone = asyncio.run(_episode(server.ws_url, 7))
    assert alone["rewards"] == results[7]["rewards"]


def test_a_session_grades_its_own_episode_and_no_one_else_can(server: RunningServer) -> None:
    with connect(server.ws_url) as ws:
        ws_call(ws, {"type": "reset", "data": {"task_id": "task3", "seed": 1, "episode_id": "ws-graded"}})
        for _ in range(3):
            ws_call(ws, {"type": "step", "data": MAINTAIN})
        graded = ws_call(ws, {"type": "grade"})
        assert graded["type"] == "grade" and graded["data"]["steps"] == 3
        assert graded["data"]["score"] == ws_call(ws, {"type": "state"})["data"]["score"]
        # Another client knowing (or guessing) the label cannot read or grade it over HTTP.
        other = httpx.post(server.base_url + "/grader", json={"episode_id": "ws-graded"}, timeout=30)
        assert other.status_code == 404


def test_oversized_websocket_frame_closes_only_that_socket(server: RunningServer) -> None:
    with connect(server.ws_url, max_size=None) as ws:
        ws_call(ws, {"type": "reset", "data": {}})
        ws.send(json.dumps({"type": "step", "data": {"action_type": "x" * (2 << 20)}}))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    with connect(server.ws_url) as ws:  # the server is fine
        assert ws_call(ws, {"type": "reset", "data": {}})["type"] == "observation"
