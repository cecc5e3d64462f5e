"""Crash recovery and clean shutdown on a real server (127.0.0.1, random ports).

After a SIGKILL and a restart on the same port and state directory, HTTP episodes, MCP
sessions and WebSocket sessions (re-attached with ``?session_id=``) continue with the same
observations and rewards as an uninterrupted in-process episode; the typed client resumes by
itself. SIGTERM closes WebSocket sessions resumably (1012) and answers queued work with JSON.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from support_server import REPO_ROOT, RunningServer, free_port, launch
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from codered_env import CodeRedEnv
from codered_env.server.environment import CodeRedEnvironment

ACTIONS = [{"action_type": "maintain_plan"}, {"action_type": "query_or_status", "hospital_id": "H1"},
           {"action_type": "maintain_plan"}, {"action_type": "dispatch_ambulance", "ambulance_id": "ALS1",
                                             "patient_id": "P1"}, {"action_type": "maintain_plan"}]


def _in_process(task_id: str, seed: int, actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    env = CodeRedEnvironment()
    env.reset(task_id=task_id, seed=seed, episode_id="x")
    return [env.step_wire(action).model_dump(exclude={"metadata"}) for action in actions]


def _expected(task_id: str, seed: int) -> list[dict[str, Any]]:
    return _in_process(task_id, seed, ACTIONS)


def _same_steps(seen: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    """Served step payloads equal the in-process observations, field by field, and rewards."""
    assert len(seen) == len(expected)
    for payload, reference in zip(seen, expected, strict=True):
        observation = {k: v for k, v in payload["observation"].items() if k != "metadata"}
        assert observation == {k: v for k, v in reference.items() if k not in ("reward", "done")}
        assert payload["reward"] == reference["reward"] and payload["done"] == reference["done"]


def _ws_step(ws: Any, action: dict[str, Any], expect: int | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"type": "step", "data": action}
    if expect is not None:
        message["expect_step"] = expect
    ws.send(json.dumps(message))
    reply: dict[str, Any] = json.loads(ws.recv(timeout=60))
    assert reply["type"] == "observation", reply
    return reply["data"]


def _http_step(http: httpx.Client, episode: str, action: dict[str, Any]) -> dict[str, Any]:
    answer = http.post("/step", json={"episode_id": episode, "action": action})
    assert answer.status_code == 200, answer.text
    payload: dict[str, Any] = answer.json()
    return payload


def _restart(server: RunningServer) -> tuple[RunningServer, float]:
    started = time.monotonic()
    again = launch({}, port=server.port, state_dir=server.state_dir)
    return again, time.monotonic() - started


def test_every_kind_of_session_resumes_after_sigkill() -> None:
    expected = _expected("task2", 4)
    server = launch({})
    try:
        http = httpx.Client(base_url=server.base_url, timeout=60)
        episode = http.post("/reset", json={"task_id": "task2", "seed": 4}).json()["episode_id"]
        http_seen = [_http_step(http, episode, a) for a in ACTIONS[:3]]
        ws = connect(server.ws_url, open_timeout=30)
        ws.send(json.dumps({"type": "reset", "data": {"task_id": "task2", "seed": 4, "episode_id": "x"}}))
        ws_id = json.loads(ws.recv(timeout=60))["data"]["session_id"]
        ws_seen = [_ws_step(ws, a) for a in ACTIONS[:3]]
        opened = http.post("/mcp?task_id=task2&seed=4", json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}})
        mcp_id = opened.headers["mcp-session-id"]

        def tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            answer = http.post("/mcp", headers={"Mcp-Session-Id": mcp_id}, json={
                "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": name, "arguments": arguments}})
            assert answer.status_code == 200, answer.text
            return answer.json()["result"]["structuredContent"]

        before = [tool("maintain_plan", {}), tool("view_full_state", {})]
        server.kill()
        ws.close()
        server, took = _restart(server)
        http = httpx.Client(base_url=server.base_url, timeout=60)
        http_seen += [_http_step(http, episode, a) for a in ACTIONS[3:]]
        _same_steps(http_seen, expected)
        with connect(f"{server.ws_url}?session_id={ws_id}", open_timeout=30) as ws:
            repeated = _ws_step(ws, ACTIONS[2], expect=2)  # its reply was "lost": answered again
            assert repeated.get("repeated") is True and repeated["observation"] == ws_seen[2]["observation"]
            ws_seen += [_ws_step(ws, a, expect=3 + i) for i, a in enumerate(ACTIONS[3:])]
        _same_steps(ws_seen, expected)
        after = tool("maintain_plan", {})
        assert after["step"] == before[0]["step"] + 1
        reference = CodeRedEnvironment()
        reference.reset(task_id="task2", seed=4)
        reference.step_wire({"action_type": "maintain_plan"})
        reference.step_wire({"action_type": "maintain_plan"})
        assert after["score"] == reference.state.score
        assert took < 60  # generous on a shared machine; docs/SERVER.md has the measured figure
    finally:
        server.stop()


def test_the_typed_client_resumes_by_itself_across_a_restart() -> None:
    expected = _expected("task1", 2)
    server = launch({})
    restarted: list[RunningServer] = []
    try:
        with CodeRedEnv(base_url=server.base_url, reconnect_timeout_s=120).sync() as env:
            env.reset(task_id="task1", seed=2, episode_id="x")
            seen = [env.step(a) for a in ACTIONS[:2]]
            server.kill()
            restarter = threading.Thread(target=lambda: restarted.append(_restart(server)[0]))
            restarter.start()
            seen += [env.step(a) for a in ACTIONS[2:]]  # waits for the server, then resumes
            restarter.join()
            assert env.state().step_count == len(ACTIONS)
        assert [r.observation.text for r in seen] == [e["text"] for e in expected]
        assert [r.reward for r in seen] == [e["reward"] for e in expected]
    finally:
        for handle in (server, *restarted):
            handle.stop()


def test_sigterm_closes_websockets_resumably_and_answers_queued_work_with_json() -> None:
    server = launch({"CODERED_SHUTDOWN_GRACE_S": "1", "CODERED_HEAVY_PER_MINUTE": "1000"})
    try:
        ws = connect(server.ws_url, open_timeout=30)
        ws.send(json.dumps({"type": "reset", "data": {}}))
        session_id = json.loads(ws.recv(timeout=60))["data"]["session_id"]
        answers: list[httpx.Response | Exception] = []

        def queued(seed: int) -> None:
            try:
                answers.append(httpx.post(f"{server.base_url}/baseline",
                                          json={"agent": "heuristic", "seeds": [seed + i for i in range(10)]},
                                          timeout=120))
            except Exception as exc:  # a dropped connection would show up here
                answers.append(exc)

        threads = [threading.Thread(target=queued, args=(100 * n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        time.sleep(1.0)
        server.proc.send_signal(signal.SIGTERM)
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=60)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1012
        assert f"session_id={session_id}" in closed.value.rcvd.reason
        for thread in threads:
            thread.join(timeout=120)
        assert server.proc.wait(timeout=60) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal
        assert len(answers) == 4 and all(isinstance(a, httpx.Response) for a in answers), answers
        statuses = {a.status_code for a in answers if isinstance(a, httpx.Response)}
        assert statuses <= {200, 503} and 503 in statuses  # 40 s of queued work, 1 s of grace
        for answer in answers:
            assert isinstance(answer, httpx.Response)
            assert answer.headers["content-type"].startswith("application/json"), answer.text
            if answer.status_code == 503:
                assert int(answer.headers["retry-after"]) >= 1
    finally:
        server.stop()


def test_without_a_usable_state_directory_the_server_runs_from_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")  # like a read-only filesystem: nothing can be created
    for value, disabled in (("off", False), (str(blocker / "state"), True)):
        server = launch({"CODERED_STATE_DIR": value})
        try:
            http = httpx.Client(base_url=server.base_url, timeout=60)
            episode = http.post("/reset").json()["episode_id"]
            assert http.post("/step", json={"episode_id": episode, "action": ACTIONS[0]}).status_code == 200
            assert ("session journal disabled" in server.log()) is disabled
        finally:
            server.stop()


@pytest.mark.skipif(shutil.which("uv") is None, reason="needs uv on PATH")
def test_killing_the_uv_run_wrapper_stops_the_server(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "CODERED_STATE_DIR": str(tmp_path), "UV_NO_SYNC": "1",
           "VIRTUAL_ENV": str(Path(sys.executable).parents[1])}
    wrapper = subprocess.Popen(["uv", "run", "--no-sync", "server", "--port", str(port)], cwd=REPO_ROOT,
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            pytest.fail("the server behind uv run never became healthy")
        wrapper.kill()  # SIGKILL: uv cannot forward it
        wrapper.wait(timeout=10)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
            except httpx.HTTPError:
                break  # nobody holds the port any more
            time.sleep(0.2)
        else:
            pytest.fail("the server kept running after its uv run wrapper was killed")
    finally:
        if wrapper.poll() is None:
            wrapper.kill()


def test_a_reset_waiting_out_a_server_freeze_does_not_expire() -> None:
    server = launch({"CODERED_HTTP_UNSTEPPED_TTL_S": "3"})
    try:
        http = httpx.Client(base_url=server.base_url, timeout=60)
        episode = http.post("/reset").json()["episode_id"]
        server.proc.send_signal(signal.SIGSTOP)  # the whole server freezes for longer than the TTL
        time.sleep(5.0)
        server.proc.send_signal(signal.SIGCONT)
        step = http.post("/step", json={"episode_id": episode, "action": ACTIONS[0]})
        assert step.status_code == 200, step.text
    finally:
        server.proc.send_signal(signal.SIGCONT)
        server.stop()
