"""Fixtures for the server tests: real uvicorn subprocesses on 127.0.0.1, always torn down
(the default ``server`` lives in tests/conftest.py, shared with the inference tests).

Tests marked ``@pytest.mark.slow`` are skipped unless ``CODERED_SLOW=1``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support_server import SMALL_SOCKET_CAP, RunningServer, launch, running_server

# A deliberately small server: few slots and short idle timeouts, for capacity/expiry tests.
SMALL_SERVER_ENV = {
    "MAX_CONCURRENT_ENVS": "3",
    "CODERED_WS_IDLE_TIMEOUT_S": "1",
    "CODERED_HTTP_MAX_SESSIONS": "2",
    "CODERED_HTTP_TTL_S": "1.5",
    "CODERED_MCP_MAX_SESSIONS": "2",
    "CODERED_MCP_TTL_S": "1.5",
    "CODERED_MCP_UNUSED_TTL_S": "1.5",
    "CODERED_MCP_SESSIONS_PER_MINUTE": "12",
}


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("slow") and os.environ.get("CODERED_SLOW") != "1":
        pytest.skip("slow test: set CODERED_SLOW=1 to run it")


@pytest.fixture(scope="session")
def small_server() -> Iterator[RunningServer]:
    """Few slots, short idle timeouts and a 16-socket cap (one start for the capacity tests and
    the socket-cap test); idle sockets are not dropped for slow headers within a minute."""
    env = {**SMALL_SERVER_ENV, "CODERED_MAX_CONNECTIONS": str(SMALL_SOCKET_CAP),
           "CODERED_HEADER_TIMEOUT_S": "60"}
    with running_server(env) as handle:
        yield handle


@pytest.fixture(scope="session")
def production_server() -> Iterator[RunningServer]:
    """``codered serve`` in OpenEnv production mode: one start for the CLI start-up test and the
    production-mode validation (the package's ``main()`` when the CLI is not installed)."""
    cli = Path(sys.executable).with_name("codered")
    argv = [str(cli), "serve"] if cli.exists() else None
    server = launch({"OPENENV_MODE": "production"}, argv=argv)
    try:
        yield server
    finally:
        server.stop()
