"""The session journal (codered_env/server/journal.py) on its own: group commit, logs from the
last reset, tombstones and pruning across reopen, clean-up of garbage, and no-ops when off."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path

from codered_env.server.environment import CodeRedEnvironment
from codered_env.server.journal import Journal, KindJournal

MAINTAIN = {"action_type": "maintain_plan"}


def _rebuild(
    session_id: str, owner: str, options: dict, events: list[dict]
) -> tuple[CodeRedEnvironment, bool]:
    env = CodeRedEnvironment()
    env.replay(events)
    return env, env.step_count > 0


async def _played(path: Path) -> tuple[Journal, KindJournal[CodeRedEnvironment], CodeRedEnvironment]:
    journal = Journal()
    assert journal.open(path, {"http": 600.0})
    kind = KindJournal(journal, "http", _rebuild)
    env = CodeRedEnvironment()
    env.recorder = kind.recorder("abc", "10.0.0.1")
    env.reset(task_id="task3", seed=5, episode_id="abc")
    for _ in range(4):
        env.step_wire(MAINTAIN)
    await journal.barrier()
    return journal, kind, env


def test_a_log_replays_to_the_same_episode_and_starts_at_the_last_reset(tmp_path: Path) -> None:
    async def scenario() -> None:
        journal, kind, env = await _played(tmp_path / "j.db")
        restored = kind.restore("abc")
        assert restored is not None and restored.owner == "10.0.0.1" and restored.stepped
        assert restored.env.state == env.state
        assert restored.env.current_observation().text == env.current_observation().text
        env.reset(task_id="task1", seed=2, episode_id="abc")  # the log restarts here
        env.step_wire(MAINTAIN)
        await journal.barrier()
        assert [e["op"] for e in journal.events("http:abc")] == ["reset", "step"]
        journal.collect()
        with sqlite3.connect(tmp_path / "j.db") as conn:
            assert conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 2
        journal.close()

    asyncio.run(scenario())


def test_tombstones_survive_a_reopen_and_idle_sessions_are_pruned(tmp_path: Path) -> None:
    async def first_run() -> None:
        journal, kind, _ = await _played(tmp_path / "j.db")
        kind.forget("abc", "was evicted: a test")
        other = CodeRedEnvironment()
        other.recorder = kind.recorder("def", "10.0.0.2")
        other.reset(task_id="task1", seed=0, episode_id="def")
        await journal.barrier()
        journal.close()

    async def second_run(lifetime: float) -> KindJournal[CodeRedEnvironment]:
        journal = Journal()
        assert journal.open(tmp_path / "j.db", {"http": lifetime})
        return KindJournal(journal, "http", _rebuild)

    asyncio.run(first_run())
    kind = asyncio.run(second_run(600.0))
    assert kind.restore("abc") is None and kind.gone_reason("abc") == "was evicted: a test"
    assert kind.restore("def") is not None
    kind.journal.close()
    time.sleep(0.05)
    kind = asyncio.run(second_run(0.01))  # inactive longer than its lifetime: ends at start-up
    assert kind.restore("def") is None and "expired" in str(kind.gone_reason("def"))
    kind.journal.close()


def test_an_unopened_or_unusable_journal_records_nothing(tmp_path: Path) -> None:
    journal = Journal()
    kind = KindJournal(journal, "ws", _rebuild)
    env = CodeRedEnvironment()
    env.recorder = kind.recorder("x", "o")
    env.reset()
    env.step_wire(MAINTAIN)
    asyncio.run(journal.barrier())
    assert kind.restore("x") is None and kind.gone_reason("x") is None and not journal.enabled
    blocker = tmp_path / "file"
    blocker.write_text("")

    async def open_under_a_file() -> bool:
        return journal.open(blocker / "j.db", {})

    assert asyncio.run(open_under_a_file()) is False


def test_a_log_the_simulation_refuses_is_reported_not_raised(tmp_path: Path) -> None:
    async def scenario() -> None:
        journal, _, _ = await _played(tmp_path / "j.db")
        broken = KindJournal(journal, "http", lambda *args: (_ for _ in ()).throw(ValueError("bad log")))
        assert broken.restore("abc") is None
        journal.close()

    asyncio.run(scenario())


def test_the_sweep_expires_by_activity_kept_in_memory_across_a_reopen(tmp_path: Path) -> None:
    """Idle sessions expire, stepped and live ones do not, and a reopened journal knows each
    session's last activity without the sweep reading the log."""

    async def scenario() -> None:
        journal, kind, env = await _played(tmp_path / "j.db")  # session "abc"
        idle = CodeRedEnvironment()
        idle.recorder = kind.recorder("idle", "10.0.0.3")
        idle.reset(task_id="task2", seed=1, episode_id="idle")
        await journal.barrier()
        time.sleep(0.05)
        env.step_wire(MAINTAIN)  # "abc" is active again
        await journal.barrier()
        assert journal.expire_detached("http", 0.04, live=set()) == 1
        assert "expired" in str(kind.gone_reason("idle")) and kind.gone_reason("abc") is None
        assert journal.expire_detached("http", 0.0, live={"abc"}) == 0  # attached: kept
        journal.close()
        reopened = Journal()
        assert reopened.open(tmp_path / "j.db", {"http": 600.0})
        with sqlite3.connect(tmp_path / "j.db") as conn:
            conn.execute("DROP TABLE events")  # the sweep must not need the log
        time.sleep(0.02)
        assert reopened.expire_detached("http", 0.01, live=set()) == 1
        assert "expired" in str(KindJournal(reopened, "http", _rebuild).gone_reason("abc"))
        reopened.close()

    asyncio.run(scenario())


def test_a_read_on_a_worker_thread_commits_without_waiting_for_a_blocked_loop(tmp_path: Path) -> None:
    """A restore on a worker thread (MCP) holds its store's lock while it reads the journal; the
    event loop may be waiting for that lock (a WebSocket resume looks the id up there too). The
    read commits the queued writes itself, so neither waits for the other, and the routes
    waiting in ``barrier`` are still woken."""

    async def scenario() -> None:
        journal, _, env = await _played(tmp_path / "j.db")
        env.step_wire(MAINTAIN)  # queued: its flush is due at the loop's next turn
        barrier = journal.barrier()
        committed = barrier.send(None)  # a route now waits for the next commit
        store_lock, holding = threading.Lock(), threading.Event()
        read: dict[str, float | list] = {}

        def restore_on_a_worker() -> None:
            with store_lock:
                holding.set()
                began = time.monotonic()
                read["events"] = journal.events("http:abc")
                read["seconds"] = time.monotonic() - began

        worker = threading.Thread(target=restore_on_a_worker)
        worker.start()
        assert holding.wait(10)
        with store_lock:  # the loop's thread waits for the store's lock while the worker reads
            pass
        worker.join(timeout=30)
        assert read["seconds"] < 2.0
        assert [e["op"] for e in read["events"]] == ["reset"] + ["step"] * 5
        await asyncio.wait_for(committed, 5)  # the worker's commit woke it
        barrier.close()
        journal.close()

    asyncio.run(scenario())
