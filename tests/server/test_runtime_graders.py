"""OpenEnv's next runtime graders (RFC 008 level 2), reproduced against live servers on 127.0.0.1.

Each test plays the validator's part as OpenEnv's collector does (``validation_open`` with the
server's token, then reset with seed and episode id, ``state`` after every operation, the plan's
actions, ``validation_read``) and applies that grader's contract to the evidence:
``seed_control``, ``trajectory_record``, ``episode_determinism`` (a replay in a fresh session
and one in a fresh server process, compared trace for trace with no field excluded),
``tool_declaration_accuracy``, ``task_declaration_accuracy``, ``rubric_introspectable`` and
``reward_attribution``. The checks are written here from the graders' documented contracts."""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from support_server import RunningServer, launch, ws_call
from websockets.sync.client import connect

from codered_env.agents import make_agent
from codered_env.runner import run_episode
from codered_env.server import validation
from codered_env.sim import CodeRedSim

ROOT = Path(__file__).resolve().parents[2]
TOKENS = [secrets.token_urlsafe(32), secrets.token_urlsafe(32)]  # one per server, as per container
AGGREGATIONS = {"weighted_sum", "sequential", "gate", "leaf", "unknown"}
MAX_ROUNDING = 1e-3  # the grade's 4-decimal rounding of six components and their weights


def _manifest() -> dict[str, Any]:
    return dict(yaml.safe_load((ROOT / "openenv.yaml").read_text())["validation"])


def _plan() -> dict[str, Any]:
    """The manifest's runtime plan, with an unneeded mutual-aid request (a penalty change) and
    the heuristic's episode on task2 seed 1 after it, played to its end."""
    plan = json.loads((ROOT / "validation" / "runtime.json").read_text())
    heuristic = run_episode("task2", 1, make_agent("heuristic"))
    actions = [{"action_type": "request_mutual_aid"}, *heuristic.actions]
    return {"reset": {"task_id": "task2", "seed": 1, "episode_id": "graders-task2-seed1"},
            "actions": actions, "manifest_plan": plan}


@dataclass
class Evidence:
    trace: list[dict[str, Any]]
    telemetry: dict[str, Any]


def collect(base_url: str, token: str, reset: dict[str, Any], actions: list[dict[str, Any]]) -> Evidence:
    assert "observation" in httpx.get(base_url + "/schema", timeout=30).json()
    trace: list[dict[str, Any]] = []
    ws_url = base_url.replace("http://", "ws://") + "/ws"
    with connect(ws_url, open_timeout=30, max_size=2**24) as ws:
        opened = ws_call(ws, {"type": "validation_open", "data": {"schema_version": 1, "token": token}})
        assert opened["type"] == "validation_open", opened
        capability = opened["data"]["capability"]

        def exchange(operation: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
            request: dict[str, Any] = {"type": operation}
            if data is not None:
                request["data"] = data
            response = ws_call(ws, request)
            assert response["type"] == ("state" if operation == "state" else "observation"), response
            trace.append({"operation": operation, "request": request, "response": response})
            return dict(response["data"])

        observation = exchange("reset", reset)
        exchange("state")
        for action in actions:
            if observation.get("done") is True:
                break
            observation = exchange("step", action)
            exchange("state")
        read = ws_call(ws, {"type": "validation_read",
                            "data": {"schema_version": 1, "capability": capability}})
        assert read["type"] == "validation", read
        ws.send(json.dumps({"type": "close"}))
    return Evidence(trace, read["data"])


@pytest.fixture(scope="module")
def servers() -> Iterator[list[RunningServer]]:
    with ThreadPoolExecutor(len(TOKENS)) as pool:  # the two start-ups overlap
        started = list(pool.map(lambda token: launch({"OPENENV_VALIDATION_TOKEN": token,
                                                      "MAX_CONCURRENT_ENVS": "8"}), TOKENS))
    try:
        yield started
    finally:
        for server in started:
            server.stop()


@pytest.fixture(scope="module")
def plan() -> dict[str, Any]:
    return _plan()


@pytest.fixture(scope="module")
def primary(servers: list[RunningServer], plan: dict[str, Any]) -> Evidence:
    return collect(servers[0].base_url, TOKENS[0], plan["reset"], plan["actions"])


def _steps(evidence: Evidence) -> list[dict[str, Any]]:
    return [row for row in evidence.trace if row["operation"] == "step"]


# ----------------------------------------------------------------- seed_control, trajectory_record

def _seed_forwarded(evidence: Evidence, seed: int) -> None:
    resets = [row for row in evidence.trace if row["operation"] == "reset"]
    assert len(resets) == 1 and resets[0]["request"]["data"]["seed"] == seed
    assert evidence.telemetry["schema_version"] == 1
    assert evidence.telemetry["seed"] == {"requested": True, "value": seed, "accepted": True}


def test_seed_control(servers: list[RunningServer], plan: dict[str, Any], primary: Evidence) -> None:
    _seed_forwarded(primary, 1)
    other = collect(servers[0].base_url, TOKENS[0], {**plan["reset"], "seed": 2}, plan["actions"][:3])
    _seed_forwarded(other, 2)
    first_obs = primary.trace[0]["response"]["data"]["observation"]
    assert other.trace[0]["response"]["data"]["observation"] != first_obs  # the seed made a difference


def test_trajectory_record(primary: Evidence) -> None:
    record = primary.telemetry["trajectory"]
    assert (record["schema_version"], record["source"], record["complete"]) == (1, "openenv-server", True)
    assert record["records"] == primary.trace  # exactly the collector's transcript
    assert len(_steps(primary)) > 10 and _steps(primary)[-1]["response"]["data"]["done"] is True


# ----------------------------------------------------------------- episode_determinism

def test_episode_determinism_across_fresh_sessions_and_processes(
    servers: list[RunningServer], plan: dict[str, Any], primary: Evidence
) -> None:
    session = collect(servers[0].base_url, TOKENS[0], plan["reset"], plan["actions"])
    process = collect(servers[1].base_url, TOKENS[1], plan["reset"], plan["actions"])
    assert session.trace == primary.trace  # no field excluded
    assert process.trace == primary.trace
    assert process.telemetry["attribution"] == primary.telemetry["attribution"]


def test_the_manifest_runtime_plan_replays_identically(servers: list[RunningServer],
                                                       plan: dict[str, Any]) -> None:
    manifest_plan = plan["manifest_plan"]
    reset = {**manifest_plan["reset"]["options"], "seed": manifest_plan["reset"]["seed"],
             "episode_id": manifest_plan["reset"]["episode_id"]}
    runs = [collect(s.base_url, t, reset, manifest_plan["actions"])
            for s, t in zip(servers, TOKENS, strict=True)]
    assert runs[0].trace == runs[1].trace and runs[0].telemetry["trajectory"]["records"] == runs[0].trace


# ----------------------------------------------------------------- declarations

def test_tool_declaration_accuracy(servers: list[RunningServer]) -> None:
    reply = httpx.post(servers[0].base_url + "/mcp", timeout=30,
                       json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).json()
    names = [tool["name"] for tool in reply["result"]["tools"]]
    declared = _manifest()["capabilities"]["declared_tools"]
    assert reply["result"].get("nextCursor") is None
    assert len(set(names)) == len(names) and len(set(declared)) == len(declared)
    assert set(names) == set(declared)


def test_task_declaration_accuracy(servers: list[RunningServer]) -> None:
    declared = _manifest()["capabilities"]["declared_task_count"]
    prefix = servers[0].base_url + "/codered_env"
    splits = httpx.get(prefix + "/splits", timeout=30).json()
    names = [split["name"] for split in splits]
    assert len(set(names)) == len(names) and set(names) == set(declared)
    for name in names:
        count = httpx.post(prefix + "/num_tasks", json={"split": name}, timeout=30).json()["num_tasks"]
        assert type(count) is int and count == declared[name]
        preview = [httpx.post(prefix + "/task", json={"split": name, "index": i}, timeout=30).json()["task"]
                   for i in range(min(2, count))]
        assert 0 < len(preview) <= count
        assert all(type(task["difficulty"]) is int and task["group"] for task in preview)


# ----------------------------------------------------------------- rubric_introspectable

def check_rubric_tree(nodes: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The tree contract: unique dotted names, known aggregations, weighted sums whose finite
    weights sum to 1, leaves without children, ``parent.child`` edges reaching every node from
    ``root``, configuration available, scores finite exactly when evaluated."""
    assert nodes, "missing rubric tree"
    by_name: dict[str, dict[str, Any]] = {}
    for node in nodes:
        name = node["name"]
        assert isinstance(name, str) and all(name.split(".")) and name not in by_name
        assert isinstance(node["class_name"], str) and node["class_name"]
        assert node["aggregation"] in AGGREGATIONS and node["config_available"] is True
        assert isinstance(node["config"], dict) and len(set(node["children"])) == len(node["children"])
        assert type(node["evaluated"]) is bool
        if node["evaluated"]:
            assert type(node["score"]) in (int, float) and math.isfinite(node["score"])
        else:
            assert node["score"] is None
        if node["aggregation"] == "leaf":
            assert node["children"] == []
        if node["aggregation"] == "weighted_sum":
            weights = node["config"]["weights"]
            assert len(weights) == len(node["children"]) and all(math.isfinite(w) for w in weights)
            assert math.isclose(sum(weights), 1, rel_tol=0, abs_tol=1e-6)
        by_name[name] = node
    assert "root" in by_name
    linked: set[str] = set()
    for name, node in by_name.items():
        for child in node["children"]:
            assert child in by_name and child not in linked and child.rsplit(".", 1)[0] == name
            linked.add(child)
    assert linked == set(by_name) - {"root"}, "disconnected rubric tree"
    return by_name


def test_rubric_introspectable(primary: Evidence) -> None:
    assert primary.telemetry["rubric_error"] is None
    nodes = check_rubric_tree(primary.telemetry["rubric"])
    assert nodes["root"]["aggregation"] == "weighted_sum"
    assert {n for n in nodes if n.startswith("root.components.")} == {
        f"root.components.{c}" for c in ("time_score", "efficiency", "secondary_harm", "prep_ready",
                                         "vitals_score_avg", "cascade_score")}


# ----------------------------------------------------------------- reward_attribution

def _definition(nodes: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name: {k: v for k, v in node.items() if k not in ("score", "evaluated")}
            for name, node in nodes.items()}


def _raw_score_changes(reset: dict[str, Any], actions: list[dict[str, Any]]) -> list[float]:
    """The unclamped score's change at every step, replayed in process."""
    sim = CodeRedSim(reset["task_id"], reset["seed"])
    changes = []
    for action in actions:
        before = sim.grade()["raw_score"]
        sim.step(action)
        changes.append(sim.grade()["raw_score"] - before)
    return changes


def test_reward_attribution_step_by_step(primary: Evidence, plan: dict[str, Any]) -> None:
    steps = _steps(primary)
    records = primary.telemetry["attribution"]
    assert len(records) == len(steps)
    baseline = _definition(check_rubric_tree(primary.telemetry["rubric"]))
    raw_changes = _raw_score_changes(plan["reset"], [s["request"]["data"] for s in steps])
    penalty_changed = False
    for index, (record, step) in enumerate(zip(records, steps, strict=True)):
        assert record["step_index"] == index
        nodes = check_rubric_tree(record["rubric"])
        assert _definition(nodes) == baseline, f"step {index}: rubric configuration changed"
        reward = step["response"]["data"]["reward"]
        assert nodes["root"]["evaluated"] and math.isclose(nodes["root"]["score"], reward,
                                                           rel_tol=1e-9, abs_tol=1e-9)
        for node in nodes.values():
            if node["aggregation"] != "weighted_sum":
                continue
            expected = 0.0
            for child, weight in zip(node["children"], node["config"]["weights"], strict=True):
                assert nodes[child]["evaluated"]
                expected += nodes[child]["score"] * weight
            assert math.isclose(node["score"], expected, rel_tol=1e-9, abs_tol=1e-9), (index, node["name"])
        # the adjustment leaf is the pace factor's share and the score's clamp (reward minus the
        # raw score's change, from an in-process replay) plus rounding, nothing else
        adjustment = reward - raw_changes[index]
        assert abs(nodes["root.pace_clamp_and_rounding"]["score"] - adjustment) <= MAX_ROUNDING, index
        penalty_changed |= nodes["root.mutual_aid_penalty"]["score"] != 0
    assert penalty_changed  # the unneeded mutual-aid request is attributed to the penalty
    total = sum(step["response"]["data"]["reward"] for step in steps)
    assert math.isclose(total, steps[-1]["response"]["data"]["observation"]["score_preview"], abs_tol=1e-6)


# ----------------------------------------------------------------- refusals

def _open(ws: Any, data: dict[str, Any]) -> dict[str, Any]:
    return ws_call(ws, {"type": "validation_open", "data": data})


def test_validation_is_refused_without_the_right_token_and_order(servers: list[RunningServer],
                                                                  server: RunningServer) -> None:
    wrong = "wrong-" * 8
    with connect(server.ws_url, open_timeout=30) as ws:  # a server started without a token
        denied = _open(ws, {"schema_version": 1, "token": TOKENS[0]})
        assert denied["type"] == "error" and TOKENS[0] not in json.dumps(denied)
        assert ws_call(ws, {"type": "reset", "data": {"seed": 4}})["type"] == "observation"
    url = servers[0].ws_url
    with connect(url, open_timeout=30) as first, connect(url, open_timeout=30) as second:
        assert ws_call(first, {"type": "validation_read",
                               "data": {"schema_version": 1, "capability": "x" * 32}})["type"] == "error"
        for data in ({}, {"schema_version": 1, "token": wrong}, {"schema_version": 999, "token": TOKENS[0]},
                     {"schema_version": True, "token": TOKENS[0]}, {"schema_version": 1, "token": TOKENS[1]},
                     {"schema_version": 1, "token": TOKENS[0], "extra": 1}):
            reply = _open(first, data)
            shown = json.dumps(reply)
            assert reply["type"] == "error" and wrong not in shown and TOKENS[0] not in shown
        good = {"schema_version": 1, "token": TOKENS[0]}
        caps = [_open(ws, good)["data"]["capability"] for ws in (first, second)]
        assert caps[0] != caps[1]
        assert _open(first, {"schema_version": 1, "token": TOKENS[0]})["type"] == "error"  # opened once

        def read(ws: Any, capability: str) -> str:
            return str(ws_call(ws, {"type": "validation_read",
                                    "data": {"schema_version": 1, "capability": capability}})["type"])

        assert read(first, caps[1]) == "error" and read(second, caps[0]) == "error"
        assert read(first, caps[0]) == "validation"
    with connect(servers[0].ws_url, open_timeout=30) as late:
        ws_call(late, {"type": "reset", "data": {"seed": 0}})
        assert _open(late, {"schema_version": 1, "token": TOKENS[0]})["type"] == "error"  # after an operation


def test_production_mode_and_attached_sessions_refuse(monkeypatch: pytest.MonkeyPatch) -> None:
    token = TOKENS[0]
    message = {"type": "validation_open", "data": {"schema_version": 1, "token": token}}
    monkeypatch.setenv("OPENENV_VALIDATION_TOKEN", token)

    def reply(attached: bool = False) -> str:
        return str(json.loads(validation.answer(validation.SocketValidation(), message, attached))["type"])

    assert reply() == "validation_open" and reply(attached=True) == "error"
    monkeypatch.setenv("OPENENV_MODE", "production")
    assert reply() == "error"
    monkeypatch.delenv("OPENENV_MODE")
    monkeypatch.setenv("OPENENV_VALIDATION_TOKEN", "short")
    assert reply() == "error"
