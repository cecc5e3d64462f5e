"""Every server surface plays generated cities: reset(city=) in process, over WS and HTTP,
``/mcp?city=`` with the city's ids in the tool schemas, the journal restoring a session's city,
and clear refusals of unknown cities (nothing changes)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from codered_env.agents import make_agent
from codered_env.models import CodeRedObservation
from codered_env.runner import run_episode
from codered_env.server.app import app
from codered_env.server.environment import CodeRedEnvironment
from codered_env.server.journal import Journal, KindJournal
from codered_env.server.mcp_tools import ToolSession, tool_list
from codered_env.sim import CodeRedSim
from codered_env.sim.citygen import generate_city

CITY = 100000  # the first held-out test city
MAINTAIN = {"action_type": "maintain_plan"}


def _enum(tools: list[dict], tool: str, param: str) -> list[str]:
    spec = next(t for t in tools if t["name"] == tool)
    return spec["inputSchema"]["properties"][param]["enum"]


def test_reset_takes_a_city_seed_or_name_and_state_reports_it() -> None:
    env = CodeRedEnvironment()
    obs = env.reset(task_id="task3", seed=2, city=CITY)
    assert env.state.city == f"gen-{CITY}" and env.city == f"gen-{CITY}"
    assert obs.city is not None and obs.city.id == f"gen-{CITY}"
    sim = CodeRedSim("task3", 2, city=CITY)
    shown = [h["hospital_id"] for h in sim.observation()["hospitals"]]
    assert [h.hospital_id for h in obs.hospitals] == shown
    again = CodeRedEnvironment().reset(task_id="task3", seed=2, city=f"gen-{CITY}")
    assert again.model_dump() == obs.model_dump()
    home = CodeRedEnvironment()
    assert home.reset(task_id="task3", seed=2, city="prakashnagar").city is None
    assert home.state.city == "prakashnagar"


@pytest.mark.parametrize("bad", ["atlantis", -1, "gen-01", True, 2**40, 3.5])
def test_an_unknown_city_is_refused_with_what_is_valid_and_nothing_changes(bad: object) -> None:
    env = CodeRedEnvironment()
    env.reset(task_id="task1", seed=4)
    before = env.state
    with pytest.raises(ValueError, match="valid: 'prakashnagar', a city seed"):
        env.reset(task_id="task2", city=bad)
    assert env.state == before


def test_the_typed_observation_accepts_a_generated_city_map() -> None:
    sim = CodeRedSim("task2", 0, city=CITY)
    data = {**sim.observation(), "last_action_error": None}
    typed = CodeRedObservation.from_sim(data, sim.render_text(), reward=None)
    assert typed.city is not None and len(typed.city.nodes) == len(generate_city(CITY).nodes)


def test_ws_and_http_reset_in_a_city() -> None:
    with TestClient(app) as client:
        with client.websocket_connect("/ws") as ws:
            ws.send_json({"type": "reset", "data": {"task_id": "task1", "seed": 1, "city": CITY}})
            reply = ws.receive_json()
            assert reply["type"] == "observation"
            assert reply["data"]["observation"]["city"]["id"] == f"gen-{CITY}"
            ws.send_json({"type": "reset", "data": {"task_id": "task1", "city": "nowhere"}})
            error = ws.receive_json()
            assert error["type"] == "error" and "valid: 'prakashnagar'" in error["data"]["message"]
        started = client.post("/reset", json={"task_id": "task1", "seed": 1, "city": f"gen-{CITY}"})
        assert started.status_code == 200
        episode = started.json()["episode_id"]
        assert client.get("/state", params={"episode_id": episode}).json()["city"] == f"gen-{CITY}"
        refused = client.post("/reset", json={"task_id": "task1", "city": "nowhere"})
        assert refused.status_code == 422 and "valid: 'prakashnagar'" in refused.text
        splits = client.get("/codered_env/city_splits").json()
        assert splits["test"] == {"first_seed": 100000, "num_cities": 200, "stop": 100200}


def test_mcp_session_in_a_city_lists_its_ids() -> None:
    city = generate_city(CITY)
    with TestClient(app) as client:
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18"}}
        opened = client.post(f"/mcp?task_id=task2&seed=0&city={CITY}", json=body)
        session = opened.headers["Mcp-Session-Id"]
        assert f"city gen-{CITY}" in opened.json()["result"]["instructions"]
        listed = client.post("/mcp", headers={"Mcp-Session-Id": session},
                             json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).json()
        tools = listed["result"]["tools"]
        assert _enum(tools, "assign_hospital", "hospital_id") == list(city.hospital_ids)
        call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "view_full_state", "arguments": {}}}
        shown = client.post("/mcp", headers={"Mcp-Session-Id": session}, json=call).json()
        assert city.name in shown["result"]["structuredContent"]["text"]
        bad = client.post("/mcp?city=nowhere", json=body).json()
        assert bad["error"]["code"] == -32602 and "valid: 'prakashnagar'" in bad["error"]["message"]


def test_tool_schemas_follow_the_city_and_refuse_another_citys_ids() -> None:
    city = generate_city(CITY)
    assert _enum(list(tool_list(city.key)), "assign_hospital", "hospital_id") == list(city.hospital_ids)
    assert _enum(list(tool_list()), "assign_hospital", "hospital_id") == ["H1", "H2", "H3"]
    env = CodeRedEnvironment()
    env.reset(task_id="task1", seed=0, city=CITY)
    tools = ToolSession(env)
    foreign = next(u for u in ("ALS9", "BLS9") if u not in city.unit_ids)
    refused = tools.call("dispatch_als", {"ambulance_id": foreign, "call_id": "P1"})
    assert refused.is_error and refused.error_type == "invalid_args" and env.step_count == 0


def test_a_journaled_session_restores_its_city(tmp_path: Path) -> None:
    def rebuild(session_id: str, owner: str, options: dict, events: list[dict]):
        env = CodeRedEnvironment()
        env.replay(events)
        return env, env.step_count > 0

    async def scenario() -> None:
        journal = Journal()
        assert journal.open(tmp_path / "j.db", {"http": 600.0})
        kind = KindJournal(journal, "http", rebuild)
        env = CodeRedEnvironment()
        env.recorder = kind.recorder("abc", "10.0.0.1")
        env.reset(task_id="task3", seed=5, episode_id="abc", city=CITY)
        for _ in range(3):
            env.step_wire(MAINTAIN)
        await journal.barrier()
        restored = kind.restore("abc")
        assert restored is not None and restored.env.state == env.state
        assert restored.env.state.city == f"gen-{CITY}"
        assert restored.env.current_observation().text == env.current_observation().text
        journal.close()

    asyncio.run(scenario())


@pytest.mark.slow
def test_console_routes_and_the_grader_play_a_city() -> None:
    city = generate_city(CITY)
    with TestClient(app) as client:
        drawn = client.get("/web/map", params={"city": CITY}).json()
        assert drawn["city"] == {"id": f"gen-{CITY}", "name": city.name}
        assert set(drawn["map"]["nodes"]) == set(city.node_ids) and "<svg" in drawn["map"]["svg"]
        assert client.get("/web/map").json()["city"]["id"] == "prakashnagar"
        assert client.get("/web/map", params={"city": "nowhere"}).status_code == 422
        played = {"task_id": "task1", "seed": 0, "city": CITY, "actions": [MAINTAIN]}
        advice = client.post("/web/advice", json=played).json()
        assert advice["step"] == 1 and advice["suggestion"]["action"]["action_type"]
        graded = client.post("/grader", json={"task_id": "task1", "seed": 0, "city": CITY,
                                              "actions": [MAINTAIN]}).json()
        sim = CodeRedSim("task1", 0, city=CITY)
        sim.step(MAINTAIN)
        sim.finish()
        assert graded["city"] == f"gen-{CITY}" and graded["score"] == sim.grade()["score"]
        home = client.post("/grader", json={"task_id": "task1", "seed": 0, "actions": [MAINTAIN]}).json()
        assert "city" not in home
        agent = client.post("/grader", json={"task_id": "task1", "seed": 0, "city": CITY}).json()
        expected = run_episode("task1", 0, make_agent("heuristic", seed=0), city=f"gen-{CITY}").grade
        assert agent["score"] == expected["score"] and agent["city"] == f"gen-{CITY}"
