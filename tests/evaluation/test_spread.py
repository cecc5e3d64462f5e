"""One spread everywhere: `codered eval` and `codered report` print the same mean ± sample std."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codered_env.cli import app
from codered_env.evaluation.report import SPREAD_LABEL, mean_and_sample_std


def test_eval_table_and_report_show_the_same_sample_std(tmp_path: Path) -> None:
    db = tmp_path / "eval.db"
    runner = CliRunner()
    result = runner.invoke(app, ["eval", "--agents", "random", "--tasks", "task1,task2",
                                 "--seeds", "0-3", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert SPREAD_LABEL in result.stdout
    eval_cells = re.findall(r"(\d\.\d{3} ± \d\.\d{3})", result.stdout)
    episodes = runner.invoke(app, ["eval", "--agents", "random", "--tasks", "task1,task2",
                                   "--seeds", "0-3", "--db", str(db), "--json"])
    scores = {t: [e["score"] for e in json.loads(episodes.stdout) if e["task"] == t]
              for t in ("task1", "task2")}
    expected = [f"{statistics.fmean(v):.3f} ± {statistics.stdev(v):.3f}" for v in scores.values()]
    assert eval_cells == expected
    assert statistics.stdev(scores["task1"]) != statistics.pstdev(scores["task1"])

    report = runner.invoke(app, ["report", "--db", str(db), "--out", str(tmp_path / "r")])
    assert report.exit_code == 0, report.output
    report_cells = re.findall(r"\| (\d\.\d{3} ± \d\.\d{3}) \|", report.stdout)
    assert report_cells == eval_cells
    assert f"Score ({SPREAD_LABEL})" in report.stdout


def test_sample_std_of_one_value_is_zero() -> None:
    assert mean_and_sample_std([0.4]) == (0.4, 0.0)
    assert mean_and_sample_std([0.2, 0.4, 0.6]) == pytest.approx((0.4, 0.2))


def test_report_defaults_to_an_untracked_folder(tmp_path: Path, monkeypatch) -> None:
    db = tmp_path / "eval.db"
    runner = CliRunner()
    assert runner.invoke(app, ["eval", "--agents", "noop", "--tasks", "task1", "--seeds", "0",
                               "--db", str(db)]).exit_code == 0
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["report", "--db", str(db)]).exit_code == 0
    assert (tmp_path / "report" / "report.md").is_file()
    ignored = (Path(__file__).resolve().parents[2] / ".gitignore").read_text().split()
    assert "/report/" in ignored
