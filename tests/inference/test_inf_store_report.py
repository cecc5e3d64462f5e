"""The SQLite episode store (resume, no duplicates) and the markdown/PNG report."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from codered_env.evaluation.report import format_seeds, generate_report, summarize
from codered_env.evaluation.store import EpisodeRecord, EpisodeStore, StoreError
from codered_env.evaluation.trajectory import StepRecord, Trajectory


def record(agent: str, task: str, seed: int, score: float, **extra: object) -> EpisodeRecord:
    trajectory = Trajectory(task_id=task, seed=seed, agent=agent, model=agent,
                            steps=[StepRecord(1, {"action_type": "maintain_plan"}, score, True)])
    fields = {"agent": agent, "model": agent, "task_id": task, "seed": seed, "score": score,
              "components": {"time_score": score, "secondary_harm": None}, "steps": 1,
              "wall_time_s": 0.1, "trajectory": trajectory.to_jsonl(),
              "package_version": "9.9.9", "created_at": "2026-01-02T03:04:05+00:00"}
    fields.update(extra)
    return EpisodeRecord(**fields)  # type: ignore[arg-type]


def test_add_is_idempotent_and_round_trips(tmp_path: Path) -> None:
    db = tmp_path / "eval.db"
    with EpisodeStore(db) as store:
        assert store.add(record("heuristic", "task1", 0, 0.7))
        assert not store.add(record("heuristic", "task1", 0, 0.1))  # duplicate key: ignored
        assert store.add(record("heuristic", "task1", 0, 0.5, package_version="9.9.10"))
        assert store.has("heuristic", "heuristic", "task1", 0, "9.9.9")
        assert not store.has("heuristic", "heuristic", "task1", 1, "9.9.9")
    with EpisodeStore(db) as store:  # reopened: data persisted, still no duplicates
        rows = store.records("9.9.9")
        assert len(store) == 2 and len(rows) == 1
        assert rows[0].score == 0.7 and rows[0].components == {"time_score": 0.7,
                                                               "secondary_harm": None}
        assert Trajectory.from_jsonl(rows[0].trajectory).actions() == [
            {"action_type": "maintain_plan"}]
        assert store.versions() == ["9.9.9", "9.9.10"]


def test_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.db"
    bogus.write_text("this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a usable evaluation database"):
        EpisodeStore(bogus)


def test_unique_constraint_holds_at_sql_level(tmp_path: Path) -> None:
    db = tmp_path / "eval.db"
    with EpisodeStore(db) as store:
        store.add(record("noop", "task2", 3, 0.02))
    conn = sqlite3.connect(db)
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO episodes (agent, model, task_id, seed, package_version, score,"
                     " components, steps, wall_time_s, trajectory, created_at) VALUES "
                     "('noop','noop','task2',3,'9.9.9',0.5,'{}',1,0.1,'','now')")
    conn.close()


def test_format_seeds_compacts_ranges() -> None:
    assert format_seeds(range(20)) == "0–19"
    assert format_seeds([7, 0, 1, 2, 5]) == "0–2, 5, 7"
    assert format_seeds([4]) == "4"


def test_summary_statistics() -> None:
    rows = summarize([record("random", "task1", s, v) for s, v in [(0, 0.2), (1, 0.4), (2, 0.6)]]
                     + [record("noop", "task1", 0, 0.01)])
    assert [r.agent for r in rows] == ["noop", "random"]
    assert rows[1].mean == pytest.approx(0.4) and rows[1].std == pytest.approx(0.2)
    assert rows[1].components == {"time_score": pytest.approx(0.4), "secondary_harm": None}
    assert rows[0].std == 0.0


def test_report_writes_markdown_and_pngs(tmp_path: Path) -> None:
    db = tmp_path / "eval.db"
    with EpisodeStore(db) as store:
        for seed, score in enumerate([0.5, 0.7]):
            store.add(record("heuristic", "task1", seed, score))
            store.add(record("noop", "task1", seed, 0.01))
            store.add(record("heuristic", "task2", seed, score / 2))
        store.add(record("llm", "task1", 0, 0.33, model="some/model-7b"))
    report = generate_report(db, tmp_path / "out", version="9.9.9")
    text = report.markdown_path.read_text()
    assert report.episodes == 7
    assert "| task1 | noop | noop | 2 | 0.010 ± 0.000 | — | 0.010 | — | 0–1 | 2026-01-02 |" in text
    assert "| task1 | heuristic | heuristic | 2 | 0.600 ± 0.141 |" in text
    assert "| task1 | llm | some/model-7b | 1 | 0.330 ± 0.000 |" in text
    lines = [ln for ln in text.splitlines() if ln.startswith("| task") and "±" in ln]  # score table
    assert [ln.split(" | ")[1] for ln in lines] == ["noop", "heuristic", "llm", "heuristic"]
    for png in (report.scores_png, report.components_png):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000


def test_report_on_missing_or_empty_db_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no such"):
        generate_report(tmp_path / "missing.db", tmp_path / "out")
    EpisodeStore(tmp_path / "empty.db").close()
    with pytest.raises(StoreError, match="no episodes"):
        generate_report(tmp_path / "empty.db", tmp_path / "out")


def test_token_table_reports_per_call_and_per_episode_usage() -> None:
    from codered_env.evaluation.report import token_table

    def llm(seed: int, calls: int, prompt: int, peak: int) -> EpisodeRecord:
        stats = {"calls": calls, "prompt_tokens": prompt, "completion_tokens": 10 * calls,
                 "max_prompt_tokens": peak}
        return record("llm", "task1", seed, 0.3, model="tiny", llm_stats=stats)

    heuristic = record("heuristic", "task1", 2, 0.8)
    table = token_table([llm(0, 10, 12_000, 1_300), llm(1, 30, 40_000, 1_500), heuristic])
    assert table is not None
    header, _, row = table.splitlines()
    assert "Prompt tokens / call" in header and "Total tokens (all n episodes)" in header
    # 52,000 prompt tokens over 40 calls: 1,300 per call (not the mean of per-episode means)
    assert row == "| task1 | llm | tiny | 2 | 20 | 1300 | 1500 | 26000 | 200 | 52400 |"
    assert token_table([record("heuristic", "task1", 0, 0.8)]) is None  # no LLM rows, no table
