"""Admission and protocol edges on a live server: the cap scenario (honest clients reach their
first step), WebSocket observation modes, idle eviction, JSON-RPC ids, X-Forwarded-For only from
configured proxies, the MCP answer deadline, and /grader replays refused under a flood."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest
from support_server import RunningServer, running_server, ws_call
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

MAINTAIN = {"action_type": "maintain_plan"}


@pytest.fixture(scope="module")
def edge() -> Iterator[RunningServer]:
    env = {
        "MAX_CONCURRENT_ENVS": "2",
        "CODERED_WS_EVICT_IDLE_S": "1",
        "CODERED_HTTP_MAX_SESSIONS": "16",
        "CODERED_HTTP_FRESH_GRACE_S": "5",
        "CODERED_MCP_SESSIONS_PER_MINUTE": "3",
        "CODERED_HEAVY_PER_MINUTE": "2",
    }
    with running_server(env) as handle:
        yield handle


def test_honest_clients_at_the_http_cap_reach_their_first_step(edge: RunningServer) -> None:
    with httpx.Client(base_url=edge.base_url, timeout=60) as http:
        for _ in range(16):  # used, then idle: the state the cap scenario starts from
            episode = http.post("/reset").json()["episode_id"]
            http.post("/step", json={"episode_id": episode, "action": MAINTAIN})
        started = stepped = 0
        for _ in range(12):
            episodes = [http.post("/reset").json()["episode_id"] for _ in range(8)]
            started += len(episodes)
            time.sleep(0.05)
            stepped += sum(
                http.post("/step", json={"episode_id": e, "action": MAINTAIN}).status_code == 200
                for e in episodes)
        assert stepped == started == 96


def test_observation_modes_and_the_observe_frame(edge: RunningServer) -> None:
    with connect(f"{edge.ws_url}?observation=none", open_timeout=30) as ws:
        reset = ws_call(ws, {"type": "reset", "data": {"task_id": "task2", "seed": 1}})
        assert reset["data"]["observation"]["text"] and reset["data"]["step_count"] == 0
        step = ws_call(ws, {"type": "step", "data": MAINTAIN})["data"]
        assert set(step["observation"]) == {"last_action_error", "score_preview", "clock_min"}
        assert step["step_count"] == 1 and isinstance(step["reward"], float)
        full = ws_call(ws, {"type": "observe"})["data"]
        assert full["observation"]["text"]
        assert full["observation"]["clock_min"] == step["observation"]["clock_min"]
    with connect(f"{edge.ws_url}?observation=without_text", open_timeout=30) as ws:
        ws_call(ws, {"type": "reset", "data": {"task_id": "task2", "seed": 1}})
        step = ws_call(ws, {"type": "step", "data": MAINTAIN})["data"]
        assert step["observation"]["text"] == ""
        assert step["observation"]["patients"] == full["observation"]["patients"]
    with connect(f"{edge.ws_url}?observation=everything", open_timeout=30) as ws:
        refused = json.loads(ws.recv(timeout=30))
        assert refused["data"]["code"] == "VALIDATION_ERROR"
        assert "full, without_text, none" in refused["data"]["message"]


def test_a_full_websocket_pool_evicts_the_idlest_session_resumably(edge: RunningServer) -> None:
    first = connect(edge.ws_url, open_timeout=30)
    second = connect(edge.ws_url, open_timeout=30)
    try:
        session_id = ws_call(first, {"type": "reset", "data": {}})["data"]["session_id"]
        ws_call(second, {"type": "reset", "data": {}})
        with connect(edge.ws_url, open_timeout=30) as third:  # cap 2, nobody silent for 1 s yet
            refused = json.loads(third.recv(timeout=30))
            assert refused["data"]["code"] == "CAPACITY_REACHED" and refused["data"]["retry_after_s"] >= 1
        time.sleep(1.2)
        ws_call(second, {"type": "state"})  # second is active; first has been silent longest
        with connect(edge.ws_url, open_timeout=30) as third:
            assert ws_call(third, {"type": "reset", "data": {}})["type"] == "observation"
            with pytest.raises(ConnectionClosed) as closed:
                first.recv(timeout=30)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
            assert f"session_id={session_id}" in closed.value.rcvd.reason
    finally:
        first.close()
        second.close()


def test_invalid_jsonrpc_ids_are_refused_unexecuted(edge: RunningServer) -> None:
    with httpx.Client(base_url=edge.base_url, timeout=60) as http:
        for bad_id in (None, 1.5, True, [1], {"a": 1}):
            answer = http.post("/mcp", json={"jsonrpc": "2.0", "id": bad_id, "method": "initialize",
                                             "params": {"protocolVersion": "2025-06-18"}})
            body = answer.json()
            assert answer.status_code == 200 and body["id"] is None and body["error"]["code"] == -32600
            assert "mcp-session-id" not in answer.headers and "not executed" in body["error"]["message"]


def test_forwarded_for_is_ignored_without_configured_proxies(edge: RunningServer) -> None:
    with httpx.Client(base_url=edge.base_url, timeout=60) as http:
        create = {"jsonrpc": "2.0", "method": "openenv/session/create", "params": {}}
        answers = [
            http.post("/mcp", headers={"X-Forwarded-For": f"198.51.100.{n}"}, json={**create, "id": n}).json()
            for n in range(5)
        ]
        refused = [a for a in answers if "error" in a]
        assert len(refused) >= 2 and "MCP sessions" in refused[0]["error"]["message"]  # 3 a minute


def test_grader_replays_run_in_the_pool_and_a_flood_is_refused(edge: RunningServer) -> None:
    actions = [MAINTAIN] * 40
    with httpx.Client(base_url=edge.base_url, timeout=60) as http:
        codes = [http.post("/grader", json={"task_id": "task1", "seed": s, "actions": actions}).status_code
                 for s in range(4)]
        assert codes[:2] == [200, 200] and codes[2:] == [429, 429]
        again = http.post("/grader", json={"task_id": "task1", "seed": 0, "actions": actions})
        assert again.status_code == 200  # the same replay is cached: free
        limited = http.post("/grader", json={"task_id": "task1", "seed": 9, "actions": actions})
        assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1


def test_an_mcp_request_past_its_deadline_is_a_jsonrpc_error() -> None:
    with running_server({"CODERED_MCP_CALL_TIMEOUT_S": "0.000001"}) as server, \
            httpx.Client(base_url=server.base_url, timeout=60) as http:
        answer = http.post("/mcp", json={"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
        body = answer.json()
        assert answer.status_code == 200 and body["id"] == 7 and body["error"]["code"] == -32002
        assert body["error"]["data"]["retry_after_s"] >= 1
