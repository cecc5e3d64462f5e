"""`codered eval` options for scale: --workers, --concurrency, --backend, --address, rate limits;
the per-episode `llm-stats:` line of LLM episodes."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from fake_endpoint import FakeEndpoint
from typer.testing import CliRunner

from codered_env.cli import app
from codered_env.evaluation.backends import RAY_UV_HOOK_VAR, _import_ray, ray_results
from codered_env.evaluation.episode import EpisodeJob
from codered_env.evaluation.store import EpisodeStore
from codered_env.runlog import format_stats

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
    with pytest.raises(RuntimeError, match=r"--extra ray.*pip install \"\.\[ray\]\""):
        list(ray_results([EpisodeJob("noop", "task1", 0)]))
    result = runner.invoke(app, [*BASE, "--backend", "ray", "--db", str(tmp_path / "r.db")])
    assert result.exit_code == 1 and 'pip install ".[ray]"' in " ".join(result.output.split())


def test_llm_episodes_print_the_inference_stats_line(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    db = tmp_path / "llm.db"
    command = ["eval", "--agents", "llm", "--tasks", "task1", "--seeds", "0-1", "--concurrency", "2",
               "--json", "--db", str(db)]
    with FakeEndpoint() as endpoint:
        for name, value in {"API_BASE_URL": endpoint.url, "HF_TOKEN": "k-cli-stats",
                            "MODEL_NAME": "fake/m", "CODERED_LLM_TIMEOUT": "5"}.items():
            monkeypatch.setenv(name, value)
        first = runner.invoke(app, command)
        again = runner.invoke(app, command)
    assert first.exit_code == again.exit_code == 0, first.output
    with EpisodeStore(db) as store:
        stats = {r.seed: r.llm_stats for r in store.records()}
    assert sorted(stats) == [0, 1] and all(s["calls"] > 0 for s in stats.values())
    lines = [line for line in first.stderr.splitlines() if "llm-stats:" in line]
    # the formatter of inference.py, one line per episode played, never on stdout
    assert sorted(lines) == [f"task1 seed={seed} {format_stats(stats[seed])}" for seed in (0, 1)]
    assert f"llm-stats: calls={stats[0]['calls']} retries=0 timeouts=0 " in lines[0] + lines[1]
    assert "llm-stats" not in first.stdout and json.loads(first.stdout)[0]["agent"] == "llm"
    assert "llm-stats" not in again.stderr  # reused episodes were not played in this run


@pytest.mark.parametrize(("preset", "expected"), [(None, "0"), ("1", "1")])
def test_rays_uv_hook_is_off_unless_the_user_set_it(monkeypatch: pytest.MonkeyPatch,
                                                    preset: str | None, expected: str) -> None:
    # Under `uv run` the hook makes Ray's workers build a project environment without the ray
    # extra, and they never start (docs/SCALING.md); Ray reads the variable when first imported.
    if preset is None:
        monkeypatch.delenv(RAY_UV_HOOK_VAR, raising=False)
    else:
        monkeypatch.setenv(RAY_UV_HOOK_VAR, preset)
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(RuntimeError):
        _import_ray()
    assert os.environ[RAY_UV_HOOK_VAR] == expected
