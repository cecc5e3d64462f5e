"""``factored:PATH``: a policy saved by ``codered train --interface factored`` played by
``codered eval``; the errors for a missing or wrong file and for a missing torch.

Skips cleanly without PyTorch (the ``rl`` extra)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

torch = pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")

from codered_env import _optional  # noqa: E402
from codered_env.agents import make_agent  # noqa: E402
from codered_env.cli import app  # noqa: E402
from codered_env.factored_ppo import FactoredConfig, greedy_grades, train_factored  # noqa: E402
from codered_env.runner import run_episode  # noqa: E402


@pytest.mark.slow
def test_a_trained_policy_is_evaluated_by_codered_eval(tmp_path: Path) -> None:
    config = FactoredConfig(task_id="task1", total_steps=32, n_envs=2, n_steps=16, minibatch=16, hidden=16,
                            eval_every=1000, eval_seeds=[10_000], out_dir=str(tmp_path / "run"))
    result = train_factored(config, log=lambda line: None)
    path = tmp_path / "run" / "policy.pt"
    agent = make_agent(f"factored:{path}")
    episode = run_episode("task1", 10_000, agent)
    assert episode.score == pytest.approx(result["final"]["mean"])  # the trainer's own greedy grade
    assert episode.score == pytest.approx(greedy_grades(agent.policy, "task1", [10_000])[0])
    args = ["eval", "--agents", f"factored:{path}", "--tasks", "task1", "--seeds", "10000",
            "--db", str(tmp_path / "eval.db"), "--json", "--workers", "1"]
    run = CliRunner().invoke(app, args)
    assert run.exit_code == 0, run.output
    (row,) = json.loads(run.stdout.strip().splitlines()[-1])
    assert row["agent"] == f"factored:{path}" and row["score"] == pytest.approx(episode.score)


def test_a_wrong_or_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "none.pt"
    with pytest.raises(ValueError, match="factored policy file not found"):
        make_agent(f"factored:{missing}")
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="not a saved factored policy"):
        make_agent(f"factored:{junk}")
    other = tmp_path / "other.pt"
    torch.save({"weights": [1, 2]}, other)
    with pytest.raises(ValueError, match="not a factored policy"):
        make_agent(f"factored:{other}")
    mismatched = tmp_path / "mismatched.pt"
    torch.save({"state_dict": {"units.0.weight": torch.zeros(2, 2)}, "config": {"hidden": 16}}, mismatched)
    with pytest.raises(ValueError, match="do not fit"):
        make_agent(f"factored:{mismatched}")
    run = CliRunner().invoke(app, ["eval", "--agents", f"factored:{junk}", "--tasks", "task1", "--seeds", "0",
                                   "--db", str(tmp_path / "eval.db")])
    assert run.exit_code != 0 and "not a saved factored policy" in run.output


def test_without_torch_the_error_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(_optional, "importable", lambda module: module != "torch")
    with pytest.raises(ImportError, match=r"^a factored policy needs torch.*--extra rl"):
        make_agent(f"factored:{tmp_path / 'policy.pt'}")
    with pytest.raises(ImportError, match=r"^a ppo:PATH agent needs torch.*--extra rl"):
        make_agent(f"ppo:{tmp_path / 'policy.zip'}")


def test_a_file_that_is_not_a_maskable_ppo_zip_is_a_clear_error(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib")
    pytest.importorskip("torch")
    import zipfile

    foreign = tmp_path / "policy.zip"
    with zipfile.ZipFile(foreign, "w") as z:
        z.writestr("something.txt", "not a policy")
    with pytest.raises(ValueError, match=r"not a policy saved by codered train: .*factored:PATH"):
        make_agent(f"ppo:{foreign}")
