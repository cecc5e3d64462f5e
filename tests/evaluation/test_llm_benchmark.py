"""LLM results as agent benchmarks report them: ``codered eval --repeats k`` stores every run,
``codered report`` gives pass^k, a 95% interval, finish reasons, tokens and wall time, and a
leaderboard JSON valid against its schema; a dead endpoint makes the run exit non-zero."""

from __future__ import annotations

import json
import math
import socket
from pathlib import Path

import jsonschema
import pytest
from fake_endpoint import FakeEndpoint
from typer.testing import CliRunner

from codered_env.cli import app
from codered_env.evaluation.benchmark import (
    SCHEMA_PATH,
    benchmark_rows,
    episode_finish,
    leaderboard,
    pass_hat_k,
)
from codered_env.evaluation.store import EpisodeRecord, EpisodeStore

KEY = "k-test-benchmark"


def llm_env(url: str, **extra: str) -> dict[str, str]:
    return {"HF_TOKEN": KEY, "API_BASE_URL": url, "MODEL_NAME": "fake/m", "CODERED_LLM_TIMEOUT": "3",
            "CODERED_LLM_RETRIES": "1", "CODERED_LLM_BACKOFF": "0.01", "CODERED_LLM_BACKOFF_MAX": "0.02",
            "CODERED_LLM_TEMPERATURE": "0.7", **extra}


def dead_url() -> str:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_pass_hat_k_is_the_unbiased_estimate() -> None:
    # 4 runs, 2 successes: pass^1 = 1/2, pass^2 = C(2,2)/C(4,2) = 1/6; a pair always solved: 1
    assert pass_hat_k([(4, 2)], 1) == 0.5
    assert math.isclose(pass_hat_k([(4, 2)], 2) or 0, 1 / 6)
    assert math.isclose(pass_hat_k([(4, 2), (4, 4)], 2) or 0, (1 / 6 + 1) / 2)
    assert pass_hat_k([(4, 2), (1, 1)], 2) is None  # a pair with fewer runs than k
    assert pass_hat_k([(3, 0)], 3) == 0.0


def test_finish_reasons_and_counts() -> None:
    stats = {"unanswered": 2, "fallbacks_by_reason": {"no_action": 1, "echo": 1, "invalid_action": 2,
                                                       "connection": 2}}
    done = episode_finish("resolved", 10, stats, invalid_actions=1, endpoint_kind="remote")
    assert done == {"finish_reason": "completed", "invalid_format": 2, "invalid_action": 3,
                    "context_limit": 0, "endpoint_failures": 2, "endpoint_partial": True,
                    "endpoint_kind": "remote"}
    assert episode_finish("step_budget", 5, None, 0)["finish_reason"] == "step_budget"
    assert episode_finish("stopped", 5, None, 0)["finish_reason"] == "step_cap"
    assert episode_finish("horizon", 5, None, 0, failure="interrupted")["finish_reason"] == "interrupted"
    dead = episode_finish("horizon", 4, {"unanswered": 4, "fallbacks_by_reason": {"connection": 4}}, 0)
    assert (dead["finish_reason"], dead["endpoint_partial"]) == ("endpoint_failure", False)
    too_long = {"unanswered": 3, "fallbacks_by_reason": {"context_length": 3}}
    assert episode_finish("horizon", 3, too_long, 0)["finish_reason"] == "context_limit"


def _record(seed: int, repeat: int, score: float) -> EpisodeRecord:
    return EpisodeRecord(agent="llm", model="m", task_id="task1", seed=seed, score=score, components={},
                         steps=3, wall_time_s=1.0, trajectory="", repeat=repeat,
                         agent_fingerprint=json.dumps({"temperature": 0.7, "max_tokens": 256}),
                         outcome=episode_finish("resolved", 3, {"unanswered": 0}, 0, None, "local"))


def test_rows_group_repeats_by_pair() -> None:
    records = [_record(0, 0, 0.5), _record(0, 1, 0.05), _record(1, 0, 0.3), _record(1, 1, 0.4)]
    (row,) = benchmark_rows(records, threshold=0.1)
    assert (row.repeats, row.pass_k()) == (2, {1: 0.75, 2: 0.5})
    mean, half = row.score()
    assert math.isclose(mean, (0.275 + 0.35) / 2) and half > 0
    document = leaderboard(records, 0.1, "0.1.0")
    jsonschema.validate(document, json.loads(SCHEMA_PATH.read_text()))
    assert document["entries"][0]["sampling"] == {"temperature": 0.7, "max_tokens": 256}


def test_eval_repeats_then_report_pass_k_and_leaderboard_json(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    db, out = tmp_path / "e.db", tmp_path / "report"
    runner = CliRunner()
    with FakeEndpoint() as endpoint:
        for name, value in llm_env(endpoint.url).items():
            monkeypatch.setenv(name, value)
        ran = runner.invoke(app, ["eval", "--agents", "llm", "--tasks", "task1", "--seeds", "0-1",
                                  "--repeats", "3", "--db", str(db), "--json", "--workers", "1"])
    assert ran.exit_code == 0, ran.output
    with EpisodeStore(db) as store:
        rows = store.records()
    assert sorted((r.seed, r.repeat) for r in rows) == [(s, k) for s in (0, 1) for k in range(3)]
    assert all(r.outcome and r.outcome["finish_reason"] in ("completed", "step_budget", "horizon")
               and r.outcome["endpoint_kind"] == "local" for r in rows)
    monkeypatch.setenv("SUCCESS_THRESHOLD", "0.05")
    report = runner.invoke(app, ["report", "--db", str(db), "--out", str(out)])
    assert report.exit_code == 0, report.output
    text = (out / "report.md").read_text()
    assert "success = score >= 0.05" in text and "pass^k (k)" in text and "2 x 3" in text
    exported = runner.invoke(app, ["report", "--db", str(db), "--out", str(out), "--json"])
    assert exported.exit_code == 0
    document = json.loads(exported.stdout)
    jsonschema.validate(document, json.loads(SCHEMA_PATH.read_text()))
    (entry,) = document["entries"]
    assert (entry["pairs"], entry["repeats"], sorted(entry["pass_k"])) == (2, 3, ["1", "2", "3"])
    assert entry["sampling"]["temperature"] == 0.7 and entry["success_threshold"] == 0.05
    assert sum(entry["finish_reasons"].values()) == 6
    assert entry["per_episode"]["completion_tokens"] > 0 and entry["per_episode"]["wall_time_s"] > 0


def test_eval_exits_non_zero_when_the_endpoint_is_dead(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in llm_env(dead_url()).items():
        monkeypatch.setenv(name, value)
    ran = CliRunner().invoke(app, ["eval", "--agents", "llm", "--tasks", "task1", "--seeds", "0",
                                   "--db", str(tmp_path / "dead.db")])
    assert ran.exit_code == 3, ran.output
    assert "endpoint failed on every step" in ran.output
    with EpisodeStore(tmp_path / "dead.db") as store:
        assert len(store) == 0  # a broken run is not a result


def test_a_schema_3_database_is_rebuilt_with_repeat_zero(tmp_path: Path) -> None:
    import sqlite3

    from codered_env.evaluation import store as store_module

    path = tmp_path / "v3.db"
    old_table = store_module._EPISODES_TABLE.replace(
        "    repeat INTEGER NOT NULL DEFAULT 0,\n    outcome TEXT,\n", "").replace(
        "    city TEXT NOT NULL DEFAULT 'prakashnagar',\n", "").replace(
        "seed, city, repeat, package_version", "seed, package_version")
    columns = store_module._COLUMNS[:-3]
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("INSERT INTO meta VALUES ('schema_version', '3')")
        conn.execute(old_table)
        row = _record(5, 0, 0.4)
        values = {**row.__dict__, "components": "{}", "llm_stats": None}
        conn.execute(f"INSERT INTO episodes ({','.join(columns)}) VALUES ({','.join('?' * len(columns))})",
                     tuple(values[c] for c in columns))
    with EpisodeStore(path) as store:
        (migrated,) = store.records()
        assert (migrated.seed, migrated.repeat, migrated.outcome) == (5, 0, None)
        assert store.add(_record(5, 1, 0.2))  # a second run of the same (task, seed) now fits
        assert len(store) == 2
