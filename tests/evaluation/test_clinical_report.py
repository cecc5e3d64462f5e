"""Clinical outcomes beside the score in ``codered report`` (issue 21): recomputed by regrading each
stored episode's actions, shown per task and agent with noop and the heuristic as references."""

from __future__ import annotations

from pathlib import Path

from codered_env.agents import make_agent
from codered_env.evaluation.report import clinical_table, episode_outcomes, generate_report
from codered_env.evaluation.store import EpisodeRecord, EpisodeStore
from codered_env.evaluation.trajectory import StepRecord, Trajectory
from codered_env.runner import run_episode


def played(agent: str, task: str, seed: int, score: float | None = None) -> EpisodeRecord:
    result = run_episode(task, seed, make_agent(agent, seed))
    steps = [
        StepRecord(i + 1, dict(action), reward, i + 1 == len(result.actions))
        for i, (action, reward) in enumerate(zip(result.actions, result.rewards, strict=True))
    ]
    trajectory = Trajectory(task_id=task, seed=seed, agent=agent, model=agent, steps=steps)
    return EpisodeRecord(agent=agent, model=agent, task_id=task, seed=seed,
                         score=result.score if score is None else score,
                         components=dict(result.grade["components"]), steps=len(steps),
                         wall_time_s=0.1, trajectory=trajectory.to_jsonl(), package_version="9.9.9")


def test_outcomes_are_the_regraded_episode_and_stale_records_are_left_out() -> None:
    record = played("heuristic", "task1", 0)
    assert episode_outcomes(record) == run_episode("task1", 0, make_agent("heuristic", 0)).grade["outcomes"]
    stale = played("heuristic", "task1", 0, score=0.4242)  # stored under another model
    assert episode_outcomes(stale) is None


def test_clinical_table_has_noop_and_heuristic_as_references() -> None:
    records = [played(a, "task1", s) for a in ("noop", "random", "heuristic") for s in (0, 1)]
    records.append(played("random", "task1", 2, score=0.4242))
    lines = clinical_table(records).splitlines()
    rows = {ln.split(" | ")[1]: ln.strip("| ").split(" | ") for ln in lines[2:]}
    assert list(rows) == ["noop", "random", "heuristic"]
    noop, random, heuristic = rows["noop"], rows["random"], rows["heuristic"]
    assert noop[-1] == "0.00" and heuristic[-1] == "1.00"
    assert random[3] == "2 of 3"  # the stale episode is left out and counted
    assert float(heuristic[4]) > float(noop[4]) and float(heuristic[5]) < float(noop[5])


def test_report_shows_the_clinical_table(tmp_path: Path) -> None:
    db = tmp_path / "eval.db"
    with EpisodeStore(db) as store:
        for agent in ("noop", "heuristic"):
            store.add(played(agent, "task1", 0))
    text = generate_report(db, tmp_path / "out", version="9.9.9").markdown
    assert "Clinical outcomes beside the score" in text
    assert "| task1 | heuristic | heuristic | 1 |" in text and "Expected deaths / 100 patients" in text
