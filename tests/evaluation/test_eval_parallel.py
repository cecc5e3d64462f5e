"""`codered eval --workers N`: episodes in worker processes give exactly the serial results; the
parent is the only writer; an interrupted run resumes; a worker process that dies is replaced and
its episodes replayed; old databases gain the token columns."""

from __future__ import annotations

import functools
import json
import os
import sqlite3
from pathlib import Path

import pytest
from dying_worker import always_dies, dies_once

from codered_env.evaluation.backends import local_results
from codered_env.evaluation.episode import EpisodeJob, JobResult, run_job
from codered_env.evaluation.evaluate import Execution, run_evaluation
from codered_env.evaluation.store import SCHEMA_VERSION, EpisodeStore
from codered_env.evaluation.trajectory import Trajectory

AGENTS = ["random", "heuristic"]
TASKS = ["task1", "task4"]
SEEDS = [0, 1]
PARALLEL = Execution(workers=2, min_parallel_s=0)


def stored(db: Path) -> dict[tuple[str, str, int], tuple]:
    """What must not depend on how episodes ran: score, components, steps, every step record."""
    with EpisodeStore(db) as store:
        return {(r.agent, r.task_id, r.seed): (
            r.score, r.raw_score, r.components, r.steps, r.invalid_actions,
            [s.to_json() for s in Trajectory.from_jsonl(r.trajectory).steps])
            for r in store.records()}


@pytest.fixture(scope="module")
def serial_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("serial") / "serial.db"
    summary = run_evaluation(AGENTS, TASKS, SEEDS, db_path=db, progress=None)
    assert summary.ran == len(AGENTS) * len(TASKS) * len(SEEDS)
    return db


def test_worker_processes_give_the_serial_results(serial_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "parallel.db"
    events: list[str] = []
    summary = run_evaluation(AGENTS, TASKS, SEEDS, db_path=db, execution=PARALLEL,
                             progress=lambda e: events.append(e.status))
    assert (summary.ran, summary.failed) == (8, 0) and events == ["done"] * 8
    assert [e.index for e in summary.events] == list(range(1, 9))  # plan order in the summary
    assert stored(db) == stored(serial_db)


def test_episodes_really_run_in_other_processes() -> None:
    jobs = [EpisodeJob("heuristic", "task1", seed) for seed in range(4)]
    pids: set[int] = set()

    def watch(result: JobResult) -> JobResult:
        assert result.record is not None
        pids.add(result.pid)
        return result

    results = [watch(r) for r in local_results(jobs, workers=2, min_parallel_s=0)]
    assert sorted(r.job.seed for r in results) == [0, 1, 2, 3]
    assert os.getpid() not in pids  # min_parallel_s=0: no probe episode in this process
    here = run_job(jobs[2]).record
    there = next(r.record for r in results if r.job.seed == 2)
    assert Trajectory.from_jsonl(there.trajectory).steps == Trajectory.from_jsonl(here.trajectory).steps


def test_an_interrupted_parallel_run_resumes(serial_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "resumed.db"
    seen: list[str] = []

    def interrupt_after_three(event: object) -> None:
        seen.append(event.status)  # type: ignore[attr-defined]
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_evaluation(AGENTS, TASKS, SEEDS, db_path=db, execution=PARALLEL,
                       progress=interrupt_after_three)
    with EpisodeStore(db) as store:
        assert len(store) == 3  # each result is stored before it is reported
    summary = run_evaluation(AGENTS, TASKS, SEEDS, db_path=db, execution=PARALLEL, progress=None)
    assert (summary.skipped, summary.ran, summary.failed) == (3, 5, 0)
    assert stored(db) == stored(serial_db)


def test_a_bad_agent_spec_fails_its_episodes_not_the_run(tmp_path: Path) -> None:
    summary = run_evaluation(["noop", "wizard"], ["task1"], [0, 1], db_path=tmp_path / "x.db",
                             execution=PARALLEL, progress=None)
    assert (summary.ran, summary.failed) == (2, 2)
    assert all("unknown agent" in (e.detail or "") for e in summary.events if e.status == "failed")


V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE episodes (
    id INTEGER PRIMARY KEY AUTOINCREMENT, agent TEXT NOT NULL, model TEXT NOT NULL,
    task_id TEXT NOT NULL, seed INTEGER NOT NULL, package_version TEXT NOT NULL,
    score REAL NOT NULL, raw_score REAL, components TEXT NOT NULL, steps INTEGER NOT NULL,
    invalid_actions INTEGER NOT NULL DEFAULT 0, agent_errors INTEGER NOT NULL DEFAULT 0,
    wall_time_s REAL NOT NULL, trajectory TEXT NOT NULL, llm_stats TEXT,
    created_at TEXT NOT NULL, UNIQUE (agent, model, task_id, seed, package_version));
INSERT INTO meta VALUES ('schema_version', '1');
"""


def test_a_version_1_database_gains_token_columns(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(V1_SCHEMA)
        row = "INSERT INTO episodes VALUES (NULL,?,?,'task1',0,'0.1.0',0.5,0.5,'{}',3,0,0,1.0,'',?,'x')"
        conn.execute(row, ("llm", "m", json.dumps({"calls": 3, "prompt_tokens": 900,
                                                   "completion_tokens": 27})))
        conn.execute(row, ("noop", "noop", None))
    with EpisodeStore(db) as store:
        by_agent = {r.agent: r for r in store.records()}
    assert (by_agent["llm"].prompt_tokens, by_agent["llm"].completion_tokens) == (900, 27)
    assert (by_agent["noop"].prompt_tokens, by_agent["noop"].completion_tokens) == (None, None)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT value FROM meta").fetchone() == (SCHEMA_VERSION,)
    with EpisodeStore(db) as store:  # opening again is a no-op
        assert len(store) == 2


def same_episode(a: JobResult, b: JobResult) -> bool:
    assert a.record is not None and b.record is not None
    return ((a.record.score, a.record.components, a.record.steps) ==
            (b.record.score, b.record.components, b.record.steps) and
            Trajectory.from_jsonl(a.record.trajectory).steps ==
            Trajectory.from_jsonl(b.record.trajectory).steps)


def test_a_worker_that_dies_is_replaced_and_its_episodes_replayed(tmp_path: Path) -> None:
    marker = tmp_path / "died-once"
    jobs = [EpisodeJob("heuristic", task, seed) for task in TASKS for seed in range(3)]
    dies = functools.partial(dies_once, seed=1, marker=str(marker))
    results = list(local_results(jobs, workers=2, min_parallel_s=0, job_fn=dies))
    assert marker.exists()  # a worker really died (BrokenProcessPool) in the middle of the run
    assert sorted((r.job.task_id, r.job.seed) for r in results) == \
        sorted((j.task_id, j.seed) for j in jobs)  # each episode reported exactly once
    assert all(r.error is None for r in results)
    dead = int(marker.read_text())
    assert all(r.pid != dead for r in results if r.job.seed == 1)  # replayed by another worker
    serial = {(r.job.task_id, r.job.seed): r for r in map(run_job, jobs)}
    assert all(same_episode(r, serial[(r.job.task_id, r.job.seed)]) for r in results)


def test_a_worker_that_keeps_dying_fails_its_episodes_with_the_reason() -> None:
    jobs = [EpisodeJob("noop", "task1", seed) for seed in range(4)]
    poisoned = functools.partial(always_dies, seed=2)
    results = list(local_results(jobs, workers=2, min_parallel_s=0, max_restarts=1,
                                 job_fn=poisoned))
    assert sorted(r.job.seed for r in results) == [0, 1, 2, 3]  # no episode lost, none twice
    failed = {r.job.seed: r.error for r in results if r.error}
    assert failed[2] == ("a worker process died 2 times in this run (out of memory, or a crash "
                         "in native code); re-run the same command to resume")
    assert all(r.record is not None for r in results if r.job.seed not in failed)
