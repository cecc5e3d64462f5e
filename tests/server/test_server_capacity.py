"""Capacity and leaks: a full server answers at once, and abandoned sessions give their slot
back (small server: 3 WebSocket slots, 1 s idle timeout, 2 HTTP sessions, 1.5 s HTTP TTL)."""

from __future__ import annotations

import json
import socket
import struct
import time

import httpx
import pytest
from support_server import RunningServer, ws_call
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

MAINTAIN = {"action_type": "maintain_plan"}
SLOTS = 3


def _open_session(server: RunningServer) -> ClientConnection:
    ws = connect(server.ws_url, open_timeout=10).__enter__()
    try:
        assert ws_call(ws, {"type": "reset", "data": {}}, timeout=10)["type"] == "observation"
    except BaseException:
        ws.close()
        raise
    return ws


def _refused(server: RunningServer) -> dict:
    """The frame a connection gets when the server is full (it is sent on connect)."""
    with connect(server.ws_url, open_timeout=10) as ws:
        return json.loads(ws.recv(timeout=10))


def _eventually_accepted(server: RunningServer, within_s: float) -> ClientConnection:
    deadline = time.monotonic() + within_s
    while True:
        try:
            return _open_session(server)
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.25)


def test_capacity_reached_is_a_clear_error_not_a_hang(small_server: RunningServer) -> None:
    sessions = [_open_session(small_server) for _ in range(SLOTS)]
    try:
        began = time.monotonic()
        reply = _refused(small_server)
        assert time.monotonic() - began < 5
        assert reply["type"] == "error" and reply["data"]["code"] == "CAPACITY_REACHED"
        assert reply["data"]["max_sessions"] == SLOTS
    finally:
        for ws in sessions:
            ws.close()
    _eventually_accepted(small_server, within_s=5).close()


def test_a_client_that_vanishes_mid_episode_gives_its_slot_back(
    small_server: RunningServer,
) -> None:
    keep = [_open_session(small_server) for _ in range(SLOTS - 1)]
    try:
        doomed = _open_session(small_server)
        ws_call(doomed, {"type": "step", "data": MAINTAIN})
        # Drop the TCP connection without a WebSocket close frame (RST on close).
        sock = doomed.socket
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
        replacement = _eventually_accepted(small_server, within_s=10)
        replacement.close()
    finally:
        for ws in keep:
            ws.close()


def test_a_silent_client_is_reaped_after_the_idle_timeout(small_server: RunningServer) -> None:
    silent = [_open_session(small_server) for _ in range(SLOTS)]
    try:
        assert _refused(small_server)["data"]["code"] == "CAPACITY_REACHED"
        # Idle timeout 1 s: the silent sockets are closed with 1001 and their slots freed.
        _eventually_accepted(small_server, within_s=15).close()
        with pytest.raises(ConnectionClosed) as closed:
            ws_call(silent[0], {"type": "step", "data": MAINTAIN}, timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
    finally:
        for ws in silent:
            ws.close()


def test_http_sessions_are_capped_by_eviction_and_expire(small_server: RunningServer) -> None:
    with httpx.Client(base_url=small_server.base_url, timeout=30) as http:
        first = http.post("/reset").json()["episode_id"]
        assert http.post("/step", json={"action": MAINTAIN, "episode_id": first}).status_code == 200
        second = http.post("/reset").json()["episode_id"]
        third = http.post("/reset")  # at the cap of 2: the used, idle one goes; the new one stays
        assert third.status_code == 200
        evicted = http.get("/state", params={"episode_id": first})
        assert evicted.status_code == 410 and "evicted" in evicted.json()["detail"]
        assert http.get("/state", params={"episode_id": second}).status_code == 200
        full = http.post("/reset")  # both slots hold new episodes within their grace
        assert full.status_code == 503 and int(full.headers["retry-after"]) >= 1
        assert "server full" in full.json()["detail"]
        second_step = http.post("/step", json={"action": MAINTAIN, "episode_id": second})
        assert second_step.status_code == 200
        time.sleep(1.6)
        expired = http.post("/step", json={"action": MAINTAIN, "episode_id": second})
        assert expired.status_code == 410 and "expired" in expired.json()["detail"]
