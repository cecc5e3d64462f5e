"""SQLite store of evaluated episodes (one row per agent x model x task x seed x city x repeat x
version).

Schema (``episodes`` table; ``meta`` holds ``schema_version``):

=================  =======  ====================================================================
column             type     meaning
=================  =======  ====================================================================
id                 INTEGER  row id
agent              TEXT     agent name (``noop``, ``random``, ``heuristic``, ``llm``)
model              TEXT     model name for ``llm``; the agent name otherwise
task_id, seed      TEXT/INT the episode
package_version    TEXT     ``openenv-codered`` version that produced it
score              REAL     final reported score in [0.01, 0.99]
raw_score          REAL     unclamped score (NULL when unknown)
components         TEXT     JSON ``{component: float | null}``
steps              INTEGER  number of steps played
invalid_actions    INTEGER  steps whose action the environment rejected
agent_errors       INTEGER  steps where the agent substituted ``maintain_plan``
wall_time_s        REAL     wall-clock seconds for the episode
trajectory         TEXT     the episode in the trajectory JSONL format
llm_stats          TEXT     JSON call/retry/token counters (NULL for non-LLM agents)
prompt_tokens      INTEGER  prompt tokens the LLM used in the episode (NULL for non-LLM agents)
completion_tokens  INTEGER  completion tokens, likewise
created_at         TEXT     ISO-8601 UTC time the row was written
agent_fingerprint  TEXT     canonical JSON of the agent's fingerprint (evaluation/provenance.py)
sim_fingerprint    TEXT     hash of the simulation's source files when the episode was played
git_commit         TEXT     commit of the checkout that played it (NULL when unknown)
repeat             INTEGER  which run of this (task, seed) it is, 0.. (``codered eval --repeats``)
outcome            TEXT     JSON: how the episode finished (evaluation/benchmark.py
                            ``episode_finish``: finish reason, invalid-format/-action, context-
                            limit and endpoint-failure counts, endpoint kind); NULL when unknown
city               TEXT     the city played in (``prakashnagar`` or ``gen-<seed>``)
=================  =======  ====================================================================

``UNIQUE(agent, model, task_id, seed, city, repeat, package_version)`` plus ``INSERT OR IGNORE``
means a re-run never duplicates an episode; callers check :meth:`EpisodeRecord.matches` before
reusing a stored row and store a re-run with ``add(record, replace=True)``, which overwrites the stale row.

Only one process writes a database: ``codered eval`` plays episodes in worker processes, threads
or Ray tasks, but the parent stores every result.  Older schemas are migrated in place when
opened: version 1 (no token columns) gets them filled from ``llm_stats``; version 2 (no
provenance) gets the provenance columns as NULL, so its rows count as stale; version 3 (no
repeats) is rebuilt with ``repeat`` 0 and ``outcome`` NULL for every row; version 4 (no city)
is rebuilt with every row in Prakashnagar.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codered_env.evaluation.trajectory import package_version, utc_now

SCHEMA_VERSION = "5"
DEFAULT_DB = "codered_eval.db"

_EPISODES_TABLE = """
CREATE TABLE IF NOT EXISTS episodes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    agent TEXT NOT NULL,
    model TEXT NOT NULL,
    task_id TEXT NOT NULL,
    seed INTEGER NOT NULL,
    package_version TEXT NOT NULL,
    score REAL NOT NULL,
    raw_score REAL,
    components TEXT NOT NULL,
    steps INTEGER NOT NULL,
    invalid_actions INTEGER NOT NULL DEFAULT 0,
    agent_errors INTEGER NOT NULL DEFAULT 0,
    wall_time_s REAL NOT NULL,
    trajectory TEXT NOT NULL,
    llm_stats TEXT,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    created_at TEXT NOT NULL,
    agent_fingerprint TEXT,
    sim_fingerprint TEXT,
    git_commit TEXT,
    repeat INTEGER NOT NULL DEFAULT 0,
    outcome TEXT,
    city TEXT NOT NULL DEFAULT 'prakashnagar',
    UNIQUE (agent, model, task_id, seed, city, repeat, package_version)
)"""
_SCHEMA = f"CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);\n{_EPISODES_TABLE};"

_COLUMNS = ("agent", "model", "task_id", "seed", "package_version", "score", "raw_score",
            "components", "steps", "invalid_actions", "agent_errors", "wall_time_s",
            "trajectory", "llm_stats", "prompt_tokens", "completion_tokens", "created_at",
            "agent_fingerprint", "sim_fingerprint", "git_commit", "repeat", "outcome", "city")
_TOKEN_COLUMNS = ("prompt_tokens", "completion_tokens")
_PROVENANCE_COLUMNS = ("agent_fingerprint", "sim_fingerprint", "git_commit")


def _token_count(stats: dict[str, Any] | None, name: str) -> int | None:
    value = (stats or {}).get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


class StoreError(RuntimeError):
    """The database cannot be opened or is not an evaluation database."""


@dataclass
class EpisodeRecord:
    """One stored episode."""

    agent: str
    model: str
    task_id: str
    seed: int
    score: float
    components: dict[str, float | None]
    steps: int
    wall_time_s: float
    trajectory: str
    raw_score: float | None = None
    invalid_actions: int = 0
    agent_errors: int = 0
    llm_stats: dict[str, Any] | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    package_version: str = field(default_factory=package_version)
    created_at: str = field(default_factory=utc_now)
    agent_fingerprint: str | None = None
    sim_fingerprint: str | None = None
    git_commit: str | None = None
    repeat: int = 0
    outcome: dict[str, Any] | None = None
    city: str = "prakashnagar"

    def matches(self, agent_fingerprint: str, sim_fingerprint: str) -> bool:
        """Whether this row was produced by the same agent and simulation (else it is stale;
        a row without provenance, from an older database, is always stale)."""
        return (self.agent_fingerprint == agent_fingerprint
                and self.sim_fingerprint == sim_fingerprint)

    def __post_init__(self) -> None:
        for name in _TOKEN_COLUMNS:
            if getattr(self, name) is None:
                setattr(self, name, _token_count(self.llm_stats, name))

    def key(self) -> tuple[str, str, str, int, str, int, str]:
        return (self.agent, self.model, self.task_id, self.seed, self.city, self.repeat,
                self.package_version)

    def _row(self) -> tuple[Any, ...]:
        values = {**self.__dict__, "components": json.dumps(self.components),
                  "llm_stats": None if self.llm_stats is None else json.dumps(self.llm_stats),
                  "outcome": None if self.outcome is None else json.dumps(self.outcome)}
        return tuple(values[c] for c in _COLUMNS)

    @classmethod
    def _from_row(cls, row: sqlite3.Row) -> EpisodeRecord:
        values = {c: row[c] for c in _COLUMNS}
        values["components"] = json.loads(values["components"] or "{}")
        values["llm_stats"] = json.loads(values["llm_stats"]) if values["llm_stats"] else None
        values["outcome"] = json.loads(values["outcome"]) if values["outcome"] else None
        return cls(**values)


class EpisodeStore:
    """Open (creating if needed) an evaluation database.  Use as a context manager."""

    def __init__(self, path: str | Path = DEFAULT_DB) -> None:
        self.path = Path(path)
        try:
            self._conn = sqlite3.connect(str(self.path), timeout=30)
            self._conn.row_factory = sqlite3.Row
            self._conn.executescript(_SCHEMA)
            self._check_version()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a usable evaluation database ({exc})") from exc

    def _check_version(self) -> None:
        with self._conn:
            self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                               (SCHEMA_VERSION,))
        found = self._conn.execute(
            "SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        if found == "1":
            self._migrate_from_1()
            found = "2"
        if found == "2":
            self._migrate_from_2()
            found = "3"
        if found == "3":
            self._migrate_from_3()
            found = "4"
        if found == "4":
            self._migrate_from_4()
            found = SCHEMA_VERSION
        if found != SCHEMA_VERSION:
            raise StoreError(f"{self.path}: schema version {found}, expected {SCHEMA_VERSION}")

    def _add_missing_columns(self, names: tuple[str, ...], sql_type: str) -> None:
        present = {r[1] for r in self._conn.execute("PRAGMA table_info(episodes)")}
        for name in names:
            if name not in present:
                self._conn.execute(f"ALTER TABLE episodes ADD COLUMN {name} {sql_type}")

    def _migrate_from_1(self) -> None:
        """Add the token columns and fill them from the stored ``llm_stats``."""
        with self._conn:
            self._add_missing_columns(_TOKEN_COLUMNS, "INTEGER")
            rows = self._conn.execute(
                "SELECT id, llm_stats FROM episodes WHERE llm_stats IS NOT NULL").fetchall()
            for row_id, text in rows:
                try:
                    stats = json.loads(text)
                except ValueError:
                    continue
                stats = stats if isinstance(stats, dict) else None
                self._conn.execute(
                    "UPDATE episodes SET prompt_tokens=?, completion_tokens=? WHERE id=?",
                    (*(_token_count(stats, n) for n in _TOKEN_COLUMNS), row_id))
            self._conn.execute("UPDATE meta SET value='2' WHERE key='schema_version'")

    def _migrate_from_2(self) -> None:
        """Add the provenance columns; old rows keep NULL there, which reads as stale."""
        with self._conn:
            self._add_missing_columns(_PROVENANCE_COLUMNS, "TEXT")
            self._conn.execute("UPDATE meta SET value='3' WHERE key='schema_version'")

    def _migrate_from_3(self) -> None:
        """Rebuild the table with ``repeat`` in the unique key (SQLite cannot alter a constraint):
        every old row becomes repeat 0 with no outcome."""
        self._rebuild(_COLUMNS[:-3], "3", "4")

    def _migrate_from_4(self) -> None:
        """Rebuild the table with ``city`` in the unique key: every old row is Prakashnagar's."""
        self._rebuild(_COLUMNS[:-1], "4", "5")

    def _rebuild(self, kept: tuple[str, ...], old_version: str, new_version: str) -> None:
        old = ",".join(kept)
        with self._conn:
            self._conn.execute(f"ALTER TABLE episodes RENAME TO episodes_v{old_version}")
            self._conn.execute(_EPISODES_TABLE)
            self._conn.execute(f"INSERT INTO episodes ({old}) SELECT {old} FROM episodes_v{old_version}")
            self._conn.execute(f"DROP TABLE episodes_v{old_version}")
            self._conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (new_version,))

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> EpisodeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, agent: str, model: str, task_id: str, seed: int,
            version: str | None = None, repeat: int = 0, city: str = "prakashnagar") -> EpisodeRecord | None:
        """The stored episode (for this package version), or ``None``."""
        row = self._conn.execute(
            "SELECT * FROM episodes WHERE agent=? AND model=? AND task_id=? AND seed=? "
            "AND city=? AND repeat=? AND package_version=?",
            (agent, model, task_id, seed, city, repeat, version or package_version())).fetchone()
        return None if row is None else EpisodeRecord._from_row(row)

    def has(self, agent: str, model: str, task_id: str, seed: int,
            version: str | None = None) -> bool:
        """Whether this episode is already stored (for this package version)."""
        return self.get(agent, model, task_id, seed, version) is not None

    def add(self, record: EpisodeRecord, replace: bool = False) -> bool:
        """Store an episode; ``False`` (and no change) when it is already stored, unless
        ``replace`` (a re-run of a stale row), which overwrites the stored one."""
        placeholders = ",".join("?" * len(_COLUMNS))
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        with self._conn:
            cursor = self._conn.execute(
                f"{verb} INTO episodes ({','.join(_COLUMNS)}) VALUES ({placeholders})",
                record._row())
        return cursor.rowcount == 1

    def records(self, version: str | None = None) -> list[EpisodeRecord]:
        """All episodes (of one package version, if given), in a stable order."""
        query = "SELECT * FROM episodes"
        params: tuple[Any, ...] = ()
        if version is not None:
            query += " WHERE package_version = ?"
            params = (version,)
        query += " ORDER BY task_id, agent, model, city, seed, repeat"
        return [EpisodeRecord._from_row(r) for r in self._conn.execute(query, params)]

    def versions(self) -> list[str]:
        """Package versions present, oldest row first."""
        rows = self._conn.execute(
            "SELECT package_version FROM episodes GROUP BY package_version ORDER BY MIN(id)")
        return [r[0] for r in rows]

    def __iter__(self) -> Iterator[EpisodeRecord]:
        return iter(self.records())

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0])
