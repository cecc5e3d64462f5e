"""`codered train` end to end for a few hundred steps, then the saved policy evaluated as an agent.

Skips cleanly without the `rl` extra (sb3-contrib, stable-baselines3) and PyTorch.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")
pytest.importorskip("gymnasium")

from codered_env.agents import make_agent
from codered_env.cli import app
from codered_env.runner import run_episode


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ppo")
    args = ["train", "--task", "task1", "--steps", "256", "--envs", "2", "--eval-every", "256",
            "--eval-seeds", "10000-10001", "--actions", "focused", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert 0.0 < summary["final"]["mean"] < 1.0 and set(summary["baselines"]) == {"random", "heuristic"}
    return out


def test_train_writes_curve_checkpoints_plot_and_run_record(run_dir: Path) -> None:
    rows = list(csv.DictReader((run_dir / "curve.csv").open()))
    assert int(rows[0]["steps"]) == 0 and int(rows[-1]["steps"]) >= 256
    assert json.loads((run_dir / "curve.json").read_text())[-1]["steps"] == int(rows[-1]["steps"])
    assert (run_dir / "curve.png").stat().st_size > 1000
    assert (run_dir / "best.zip").is_file() and (run_dir / "final.zip").is_file()
    assert any((run_dir / "checkpoints").glob("step_*.zip"))
    record = json.loads((run_dir / "run.json").read_text())
    assert record["config"]["task_id"] == "task1" and record["config"]["eval_seeds"] == [10000, 10001]
    assert record["machine"]["cpus"] and record["cpu_s"] > 0
    assert record["spread"] == "mean ± sample std"
    assert record["config"]["actions"] == "focused" and record["config"]["gamma"] == 0.995


def test_saved_policy_keeps_its_action_set(run_dir: Path, tmp_path: Path) -> None:
    agent = make_agent(f"ppo:{run_dir / 'final.zip'}")
    assert agent.env.actions == "focused"  # what it was trained on, so indices mean the same
    args = ["train", "--task", "task1", "--steps", "64", "--envs", "1", "--eval-seeds", "10000",
            "--out", str(tmp_path / "r"), "--resume", str(run_dir / "final.zip"), "--actions", "full"]
    result = CliRunner().invoke(app, args)
    text = " ".join(result.output.split())  # one error line, no traceback
    assert result.exit_code == 1 and "trained on the 'focused' action set" in text
    bad = CliRunner().invoke(app, ["train", "--actions", "smart", "--out", str(tmp_path / "b")])
    assert bad.exit_code != 0 and "unknown action set" in bad.output


def test_saved_policy_plays_like_any_agent_and_matches_the_gym_grade(run_dir: Path) -> None:
    agent = make_agent(f"ppo:{run_dir / 'final.zip'}")
    result = run_episode("task1", 10000, agent)
    curve = json.loads((run_dir / "curve.json").read_text())
    # the greedy policy's grade on seed 10000 is part of the last evaluation, through the gym path
    assert curve[-1]["min"] <= result.score <= curve[-1]["max"]
    assert result.score == run_episode("task1", 10000, make_agent(f"ppo:{run_dir / 'final.zip'}")).score


def test_eval_cli_accepts_ppo_agents(run_dir: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["eval", "--agents", f"heuristic,ppo:{run_dir / 'final.zip'}",
                                      "--tasks", "task1", "--seeds", "0-1", "--db", str(tmp_path / "e.db"),
                                      "--json"])
    assert result.exit_code == 0, result.output
    episodes = json.loads(result.stdout.strip().splitlines()[-1])
    assert {e["agent"] for e in episodes} == {"heuristic", f"ppo:{run_dir / 'final.zip'}"}
    assert all(0.0 < e["score"] < 1.0 for e in episodes)


def test_missing_policy_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not found"):
        make_agent(f"ppo:{tmp_path / 'nope.zip'}")


def test_sb3_make_vec_env_runs_the_registered_envs() -> None:
    """SB3's default ``render_mode="rgb_array"`` used to raise in the adapter."""
    from stable_baselines3.common.env_util import make_vec_env

    import codered_env.gym_env  # noqa: F401  registers the ids

    venv = make_vec_env("CodeRedEnv-task1-v16", n_envs=2, seed=0)
    venv.reset()
    for _ in range(5):
        _, rewards, _, infos = venv.step([0, 0])
        assert len(rewards) == 2 and "actions" not in infos[0]
    venv.close()
