"""`codered eval` options for scale: --workers, --concurrency, --backend, --address, rate limits."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codered_env.cli import app
from codered_env.evaluation.backends import ray_results
from codered_env.evaluation.episode import EpisodeJob

runner = CliRunner()
BASE = ["eval", "--agents", "noop,heuristic", "--tasks", "task1", "--seeds", "0-1", "--json"]


def test_workers_do_not_change_the_output(tmp_path: Path) -> None:
    one = runner.invoke(app, [*BASE, "--workers", "1", "--db", str(tmp_path / "a.db")])
    two = runner.invoke(app, [*BASE, "--workers", "2", "--db", str(tmp_path / "b.db")])
    assert one.exit_code == two.exit_code == 0, one.output + two.output
    assert one.stdout == two.stdout and '"prompt_tokens": null' in one.stdout


@pytest.mark.parametrize("bad", [["--backend", "spark"], ["--concurrency", "0"], ["--workers", "0"],
                                 ["--requests-per-min", "-5"], ["--address", "auto"],
                                 ["--agents", "heuristic:nothing"]])
def test_bad_scale_options_are_usage_errors(tmp_path: Path, bad: list[str]) -> None:
    result = runner.invoke(app, [*BASE, *bad, "--db", str(tmp_path / "x.db")])
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "x.db").exists()


def test_ray_backend_without_ray_says_how_to_install(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(RuntimeError, match=r"codered-env\[ray\]"):
        list(ray_results([EpisodeJob("noop", "task1", 0)]))
    result = runner.invoke(app, [*BASE, "--backend", "ray", "--db", str(tmp_path / "r.db")])
    assert result.exit_code == 1 and "codered-env[ray]" in result.output
