"""Fixtures for the server tests: real uvicorn subprocesses on 127.0.0.1, always torn down.

Tests marked ``@pytest.mark.slow`` are skipped unless ``CODERED_SLOW=1``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support_server import RunningServer, running_server

# A deliberately small server: few slots and short idle timeouts, for capacity/expiry tests.
SMALL_SERVER_ENV = {
    "MAX_CONCURRENT_ENVS": "3",
    "CODERED_WS_IDLE_TIMEOUT_S": "1",
    "CODERED_HTTP_MAX_SESSIONS": "2",
    "CODERED_HTTP_TTL_S": "1.5",
}


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("slow") and os.environ.get("CODERED_SLOW") != "1":
        pytest.skip("slow test: set CODERED_SLOW=1 to run it")


@pytest.fixture(scope="session")
def server() -> Iterator[RunningServer]:
    """The default server configuration (64 WebSocket slots)."""
    env = {
        "MAX_CONCURRENT_ENVS": "64",
        "CODERED_ENABLE_LLM_BASELINE": "0",
        "CODERED_HEAVY_PER_MINUTE": "100000",
        "CODERED_CONSOLE_PER_MINUTE": "100000",
        # A browser page is still served: same-origin pages pass the allow-list (the console).
        "CODERED_ALLOWED_ORIGINS": "https://trusted.example",
    }
    with running_server(env) as handle:
        yield handle


@pytest.fixture(scope="module")
def small_server() -> Iterator[RunningServer]:
    with running_server(SMALL_SERVER_ENV) as handle:
        yield handle
