"""Evaluation on generated cities: the city is part of a stored episode's key, trajectories name
their city (a replay grades it there), schema-4 stores migrate, and the report shows Prakashnagar,
train and held-out test cities side by side."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from codered_env.evaluation import store as store_module
from codered_env.evaluation.evaluate import run_evaluation
from codered_env.evaluation.report import generalisation_table, summarize
from codered_env.evaluation.store import SCHEMA_VERSION, EpisodeStore
from codered_env.evaluation.trajectory import Trajectory, replay

CITIES = ["prakashnagar", "gen-0", "gen-100000"]  # Prakashnagar, a train city, a test city


def test_episodes_are_stored_per_city_and_reused(tmp_path: Path) -> None:
    db = tmp_path / "cities.db"
    first = run_evaluation(["noop"], ["task1"], [0, 1], db_path=db, progress=None, cities=CITIES)
    assert first.ran == 6 and [e.city for e in first.events] == [c for c in CITIES for _ in (0, 1)]
    again = run_evaluation(["noop"], ["task1"], [0, 1], db_path=db, progress=None, cities=CITIES)
    assert again.ran == 0 and again.skipped == 6
    with EpisodeStore(db) as store:
        records = store.records()
    assert sorted({r.city for r in records}) == sorted(CITIES)
    table = generalisation_table(summarize(records))
    assert table is not None
    head = "| Task | Agent | Model | prakashnagar | train cities | test cities | test − train |"
    assert table.splitlines()[0] == head
    assert table.splitlines()[2].startswith("| task1 | noop | noop | 0.010 ± 0.000 (2) |")
    assert generalisation_table(summarize([r for r in records if r.city == "gen-0"])) is None


def test_a_trajectory_names_its_city_and_replays_there(tmp_path: Path) -> None:
    db = tmp_path / "one.db"
    run_evaluation(["random"], ["task1"], [3], db_path=db, progress=None, cities=["gen-100000"])
    with EpisodeStore(db) as store:
        (record,) = store.records()
    trajectory = Trajectory.from_jsonl(record.trajectory)
    assert trajectory.city == "gen-100000" and trajectory.header()["city"] == "gen-100000"
    result = replay(trajectory)
    assert result.matches
    home = Trajectory.from_jsonl(record.trajectory)
    home.city = "prakashnagar"
    assert "city" not in home.header()


def test_a_schema_4_store_is_rebuilt_with_every_row_in_prakashnagar(tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    old_table = store_module._EPISODES_TABLE.replace("    city TEXT NOT NULL DEFAULT 'prakashnagar',\n", "")
    old_table = old_table.replace("seed, city, repeat", "seed, repeat")
    columns = store_module._COLUMNS[:-1]
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("INSERT INTO meta VALUES ('schema_version', '4')")
        conn.execute(old_table)
        values = ("noop", "noop", "task1", 5, "0.1.0", 0.01, None, "{}", 3, 0, 0, 0.1, "", None, None, None,
                  "2026-01-01T00:00:00+00:00", None, None, None, 0, None)
        conn.execute(f"INSERT INTO episodes ({','.join(columns)}) VALUES ({','.join('?' * len(columns))})",
                     values)
    with EpisodeStore(path) as store:
        (migrated,) = store.records()
        assert (migrated.seed, migrated.city) == (5, "prakashnagar")
        same_elsewhere = store_module.EpisodeRecord(
            agent="noop", model="noop", task_id="task1", seed=5, score=0.01, components={}, steps=3,
            wall_time_s=0.1, trajectory="", package_version="0.1.0", city="gen-3")
        assert store.add(same_elsewhere) and len(store) == 2
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta").fetchone()[0] == SCHEMA_VERSION
