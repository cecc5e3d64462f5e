"""One registry per fact: every list of agents (and later enumerations) is computed from one table."""

from __future__ import annotations

import ast
import re
import typing
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from codered_env.agents import AGENT_SPECS, AGENTS, BUILTIN_AGENTS, SERVED_AGENTS, make_agent
from codered_env.agents.roster import DEFAULT_AGENT, REPORT_ORDER
from codered_env.server.agent_routes import register_agent_routes
from codered_env.server.schemas import BaselineAgent, BuiltinAgent, GraderBody
from codered_env.sim.catalogue import MAINTAIN_PLAN
from codered_env.sim.types import FINAL_PATIENT_STATES, OUTCOME_PATIENT_STATES, PATIENT_STATES
from codered_env.web import asset


def test_agents_route_serves_the_roster() -> None:
    app = FastAPI()
    register_agent_routes(app)
    body = TestClient(app).get("/agents").json()
    assert [a["name"] for a in body["agents"]] == [spec.name for spec in AGENTS]
    assert body["served"] == list(SERVED_AGENTS) and body["default"] == DEFAULT_AGENT
    planner = next(a for a in body["agents"] if a["name"] == "planner")
    assert planner["builtin"] and not planner["served"] and planner["note"]  # why, in words


def test_server_and_console_lists_come_from_the_roster() -> None:
    assert set(typing.get_args(BuiltinAgent)) == set(SERVED_AGENTS)
    assert set(typing.get_args(BaselineAgent)) == {*SERVED_AGENTS, "llm"}
    page = asset("index.html")
    for menu in ("autoplay-agent", "stored-agent"):
        options = re.search(rf'<select id="{menu}"[^>]*>(.*?)</select>', page, re.S)
        assert options is not None
        assert set(re.findall(r'<option value="([^"]+)"', options.group(1))) == set(SERVED_AGENTS)
        assert f'<option value="{DEFAULT_AGENT}" selected>' in options.group(1)
    assert "<!--agent-options-->" not in page


def test_an_agent_the_server_does_not_run_is_refused_by_its_schema() -> None:
    GraderBody.model_validate({"agent": "heuristic"})
    with pytest.raises(ValueError, match=r"planner|literal"):
        GraderBody.model_validate({"agent": "planner"})


def test_every_builtin_agent_is_built_by_name_and_unknown_names_list_the_roster() -> None:
    assert set(BUILTIN_AGENTS) <= set(AGENT_SPECS) and "planner" in BUILTIN_AGENTS
    for name in BUILTIN_AGENTS:
        assert make_agent(name, 0).name == name
    with pytest.raises(ValueError, match=r"planner.*oracle.*llm.*ppo:PATH"):
        make_agent("genius")
    assert REPORT_ORDER == ("noop", "random", "heuristic", "planner", "oracle", "llm")
    assert "oracle" not in BUILTIN_AGENTS and "oracle" not in SERVED_AGENTS  # a ceiling, never a default


# ------------------------------------------------------------------------- enumerations
REPO = Path(__file__).resolve().parents[1]
HOME = "codered_env/sim/types.py"
STATUS_SETS = (FINAL_PATIENT_STATES, OUTCOME_PATIENT_STATES)


def _literal_strings(node: ast.AST) -> frozenset[str] | None:
    """The strings of a set/tuple/list literal of strings only (``frozenset({...})`` included)."""
    if isinstance(node, (ast.Set, ast.Tuple, ast.List)) and node.elts and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return frozenset(e.value for e in node.elts)  # type: ignore[attr-defined]
    return None


def _is_noop_dict(node: ast.AST) -> bool:
    return (isinstance(node, ast.Dict) and len(node.keys) == 1
            and isinstance(node.keys[0], ast.Constant) and node.keys[0].value == "action_type"
            and isinstance(node.values[0], ast.Constant)
            and node.values[0].value == MAINTAIN_PLAN["action_type"])


def _copies(tree: ast.AST) -> int:
    return sum(1 for node in ast.walk(tree) if _literal_strings(node) in STATUS_SETS or _is_noop_dict(node))


def test_status_groups_and_the_noop_action_are_written_once() -> None:
    copies = {}
    for path in sorted((REPO / "codered_env").rglob("*.py")):
        name = path.relative_to(REPO).as_posix()
        count = _copies(ast.parse(path.read_text(encoding="utf-8")))
        if count and name != HOME:
            copies[name] = count
    assert not copies, f"use the status sets of {HOME} and catalogue.MAINTAIN_PLAN: {copies}"
    assert _copies(ast.parse((REPO / HOME).read_text(encoding="utf-8"))) == 2
    assert OUTCOME_PATIENT_STATES < FINAL_PATIENT_STATES <= set(PATIENT_STATES)


def test_the_copy_finder_finds_a_copy() -> None:
    code = 'DONE = ("deceased", "released", "treated")\nX = {"action_type": "maintain_plan"}'
    assert _copies(ast.parse(code)) == 2
    assert _copies(ast.parse('ALIVE = frozenset({"treated", "released"})')) == 0
