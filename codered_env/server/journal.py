"""The session journal: every live session's action log, so a restarted server resumes them.

An episode is a pure function of (task, seed, actions), so a session is fully described by its
log of resets and steps. The journal keeps, per session (HTTP episode, MCP session, WebSocket
session), one row (kind, owner, options) and its events since the last reset, in SQLite in WAL
mode under the state directory (``CODERED_STATE_DIR``; docs/SERVER.md, "Restarts"):

* Writes are queued and committed together once per turn of the event loop, in one transaction
  on the loop's own thread (group commit: no thread hand-off, no GIL convoy). A route answers a
  step only once its event is committed (:meth:`Journal.barrier`), so an acknowledged step is
  never lost, even to SIGKILL. A read from a worker thread commits what is queued itself
  instead of waiting for the loop: the loop may be waiting for a lock that thread holds (a
  session store's, during a restore).
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
# Events carry ids assigned here, in order, and have no index but their id: every commit then
# appends to the same few pages (an index by session would touch one page per session, which
# cost 6x more per step). A session's log is its events from ``first_id`` on; older events and
# those of ended sessions are garbage, deleted by :meth:`Journal.collect` (the sweep).
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS sessions (key TEXT PRIMARY KEY, kind TEXT NOT NULL, "
    "owner TEXT NOT NULL, options TEXT NOT NULL, first_id INTEGER, gone TEXT, gone_at REAL)",
    "CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY, key TEXT NOT NULL, "
    "body TEXT NOT NULL, at REAL NOT NULL)",
)
_INSERT_EVENT = "INSERT INTO events (id, key, body, at) VALUES (?, ?, ?, ?)"
# Last activity of every live session, in one pass over the log (read once, at start-up; after
# that the journal keeps it in memory: a per-session query over an unindexed log would cost
# sessions x events, seconds per sweep on a long run).
_LIVE_ACTIVITY = (
    "SELECT s.key, s.kind, e.at FROM sessions s LEFT JOIN (SELECT key, MAX(at) AS at FROM events "
    "GROUP BY key) e ON e.key = s.key WHERE s.gone IS NULL"
)
_GARBAGE = (
    "DELETE FROM events WHERE id < COALESCE((SELECT s.first_id FROM sessions s WHERE s.key = events.key), "
    "9223372036854775807)"
)
Op = tuple[str, tuple[Any, ...]]


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/codered-env`` (default ``~/.local/state/codered-env``)."""
    base = os.environ.get("XDG_STATE_HOME", "").strip() or str(Path.home() / ".local" / "state")
    return Path(base) / "codered-env"


class Journal:
    """Append-only session logs in one SQLite file (nothing is written before :meth:`open`)."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()  # one commit at a time, batches in queue order
        self._pending: list[tuple[Op, ...]] = []
        self._enqueued = 0
        self._committed = 0
        self._next_commit: asyncio.Future[None] | None = None  # one future for every waiter
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._flush_scheduled = False
        self._next_id = 1
        self._writer: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._read_lock = threading.Lock()
        # live session key -> (kind, time of its last event): what the sweep expires by
        self._activity: dict[str, tuple[str, float]] = {}

    @property
    def enabled(self) -> bool:
        return self._writer is not None

    # ------------------------------------------------------------------ life cycle

    def open(self, path: Path, lifetimes: dict[str, float]) -> bool:
        """Open (or create) the journal file from the event loop that will write it; prune what
        outlived ``lifetimes`` (seconds of inactivity per kind). False, with a warning logged,
        when the file cannot be used."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            writer = _connect(path)
            for statement in _SCHEMA:
                writer.execute(statement)
            self._activity = _prune(writer, lifetimes)
            self._next_id = 1 + (writer.execute("SELECT MAX(id) FROM events").fetchone()[0] or 0)
            self._reader = _connect(path)
        except (OSError, sqlite3.Error) as exc:
            logger.warning("session journal disabled (%s: %s): sessions will not survive a restart",
                           path, exc)
            return False
        self.path = path
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._writer = writer
        return True

    def close(self) -> None:
        """Commit what is queued and close the file."""
        if self._writer is None:
            return
        self._flush()
        with self._write_lock:
            self._writer.close()
            self._writer = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    # ------------------------------------------------------------------ writes

    def write(self, *ops: Op) -> None:
        """Queue statements to commit together with whatever else is queued in this turn of the
        event loop (group commit; callable from any thread; no-op without a journal)."""
        if self._writer is None or self._loop is None:
            return
        with self._lock:
            self._enqueued += 1
            self._pending.append(ops)
            if self._flush_scheduled:
                return
            self._flush_scheduled = True
        if threading.get_ident() == self._loop_thread:
            self._loop.call_soon(self._flush)
        else:
            with contextlib.suppress(RuntimeError):  # a closed loop: close() commits the rest
                self._loop.call_soon_threadsafe(self._flush)

    def _event_op(self, key: str, event: dict[str, Any], kind: str | None = None) -> tuple[int, Op]:
        now = time.time()
        with self._lock:
            event_id, self._next_id = self._next_id, self._next_id + 1
            if kind is None and key in self._activity:
                kind = self._activity[key][0]
            if kind is not None:
                self._activity[key] = (kind, now)
        return event_id, (_INSERT_EVENT, (event_id, key, _dump(event), now))

    def start(self, key: str, kind: str, owner: str, options: dict[str, Any], event: dict[str, Any]) -> None:
        """A (re)started session: its row, and a log that starts at this reset."""
        if self._writer is None:
            return
        event_id, insert = self._event_op(key, event, kind)
        self.write(
            ("INSERT OR REPLACE INTO sessions (key, kind, owner, options, first_id) VALUES (?, ?, ?, ?, ?)",
             (key, kind, owner, json.dumps(options), event_id)),
            insert,
        )

    def append(self, key: str, event: dict[str, Any]) -> None:
        if self._writer is not None:
            self.write(self._event_op(key, event)[1])

    def end(self, key: str, reason: str) -> None:
        """The session ended: keep its reason; its log becomes garbage."""
        with self._lock:
            self._activity.pop(key, None)
        self.write(("UPDATE sessions SET gone = ?, gone_at = ?, first_id = NULL WHERE key = ?",
                    (reason[:400], time.time(), key)))

    def collect(self) -> None:
        """Delete the events no session needs any more (on the event loop's thread)."""
        if self._writer is None:
            return
        self._flush()
        try:
            with self._write_lock, self._writer:
                self._writer.execute(_GARBAGE)
        except sqlite3.Error as exc:
            logger.error("session journal clean-up failed (%s)", exc)

    async def barrier(self) -> None:
        """Wait until everything queued so far is committed (the next flush commits it all)."""
        with self._lock:
            if self._committed >= self._enqueued:
                return
            if self._next_commit is None or self._next_commit.done():
                self._next_commit = asyncio.get_running_loop().create_future()
            future = self._next_commit
        await asyncio.shield(future)

    def flush(self) -> None:
        """Make sure everything queued so far is committed (from any thread, without waiting
        for the event loop)."""
        if self._writer is not None:
            self._flush()

    def _flush(self) -> None:
        """Commit the queued statements in one transaction: on the loop's turn, or at once for a
        reader (:meth:`flush`) on any thread."""
        with self._write_lock:
            with self._lock:
                batch, self._pending = self._pending, []
                self._flush_scheduled = False
                target = self._enqueued
                future, self._next_commit = self._next_commit, None
            conn = self._writer
            if batch and conn is not None:
                try:
                    with conn:
                        _execute(conn, batch)
                except sqlite3.Error as exc:  # disk full, file removed...: keep serving, say so
                    logger.error("session journal write failed (%s); sessions may not survive a restart", exc)
            with self._lock:
                self._committed = max(self._committed, target)
        if future is not None:
            self._resolve(future)

    def _resolve(self, future: asyncio.Future[None]) -> None:
        """Wake the routes waiting in :meth:`barrier` (futures are set on their own loop)."""
        if threading.get_ident() == self._loop_thread:
            if not future.done():
                future.set_result(None)
        elif self._loop is not None:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                self._loop.call_soon_threadsafe(_set_done, future)

    def expire_detached(self, kind: str, lifetime_s: float, live: set[str]) -> int:
        """End the sessions of ``kind`` inactive for ``lifetime_s`` that are not ``live``
        (prefix-less ids); returns how many ended."""
        cutoff = time.time() - lifetime_s
        with self._lock:
            idle = [key for key, (of, at) in self._activity.items() if of == kind and at < cutoff]
        stale = [key for key in idle if key.split(":", 1)[-1] not in live]
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
        rows = self._read(
            "SELECT e.body FROM events e, sessions s WHERE s.key = ? AND s.first_id IS NOT NULL AND "
            "e.id >= s.first_id AND e.key = s.key ORDER BY e.id", (key,))
        return [json.loads(body) for (body,) in rows]

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


def _set_done(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _execute(conn: sqlite3.Connection, batch: list[tuple[Op, ...]]) -> None:
    """Run a batch in order; consecutive event inserts (most of a batch) go as one executemany."""
    inserts: list[tuple[Any, ...]] = []
    for ops in batch:
        for sql, params in ops:
            if sql is _INSERT_EVENT:
                inserts.append(params)
                continue
            if inserts:
                conn.executemany(_INSERT_EVENT, inserts)
                inserts = []
            conn.execute(sql, params)
    if inserts:
        conn.executemany(_INSERT_EVENT, inserts)


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


def _prune(conn: sqlite3.Connection, lifetimes: dict[str, float]) -> dict[str, tuple[str, float]]:
    """At start-up: sessions inactive longer than their kind's lifetime end (expired), and only
    the newest ``MAX_TOMBSTONES`` tombstones stay. Returns the live sessions' last activity."""
    now = time.time()
    activity: dict[str, tuple[str, float]] = {}
    with conn:
        for key, kind, at in conn.execute(_LIVE_ACTIVITY).fetchall():
            lifetime = lifetimes.get(kind)
            if lifetime is not None and (at or 0.0) < now - lifetime:
                conn.execute("UPDATE sessions SET gone = ?, gone_at = ?, first_id = NULL WHERE key = ?",
                             (f"expired after {lifetime:g} s without activity", now, key))
            else:
                activity[key] = (kind, at or now)
        conn.execute(_GARBAGE)
        conn.execute(
            "DELETE FROM sessions WHERE gone IS NOT NULL AND key NOT IN (SELECT key FROM sessions "
            "WHERE gone IS NOT NULL ORDER BY gone_at DESC LIMIT ?)", (MAX_TOMBSTONES,))
    return activity


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
