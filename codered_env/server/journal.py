"""The session journal: every live session's action log, so a restarted server resumes them.

An episode is a pure function of (task, seed, actions), so a session is fully described by its
log of resets and steps. The journal keeps, per session (HTTP episode, MCP session, WebSocket
session), one row (kind, owner, options) and its events since the last reset, in SQLite in WAL
mode under the state directory (``CODERED_STATE_DIR``; docs/SERVER.md, "Restarts"):

* Writes go through one writer thread, which commits whatever is queued in one transaction
  (group commit). A route answers a step only once its event is committed
  (:meth:`Journal.barrier`), so an acknowledged step is never lost, even to SIGKILL.
* After a restart nothing is replayed up front (start-up stays fast): a session is rebuilt by
  replay the first time its id is used (:meth:`Journal.events`, ``KindJournal.restore``).
* Ended sessions keep a tombstone with the reason (expired, evicted, closed), so their ids
  answer 410 with that reason across restarts too. Tombstones beyond ``MAX_TOMBSTONES`` and
  sessions idle past their kind's lifetime are pruned at start-up.
* Where the state directory cannot be written (a read-only filesystem) the server logs one
  warning and runs without a journal: sessions then live in memory only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from codered_env.server.http_sessions import Restored

logger = logging.getLogger("codered_env.server")

MAX_TOMBSTONES = 4096  # same memory as the stores' own list of dropped ids (design choice)
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS sessions (key TEXT PRIMARY KEY, kind TEXT NOT NULL, "
    "owner TEXT NOT NULL, options TEXT NOT NULL, gone TEXT, gone_at REAL)",
    "CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, "
    "body TEXT NOT NULL, at REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS events_by_key ON events (key, id)",
)
_STOP = object()
Op = tuple[str, tuple[Any, ...]]


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/codered-env`` (default ``~/.local/state/codered-env``)."""
    base = os.environ.get("XDG_STATE_HOME", "").strip() or str(Path.home() / ".local" / "state")
    return Path(base) / "codered-env"


class Journal:
    """Append-only session logs in one SQLite file (or nothing, when ``path`` is None)."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._enqueued = 0
        self._committed = 0
        self._committed_cond = threading.Condition(self._lock)
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._writer: threading.Thread | None = None
        self._reader: sqlite3.Connection | None = None
        self._read_lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.path is not None

    # ------------------------------------------------------------------ life cycle

    def open(self, path: Path, lifetimes: dict[str, float]) -> bool:
        """Open (or create) the journal file; prune what outlived ``lifetimes`` (seconds of
        inactivity per kind). False, with a warning logged, when the file cannot be used."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            writer = _connect(path)
            for statement in _SCHEMA:
                writer.execute(statement)
            _prune(writer, lifetimes)
            self._reader = _connect(path)
        except (OSError, sqlite3.Error) as exc:
            logger.warning("session journal disabled (%s: %s): sessions will not survive a restart",
                           path, exc)
            return False
        self.path = path
        self._writer = threading.Thread(target=self._write_loop, args=(writer,), daemon=True,
                                        name="codered-journal")
        self._writer.start()
        return True

    def close(self) -> None:
        """Commit what is queued and stop the writer."""
        if self._writer is None:
            return
        self._queue.put(_STOP)
        self._writer.join(timeout=10.0)
        self._writer = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    # ------------------------------------------------------------------ writes

    def write(self, *ops: Op) -> None:
        """Queue statements to commit together (no-op without a journal)."""
        if self._writer is None:
            return
        with self._lock:
            self._enqueued += 1
            self._queue.put((self._enqueued, ops))

    def start(self, key: str, kind: str, owner: str, options: dict[str, Any], event: dict[str, Any]) -> None:
        """A (re)started session: its row, and a log that holds only this reset."""
        self.write(
            ("INSERT OR REPLACE INTO sessions (key, kind, owner, options) VALUES (?, ?, ?, ?)",
             (key, kind, owner, json.dumps(options))),
            ("DELETE FROM events WHERE key = ?", (key,)),
            ("INSERT INTO events (key, body, at) VALUES (?, ?, ?)", (key, _dump(event), time.time())),
        )

    def append(self, key: str, event: dict[str, Any]) -> None:
        self.write(("INSERT INTO events (key, body, at) VALUES (?, ?, ?)", (key, _dump(event), time.time())))

    def end(self, key: str, reason: str) -> None:
        """The session ended: keep its reason, drop its log."""
        self.write(
            ("UPDATE sessions SET gone = ?, gone_at = ? WHERE key = ?", (reason[:400], time.time(), key)),
            ("DELETE FROM events WHERE key = ?", (key,)),
        )

    async def barrier(self) -> None:
        """Wait until everything queued so far is committed."""
        if self._writer is None:
            return
        with self._lock:
            target = self._enqueued
            if self._committed >= target:
                return
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append((target, future))
        await future

    def flush(self, timeout_s: float = 10.0) -> None:
        """Block until everything queued so far is committed (for reads and threads)."""
        if self._writer is None:
            return
        with self._committed_cond:
            target = self._enqueued
            self._committed_cond.wait_for(lambda: self._committed >= target or self._writer is None,
                                          timeout=timeout_s)

    def _write_loop(self, conn: sqlite3.Connection) -> None:
        stopping = False
        while not stopping:
            batch = [self._queue.get()]
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stopping = any(item is _STOP for item in batch)
            work = [item for item in batch if item is not _STOP]
            if work:
                self._commit(conn, work)
        conn.close()

    def _commit(self, conn: sqlite3.Connection, work: list[tuple[int, tuple[Op, ...]]]) -> None:
        try:
            with conn:
                for _, ops in work:
                    for sql, params in ops:
                        conn.execute(sql, params)
        except sqlite3.Error as exc:  # disk full, file removed...: keep serving, say so once
            logger.error("session journal write failed (%s); sessions may not survive a restart", exc)
        with self._committed_cond:
            self._committed = max(self._committed, work[-1][0])
            self._committed_cond.notify_all()
            ready = [f for seq, f in self._waiters if seq <= self._committed]
            self._waiters = [(seq, f) for seq, f in self._waiters if seq > self._committed]
        if ready:
            loop = ready[0].get_loop()
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                loop.call_soon_threadsafe(_resolve, ready)

    def expire_detached(self, kind: str, lifetime_s: float, live: set[str]) -> int:
        """End the sessions of ``kind`` inactive for ``lifetime_s`` that are not ``live``
        (prefix-less ids); returns how many ended."""
        cutoff = time.time() - lifetime_s
        rows = self._read(
            "SELECT s.key FROM sessions s WHERE s.kind = ? AND s.gone IS NULL AND "
            "COALESCE((SELECT MAX(at) FROM events e WHERE e.key = s.key), 0) < ?", (kind, cutoff))
        stale = [key for (key,) in rows if key.split(":", 1)[-1] not in live]
        for key in stale:
            self.end(key, f"expired after {lifetime_s:g} s without activity")
        return len(stale)

    # ------------------------------------------------------------------ reads

    def session(self, key: str) -> tuple[str, str, dict[str, Any], str | None] | None:
        """``(kind, owner, options, gone reason)`` of a journaled session, else None."""
        row = self._read("SELECT kind, owner, options, gone FROM sessions WHERE key = ?", (key,))
        if not row:
            return None
        kind, owner, options, gone = row[0]
        return kind, owner, json.loads(options), gone

    def events(self, key: str) -> list[dict[str, Any]]:
        rows = self._read("SELECT body FROM events WHERE key = ? ORDER BY id", (key,))
        return [json.loads(body) for (body,) in rows]

    def live_keys(self, kind: str) -> list[str]:
        rows = self._read("SELECT key FROM sessions WHERE kind = ? AND gone IS NULL", (kind,))
        return [key for (key,) in rows]

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        if self._reader is None:
            return []
        self.flush()
        with self._read_lock:
            try:
                return list(self._reader.execute(sql, params))
            except sqlite3.Error as exc:
                logger.error("session journal read failed (%s)", exc)
                return []


def _resolve(futures: list[asyncio.Future[None]]) -> None:
    for future in futures:
        if not future.done():
            future.set_result(None)


def _dump(event: dict[str, Any]) -> str:
    return json.dumps(event, separators=(",", ":"))


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10.0)
    conn.execute("PRAGMA journal_mode=WAL")
    # WAL + NORMAL: a commit survives the process being killed (not a power cut), without an
    # fsync per step.
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.isolation_level = ""  # `with conn:` opens and commits one transaction
    return conn


def _prune(conn: sqlite3.Connection, lifetimes: dict[str, float]) -> None:
    """At start-up: sessions inactive longer than their kind's lifetime end (expired), and only
    the newest ``MAX_TOMBSTONES`` tombstones stay."""
    now = time.time()
    with conn:
        for kind, lifetime in lifetimes.items():
            stale = [key for (key,) in conn.execute(
                "SELECT s.key FROM sessions s WHERE s.kind = ? AND s.gone IS NULL AND "
                "COALESCE((SELECT MAX(at) FROM events e WHERE e.key = s.key), 0) < ?",
                (kind, now - lifetime))]
            for key in stale:
                conn.execute("UPDATE sessions SET gone = ?, gone_at = ? WHERE key = ?",
                             (f"expired after {lifetime:g} s without activity", now, key))
                conn.execute("DELETE FROM events WHERE key = ?", (key,))
        conn.execute(
            "DELETE FROM sessions WHERE gone IS NOT NULL AND key NOT IN (SELECT key FROM sessions "
            "WHERE gone IS NOT NULL ORDER BY gone_at DESC LIMIT ?)", (MAX_TOMBSTONES,))


EnvT = TypeVar("EnvT")


@dataclass
class KindJournal(Generic[EnvT]):
    """The journal as one session store sees it (HTTP episodes, MCP sessions or WebSocket
    sessions): keys are prefixed with the kind, and ``rebuild`` makes a live environment from a
    session's options and events."""

    journal: Journal
    kind: str
    # (session id, owner, options, events) -> (live environment, whether it was ever used)
    rebuild: Callable[[str, str, dict[str, Any], list[dict[str, Any]]], tuple[EnvT, bool]]

    def key(self, session_id: str) -> str:
        return f"{self.kind}:{session_id}"

    def recorder(self, session_id: str, owner: str, options: dict[str, Any] | None = None
                 ) -> Callable[[dict[str, Any]], None]:
        """The ``CodeRedEnvironment.recorder`` of one session."""
        key = self.key(session_id)
        journal = self.journal

        def record(event: dict[str, Any]) -> None:
            if event["op"] == "reset":
                journal.start(key, self.kind, owner, options or {}, event)
            else:
                journal.append(key, event)

        return record

    # StoreJournal protocol (http_sessions.HttpSessionStore)

    def restore(self, session_id: str) -> Restored[EnvT] | None:
        if not self.journal.enabled:
            return None
        found = self.journal.session(self.key(session_id))
        if found is None or found[0] != self.kind or found[3] is not None:
            return None
        _, owner, options, _ = found
        events = self.journal.events(self.key(session_id))
        if not events:
            return None
        try:
            env, stepped = self.rebuild(session_id, owner, options, events)
        except Exception as exc:  # a log the simulation no longer accepts: say so, do not crash
            logger.error("could not restore %s session %s: %s", self.kind, session_id[:12], exc)
            return None
        return Restored(env, owner, stepped)

    def forget(self, session_id: str, reason: str) -> None:
        self.journal.end(self.key(session_id), reason)

    def gone_reason(self, session_id: str) -> str | None:
        if not self.journal.enabled:
            return None
        found = self.journal.session(self.key(session_id))
        return None if found is None else found[3]
