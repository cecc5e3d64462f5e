"""Stateful HTTP episodes, benchmark routes and bad input, against a real server."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from support_server import RunningServer

from codered_env.sim.tasks import TASK_IDS, TASKS

MAINTAIN = {"action_type": "maintain_plan"}


@pytest.fixture()
def http(server: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=60.0) as client:
        yield client


def test_reset_with_empty_body_returns_episode_id_beside_the_openenv_fields(
    http: httpx.Client,
) -> None:
    response = http.post("/reset")
    assert response.status_code == 200
    body = response.json()
    assert set(body) >= {"observation", "reward", "done", "episode_id"}
    assert body["observation"]["task_id"] == "task1" and body["observation"]["seed"] == 0
    assert body["done"] is False and body["reward"] is None
    assert "text" in body["observation"] and "legal_actions" in body["observation"]


def test_reset_step_step_state_counts_two_steps_for_that_episode(http: httpx.Client) -> None:
    episode = http.post("/reset", json={"task_id": "task2", "seed": 4}).json()["episode_id"]
    other = http.post("/reset", json={"task_id": "task1"}).json()["episode_id"]
    for _ in range(2):
        step = http.post("/step", json={"action": MAINTAIN, "episode_id": episode})
        assert step.status_code == 200 and step.json()["episode_id"] == episode
    state = http.get("/state", params={"episode_id": episode}).json()
    assert (state["episode_id"], state["step_count"], state["task_id"]) == (episode, 2, "task2")
    assert http.get("/state", params={"episode_id": other}).json()["step_count"] == 0


def test_invalid_ids_come_back_as_last_action_error(http: httpx.Client) -> None:
    episode = http.post("/reset", json={"task_id": "task1"}).json()["episode_id"]
    action = {"action_type": "dispatch_ambulance", "ambulance_id": "NOPE", "patient_id": "P1"}
    step = http.post("/step", json={"action": action, "episode_id": episode})
    assert step.status_code == 200
    assert "NOPE" in step.json()["observation"]["last_action_error"]
    state = http.get("/state", params={"episode_id": episode}).json()
    assert state["invalid_actions"] == 1 and state["step_count"] == 1


def test_unknown_episode_id_is_404_with_a_clear_message(http: httpx.Client) -> None:
    step = http.post("/step", json={"action": MAINTAIN, "episode_id": "no-such-episode"})
    assert step.status_code == 404 and "no-such-episode" in step.json()["detail"]
    state = http.get("/state", params={"episode_id": "no-such-episode"})
    assert state.status_code == 404 and "unknown episode_id" in state.json()["detail"]


def test_schema_invalid_action_is_422_and_the_episode_is_untouched(http: httpx.Client) -> None:
    episode = http.post("/reset").json()["episode_id"]
    for bad in ({"action_type": "warp"}, {"action_type": "maintain_plan", "x": 1}, "text"):
        response = http.post("/step", json={"action": bad, "episode_id": episode})
        assert response.status_code == 422, response.text
        assert response.json()["detail"]
    assert http.get("/state", params={"episode_id": episode}).json()["step_count"] == 0
    assert http.post("/step", json={"action": MAINTAIN, "episode_id": episode}).status_code == 200


@pytest.mark.parametrize(
    ("path", "content"),
    [("/reset", b"{not json"), ("/step", b'{"action": '), ("/grader", b"[1, 2"), ("/baseline", b"\xff\xfe")],
)
def test_malformed_json_is_refused_with_a_message(http: httpx.Client, path: str, content: bytes) -> None:
    response = http.post(path, content=content, headers={"content-type": "application/json"})
    assert response.status_code in (400, 422)
    assert response.json()["detail"]


def test_oversized_bodies_are_refused_with_413(http: httpx.Client) -> None:
    big = json.dumps({"action": MAINTAIN, "request_id": "x" * (1 << 20)}).encode()
    response = http.post("/step", content=big, headers={"content-type": "application/json"})
    assert response.status_code == 413 and "too large" in response.json()["detail"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: a chunked upload
        for _ in range(20):
            yield b" " * 65536

    chunked = http.post("/grader", content=chunks(), headers={"content-type": "application/json"})
    assert chunked.status_code == 413
    assert http.get("/health").status_code == 200


def test_tasks_lists_five_tasks_and_every_action_schema(http: httpx.Client) -> None:
    body = http.get("/tasks").json()
    tasks = {t["task_id"]: t for t in body["tasks"]}
    assert list(tasks) == ["task1", "task2", "task3", "task4", "task5"]
    served = [tasks[t]["max_steps"] for t in tasks]
    assert served == [TASKS[t].max_steps for t in TASK_IDS] == [30, 45, 90, 90, 150]
    for task in tasks.values():
        assert task["name"] and task["description"] and task["difficulty_name"]
        assert "maintain_plan" in task["action_types"]
    assert "dispatch_ambulance" in tasks["task1"]["action_types"]
    assert "triage_call" in tasks["task4"]["action_types"]
    assert len(body["action_schemas"]) == 14
    assert body["action_schemas"]["assign_hospital"]["required"] == ["patient_id", "hospital_id"]


def test_grader_replay_is_deterministic_and_matches_a_played_episode(http: httpx.Client) -> None:
    heuristic = http.post("/grader", json={"task_id": "task1", "seed": 0}).json()
    assert heuristic["source"] == "agent" and heuristic["agent"] == "heuristic"
    request = {"task_id": "task1", "seed": 0, "actions": heuristic["actions"]}
    first, second = (http.post("/grader", json=request).json() for _ in range(2))
    assert first == second
    assert first["score"] == heuristic["score"] > 0.5
    assert set(first["components"]) >= {"time_score", "efficiency", "prep_ready"}
    noop = http.post("/grader", json={"task_id": "task1", "seed": 0, "actions": []}).json()
    assert noop["score"] < first["score"]

    episode = http.post("/reset", json={"task_id": "task1", "seed": 0}).json()["episode_id"]
    for action in heuristic["actions"]:
        http.post("/step", json={"action": action, "episode_id": episode})
    live = http.post("/grader", json={"episode_id": episode}).json()
    assert live["source"] == "episode" and live["score"] == first["score"]


def test_grader_shows_clinical_outcomes_with_noop_and_heuristic_references(http: httpx.Client) -> None:
    noop = http.post("/grader", json={"task_id": "task2", "seed": 4, "actions": []}).json()
    references = noop["reference_outcomes"]
    assert noop["outcomes"] == references["noop"]
    heuristic = http.post("/grader", json={"task_id": "task2", "seed": 4}).json()
    assert heuristic["outcomes"] == references["heuristic"] == heuristic["reference_outcomes"]["heuristic"]
    assert references["heuristic"]["deaths_per_100"] < references["noop"]["deaths_per_100"]
    assert noop["score"] < heuristic["score"]  # the outcomes sit beside the score, not in it


def test_grader_refuses_contradictory_or_unknown_requests(http: httpx.Client) -> None:
    both = http.post("/grader", json={"episode_id": "x", "actions": []})
    assert both.status_code == 422
    missing = http.post("/grader", json={"episode_id": "missing-episode"})
    assert missing.status_code == 404 and "missing-episode" in missing.json()["detail"]
    too_many = http.post("/grader", json={"actions": [MAINTAIN] * 501})
    assert too_many.status_code == 422


def test_baseline_returns_mean_scores_per_task(http: httpx.Client) -> None:
    default = http.post("/baseline").json()
    assert default["agent"] == "heuristic" and default["seeds"] == [0, 1, 2]
    assert set(default["scores"]) == {"task1", "task2", "task3", "task4", "task5"}
    noop = http.post("/baseline", json={"agent": "noop", "seeds": [0], "tasks": ["task1"]})
    assert noop.status_code == 200
    assert noop.json()["scores"]["task1"] < default["scores"]["task1"]
    assert http.post("/baseline", json={"seeds": list(range(11))}).status_code == 422


def test_llm_baseline_is_forbidden_unless_enabled(http: httpx.Client) -> None:
    response = http.post("/baseline", json={"agent": "llm"})
    assert response.status_code == 403
    assert "CODERED_ENABLE_LLM_BASELINE=1" in response.json()["detail"]


def test_metadata_schema_and_index(http: httpx.Client) -> None:
    meta = http.get("/metadata").json()
    assert meta["name"] == "codered_env" and meta["version"] and meta["readme_content"]
    schema = http.get("/schema").json()
    assert "oneOf" in schema["action"]
    assert "legal_actions" in schema["observation"]["properties"]
    assert "score" in schema["state"]["properties"]
    assert "ws" in http.get("/").json()["endpoints"]


def test_grader_accepts_a_trajectory_files_actions(http: httpx.Client, tmp_path) -> None:
    from codered_env.agents import make_agent
    from codered_env.evaluation.trajectory import StepRecord, Trajectory, replay
    from codered_env.runner import run_episode

    played = run_episode("task4", 2, make_agent("heuristic"))
    steps = [
        StepRecord(i + 1, a, r, False, e)
        for i, (a, r, e) in enumerate(zip(played.actions, played.rewards, played.errors, strict=True))
    ]
    path = tmp_path / "run.jsonl"
    Trajectory("task4", 2, "heuristic", "heuristic", steps=steps, end={"score": played.score}).save(path)
    request = {"task_id": "task4", "seed": 2, "actions": Trajectory.load(path).actions()}
    graded = http.post("/grader", json=request)
    assert graded.status_code == 200
    assert graded.json()["score"] == played.score == replay(path).score


def test_view_redirects_to_the_consoles_replay_mode(http: httpx.Client) -> None:
    query = {"task_id": "task1", "seed": 0, "agent": "heuristic"}
    page = http.get("/view", params=query, follow_redirects=True)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert str(page.url).endswith("/web?mode=replay&task_id=task1&seed=0&agent=heuristic")
    assert 'src="/web/static/console.js"' in page.text
    for bad in ({"task_id": "task9"}, {"agent": "llm"}, {"seed": -1}):
        assert http.get("/view", params=bad).status_code == 422
    assert "view" in http.get("/").json()["endpoints"] and "web" in http.get("/").json()["endpoints"]
