"""The generalisation result: the factored learner trained on Prakashnagar only, or on 1, 10 and
100 generated train cities, scored on held-out test cities and on Prakashnagar, beside the
heuristic, random play and an open-loop schedule.

Per task and training set, the learner (``codered_env.factored_ppo``) is behaviour-cloned from the
heuristic's decisions in ``--demo-episodes`` episodes spread evenly over the set's cities (the
same number of demonstrations for every set: only the number of cities differs), then, with
``--ppo-steps`` > 0, fine-tuned by masked PPO on the same cities. Every learner uses the generated
range's slots (``GENERATED_MAXIMA``), so one network plays any city.

Evaluation episodes: ``--test-cities`` held-out cities (the first of the ``test`` split, one
episode each) and ``--prakashnagar-seeds`` episodes on Prakashnagar, seeds from 10,000. The
open-loop baseline replays, without looking, the heuristic's action list from Prakashnagar seed 0
(what a memorised schedule is worth: ``bench/open_loop_cities.py``).

Writes ``docs/results/generalisation.md`` (and ``generalisation.png``); the learners' weights go
to ``--artifacts``. Usage::

    OMP_NUM_THREADS=1 nice -n 10 uv run python bench/generalisation.py            # full run
    uv run python bench/generalisation.py --tasks task1 --demo-episodes 10 --test-cities 3 \\
        --prakashnagar-seeds 2 --sets prakashnagar 10 --out /tmp/g.md               # a smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from open_loop_cities import heuristic_play, random_score, replay

from codered_env.sim.citygen import split_seeds

EVAL_SEED_BASE = 10_000
SETS = ("prakashnagar", "1", "10", "100")
ROOT = Path(__file__).resolve().parent.parent


def set_cities(name: str) -> list[Any]:
    """The cities of a training set: Prakashnagar, or the first n train cities."""
    if name == "prakashnagar":
        return ["prakashnagar"]
    return list(split_seeds("train")[: int(name)])


def eval_episodes(test_cities: int, prakashnagar_seeds: int) -> dict[str, list[tuple[int, Any]]]:
    test = split_seeds("test")
    return {
        "held-out cities": [(EVAL_SEED_BASE + k, test[k]) for k in range(test_cities)],
        "Prakashnagar": [(EVAL_SEED_BASE + k, "prakashnagar") for k in range(prakashnagar_seeds)],
    }


def _torch_setup() -> None:
    import torch

    torch.set_num_threads(1)


def baselines(task_id: str, episodes: dict[str, list[tuple[int, Any]]]) -> dict[str, Any]:
    """Heuristic, random and the open-loop schedule on every evaluation episode (and the CPU
    seconds they took, ``cpu_s``)."""
    cpu0 = time.process_time()
    schedule, _ = heuristic_play(task_id, 0, "prakashnagar")
    out: dict[str, dict[str, list[float]]] = {"heuristic": {}, "random": {}, "open-loop": {}}
    for where, eps in episodes.items():
        out["heuristic"][where] = [heuristic_play(task_id, s, c)[1] for s, c in eps]
        out["random"][where] = [random_score(task_id, s, c) for s, c in eps]
        out["open-loop"][where] = [replay(task_id, s, c, schedule) for s, c in eps]
    return out | {"cpu_s": time.process_time() - cpu0}


def train_and_score(job: dict[str, Any]) -> dict[str, Any]:
    """Behaviour cloning (then PPO when asked) on one training set; greedy grades per episode."""
    _torch_setup()
    import torch

    from codered_env import factored_ppo as fp
    from codered_env.gym_env import GENERATED_MAXIMA

    task_id, name, args = job["task_id"], job["set"], job["args"]
    started, cpu0 = time.monotonic(), time.process_time()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    cities = set_cities(name)
    n = args["demo_episodes"]
    demo_cities = [cities[i % len(cities)] for i in range(n)]
    data = fp.heuristic_demonstrations(task_id, list(range(n)), cities=demo_cities, maxima=GENERATED_MAXIMA)
    policy = fp.make_policy(args["hidden"], GENERATED_MAXIMA)
    bc = fp.behaviour_clone(policy, data, args["bc_epochs"], 1e-3, rng)
    result: dict[str, Any] = {"task_id": task_id, "set": name, "bc": bc, "scores": {}}
    result["scores"]["BC"] = _greedy(fp, policy, task_id, job["episodes"])
    if args["ppo_steps"] > 0:
        _fine_tune(fp, policy, task_id, cities, args, rng)
        result["scores"]["BC + PPO"] = _greedy(fp, policy, task_id, job["episodes"])
    out = Path(args["artifacts"]) / f"{task_id}-{name}"
    out.mkdir(parents=True, exist_ok=True)
    fp.save_policy(policy, out / "policy.pt", {"task_id": task_id, "train_set": name})
    result["cpu_s"] = round(time.process_time() - cpu0, 1)
    result["wall_s"] = round(time.monotonic() - started, 1)
    (out / "result.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


def _greedy(
    fp: Any, policy: Any, task_id: str, episodes: dict[str, list[tuple[int, Any]]]
) -> dict[str, list[float]]:
    from codered_env.gym_env import GENERATED_MAXIMA

    return {
        where: fp.greedy_grades(policy, task_id, [s for s, _ in eps], [c for _, c in eps], GENERATED_MAXIMA)
        for where, eps in episodes.items()
    }


def _fine_tune(
    fp: Any, policy: Any, task_id: str, cities: list[Any], args: dict[str, Any], rng: np.random.Generator
) -> None:
    """Masked PPO from the cloned policy on the training set's cities (``factored_ppo``'s update)."""
    import torch

    from codered_env.gym_env import CodeRedFactoredVectorEnv

    config = fp.FactoredConfig(
        task_id=task_id,
        n_envs=args["ppo_envs"],
        n_steps=args["ppo_rollout"],
        learning_rate=args["ppo_lr"],
        ent_coef=args["ppo_ent"],
    )
    where: dict[str, Any] = (
        {"city": "prakashnagar"}
        if cities == ["prakashnagar"]
        else {"split": "train", "num_cities": len(cities)}
    )
    vec = CodeRedFactoredVectorEnv(
        config.n_envs, task_id, autoreset_mode="SameStep", maxima="generated", **where
    )
    obs, _ = vec.reset(seed=1_000_000)  # training episodes' seeds: away from the demonstrations'
    optimiser = torch.optim.Adam(policy.parameters(), lr=config.learning_rate)
    steps = 0
    while steps < args["ppo_steps"]:
        roll, obs = fp._collect(policy, vec, obs, config)
        values, rewards, dones = (roll.column(k) for k in (2, 3, 4))
        with torch.no_grad():
            legal = [vec.legal_actions(i) for i in range(vec.num_envs)]
            last = policy(*fp.batch_arrays(obs, legal))[1].numpy()
        adv = fp._advantages(rewards, values, dones, last, config.gamma, config.gae_lambda)
        fp._ppo_update(policy, optimiser, roll, adv, adv + values, config, rng)
        steps += config.n_steps * config.n_envs


def _mean(xs: list[float]) -> float:
    return statistics.fmean(xs)


def _sem(xs: list[float]) -> float:
    return statistics.stdev(xs) / len(xs) ** 0.5 if len(xs) > 1 else 0.0


def _set_label(name: str) -> str:
    return (
        "Prakashnagar only" if name == "prakashnagar" else f"{name} train cit{'y' if name == '1' else 'ies'}"
    )


def table(task_id: str, base: dict[str, dict[str, list[float]]], runs: list[dict[str, Any]]) -> list[str]:
    wheres = list(base["heuristic"])
    h_out = _mean(base["heuristic"][wheres[0]])
    head = " | ".join(f"{w} (mean ± s.e.)" for w in wheres)
    lines = [
        f"### {task_id}",
        "",
        f"| agent | trained on | {head} | held-out / heuristic |",
        "|---|---|" + "---|" * len(wheres) + "---|",
    ]

    def row(agent: str, trained: str, scores: dict[str, list[float]]) -> str:
        cells = " | ".join(f"{_mean(scores[w]):.3f} ± {_sem(scores[w]):.3f}" for w in wheres)
        return f"| {agent} | {trained} | {cells} | {_mean(scores[wheres[0]]) / h_out:.2f} |"

    lines.append(row("random", "-", base["random"]))
    lines.append(
        row("open-loop (Prakashnagar seed-0 schedule)", "Prakashnagar, 1 episode", base["open-loop"])
    )
    lines.append(row("heuristic", "-", base["heuristic"]))
    for r in runs:
        for agent, scores in r["scores"].items():
            lines.append(row(f"factored learner, {agent}", _set_label(r["set"]), scores))
    return lines


def plot(path: Path, results: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 3.6), squeeze=False)
    for ax, (task_id, res) in zip(axes[0], results.items(), strict=True):
        runs = [r for r in res["runs"] if r["set"] != "prakashnagar"]
        xs = [int(r["set"]) for r in runs]
        agent = "BC + PPO" if "BC + PPO" in runs[0]["scores"] else "BC"
        for where, style in (("held-out cities", "o-"), ("Prakashnagar", "s--")):
            ax.plot(
                xs,
                [_mean(r["scores"][agent][where]) for r in runs],
                style,
                label=f"learner ({agent}), {where}",
            )
            prak = next(r for r in res["runs"] if r["set"] == "prakashnagar")
            ax.axhline(
                _mean(prak["scores"][agent][where]),
                color="grey",
                ls=":" if where == "Prakashnagar" else "-.",
                lw=1,
                label=f"learner on Prakashnagar only, {where}",
            )
        for name, colour in (("heuristic", "green"), ("open-loop", "red"), ("random", "black")):
            ax.axhline(
                _mean(res["baselines"][name]["held-out cities"]),
                color=colour,
                lw=0.8,
                alpha=0.6,
                label=f"{name}, held-out cities",
            )
        ax.set_xscale("log")
        ax.set_xlabel("train cities")
        ax.set_ylabel("grade")
        ax.set_title(task_id)
    axes[0][-1].legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _machine() -> tuple[str, str]:
    """(the commit, the machine and its load now)."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False, cwd=ROOT
    ).stdout.strip()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    return commit or "unknown", f"{machine}; load average at start {load} (shared machine)"


def _header(args: argparse.Namespace, machine: tuple[str, str], cpu_min: float, wall_min: float) -> list[str]:
    command = " ".join(["OMP_NUM_THREADS=1 nice -n 10 uv run python bench/generalisation.py", *sys.argv[1:]])
    fine_tune = f", then {args.ppo_steps:,} steps of masked PPO on the same cities" if args.ppo_steps else ""
    return [
        "# Generalisation to unseen cities (generated by bench/generalisation.py)",
        "",
        f"- Command: `{command}`",
        f"- Commit: `{machine[0]}`",
        f"- Machine: {machine[1]}",
        f"- Budget: {cpu_min:.0f} CPU-minutes over every process (wall {wall_min:.0f} min)",
        "",
        f"Learner: the factored masked-policy network (hidden {args.hidden}) behaviour-cloned from the "
        f"heuristic's decisions in {args.demo_episodes} episodes spread evenly over its training cities "
        f"({args.bc_epochs} epochs){fine_tune}; greedy play. Evaluation: {args.test_cities} held-out "
        f"cities (the test split from seed {split_seeds('test')[0]}, one episode each) and "
        f"{args.prakashnagar_seeds} Prakashnagar seeds, seeds from {EVAL_SEED_BASE:,}. Open-loop: the "
        "heuristic's action list from Prakashnagar seed 0, replayed blind. s.e.: standard error of the mean.",
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["task1", "task3"])
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    parser.add_argument("--demo-episodes", type=int, default=200)
    parser.add_argument("--bc-epochs", type=int, default=20)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--ppo-steps", type=int, default=0)
    parser.add_argument("--ppo-envs", type=int, default=8)
    parser.add_argument("--ppo-rollout", type=int, default=64)
    parser.add_argument("--ppo-lr", type=float, default=1e-4)
    parser.add_argument("--ppo-ent", type=float, default=0.003)
    parser.add_argument("--test-cities", type=int, default=24)
    parser.add_argument("--prakashnagar-seeds", type=int, default=12)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--artifacts", default="runs/generalisation")  # git-ignored
    parser.add_argument("--out", type=Path, default=ROOT / "docs/results/generalisation.md")
    args = parser.parse_args()
    machine, started = _machine(), time.monotonic()
    episodes = eval_episodes(args.test_cities, args.prakashnagar_seeds)
    jobs = [
        {"task_id": t, "set": s, "args": vars(args) | {"out": str(args.out)}, "episodes": episodes}
        for t in args.tasks
        for s in args.sets
    ]
    with ProcessPoolExecutor(max_workers=min(2, args.workers)) as pool:
        base_futures = {t: pool.submit(baselines, t, episodes) for t in args.tasks}
        runs = list(pool.map(train_and_score, jobs))
        bases = {t: future.result() for t, future in base_futures.items()}
    results = {t: {"baselines": bases[t], "runs": [r for r in runs if r["task_id"] == t]} for t in args.tasks}
    cpu_min = (sum(r["cpu_s"] for r in runs) + sum(b["cpu_s"] for b in bases.values())) / 60
    lines = _header(args, machine, cpu_min, (time.monotonic() - started) / 60)
    for t in args.tasks:
        lines += [*table(t, results[t]["baselines"], results[t]["runs"]), ""]
    lines += [
        "Behaviour-cloning held-out accuracy (decisions other than waiting / waits):",
        "",
        "| task | trained on | demonstrations | accuracy, decisions | accuracy, waits |",
        "|---|---|---|---|---|",
    ]
    for r in runs:
        bc = r["bc"]
        lines.append(
            f"| {r['task_id']} | {_set_label(r['set'])} | {bc['train_samples'] + bc['held_out_samples']} | "
            f"{bc['accuracy_decisions']:.2f} | {bc['accuracy_waits']:.2f} |"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    (Path(args.artifacts) / "generalisation.json").write_text(json.dumps(results, indent=1) + "\n")
    if all(s in args.sets for s in ("prakashnagar", "1")) and len(args.sets) > 2:
        plot(args.out.with_suffix(".png"), results)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
