"""``/mcp`` against a live server: OpenEnv's ``MCPToolClient``, the official MCP SDK client
(streamable HTTP), interleaved sessions, bad calls, closed and expired sessions, and MCP on ``/ws``.

Every episode played through tools is checked against the in-process heuristic run of the same
task and seed: the same actions must give the same final score.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from functools import cache
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from openenv.core.env_server.mcp_types import CallToolAction
from openenv.core.mcp_client import MCPToolClient
from support_server import RunningServer, ws_call
from websockets.sync.client import connect

from codered_env.agents import make_agent
from codered_env.runner import EpisodeResult, run_episode
from codered_env.server.mcp_tools import VIEW_TOOL
from codered_env.sim.catalogue import ACTION_NAMES

TOOL_NAMES = {*ACTION_NAMES, VIEW_TOOL}


@cache
def heuristic(task_id: str, seed: int) -> EpisodeResult:
    return run_episode(task_id, seed, make_agent("heuristic"))


def _args(action: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in action.items() if k != "action_type"}


def rpc(http: httpx.Client, method: str, params: dict[str, Any] | None = None, *,
        session: str | None = None, url: str = "/mcp") -> httpx.Response:
    headers = {"Mcp-Session-Id": session} if session else {}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    return http.post(url, json=body, headers=headers)


def initialize(http: httpx.Client, url: str = "/mcp") -> str:
    answer = rpc(http, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "test", "version": "0"}}, url=url)
    assert answer.status_code == 200, answer.text
    return answer.headers["mcp-session-id"]


@pytest.fixture
def http(server: RunningServer) -> httpx.Client:
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        yield client


# --------------------------------------------------------------------------- OpenEnv's MCPToolClient


def test_mcp_tool_client_plays_a_whole_episode_to_the_in_process_score(server: RunningServer) -> None:
    reference = heuristic("task3", 2)
    with MCPToolClient(base_url=server.base_url).sync() as env:
        env.reset(task_id="task3", seed=2)  # over /ws?session_id=: the same episode as the tools
        assert {tool.name for tool in env.list_tools()} == TOOL_NAMES
        for action in reference.actions:
            result = env.call_tool(action["action_type"], **_args(action))
            assert result["error"] is None
        assert result["done"] is True and result["score"] == reference.score
        assert env.state().step_count == len(reference.actions)


def test_a_websocket_reset_and_http_tool_calls_share_one_episode(server: RunningServer) -> None:
    with MCPToolClient(base_url=server.base_url).sync() as env:
        env.reset(task_id="task2", seed=1)
        assert env.call_tool(VIEW_TOOL)["text"].startswith("CodeRedEnv task2 seed 1 ")
        env.call_tool("maintain_plan")
        assert env.state().step_count == 1
        env.reset(task_id="task4", seed=3)
        assert env.call_tool(VIEW_TOOL)["text"].startswith("CodeRedEnv task4 seed 3 ")
        stepped = env.step(CallToolAction(tool_name="maintain_plan", arguments={}))  # over /ws
        assert isinstance(stepped.reward, float) and stepped.done is False
        assert stepped.observation.result["structuredContent"]["step"] == 1
        refused = env.step(CallToolAction(tool_name="fly", arguments={}))
        assert refused.observation.error.error_type.value == "tool_not_found"
        assert env.state().step_count == 1


# --------------------------------------------------------------------------- the official MCP SDK


async def _sdk_episode(url: str, actions: list[dict[str, Any]]) -> list[Any]:
    async with streamable_http_client(url) as (read, write, _), ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.serverInfo.name == "codered_env" and init.capabilities.tools is not None
        listed = await session.list_tools()
        assert {tool.name for tool in listed.tools} == TOOL_NAMES
        return [await session.call_tool(a["action_type"], _args(a)) for a in actions]


def test_mcp_sdk_client_plays_the_episode_named_in_the_url(server: RunningServer) -> None:
    reference = heuristic("task2", 5)
    url = f"{server.base_url}/mcp?task_id=task2&seed=5"
    results = asyncio.run(_sdk_episode(url, [*reference.actions, {"action_type": "maintain_plan"}]))
    *played, extra = results
    assert not any(r.isError for r in played)
    assert played[-1].structuredContent["done"] is True
    assert played[-1].structuredContent["score"] == reference.score
    assert played[-1].content[0].text.startswith("t=")
    assert extra.isError and "episode is over" in extra.structuredContent["error"]  # no tool resets it


def test_the_default_episode_is_task1_seed_0(server: RunningServer) -> None:
    view = {"action_type": VIEW_TOOL}
    (result,) = asyncio.run(_sdk_episode(f"{server.base_url}/mcp", [view]))
    assert result.content[0].text.startswith("CodeRedEnv task1 seed 0 ")


async def _interleaved(base_url: str, plans: list[tuple[str, int]]) -> list[float]:
    async with contextlib.AsyncExitStack() as stack:
        sdk = []
        for task_id, seed in plans[:2]:
            read, write, _ = await stack.enter_async_context(
                streamable_http_client(f"{base_url}/mcp?task_id={task_id}&seed={seed}"))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            sdk.append(session)
        openenv = await stack.enter_async_context(MCPToolClient(base_url=base_url))
        await openenv.reset(task_id=plans[2][0], seed=plans[2][1])
        queues = [list(heuristic(*plan).actions) for plan in plans]
        finals: list[Any] = [None] * 3
        while any(queues):
            for i, queue in enumerate(queues):
                if not queue:
                    continue
                action = queue.pop(0)
                if i < 2:
                    result = await sdk[i].call_tool(action["action_type"], _args(action))
                    finals[i] = result.structuredContent
                else:
                    finals[i] = await openenv.call_tool(action["action_type"], **_args(action))
        return [final["score"] for final in finals]


def test_interleaved_sessions_stay_separate(server: RunningServer) -> None:
    plans = [("task1", 3), ("task1", 4), ("task1", 3)]  # two share an episode choice, not a state
    scores = asyncio.run(_interleaved(server.base_url, plans))
    assert scores == [heuristic(*plan).score for plan in plans]


# --------------------------------------------------------------------------- bad calls over HTTP


def test_malformed_json_rpc_gets_json_rpc_errors_never_a_500(http: httpx.Client) -> None:
    def code(body: Any) -> int:
        answer = http.post("/mcp", json=body)
        assert answer.status_code == 200, answer.text
        return int(answer.json()["error"]["code"])

    assert code({}) == -32600  # what `openenv validate --url` sends
    assert code([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]) == -32600
    assert code({"jsonrpc": "2.0", "id": 1, "method": 5}) == -32600
    assert code({"jsonrpc": "2.0", "id": 1, "method": "resources/list"}) == -32601
    no_session = {"name": "maintain_plan"}
    assert code({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": no_session}) == -32602
    assert code({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": []}) == -32602
    notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert http.post("/mcp", json=notification).status_code == 202
    bad_json = http.post("/mcp", content=b"{bad json", headers={"content-type": "application/json"})
    assert bad_json.status_code == 400  # the request guard refuses it before any route
    assert http.get("/mcp").status_code == 405
    assert http.delete("/mcp").status_code == 400


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
METHODS = st.sampled_from(["initialize", "tools/list", "tools/call", "ping", "openenv/session/create",
                           "openenv/session/close", "nope"])


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=JSON | st.fixed_dictionaries({"jsonrpc": st.just("2.0"), "method": METHODS, "id": JSON,
                                          "params": JSON}))
def test_any_json_body_gets_a_json_rpc_answer(server: RunningServer, body: Any) -> None:
    answer = httpx.post(f"{server.base_url}/mcp", json=body, timeout=30)
    assert answer.status_code in (200, 202), answer.text
    if answer.status_code == 200:
        assert answer.json()["jsonrpc"] == "2.0"


def test_bad_tool_calls_are_error_results_and_leave_the_world_unchanged(http: httpx.Client) -> None:
    session = initialize(http, "/mcp?task_id=task3&seed=1")

    def call(name: Any, arguments: Any = None) -> dict[str, Any]:
        answer = rpc(http, "tools/call", {"name": name, "arguments": arguments}, session=session)
        assert answer.status_code == 200, answer.text
        return dict(answer.json()["result"])

    before = call(VIEW_TOOL)["structuredContent"]["text"]
    for name, arguments in (("teleport", {}), ("assign_hospital", {"patient_id": "P1"}),
                            ("assign_hospital", {"patient_id": "P1", "hospital_id": "H7"}),
                            ("maintain_plan", {"extra": 1}), ("maintain_plan", "nope")):
        result = call(name, arguments)
        assert result["isError"] is True and result["structuredContent"]["error"]
    assert call(VIEW_TOOL)["structuredContent"]["text"] == before
    illegal = call("dispatch_ambulance", {"ambulance_id": "ALS1", "patient_id": "P77"})
    assert illegal["isError"] is True and "P77" in illegal["structuredContent"]["error"]
    assert illegal["structuredContent"]["step"] == 1  # a refused decision still costs its minute
    name = rpc(http, "tools/call", {"arguments": {}}, session=session).json()
    assert name["error"]["code"] == -32602


def test_initialize_refuses_an_unknown_episode_without_opening_a_session(http: httpx.Client) -> None:
    for query in ("task_id=task9", "seed=-3", "seed=abc"):
        answer = rpc(http, "initialize", {"protocolVersion": "2025-06-18"}, url=f"/mcp?{query}")
        assert answer.status_code == 200 and answer.json()["error"]["code"] == -32602
        assert "mcp-session-id" not in answer.headers


# --------------------------------------------------------------------------- closed sessions


def test_closed_sessions_are_gone_with_a_clear_answer(http: httpx.Client) -> None:
    created = rpc(http, "openenv/session/create").json()["result"]["session_id"]
    closed = rpc(http, "openenv/session/close", {"session_id": created}).json()["result"]
    assert closed == {"session_id": created, "closed": True}
    gone = rpc(http, "tools/call", {"name": "maintain_plan", "session_id": created}).json()["error"]
    assert gone["code"] == -32602 and "closed" in gone["message"]
    assert rpc(http, "openenv/session/close", {"session_id": created}).json()["error"]["code"] == -32602
    never = rpc(http, "tools/call", {"name": "maintain_plan", "session_id": "made-up"}).json()["error"]
    assert "never issued" in never["message"]

    standard = initialize(http)
    assert http.delete("/mcp", headers={"Mcp-Session-Id": standard}).status_code == 200
    after = rpc(http, "tools/call", {"name": "maintain_plan"}, session=standard)
    assert after.status_code == 404 and "closed" in after.json()["error"]["message"]
    assert rpc(http, "tools/list", session="made-up").status_code == 404


# --------------------------------------------------------------------------- MCP on /ws


def test_websocket_sessions_take_tool_steps_and_mcp_frames(server: RunningServer) -> None:
    with connect(server.ws_url, open_timeout=30) as ws:
        early = ws_call(ws, {"type": "step", "data": {"type": "call_tool", "tool_name": "maintain_plan"}})
        assert early["data"]["observation"]["result"]["isError"] is True
        ws_call(ws, {"type": "reset", "data": {"task_id": "task1", "seed": 2}})
        listed = ws_call(ws, {"type": "step", "data": {"type": "list_tools"}})
        assert {t["name"] for t in listed["data"]["observation"]["tools"]} == TOOL_NAMES
        stepped = ws_call(ws, {"type": "step", "data": {"type": "call_tool", "tool_name": "maintain_plan",
                                                         "arguments": {}}})
        assert stepped["data"]["observation"]["result"]["structuredContent"]["step"] == 1
        framed = ws_call(ws, {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                                       "params": {"name": VIEW_TOOL, "arguments": {}}}})
        assert framed["type"] == "mcp" and framed["data"]["id"] == 7
        assert framed["data"]["result"]["structuredContent"]["step"] == 1
        plain = ws_call(ws, {"type": "step", "data": {"action_type": "maintain_plan"}})  # still plain play
        assert plain["data"]["observation"]["step"] == 2
        bad = ws_call(ws, {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 8, "method": "nope"}})
        assert bad["data"]["error"]["code"] == -32601


def test_attaching_to_sessions(server: RunningServer, http: httpx.Client) -> None:
    with connect(f"{server.ws_url}?session_id=made-up", open_timeout=30) as ws:
        refused = ws.recv(timeout=30)
        assert "SESSION_ERROR" in refused and "never issued" in refused
    standard = initialize(http, "/mcp?task_id=task2&seed=2")
    with connect(f"{server.ws_url}?session_id={standard}", open_timeout=30) as ws:
        state = ws_call(ws, {"type": "state"})
        assert state["data"]["task_id"] == "task2" and state["data"]["seed"] == 2
        reset = ws_call(ws, {"type": "reset", "data": {"task_id": "task1"}})
        assert reset["type"] == "error" and "cannot be reset" in reset["data"]["message"]
        with connect(f"{server.ws_url}?session_id={standard}", open_timeout=30) as second:
            assert "already has an attached WebSocket" in second.recv(timeout=30)


# --------------------------------------------------------------------------- limits (small server)


def test_unused_and_idle_sessions_expire(small_server: RunningServer) -> None:
    with httpx.Client(base_url=small_server.base_url, timeout=30) as client:
        standard = initialize(client)
        created = rpc(client, "openenv/session/create").json()["result"]["session_id"]
        time.sleep(2.0)  # CODERED_MCP_UNUSED_TTL_S=1.5 on the small server
        expired = rpc(client, "tools/call", {"name": "maintain_plan"}, session=standard)
        assert expired.status_code == 404 and "expired" in expired.json()["error"]["message"]
        answer = rpc(client, "tools/call", {"name": "maintain_plan", "session_id": created}).json()
        assert "expired" in answer["error"]["message"]


def test_the_session_cap_evicts_the_longest_idle_used_session(small_server: RunningServer) -> None:
    with httpx.Client(base_url=small_server.base_url, timeout=30) as client:
        first, second = initialize(client), initialize(client)
        assert rpc(client, "tools/call", {"name": "maintain_plan"}, session=first).status_code == 200
        third = initialize(client)  # cap 2: the used `first` goes; the new `second` keeps its chance
        evicted = rpc(client, "tools/call", {"name": "maintain_plan"}, session=first)
        assert evicted.status_code == 404 and "evicted" in evicted.json()["error"]["message"]
        assert rpc(client, "tools/call", {"name": "maintain_plan"}, session=second).status_code == 200
        assert rpc(client, "tools/call", {"name": "maintain_plan"}, session=third).status_code == 200


def test_session_creation_is_rate_limited_per_client(small_server: RunningServer) -> None:
    with httpx.Client(base_url=small_server.base_url, timeout=30) as client:
        for _ in range(13):  # CODERED_MCP_SESSIONS_PER_MINUTE=12 on the small server
            answer = rpc(client, "openenv/session/create").json()
            if "error" in answer:
                break
        assert answer["error"]["code"] == -32000 and answer["error"]["data"]["retry_after_s"] >= 1
        assert "MCP sessions" in answer["error"]["message"]
