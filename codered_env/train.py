"""``codered train``: MaskablePPO (sb3-contrib) on the Gymnasium adapter, with a learning curve.

Needs the optional ``rl`` extra (sb3-contrib, stable-baselines3) and a CPU PyTorch; both are
imported only inside the functions here, so ``import codered_env.train`` stays light.

A run writes into ``out_dir``:

- ``curve.csv`` / ``curve.json``: one row per evaluation (env steps, wall seconds, mean, sample
  std (n - 1), min and max final grade of the greedy policy over the held-out evaluation seeds);
- ``baselines.json``: the random and heuristic agents on the same evaluation seeds;
- ``curve.png``: the curve with the two baselines as horizontal lines;
- ``checkpoints/step_<n>.zip`` at every evaluation, ``best.zip`` (best mean grade) and
  ``final.zip``; any of them evaluates with ``codered eval --agents ppo:PATH``;
- ``run.json``: the configuration, machine, commit and result.

Training seeds are drawn by the vector environment's own seeding from ``seed`` (the simulation
seed of each episode is drawn from the env's ``np_random``); evaluation seeds are disjoint
(``EVAL_SEED_BASE`` and up), so evaluation is on held-out episodes.
"""

from __future__ import annotations

import csv
import json
import os
import platform
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ._optional import require

EVAL_SEED_BASE = 10_000


@dataclass
class TrainConfig:
    """Everything that defines a training run (stored in ``run.json``)."""

    task_id: str = "task1"
    seed: int = 0
    total_steps: int | None = 200_000
    wall_minutes: float | None = None
    n_envs: int = 4
    eval_every: int = 10_000
    eval_seeds: list[int] = field(default_factory=lambda: list(range(EVAL_SEED_BASE, EVAL_SEED_BASE + 10)))
    n_steps: int = 256
    batch_size: int = 256
    n_epochs: int = 4
    learning_rate: float = 3e-4
    gamma: float = 0.995  # 1.0 made task3 collapse to the floor grade (docs/TRAINING.md)
    ent_coef: float = 0.01
    net_arch: list[int] = field(default_factory=lambda: [256, 256])
    torch_threads: int = 1
    actions: str = "full"  # the adapter's action set ("focused": gym_env.focus)
    out_dir: str = "runs/ppo"
    resume: str | None = None  # a checkpoint .zip to continue from (its step count carries on)


def require_rl() -> None:
    """Fail with an install hint when the ``rl`` extra is missing."""
    require("rl")


def make_masked_env(task_id: str, **kwargs: Any) -> Any:
    """``gym.make`` of the task with sb3-contrib's ``ActionMasker`` on top (``kwargs`` go to
    ``CodeRedGymEnv``, e.g. ``actions="focused"``)."""
    import gymnasium
    from sb3_contrib.common.wrappers import ActionMasker

    from .gym_env.registration import flat_id  # importing the package registers the ids

    env = gymnasium.make(flat_id(task_id), **kwargs)
    return ActionMasker(env, lambda e: e.unwrapped.action_masks())


def evaluate_policy_grades(model: Any, task_id: str, seeds: Sequence[int]) -> list[float]:
    """Final grade of the greedy (deterministic) masked policy on each evaluation seed, played
    by the one episode loop (``runner.run_episode``) like any saved policy."""
    from .agents.ppo import PPOAgent
    from .runner import run_episode

    return [run_episode(task_id, int(seed), PPOAgent.from_model(model)).score for seed in seeds]


def baseline_grades(task_id: str, seeds: Sequence[int]) -> dict[str, list[float]]:
    """The random and heuristic agents' final grades on the same seeds (in-process runner)."""
    from .agents import make_agent
    from .runner import run_episode

    return {
        name: [run_episode(task_id, s, make_agent(name, s)).score for s in seeds]
        for name in ("random", "heuristic")
    }


def machine_info() -> dict[str, Any]:
    """Machine, load and commit, recorded with every run."""
    return {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "load_avg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None, "commit": _commit()}


def _commit() -> str | None:
    """The checkout's short commit, `` +changes`` when tracked files differ from it (None outside git)."""
    from .evaluation.provenance import git_commit

    commit = git_commit()
    if commit is None:
        return None
    head, _, dirty = commit.partition("+")
    return head[:7] + (" +changes" if dirty else "")


def _summary(steps: int, wall: float, grades: list[float]) -> dict[str, Any]:
    """One evaluation row; ``std`` is the sample std (n - 1), the spread every report shows."""
    from .evaluation.report import mean_and_sample_std

    mean, std = mean_and_sample_std(grades)
    return {"steps": steps, "wall_s": round(wall, 1), "cpu_s": round(time.process_time(), 1),
            "mean": round(mean, 4), "std": round(std, 4), "min": round(min(grades), 4),
            "max": round(max(grades), 4)}


def _write_curve(out: Path, rows: list[dict[str, Any]]) -> None:
    with (out / "curve.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (out / "curve.json").write_text(json.dumps(rows, indent=1) + "\n")


def plot_curve(
    out: Path, task_id: str, rows: list[dict[str, Any]], baselines: dict[str, list[float]]
) -> Path:
    """``curve.png``: mean ± sample std grade over env steps, with the baselines' means as lines."""
    import matplotlib

    from .evaluation.report import SPREAD_LABEL

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    x = [r["steps"] for r in rows]
    mean = [r["mean"] for r in rows]
    std = [r["std"] for r in rows]
    ax.plot(x, mean, marker="o", label=f"MaskablePPO (greedy), {SPREAD_LABEL}")
    ax.fill_between(x, [m - s for m, s in zip(mean, std, strict=True)],
                    [m + s for m, s in zip(mean, std, strict=True)], alpha=0.2)
    for (name, grades), style in zip(sorted(baselines.items()), ("--", ":"), strict=False):
        ax.axhline(statistics.fmean(grades), linestyle=style, color="grey" if name == "random" else "black",
                   label=f"{name} {statistics.fmean(grades):.3f}")
    ax.set(xlabel="environment steps", ylabel="final grade (held-out seeds)", title=f"{task_id}", ylim=(0, 1))
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path = out / "curve.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def train(config: TrainConfig, log: Any = print) -> dict[str, Any]:
    """Train MaskablePPO per ``config``; returns the ``run.json`` content."""
    require_rl()
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv

    from .evaluation.report import SPREAD_LABEL

    if config.total_steps is None and config.wall_minutes is None:
        raise ValueError("give a step budget (total_steps) or a wall-clock budget (wall_minutes)")
    torch.set_num_threads(config.torch_threads)
    out = Path(config.out_dir)
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    baselines = baseline_grades(config.task_id, config.eval_seeds)
    (out / "baselines.json").write_text(json.dumps(baselines, indent=1) + "\n")
    venv = DummyVecEnv([lambda: make_masked_env(config.task_id, actions=config.actions)] * config.n_envs)
    venv.seed(config.seed)
    if config.resume:
        model = MaskablePPO.load(config.resume, env=venv, device="cpu")
        trained_on = getattr(model, "codered_actions", "full")
        if trained_on != config.actions:
            raise ValueError(f"{config.resume} was trained on the {trained_on!r} action set, "
                             f"not {config.actions!r}")
    else:
        model = MaskablePPO(
            "MultiInputPolicy", venv, seed=config.seed, n_steps=config.n_steps, batch_size=config.batch_size,
            n_epochs=config.n_epochs, learning_rate=config.learning_rate, gamma=config.gamma,
            ent_coef=config.ent_coef, policy_kwargs={"net_arch": list(config.net_arch)}, verbose=0,
            device="cpu",
        )
    model.codered_actions = config.actions  # saved with the model: PPOAgent plays the same action set
    machine = machine_info()  # the commit as the run starts (the tree may move while it runs)
    rows: list[dict[str, Any]] = []
    best = {"mean": -1.0}
    started = time.monotonic()
    deadline = None if config.wall_minutes is None else started + 60 * config.wall_minutes

    def evaluate(steps: int) -> None:
        grades = evaluate_policy_grades(model, config.task_id, config.eval_seeds)
        row = _summary(steps, time.monotonic() - started, grades)
        rows.append(row)
        model.save(out / "checkpoints" / f"step_{steps}.zip")
        if row["mean"] > best["mean"]:
            best.update(row)
            model.save(out / "best.zip")
        _write_curve(out, rows)
        log(f"[{config.task_id}] steps {steps:>7} wall {row['wall_s']:>6.0f}s grade {row['mean']:.3f} "
            f"± {row['std']:.3f} sample std (best {best['mean']:.3f})")

    class Budget(BaseCallback):
        """Evaluates at the first rollout start past every ``eval_every`` steps and stops at the
        wall-clock budget.

        A rollout start comes right after the update on the previous rollout, so the policy
        evaluated (and saved as ``step_<n>.zip``) is the one trained on all ``n`` steps; evaluating
        from ``_on_step`` would catch the last step of a rollout, before its update, and the last
        row would not be the policy saved as ``final.zip``."""

        def __init__(self) -> None:
            super().__init__()
            self.next_eval = model.num_timesteps + config.eval_every

        def _on_rollout_start(self) -> None:
            if self.num_timesteps >= self.next_eval:
                while self.next_eval <= self.num_timesteps:
                    self.next_eval += config.eval_every
                evaluate(self.num_timesteps)

        def _on_step(self) -> bool:
            return deadline is None or time.monotonic() < deadline

    evaluate(model.num_timesteps)
    model.learn(total_timesteps=config.total_steps or 10**12, callback=Budget(),
                reset_num_timesteps=not config.resume)
    if rows[-1]["steps"] != model.num_timesteps:
        evaluate(model.num_timesteps)
    model.save(out / "final.zip")
    plot_curve(out, config.task_id, rows, baselines)
    result = {
        "config": asdict(config), "machine": machine | {"load_avg_end": machine_info()["load_avg"]},
        "spread": SPREAD_LABEL, "curve": rows, "best": best,
        "final": rows[-1], "wall_s": round(time.monotonic() - started, 1),
        "cpu_s": round(time.process_time(), 1),
        "baselines": {k: round(statistics.fmean(v), 4) for k, v in baselines.items()},
    }
    (out / "run.json").write_text(json.dumps(result, indent=1) + "\n")
    return result
