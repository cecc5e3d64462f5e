"""Start and stop a real CodeRedEnv server (uvicorn in a subprocess on 127.0.0.1)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

REPO_ROOT = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT_S = 180.0  # generous: the test machine is often shared and busy
SMALL_SOCKET_CAP = 16  # CODERED_MAX_CONNECTIONS of the small_server fixture


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class RunningServer:
    proc: subprocess.Popen[bytes]
    port: int
    log_path: Path
    state_dir: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-8000:]

    def kill(self) -> None:
        """SIGKILL (a crash): the journal stays for a restart (``launch(port=, state_dir=)``)."""
        self.proc.kill()
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        with contextlib.suppress(OSError):
            self.log_path.unlink()
        if self.state_dir is not None:
            shutil.rmtree(self.state_dir, ignore_errors=True)


def _wait_healthy(server: RunningServer, deadline: float) -> bool:
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            return False
        try:
            if httpx.get(server.base_url + "/health", timeout=1.0).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    return False


def launch(
    extra_env: dict[str, str] | None = None,
    argv: list[str] | None = None,
    attempts: int = 3,
    port: int | None = None,
    state_dir: Path | None = None,
) -> RunningServer:
    """Start a server and wait until ``/health`` answers; raises with the log otherwise.

    ``argv`` is the command without ``--host/--port``; it defaults to the package's
    ``main()`` (``python -m codered_env.server.app``). ``port`` and ``state_dir`` restart a
    server where another one ran (its journal); by default both are new.
    """
    state_dir = state_dir or Path(tempfile.mkdtemp(prefix="codered-state-"))
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "CODERED_STATE_DIR": str(state_dir), **(extra_env or {})}
    command = argv or [sys.executable, "-m", "codered_env.server.app"]
    last_log = ""
    fixed_port = port
    for _ in range(attempts):
        port = fixed_port or free_port()
        fd, name = tempfile.mkstemp(prefix="codered-server-", suffix=".log")
        with os.fdopen(fd, "wb") as log:
            proc = subprocess.Popen(
                [*command, "--host", "127.0.0.1", "--port", str(port)],
                cwd=REPO_ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        server = RunningServer(proc, port, Path(name), state_dir)
        if _wait_healthy(server, time.monotonic() + STARTUP_TIMEOUT_S):
            return server
        last_log = server.log()
        server.state_dir = None  # kept for the next attempt
        server.stop()
        if "address already in use" not in last_log.lower():
            break
    shutil.rmtree(state_dir, ignore_errors=True)
    raise RuntimeError(f"server did not become healthy; log:\n{last_log}")


@contextlib.contextmanager
def running_server(extra_env: dict[str, str] | None = None) -> Iterator[RunningServer]:
    server = launch(extra_env)
    try:
        yield server
    finally:
        server.stop()


def ws_call(ws: Any, message: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
    """Send one JSON frame on a ``websockets.sync`` connection and return the reply."""
    ws.send(json.dumps(message))
    reply: dict[str, Any] = json.loads(ws.recv(timeout=timeout))
    return reply
