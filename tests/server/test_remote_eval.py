"""``codered eval --env-url``: episodes played on a server land in the same store, with the same
scores and provenance as in-process ones, survive a server restart mid-run, and a SIGKILLed
``codered eval`` leaves no worker process behind."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support_server import REPO_ROOT, RunningServer, launch

from codered_env.evaluation.evaluate import run_evaluation

AGENTS, TASKS, SEEDS = ["heuristic", "random"], ["task1", "task4"], [0, 1]


def _rows(db: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as conn:
        return sorted(conn.execute(
            "SELECT agent, task_id, seed, score, steps, invalid_actions, agent_fingerprint, sim_fingerprint "
            "FROM episodes"))


def test_remote_eval_fills_the_same_store_with_the_same_rows(tmp_path: Path) -> None:
    server = launch({})
    try:
        local, remote = tmp_path / "local.db", tmp_path / "remote.db"
        run_evaluation(AGENTS, TASKS, SEEDS, db_path=local, progress=None)
        codered = Path(sys.executable).with_name("codered")
        done = subprocess.run(
            [str(codered), "eval", "--agents", ",".join(AGENTS), "--tasks", ",".join(TASKS),
             "--seeds", "0-1", "--db", str(remote), "--env-url", server.base_url, "--workers", "1"],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        assert _rows(remote) == _rows(local) and len(_rows(local)) == 8
        again = run_evaluation(AGENTS, TASKS, SEEDS, db_path=remote, progress=None, env_url=server.base_url)
        assert again.skipped == 8 and again.ran == 0  # a local or remote rerun resumes the other
    finally:
        server.stop()


def test_remote_eval_resumes_its_episodes_after_a_server_restart(tmp_path: Path) -> None:
    server = launch({})
    servers: list[RunningServer] = [server]
    try:
        def crash_and_restart() -> None:
            time.sleep(3.0)
            server.kill()
            servers.append(launch({}, port=server.port, state_dir=server.state_dir))

        restarter = threading.Thread(target=crash_and_restart)
        restarter.start()
        summary = run_evaluation(["heuristic"], ["task3", "task5"], [0, 1, 2], db_path=tmp_path / "r.db",
                                 progress=None, env_url=server.base_url)
        restarter.join()
        assert summary.failed == 0 and summary.ran == 6
        run_evaluation(["heuristic"], ["task3", "task5"], [0, 1, 2], db_path=tmp_path / "l.db", progress=None)
        assert _rows(tmp_path / "r.db") == _rows(tmp_path / "l.db")
    finally:
        for handle in servers:
            handle.stop()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _has_children(pid: int) -> bool:
    try:
        return bool(Path(f"/proc/{pid}/task/{pid}/children").read_text().split())
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and /proc")
def test_a_killed_eval_leaves_no_worker_processes(tmp_path: Path) -> None:
    codered = Path(sys.executable).with_name("codered")
    # the planner: slow enough per episode that the run always goes to worker processes
    proc = subprocess.Popen(
        [str(codered), "eval", "--agents", "planner", "--tasks", "all", "--seeds", "0-39",
         "--workers", "2", "--db", str(tmp_path / "k.db")],
        cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "k.db").exists() or not _has_children(proc.pid):
            assert time.monotonic() < deadline and proc.poll() is None, "the workers never started"
            time.sleep(0.2)
        time.sleep(3.0)  # the fork server and the workers are up
        proc.kill()
        proc.wait(timeout=10)
        deadline = time.monotonic() + 30
        while _group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.25)
        assert not _group_alive(proc.pid), "worker processes outlived the killed evaluation"
    finally:
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
