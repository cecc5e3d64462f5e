"""Session-wide fixtures shared by every test directory.

``server`` is one real CodeRedEnv server (uvicorn subprocess on 127.0.0.1) for the whole run:
each start imports openenv and its UI stack, several seconds of CPU, so the server tests and the
``inference.py --env-url`` tests share it instead of starting their own.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SERVER_HELPERS = str(Path(__file__).resolve().parent / "server")
if SERVER_HELPERS not in sys.path:
    sys.path.insert(0, SERVER_HELPERS)

from support_server import RunningServer, running_server  # noqa: E402

# Parametrised cases that cost 10-25 s each while a cheaper case of the same test covers the same
# code in the default suite: slow, like tests marked ``@pytest.mark.slow``.
SLOW_CASES = frozenset({
    "tests/sim/test_incremental_core.py::test_incremental_state_equals_a_rebuild_in_planner_play[task5]",
    "tests/sim/test_incremental_core.py::test_incremental_state_equals_a_rebuild_in_planner_play[task3]",
    "tests/sim/test_incremental_view.py::test_view_parts_equal_a_rebuild_in_planner_play[task5]",
    "tests/test_planner.py::test_shared_rollout_starts_change_no_value_and_no_decision[task5-971]",
    "tests/sim/test_invariants.py::test_random_play_keeps_invariants[task5]",
    "tests/sim/test_policies.py::test_policy_ordering[task5]",
})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` (and ``SLOW_CASES``) run only with ``CODERED_SLOW=1`` (the marker's
    documented opt-in)."""
    if os.environ.get("CODERED_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: set CODERED_SLOW=1 to run it")
    for item in items:
        if "slow" in item.keywords or item.nodeid in SLOW_CASES:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def server() -> Iterator[RunningServer]:
    """The default server configuration (64 WebSocket slots)."""
    env = {
        "MAX_CONCURRENT_ENVS": "64",
        "CODERED_ENABLE_LLM_BASELINE": "0",
        "CODERED_HEAVY_PER_MINUTE": "100000",
        "CODERED_CONSOLE_PER_MINUTE": "100000",
        "CODERED_MCP_SESSIONS_PER_MINUTE": "100000",
        # A browser page is still served: same-origin pages pass the allow-list (the console).
        "CODERED_ALLOWED_ORIGINS": "https://trusted.example",
    }
    with running_server(env) as handle:
        yield handle
