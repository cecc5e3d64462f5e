"""openenv.yaml's RFC 008 capabilities are checked against the code, not trusted as typed:
declared tools = the MCP tools, task counts = the Task API, the canary trajectories replay to
their recorded scores, the oracle script runs. ``CODERED_WRITE_MANIFEST=1`` regenerates
openenv.yaml's ``declared_tools`` (from the catalogue) and validation/canaries.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from support_server import RunningServer

from codered_env.agents import make_agent
from codered_env.runner import run_episode
from codered_env.server.mcp_tools import tool_names
from codered_env.server.task_api import SPLITS, num_tasks
from codered_env.sim import grade_episode

ROOT = Path(__file__).resolve().parents[2]
CANARY_PLAN = [("heuristic", "task1", 0), ("heuristic", "task3", 10000), ("noop", "task2", 0),
               ("random", "task5", 1)]


def _manifest() -> dict[str, Any]:
    return dict(yaml.safe_load((ROOT / "openenv.yaml").read_text())["validation"])


def _canaries() -> dict[str, Any]:
    canaries = []
    for agent, task_id, seed in CANARY_PLAN:
        run = run_episode(task_id, seed, make_agent(agent, seed=seed))
        canaries.append({"agent": agent, "task_id": task_id, "seed": seed, "score": run.score,
                         "steps": run.steps, "actions": run.actions})
    about = "Fixed action lists and the final grade each must reach (tests/server/test_manifest.py)."
    return {"format": "codered-canaries/1", "about": about, "canaries": canaries}


def _write_declared_tools() -> None:
    """Replace the ``declared_tools`` items of openenv.yaml with the served tool names."""
    path = ROOT / "openenv.yaml"
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("declared_tools:")) + 1
    end = start
    while end < len(lines) and lines[end].strip().startswith("- "):
        end += 1
    items = [f"      - {name}" for name in tool_names()]
    path.write_text("\n".join([*lines[:start], *items, *lines[end:]]) + "\n")


def test_declared_tools_and_task_counts_match_the_server() -> None:
    if os.environ.get("CODERED_WRITE_MANIFEST") == "1":
        _write_declared_tools()
    capabilities = _manifest()["capabilities"]
    assert capabilities["declared_tools"] == list(tool_names())
    assert capabilities["declared_task_count"] == {name: num_tasks(name) for name in SPLITS}
    assert capabilities["task_api"] is True and capabilities["rubric_tree"] is True
    assert _manifest()["task_distribution"]["generator_seed"] == SPLITS["eval"].seeds.start


def test_canaries_are_current_and_replay_to_their_scores() -> None:
    path = ROOT / _manifest()["capabilities"]["canaries"]
    expected = _canaries()
    if os.environ.get("CODERED_WRITE_MANIFEST") == "1":
        path.write_text(json.dumps(expected, indent=1) + "\n")
    shipped = json.loads(path.read_text())
    assert shipped == json.loads(json.dumps(expected)), "run with CODERED_WRITE_MANIFEST=1 to refresh"
    for canary in shipped["canaries"]:
        assert grade_episode(canary["task_id"], canary["seed"], canary["actions"])["score"] == canary["score"]


def test_the_oracle_script_plays_the_heuristic(server: RunningServer) -> None:
    oracle = ROOT / _manifest()["capabilities"]["oracle"]["location"]
    reference = run_episode("task2", 3, make_agent("heuristic"))
    for where in (["--in-process"], ["--url", server.base_url]):
        out = subprocess.run([sys.executable, str(oracle), *where, "--tasks", "task2", "--seeds", "3"],
                             capture_output=True, text=True, timeout=300, check=True).stdout
        assert json.loads(out) == {"task_id": "task2", "seed": 3, "score": reference.score,
                                   "steps": reference.steps}
