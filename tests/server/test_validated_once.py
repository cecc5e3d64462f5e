"""Every step request parses and validates its action once, whatever the transport: the
simulation's validator (``parse_action``) runs on the raw action exactly once per WebSocket
step frame, HTTP ``POST /step`` and MCP ``tools/call``, and the simulation is handed the
parsed action (which it does not check again)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel
from starlette.testclient import TestClient

import codered_env.models
import codered_env.server.environment
import codered_env.server.mcp_tools
import codered_env.sim.env
from codered_env.server.app import create_codered_app
from codered_env.server.config import ServerSettings
from codered_env.sim import actions as sim_actions

DISPATCH = {"action_type": "dispatch_ambulance", "ambulance_id": "ALS1", "patient_id": "P1"}
ACTIONS = [{"action_type": "maintain_plan"}, {"action_type": "query_or_status", "hospital_id": "H1"},
           DISPATCH, {"action_type": "maintain_plan"}]
MODULES = (codered_env.models, codered_env.server.environment, codered_env.server.mcp_tools,
           codered_env.sim.env)


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every call of the simulation's validator on a raw (not yet parsed) action."""
    seen: list[Any] = []
    real = sim_actions.parse_action

    def counting(raw: object) -> tuple[Any, str | None]:
        if not isinstance(raw, BaseModel):
            seen.append(raw)
        return real(raw)

    for module in MODULES:
        monkeypatch.setattr(module, "parse_action", counting)
    yield seen


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_codered_app(ServerSettings())) as test_client:
        yield test_client


def test_a_websocket_step_validates_its_action_once(client: TestClient, validations: list[Any]) -> None:
    with client.websocket_connect("/ws") as ws:
        ws.send_text(json.dumps({"type": "reset", "data": {"task_id": "task2", "seed": 4}}))
        assert ws.receive_json()["type"] == "observation"
        for mode_count, action in enumerate(ACTIONS, start=1):
            validations.clear()
            ws.send_text(json.dumps({"type": "step", "data": action, "expect_step": mode_count - 1}))
            assert ws.receive_json()["type"] == "observation"
            assert validations == [action], action


def test_an_http_step_validates_its_action_once(client: TestClient, validations: list[Any]) -> None:
    reset = client.post("/reset", json={"task_id": "task2", "seed": 4}).json()
    for count, action in enumerate(ACTIONS):
        validations.clear()
        answer = client.post("/step", json={"episode_id": reset["episode_id"], "action": action,
                                            "expect_step": count})
        assert answer.status_code == 200, answer.text
        assert validations == [action], action
    validations.clear()
    bad = client.post("/step", json={"episode_id": reset["episode_id"], "action": {"action_type": "nope"}})
    assert bad.status_code == 422 and len(validations) == 1


def test_an_mcp_tool_call_validates_its_action_once(client: TestClient, validations: list[Any]) -> None:
    opened = client.post("/mcp?task_id=task2&seed=4", json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}})
    headers = {"Mcp-Session-Id": opened.headers["mcp-session-id"]}
    for number, action in enumerate(ACTIONS, start=2):
        validations.clear()
        name, arguments = action["action_type"], {k: v for k, v in action.items() if k != "action_type"}
        answer = client.post("/mcp", headers=headers, json={
            "jsonrpc": "2.0", "id": number, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}})
        assert answer.status_code == 200 and "result" in answer.json(), answer.text
        assert validations == [action], action


def test_the_kept_parsed_action_follows_the_fields_and_not_equality() -> None:
    wire = {"action_type": "dispatch_ambulance", "ambulance_id": "ALS1", "patient_id": "P1"}
    kept = codered_env.models.CodeRedAction.model_validate(wire)
    assert kept.sim_action is not None and kept.sim_action.patient_id == "P1"
    built = codered_env.models.CodeRedAction.model_construct(**wire)
    assert built.sim_action is None and built == kept
    kept.patient_id = "P2"  # a changed field drops the parsed form (the server then parses it)
    assert kept.sim_action is None and kept.to_wire()["patient_id"] == "P2" and kept != built
