"""Evaluation runner (SQLite resume, LLM rows) and trajectory files (replay, bad input)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI
from runlog_check import parse_run_log
from test_inf_script import SCRIPT, base_env

from codered_env.agents.llm import LLMConfig
from codered_env.evaluation.episode import LocalEnv, finish, play_episode
from codered_env.evaluation.evaluate import run_evaluation
from codered_env.evaluation.store import EpisodeStore
from codered_env.evaluation.trajectory import Trajectory, TrajectoryError, replay
from codered_env.runlog import _reward


def fast_config(url: str, **extra: object) -> LLMConfig:
    settings: dict[str, object] = {"api_key": "k-test", "base_url": url, "model": "fake/m",
                                   "timeout_s": 2.0, "max_retries": 1, "backoff_s": 0.01,
                                   "backoff_max_s": 0.02}
    settings.update(extra)
    return LLMConfig(**settings)  # type: ignore[arg-type]


def test_eval_stores_every_episode_and_resumes(tmp_path: Path) -> None:
    db = tmp_path / "eval.db"
    first = run_evaluation(["noop", "heuristic"], ["task1"], [0, 1], db_path=db, progress=None)
    assert (first.ran, first.skipped) == (4, 0)
    events: list[str] = []
    second = run_evaluation(["noop", "heuristic"], ["task1"], [0, 1, 2], db_path=db,
                            progress=lambda e: events.append(e.status))
    assert (second.ran, second.skipped) == (2, 4)
    assert events == ["skipped", "skipped", "done", "skipped", "skipped", "done"]
    with EpisodeStore(db) as store:
        rows = store.records()
        assert len(rows) == 6
        assert len({r.key() for r in rows}) == 6
    by_agent = {(r.agent, r.seed): r for r in rows}
    for seed in (0, 1, 2):
        heuristic, noop = by_agent[("heuristic", seed)], by_agent[("noop", seed)]
        assert heuristic.score > noop.score
        assert 0.01 <= noop.score <= 0.99 and heuristic.components
        assert Trajectory.from_jsonl(heuristic.trajectory).actions()
        assert replay(Trajectory.from_jsonl(heuristic.trajectory)).score == heuristic.score


def test_eval_llm_with_fake_endpoint(tmp_path: Path, fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(default={"kind": "tool", "name": "maintain_plan"})
    db = tmp_path / "eval.db"
    summary = run_evaluation(["llm"], ["task1"], [0], db_path=db, progress=None,
                             llm_config=fast_config(fake_llm.url))
    assert summary.ran == 1
    with EpisodeStore(db) as store:
        (row,) = store.records()
    assert (row.agent, row.model) == ("llm", "fake/m")
    assert row.llm_stats is not None and row.llm_stats["calls"] == row.steps == len(
        fake_llm.requests)
    again = run_evaluation(["llm"], ["task1"], [0], db_path=db, progress=None,
                           llm_config=fast_config(fake_llm.url))
    assert again.skipped == 1 and len(fake_llm.requests) == row.steps


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_eval_llm_unreachable_is_invalid_and_not_stored(tmp_path: Path) -> None:
    db = tmp_path / "eval.db"
    config = fast_config(f"http://127.0.0.1:{closed_port()}/v1", max_retries=0)
    summary = run_evaluation(["llm"], ["task1"], [0], db_path=db, progress=None,
                             llm_config=config)
    assert summary.invalid == 1 and summary.ran == 0
    assert "not stored" in (summary.events[0].detail or "")
    with EpisodeStore(db) as store:
        assert len(store) == 0


def test_eval_llm_without_key_fails_cleanly(tmp_path: Path) -> None:
    summary = run_evaluation(["llm"], ["task1"], [0], db_path=tmp_path / "e.db", progress=None)
    assert summary.failed == 1 and "API key" in (summary.events[0].detail or "")


def test_trajectory_round_trip_and_replay(tmp_path: Path) -> None:
    from codered_env.agents import make_agent

    env = LocalEnv()
    outcome = finish(env, play_episode(env, make_agent("heuristic", seed=0), "task2", 3, 45))
    trajectory = Trajectory(task_id="task2", seed=3, agent="heuristic", model="heuristic",
                            steps=outcome.steps, end={"score": outcome.score})
    path = tmp_path / "t.jsonl"
    trajectory.save(path)
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["type"] == "header"
    assert len(lines) == len(outcome.steps) + 2
    result = replay(path)
    assert result.matches is True and result.score == outcome.score
    assert result.trajectory.actions() == outcome.actions
    assert all(isinstance(a["action_type"], str) for a in result.trajectory.actions())


@pytest.mark.parametrize("text", [
    "", "not json\n", '["a list"]\n', '{"type": "step", "step": 1, "action": {}}\n',
    '{"type":"header","format":"codered-trajectory/1","task_id":"task1","seed":"x"}\n',
    '{"type":"header","format":"codered-trajectory/1","task_id":"task1","seed":0}\n'
    '{"type":"step","step":2,"action":{"action_type":"maintain_plan"}}\n',
])
def test_bad_trajectories_are_rejected(text: str) -> None:
    with pytest.raises(TrajectoryError):
        Trajectory.from_jsonl(text)


def test_replay_of_unknown_task_is_a_trajectory_error(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    Trajectory(task_id="task42", seed=0, agent="noop", model="noop").save(path)
    with pytest.raises(TrajectoryError):
        replay(path)


def test_inference_trajectory_regrades_to_the_logged_score(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "run.jsonl"  # a folder that does not exist yet is made
    proc = subprocess.run([sys.executable, str(SCRIPT), "--task", "task2", "--seed", "3",
                           "--max-steps", "6", "--trajectory", str(path)],
                          env=base_env(), capture_output=True, text=True, timeout=120, check=False)
    log = parse_run_log(proc.stdout)
    result = replay(path)
    assert len(result.trajectory.steps) == len(log.rewards) == 6
    assert f"{result.score:.3f}" == f"{log.score:.3f}"
    assert [_reward(s.reward) for s in result.trajectory.steps] == log.rewards  # the log's format
