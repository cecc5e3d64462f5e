"""Runs of the factored interface's reference learner (``codered_env.factored_ppo``) for
docs/TRAINING.md, and the files kept from them.

    uv run python bench/factored_runs.py bc --tasks task1,task2 --episodes 100 --out RUNS
    uv run python bench/factored_runs.py ppo --task task1 --seeds 0,1,2 --steps 30000 --out RUNS [--bc 100]
    uv run python bench/factored_runs.py keep RUNS/ppo-task1-scratch \
        docs/results/training_factored/ppo-task1-scratch

``bc`` clones the heuristic on each task (no PPO) and writes ``RUNS/bc-<task>/``; ``ppo`` trains
one run per training seed into ``RUNS/<name>/seed<k>/``; ``keep`` copies the small files of a run
(``run.json``, ``bc.json``, per-seed curves) into the docs folder, with ``curve.csv`` (mean, sample
std, min and max over the training seeds at every evaluation) and ``curve.png``. Every run is
evaluated on the held-out seeds 10000-10019 (``--eval-seeds``); one torch thread.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import statistics
from pathlib import Path
from typing import Any

from codered_env.factored_ppo import EVAL_SEED_BASE, FactoredConfig, train_factored

EVAL_SEEDS = list(range(EVAL_SEED_BASE, EVAL_SEED_BASE + 20))
DEFAULTS = FactoredConfig()


def _seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def bc(args: argparse.Namespace) -> None:
    for task in args.tasks.split(","):
        config = FactoredConfig(task_id=task, total_steps=0, bc_episodes=args.episodes, bc_epochs=args.epochs,
                                bc_type_weight_power=args.weight_power, bc_dagger_rounds=args.dagger_rounds,
                                bc_dagger_episodes=args.dagger_episodes, eval_seeds=_seeds(args.eval_seeds),
                                out_dir=str(Path(args.out) / f"bc-{task}"))
        train_factored(config)


def run_name(args: argparse.Namespace) -> str:
    """The folder of a PPO run: its task, start and every setting that differs from the default."""
    name = f"ppo-{args.task}-" + ("bc" if args.bc or args.init_from else "scratch")
    name += "-anneal" if args.anneal_lr else ""
    name += "-per-minute" if args.gamma_minute else ""
    name += "-select" if args.select_seeds else ""
    name += "-type-first" if args.type_first else ""
    name += f"-reward-x{args.reward_scale:g}" if args.reward_scale != 1.0 else ""
    name += f"-decision-cost{args.decision_cost:g}" if args.decision_cost else ""
    name += f"-lambda{args.gae_lambda:g}" if args.gae_lambda != DEFAULTS.gae_lambda else ""
    name += f"-lr{args.learning_rate:g}" if args.learning_rate != DEFAULTS.learning_rate else ""
    return name + (f"-envs{args.envs}" if args.envs != DEFAULTS.n_envs else "")


def ppo(args: argparse.Namespace) -> None:
    name = run_name(args)
    for seed in (int(s) for s in args.seeds.split(",")):
        config = FactoredConfig(
            task_id=args.task, seed=seed, total_steps=args.steps, eval_every=args.eval_every,
            init_from=args.init_from, bc_episodes=args.bc, bc_epochs=args.epochs, anneal_lr=args.anneal_lr,
            gamma_minute=args.gamma_minute or None, type_first=args.type_first,
            select_seeds=_seeds(args.select_seeds) if args.select_seeds else [],
            bc_dagger_rounds=args.dagger_rounds, reward_scale=args.reward_scale,
            learning_rate=args.learning_rate, n_envs=args.envs, decision_cost=args.decision_cost,
            gae_lambda=args.gae_lambda,
            bc_dagger_episodes=args.dagger_episodes, eval_seeds=_seeds(args.eval_seeds),
            out_dir=str(Path(args.out) / name / f"seed{seed}"))
        train_factored(config)


def spread(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean, sample std, min and max of the per-seed means at one evaluation."""
    means = [r["mean"] for r in rows]
    std = statistics.stdev(means) if len(means) > 1 else 0.0
    return {"steps": rows[0]["steps"], "seeds": len(means), "mean": round(statistics.fmean(means), 4),
            "std": round(std, 4), "min": min(means), "max": max(means)}


def keep(args: argparse.Namespace) -> None:
    src, dst = Path(args.run), Path(args.dest)
    dst.mkdir(parents=True, exist_ok=True)
    runs = sorted(p for p in src.iterdir() if (p / "run.json").exists()) or [src]
    for run in runs:
        target = dst if run == src else dst / run.name
        target.mkdir(parents=True, exist_ok=True)
        (target / "run.json").write_text(json.dumps(without_machine_paths(
            json.loads((run / "run.json").read_text())), indent=1) + "\n")
        if (run / "bc.json").exists():
            shutil.copy(run / "bc.json", target / "bc.json")
    curves = [json.loads((r / "run.json").read_text())["curve"] for r in runs]
    if not curves[0]:
        return
    length = min(len(c) for c in curves)
    table = [spread([c[i] for c in curves]) for i in range(length)]
    with (dst / "curve.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    # the heuristic the runs graded under their own rubric, as the tables measure against it
    heuristic = statistics.fmean(json.loads((r / "run.json").read_text())["heuristic"] for r in runs)
    plot(dst / "curve.png", dst.name, table, curves, heuristic)


def without_machine_paths(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with its configuration's file paths cut to the run's own folders (``bc-task1``,
    ``ppo-task2-scratch/seed0``, ``bc-task1/policy.pt``): where a run was written on the machine
    that trained it says nothing to a reader."""
    config = dict(record.get("config") or {})
    for key in ("out_dir", "init_from"):
        value = config.get(key)
        if value:
            parts = Path(value).parts
            keep = 2 if parts[-1].startswith("seed") or parts[-1].endswith(".pt") else 1
            config[key] = "/".join(parts[-keep:])
    return {**record, "config": config} if "config" in record else record


def plot(path: Path, title: str, table: list[dict[str, Any]], curves: list[list[dict[str, Any]]],
         heuristic: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    x = [r["steps"] for r in table]
    for curve in curves:
        ax.plot([r["steps"] for r in curve], [r["mean"] for r in curve], color="tab:blue", alpha=0.3, lw=0.8)
    ax.plot(x, [r["mean"] for r in table], marker="o", color="tab:blue",
            label=f"mean of {len(curves)} training seeds (greedy)")
    ax.fill_between(x, [r["min"] for r in table], [r["max"] for r in table], alpha=0.2,
                    label="min-max over seeds")
    ax.axhline(heuristic, linestyle="--", color="black", label=f"heuristic {heuristic:.3f}")
    ax.axhline(0.9 * heuristic, linestyle=":", color="grey", label="0.9x heuristic")
    ax.set(xlabel="environment steps", ylabel="final grade (held-out seeds)", title=title, ylim=(0, 1))
    ax.legend(loc="lower right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    for name in ("bc", "ppo"):
        p = sub.add_parser(name)
        p.add_argument("--out", default="/tmp/codered-factored")
        p.add_argument("--epochs", type=int, default=20)
        p.add_argument("--dagger-rounds", type=int, default=0)
        p.add_argument("--dagger-episodes", type=int, default=0)
        p.add_argument("--eval-seeds", default=f"{EVAL_SEEDS[0]}-{EVAL_SEEDS[-1]}")
    sub.choices["bc"].add_argument("--tasks", default="task1,task2,task3,task4,task5")
    sub.choices["bc"].add_argument("--episodes", type=int, default=100)
    sub.choices["bc"].add_argument("--weight-power", type=float, default=0.5)
    sub.choices["ppo"].add_argument("--task", default="task1")
    sub.choices["ppo"].add_argument("--seeds", default="0,1,2")
    sub.choices["ppo"].add_argument("--steps", type=int, default=30_000)
    sub.choices["ppo"].add_argument("--eval-every", type=int, default=5_000)
    sub.choices["ppo"].add_argument("--bc", type=int, default=0, help="heuristic episodes to clone first")
    sub.choices["ppo"].add_argument("--init-from", help="start from this policy.pt (a bc run's)")
    sub.choices["ppo"].add_argument("--anneal-lr", action="store_true",
                                    help="learning rate falls linearly to 0 (run name gets -anneal)")
    sub.choices["ppo"].add_argument("--gamma-minute", type=float, default=0.0,
                                    help="discount per simulated minute (e.g. 0.998; run name gets "
                                         "-per-minute); 0: 0.995 per decision")
    sub.choices["ppo"].add_argument("--select-seeds", default="",
                                    help="validation seeds lo-hi, e.g. 30000-30019: keep the policy best on "
                                         "them at an evaluation, not the last (run name gets -select)")
    sub.choices["ppo"].add_argument("--type-first", action="store_true",
                                    help="the policy picks an action type, then a vector of it (run name "
                                         "gets -type-first)")
    sub.choices["ppo"].add_argument("--reward-scale", type=float, default=1.0,
                                    help="multiply rewards by this for the advantages and value targets "
                                         "(run name gets -reward-xN)")
    sub.choices["ppo"].add_argument("--learning-rate", type=float, default=DEFAULTS.learning_rate,
                                    help="Adam's learning rate (run name gets -lrX when not the default)")
    sub.choices["ppo"].add_argument("--envs", type=int, default=DEFAULTS.n_envs,
                                    help="episodes stepped together, each n_steps per update (run name "
                                         "gets -envsN when not the default)")
    sub.choices["ppo"].add_argument("--gae-lambda", type=float, default=DEFAULTS.gae_lambda,
                                    help="GAE's lambda (run name gets -lambdaX when not the default)")
    sub.choices["ppo"].add_argument("--decision-cost", type=float, default=0.0,
                                    help="the learner's price of a decision, taken off every reward "
                                         "(score units; run name gets -decision-costX)")
    k = sub.add_parser("keep")
    k.add_argument("run")
    k.add_argument("dest")
    args = parser.parse_args()
    {"bc": bc, "ppo": ppo, "keep": keep}[args.what](args)


if __name__ == "__main__":
    main()
