"""The stored-evaluation commands: eval --db (resume), report (stdout table + PNGs), replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codered_env.cli import app
from codered_env.evaluation.trajectory import StepRecord, Trajectory

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HF_TOKEN", "API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)


def test_eval_then_report(tmp_path: Path) -> None:
    db = str(tmp_path / "e.db")
    args = ["eval", "--agents", "noop,heuristic", "--tasks", "task1", "--seeds", "0-2", "--db", db]
    first = runner.invoke(app, [*args, "--json"])
    assert first.exit_code == 0, first.output
    assert len(json.loads(first.stdout)) == 6 and "stored 6, reused 0" in first.stderr
    second = runner.invoke(app, [*args, "--json"])
    assert second.stdout == first.stdout and "stored 0, reused 6" in second.stderr
    out = tmp_path / "rep"
    report = runner.invoke(app, ["report", "--db", db, "--out", str(out)])
    assert report.exit_code == 0, report.output
    lines = [ln for ln in report.stdout.splitlines() if ln.startswith("| task1")]
    table = [ln for ln in lines if "±" in ln]  # the score table
    clinical = [ln for ln in lines if "±" not in ln]  # outcomes beside the score (issue 21)
    assert [ln.split(" | ")[1] for ln in clinical] == ["noop", "heuristic"]
    assert all(ln.split(" | ")[3] == "3" for ln in clinical)
    assert [ln.split(" | ")[1] for ln in table] == ["noop", "heuristic"]
    assert all(" | 3 | " in ln and ln.split(" | ")[-3] == "0–2" for ln in table)
    assert all(ln.split(" | ")[-1].startswith("sim ") for ln in table)  # the Provenance column
    noop_mean = float(table[0].split(" | ")[4].split(" ± ")[0])
    heuristic_mean = float(table[1].split(" | ")[4].split(" ± ")[0])
    assert heuristic_mean > 0.5 > noop_mean
    assert (out / "report.md").read_text() == report.stdout
    assert (out / "scores.png").stat().st_size > 0 and (out / "components.png").stat().st_size > 0


def test_eval_llm_without_key_and_bad_input(tmp_path: Path) -> None:
    db = str(tmp_path / "e.db")
    result = runner.invoke(app, ["eval", "--agents", "llm", "--tasks", "task1", "--db", db])
    assert result.exit_code != 0 and "API key" in result.output
    assert runner.invoke(app, ["eval", "--agents", "wizard", "--db", db]).exit_code == 2
    assert runner.invoke(app, ["eval", "--seeds", "9-2", "--db", db]).exit_code == 2
    assert runner.invoke(app, ["eval", "--tasks", "task9", "--db", db]).exit_code == 2
    bogus = tmp_path / "bogus.db"
    bogus.write_bytes(b"x" * 2048)
    assert runner.invoke(app, ["report", "--db", str(bogus)]).exit_code == 1


def test_replay_reports_and_detects_tampering(tmp_path: Path) -> None:
    from codered_env.sim import grade_episode

    actions = [{"action_type": "dispatch_ambulance", "ambulance_id": "ALS1", "patient_id": "P1"},
               {"action_type": "maintain_plan"}]
    score = grade_episode("task1", 0, actions)["score"]
    steps = [StepRecord(i + 1, a, 0.0, False) for i, a in enumerate(actions)]
    path = tmp_path / "t.jsonl"
    Trajectory("task1", 0, "heuristic", "heuristic", steps=steps, end={"score": score}).save(path)
    result = runner.invoke(app, ["replay", str(path), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["score"] == score and payload["matches"] is True
    Trajectory("task1", 0, "x", "x", steps=steps, end={"score": 0.99}).save(path)
    assert runner.invoke(app, ["replay", str(path)]).exit_code == 3
    path.write_text("garbage\n")
    assert runner.invoke(app, ["replay", str(path)]).exit_code == 1
    assert runner.invoke(app, ["replay", str(tmp_path / "missing.jsonl")]).exit_code == 1
