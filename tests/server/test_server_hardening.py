"""Reliability suite: each hostile-client failure of issue 11 reproduced against a real server,
and shown fixed. Everything runs on 127.0.0.1 with small limits so that every wait is short
and every loop is bounded."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from support_server import SMALL_SOCKET_CAP, RunningServer, free_port, running_server, ws_call
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

MAINTAIN = {"action_type": "maintain_plan"}
TOKEN = "test-baseline-token"
ALLOWED_ORIGIN = "https://trusted.example"

HARD_ENV = {
    "MAX_CONCURRENT_ENVS": "4",
    "CODERED_HTTP_MAX_SESSIONS": "3",
    "CODERED_HTTP_TTL_S": "3",
    "CODERED_HTTP_UNSTEPPED_TTL_S": "1",
    "CODERED_HTTP_PER_CLIENT": "2",
    "CODERED_TRUSTED_PROXIES": "127.0.0.1",  # X-Forwarded-For stands for distinct clients
    "CODERED_HEADER_TIMEOUT_S": "1",
    "CODERED_BODY_TIMEOUT_S": "1",
    "CODERED_HEAVY_PER_MINUTE": "4",
    "CODERED_CONSOLE_PER_MINUTE": "6",
    "CODERED_ALLOWED_ORIGINS": ALLOWED_ORIGIN,
    "CODERED_ENABLE_LLM_BASELINE": "1",
    "CODERED_BASELINE_TOKEN": TOKEN,
    "API_KEY": "not-a-real-key",
    "CODERED_LLM_RETRIES": "0",
    "CODERED_LLM_TIMEOUT": "1",
    "CODERED_LLM_BUDGET": "20",
}


@pytest.fixture(scope="module")
def hard() -> Iterator[RunningServer]:
    # The model's address is a closed local port: every LLM call fails at once.
    env = {**HARD_ENV, "API_BASE_URL": f"http://127.0.0.1:{free_port()}/v1"}
    with running_server(env) as handle:
        yield handle


@pytest.fixture()
def http(hard: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=hard.base_url, timeout=60.0) as client:
        yield client


def _post_raw(http: httpx.Client, path: str, body: bytes) -> httpx.Response:
    return http.post(path, content=body, headers={"content-type": "application/json"})


# --------------------------------------------------------------------------- 1. no 500s


BAD_BODIES = {
    "nan": b'{"seed": NaN}',
    "infinity": b'{"seed": Infinity}',
    "minus_infinity": b'{"seed": -Infinity}',
    "huge_float": b'{"seed": 1e400}',
    "lone_surrogate": b'{"task_id": "\\ud800"}',
    "surrogate_key": b'{"\\udfff": 1}',
    "huge_int": b'{"seed": ' + b"9" * 5000 + b"}",
    "deep_nesting": b"[" * 5000 + b"]" * 5000,
    "not_utf8": b'{"task_id": "\xff\xfe"}',
    "truncated": b'{"seed": ',
}


@pytest.mark.parametrize("name", sorted(BAD_BODIES))
def test_malformed_bodies_get_a_short_4xx_and_the_connection_stays_usable(
    http: httpx.Client, name: str
) -> None:
    for path in ("/reset", "/grader", "/baseline"):
        response = _post_raw(http, path, BAD_BODIES[name])
        assert response.status_code == 400, (path, response.text[:200])
        assert len(response.content) < 300 and response.json()["detail"].startswith("invalid JSON body")
    assert http.get("/health").status_code == 200  # same keep-alive client, still fine


def test_validation_errors_never_echo_the_input(http: httpx.Client) -> None:
    marker = "Z" * 7_000
    response = http.post("/reset", json={"task_id": marker, "seed": "x", "episode_id": 5, "extra": marker})
    assert response.status_code == 422
    assert len(response.content) < 2000 and "ZZZZ" not in response.text
    assert {tuple(e["loc"])[-1] for e in response.json()["detail"]} >= {"task_id", "seed"}


def test_a_body_of_many_small_items_is_capped_cheaply(http: httpx.Client) -> None:
    many = b"[" + b"{}," * 340_000 + b"{}]"
    began = time.monotonic()
    response = _post_raw(http, "/grader", many)
    assert response.status_code == 413 and "limit" in response.json()["detail"]
    under_cap = b"[" + b"{}," * 20_000 + b"{}]"  # ~60 KiB: parsed, then refused by the schema
    small = _post_raw(http, "/grader", under_cap)
    assert small.status_code == 422 and len(small.content) < 2000
    assert time.monotonic() - began < 10


def test_per_route_caps_fit_a_500_action_grader_list(http: httpx.Client) -> None:
    action = {
        "action_type": "transfer_blood",
        "from_hospital_id": "H1",
        "to_hospital_id": "H2",
        "blood_type": "O-",
        "units": 2,
    }
    body = json.dumps({"task_id": "task3", "seed": 0, "actions": [action] * 500}).encode()
    assert 40_000 < len(body) <= 64 * 1024
    assert _post_raw(http, "/grader", body).status_code == 200
    assert _post_raw(http, "/reset", b" " * 20_000 + b"{}").status_code == 413  # 16 KiB elsewhere


def test_grader_refuses_what_a_live_episode_refuses(http: httpx.Client) -> None:
    bad = {"action_type": "dispatch_ambulance", "ambulance_id": "ALS1"}  # patient_id missing
    episode = http.post("/reset").json()["episode_id"]
    assert http.post("/step", json={"episode_id": episode, "action": bad}).status_code == 422
    graded = http.post("/grader", json={"actions": [MAINTAIN, bad, MAINTAIN]})
    assert graded.status_code == 422
    assert graded.json()["detail"][0]["loc"][:3] == ["body", "actions", 1]
    assert http.post("/grader", json={"actions": [MAINTAIN]}).json()["steps"] == 1


# --------------------------------------------------------------------------- 3. no lock-outs


def test_episode_ids_are_issued_by_the_server_and_there_is_no_default(http: httpx.Client) -> None:
    time.sleep(1.1)  # earlier tests' new episodes are past their grace (the cap is 3)
    clients = ({"X-Forwarded-For": f"198.51.100.{n}"} for n in range(3))  # per-client quota is 2
    ids = {http.post("/reset", headers=headers).json()["episode_id"] for headers in clients}
    assert len(ids) == 3 and all(len(i) >= 22 for i in ids)
    chosen = http.post("/reset", json={"episode_id": "my-own-id"})
    assert chosen.status_code == 404 and "never issued" in chosen.json()["detail"]
    assert http.post("/step", json={"action": MAINTAIN}).status_code == 422
    assert http.get("/state").status_code == 422


def test_unstepped_episodes_expire_quickly_and_reads_do_not_renew(http: httpx.Client) -> None:
    time.sleep(1.1)  # earlier tests' new episodes are past their grace (the cap is 3)
    idle = http.post("/reset").json()["episode_id"]
    played = http.post("/reset").json()["episode_id"]
    assert http.post("/step", json={"episode_id": played, "action": MAINTAIN}).status_code == 200
    deadline = time.monotonic() + 4.0  # stepped TTL 3 s: reading /state must not keep it alive
    while time.monotonic() < deadline:
        if http.get("/state", params={"episode_id": played}).status_code != 200:
            break
        time.sleep(0.2)
    gone = http.get("/state", params={"episode_id": idle})
    assert gone.status_code == 410 and "never stepped" in gone.json()["detail"]
    expired = http.get("/state", params={"episode_id": played})
    assert expired.status_code == 410 and "without being stepped" in expired.json()["detail"]


def test_a_reset_flood_from_one_client_cannot_take_the_slots_of_another(http: httpx.Client) -> None:
    time.sleep(1.1)  # earlier never-stepped episodes expire
    mine = http.post("/reset").json()["episode_id"]
    http.post("/step", json={"episode_id": mine, "action": MAINTAIN})
    attacker = {"X-Forwarded-For": "203.0.113.7"}  # through the trusted proxy (127.0.0.1)
    answers = [http.post("/reset", headers=attacker) for _ in range(10)]
    assert [a.status_code for a in answers[:2]] == [200, 200]  # its quota is 2 of the 3 slots
    refused = answers[2]
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert "already holds 2" in refused.json()["detail"]
    assert http.post("/step", json={"episode_id": mine, "action": MAINTAIN}).status_code == 200
    spoofed = http.post("/reset", headers={"X-Forwarded-For": "203.0.113.7, 127.0.0.1"})
    assert spoofed.status_code == 429  # the trusted hop is skipped: still the attacker


def test_task_routes_answer_and_mcp_sessions_hold_no_socket(hard: RunningServer, http: httpx.Client) -> None:
    assert http.get("/codered_env/splits").status_code == 200  # the Task API (test_task_api.py)
    assert http.post("/codered_env/tasks", json={}).status_code == 422  # split missing: no 500
    assert http.get("/other_env/splits").status_code == 404
    with pytest.raises(InvalidStatus):
        connect(f"ws://127.0.0.1:{hard.port}/mcp", open_timeout=10).close()
    listed = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).json()
    assert len(listed["result"]["tools"]) == 15
    # Session creation, which on OpenEnv's handler held a WebSocket slot for minutes, holds an
    # entry of the capped MCP session store (LRU eviction), never a WebSocket slot.
    create = {"jsonrpc": "2.0", "id": 2, "method": "openenv/session/create"}
    for _ in range(10):
        assert "session_id" in http.post("/mcp", json=create).json()["result"]
    assert http.post("/mcp", json=[1]).json()["error"]["code"] == -32600
    sockets = [connect(hard.ws_url, open_timeout=10) for _ in range(4)]  # every slot still free
    try:
        assert all(ws_call(ws, {"type": "reset", "data": {}})["type"] == "observation" for ws in sockets)
    finally:
        for ws in sockets:
            ws.close()


# --------------------------------------------------------------------------- 4. WebSocket errors


BAD_FRAMES: dict[str, str | bytes] = {
    "array": "[1, 2]",
    "string": '"reset"',
    "number": "42",
    "deep": "[" * 10000 + "]" * 10000,
    "huge_int": '{"type": "reset", "data": {"seed": ' + "9" * 5000 + "}}",
    "binary": b"\x00\x01\x02",
    "surrogate_id": '{"type": "reset", "data": {"episode_id": "\\ud800"}}',
    "nan": '{"type": "reset", "data": {"seed": NaN}}',
    "data_not_object": '{"type": "step", "data": [1]}',
    "unknown_type": '{"type": "explode"}',
    "type_not_string": '{"type": {"a": 1}}',
    "bad_reset_option": '{"type": "reset", "data": {"self": 1}}',
    "bad_action": '{"type": "step", "data": {"action_type": "teleport"}}',
}


def test_every_bad_frame_is_answered_in_protocol_and_the_session_survives(hard: RunningServer) -> None:
    with connect(hard.ws_url, open_timeout=10) as ws:
        assert ws_call(ws, {"type": "reset", "data": {"seed": 3}})["type"] == "observation"
        for name, frame in BAD_FRAMES.items():
            ws.send(frame)
            reply = json.loads(ws.recv(timeout=10))
            assert reply["type"] == "error", name
            assert reply["data"]["code"] in {
                "INVALID_JSON",
                "UNKNOWN_TYPE",
                "VALIDATION_ERROR",
                "EXECUTION_ERROR",
            }, name
            assert len(json.dumps(reply)) < 2000, name
        step = ws_call(ws, {"type": "step", "data": MAINTAIN})
        assert step["type"] == "observation"
        state = ws_call(ws, {"type": "state"})["data"]
        assert (state["seed"], state["step_count"]) == (3, 1)  # no bad frame touched the episode
        grade = ws_call(ws, {"type": "grade"})
        assert grade["type"] == "grade" and 0.0 <= grade["data"]["score"] <= 1.0


def test_only_protocol_violations_close_the_socket_with_their_code(hard: RunningServer) -> None:
    with connect(hard.ws_url, open_timeout=10, max_size=None) as ws:
        ws.send("x" * (64 * 1024 + 1))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    with connect(hard.ws_url, open_timeout=10) as ws:
        ws.send(json.dumps({"type": "close"}))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1000


def test_origin_allow_list_and_same_origin(hard: RunningServer) -> None:
    with connect(hard.ws_url, open_timeout=10, origin=ALLOWED_ORIGIN) as ws:  # type: ignore[arg-type]
        assert ws_call(ws, {"type": "reset", "data": {}})["type"] == "observation"
    same = f"http://127.0.0.1:{hard.port}"
    with connect(hard.ws_url, open_timeout=10, origin=same) as ws:  # type: ignore[arg-type]
        assert ws_call(ws, {"type": "state"})["type"] == "state"
    with pytest.raises(InvalidStatus) as refused:
        connect(hard.ws_url, open_timeout=10, origin="https://evil.example")  # type: ignore[arg-type]
    assert refused.value.response.status_code == 403


# --------------------------------------------------------------------------- 5. slow clients


def test_slow_header_clients_are_dropped(hard: RunningServer) -> None:
    with socket.create_connection(("127.0.0.1", hard.port), timeout=10) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # headers never finish
        began = time.monotonic()
        try:
            data = sock.recv(1024)
        except ConnectionResetError:
            data = b""
        assert data == b"" and time.monotonic() - began < 8


def test_slow_body_clients_get_408(hard: RunningServer) -> None:
    with socket.create_connection(("127.0.0.1", hard.port), timeout=10) as sock:
        sock.sendall(
            b"POST /reset HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100\r\n\r\n{"
        )
        began = time.monotonic()
        reply = sock.recv(4096)
        assert reply.startswith(b"HTTP/1.1 408") and time.monotonic() - began < 8


# --------------------------------------------------------------------------- 6. ownership, LLM


def test_live_grading_needs_the_issued_id(http: httpx.Client) -> None:
    episode = http.post("/reset").json()["episode_id"]
    http.post("/step", json={"episode_id": episode, "action": MAINTAIN})
    assert http.post("/grader", json={"episode_id": episode}).json()["source"] == "episode"
    unknown = http.post("/grader", json={"episode_id": "guessed-id"})
    assert unknown.status_code == 404


def test_llm_baseline_needs_the_token_and_reports_a_dead_model_as_502(http: httpx.Client) -> None:
    body = {"agent": "llm", "seeds": [0], "tasks": ["task1"]}
    assert http.post("/baseline", json=body).status_code == 401
    wrong = http.post("/baseline", json=body, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    failed = http.post("/baseline", json=body, headers={"Authorization": f"Bearer {TOKEN}"})
    assert failed.status_code == 502 and "model" in failed.json()["detail"]


def test_uncached_agent_runs_are_rate_limited_per_client(http: httpx.Client) -> None:
    statuses = [http.post("/grader", json={"agent": "noop", "seed": 900 + i}).status_code for i in range(6)]
    assert statuses[0] == 200 and 429 in statuses
    assert http.post("/grader", json={"agent": "noop", "seed": 900}).status_code == 200  # cached


def test_html_gets_csp_and_everything_gets_nosniff(server: RunningServer) -> None:
    with httpx.Client(base_url=server.base_url, timeout=120) as client:
        page = client.get("/view", params={"task_id": "task1"}, follow_redirects=True)
        assert page.url.path == "/web"
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp
        assert "connect-src 'self' ws: wss:" in csp
        assert page.headers["x-content-type-options"] == "nosniff"
        script = client.get("/web/static/console.js")
        assert script.headers["x-content-type-options"] == "nosniff"
        assert client.get("/health").headers["x-content-type-options"] == "nosniff"


def test_console_replays_have_their_own_rate_limit(http: httpx.Client) -> None:
    played: list[dict[str, str]] = []
    statuses = []
    for _ in range(9):
        statuses.append(http.post("/web/advice", json={"task_id": "task1", "actions": played}).status_code)
        played = [*played, {"action_type": "maintain_plan"}]
    assert statuses[:6] == [200] * 6 and statuses[6:] == [429] * 3
    refused = http.post("/web/frames", json={"task_id": "task2", "actions": played})
    assert refused.status_code == 429 and "console replays" in refused.json()["detail"]
    assert int(refused.headers["retry-after"]) >= 1
    assert http.post("/web/advice", json={"task_id": "task1", "actions": []}).status_code == 200  # cached


def test_bad_requests_leave_no_traceback_in_the_log(hard: RunningServer, http: httpx.Client) -> None:
    for body in BAD_BODIES.values():
        _post_raw(http, "/reset", body)
    time.sleep(0.3)
    log = hard.log()
    assert "Traceback" not in log and "Internal Server Error" not in log


# --------------------------------------------------------------------------- socket cap


def test_idle_sockets_beyond_the_cap_are_closed_and_the_server_recovers(
    small_server: RunningServer,
) -> None:
    cap, srv = SMALL_SOCKET_CAP, small_server  # header timeout 60 s: only the cap closes sockets
    sockets = [socket.create_connection(("127.0.0.1", srv.port), timeout=10) for _ in range(cap + 12)]
    try:
        time.sleep(1.0)
        closed = 0
        for sock in sockets:
            sock.settimeout(0.2)
            try:
                closed += sock.recv(1) == b""
            except ConnectionResetError:
                closed += 1
            except TimeoutError:
                pass
        assert 10 <= closed <= 14
    finally:
        for sock in sockets:
            sock.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if httpx.get(srv.base_url + "/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    else:
        pytest.fail("server did not recover after the idle sockets closed")
