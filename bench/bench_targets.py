"""The fast-rollout speed targets, as ratios to Gymnasium's CartPole-v1 step measured
in the same process, in interleaved rounds so a neighbour process that comes or goes affects
every measurement alike.

Measured per round (each the cost of one step, CPU time of this process by default):

``cartpole``   ``gym.make("CartPole-v1")`` stepped with a fixed action (reset on episode end)
``core``       ``CodeRedSim.step`` replaying recorded heuristic actions on ``--task``
``heuristic``  the heuristic's inner loop on ``--task``: ``observation()`` + ``act`` + ``step``
               (what every planner rollout pays per decision)
``heuristic_view``  the same loop on ``observation_view()`` (the lazy view; checkouts without
               it repeat the dict loop)
``core_rollout``, ``rollout_view``  ``core`` and ``heuristic_view`` with ``sim.rewards = False``:
               no step reward, the preview computed only when read, as a planner's rollout
               plays (checkouts without the switch compute the reward anyway)
``gym``        ``gym.make("CodeRedEnv-<task>-v16")`` with masked uniform-random actions,
               resets included
``fork``       ``CodeRedSim.fork(seed)`` at steps 10, 20, 35 of the recorded episodes, in
               units of the same episodes' mean core step (a fresh fork: the episode pickled
               and the hidden parts redrawn)

Also, at the same points and in the same unit (checkouts without ``CodeRedSim.snapshot`` skip
them), what a planner pays (agents/planner.py: one snapshot per decision, each fork seed forked
once, every candidate a copy of that fork):

``snapshot``        ``sim.snapshot()``: the decision's state frozen (once per decision)
``fork_snapshot``   ``snapshot.fork(seed)``: a fork from the decision's snapshot (once per seed)
``fork_repeat``     ``start.copy()`` of a frozen fork (``start = snapshot.fork(seed).snapshot()``):
                    a repeated fork, what every later candidate's rollout on that seed pays (the
                    first plays on the fork itself)
``per_rollout``     all of it spread over the rollouts of one decision at the planner's default
                    budget (6 candidates x 4 forks + 2 x 8 confirmation forks: 40 rollouts on 12
                    fork seeds): (snapshot + 12 x (fork_snapshot + freezing the fork) + 28 x
                    fork_repeat) / 40

Targets: heuristic <= 12x CartPole, gym <= 15x, core <= 5x, a fork <= 2 core steps.

Usage::

    uv run python bench/bench_targets.py                    # 9 rounds on task5, markdown
    uv run python bench/bench_targets.py --rounds 15 --wall # wall time instead of CPU time
    uv run python bench/bench_targets.py --json             # raw medians (used by --compare)
    uv run python bench/bench_targets.py --compare ../other   # also another checkout, alternating runs
    uv run python bench/bench_targets.py --compare ../other --runs 8 --rounds 16  # a busy machine
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

TARGETS = {"heuristic": 12.0, "heuristic_view": 12.0, "rollout_view": 12.0, "gym": 15.0, "core": 5.0,
           "core_rollout": 5.0}
FORK_TARGET_STEPS = 2.0
FORK_AT = (10, 20, 35)
FORK_PARTS = ("snapshot", "fork_snapshot", "fork_repeat", "per_rollout")


def _cartpole(steps: int, clock: Callable[[], float]) -> float:
    env = gymnasium.make("CartPole-v1")
    env.reset(seed=0)
    start = clock()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(0)
        if terminated or truncated:
            env.reset()
    return (clock() - start) / steps


def _record(task_id: str, seeds: range) -> dict[int, list[Any]]:
    from codered_env.agents import make_agent
    from codered_env.sim import CodeRedSim

    out = {}
    for seed in seeds:
        sim, agent = CodeRedSim(task_id, seed), make_agent("heuristic", seed)
        agent.reset(task_id, seed)
        while not sim.done:
            sim.step(agent.act(sim.observation()))
        out[seed] = list(sim.action_log)
    return out


def _core(
    task_id: str, recorded: dict[int, list[Any]], clock: Callable[[], float], rewards: bool = True
) -> float:
    from codered_env.sim import CodeRedSim

    total, steps = 0.0, 0
    for seed, actions in recorded.items():
        sim = CodeRedSim(task_id, seed)
        sim.rewards = rewards
        start = clock()
        for action in actions:
            sim.step(action)
        total += clock() - start
        steps += len(actions)
    return total / steps


def _heuristic(
    task_id: str, seeds: range, clock: Callable[[], float], view: bool = False, rewards: bool = True
) -> float:
    from codered_env.agents import make_agent
    from codered_env.sim import CodeRedSim

    total, steps = 0.0, 0
    for seed in seeds:
        sim, agent = CodeRedSim(task_id, seed), make_agent("heuristic", seed)
        agent.reset(task_id, seed)
        sim.rewards = rewards
        observe = sim.observation_view if view and hasattr(sim, "observation_view") else sim.observation
        start = clock()
        while not sim.done:
            sim.step(agent.act(observe()))
        total += clock() - start
        steps += sim.step_count
    return total / steps


def _gym(task_id: str, steps: int, clock: Callable[[], float]) -> float:
    import codered_env.gym_env  # noqa: F401  registers the ids

    env_id = next(i for i in gymnasium.registry if i.startswith(f"CodeRedEnv-{task_id}-"))
    env = gymnasium.make(env_id)
    inner, rng = env.unwrapped, np.random.default_rng(0)
    env.reset(seed=0)
    episode, start = 0, clock()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(int(rng.integers(int(inner.action_masks().sum()))))
        if terminated or truncated:
            episode += 1
            env.reset(seed=episode)
    return (clock() - start) / steps


def _fork(task_id: str, recorded: dict[int, list[Any]], clock: Callable[[], float]) -> dict[str, float]:
    """Mean fork costs in units of the mean core step of the same episodes: ``fork`` (fresh)
    and, where the checkout has snapshots, the planner's parts (module docstring)."""
    from codered_env.sim import CodeRedSim

    totals: dict[str, float] = {}
    forks, step_total, steps = 0, 0.0, 0

    def timed(name: str, fn: Callable[..., Any], *args: Any) -> Any:
        start = clock()
        out = fn(*args)
        totals[name] = totals.get(name, 0.0) + clock() - start
        return out

    for seed, actions in recorded.items():
        sim = CodeRedSim(task_id, seed)
        for i, action in enumerate(actions):
            if i in FORK_AT and not sim.done:
                timed("fork", sim.fork, i)
                forks += 1
                if hasattr(sim, "snapshot"):
                    frozen = timed("snapshot", sim.snapshot)
                    twin = timed("fork_snapshot", frozen.fork, i)
                    start_state = timed("freeze_fork", twin.snapshot)
                    timed("fork_repeat", start_state.copy)
            start = clock()
            sim.step(action)
            step_total += clock() - start
            steps += 1
    step = step_total / steps
    out = {name: total / forks / step for name, total in totals.items()}
    if "snapshot" in out:
        seeds, rollouts = _planner_budget()
        out["per_rollout"] = (out["snapshot"] + seeds * (out["fork_snapshot"] + out["freeze_fork"])
                              + (rollouts - seeds) * out["fork_repeat"]) / rollouts
    return out


def _planner_budget() -> tuple[int, int]:
    """Fork seeds and rollouts of one decision at the planner's default budget, when it races
    every candidate: max_candidates x forks, then the best two on confirm_forks more seeds."""
    from codered_env.agents.planner import DEFAULT_CONFIRM_FORKS, DEFAULT_FORKS, DEFAULT_MAX_CANDIDATES

    seeds = DEFAULT_FORKS + DEFAULT_CONFIRM_FORKS
    return seeds, DEFAULT_MAX_CANDIDATES * DEFAULT_FORKS + 2 * DEFAULT_CONFIRM_FORKS


def measure(task_id: str, rounds: int, seeds: int, clock: Callable[[], float]) -> dict[str, Any]:
    recorded = _record(task_id, range(seeds))
    parts: dict[str, Callable[[], float]] = {
        "cartpole": lambda: _cartpole(20_000, clock),
        "core": lambda: _core(task_id, recorded, clock),
        "heuristic": lambda: _heuristic(task_id, range(seeds), clock),
        "heuristic_view": lambda: _heuristic(task_id, range(seeds), clock, view=True),
        "core_rollout": lambda: _core(task_id, recorded, clock, rewards=False),
        "rollout_view": lambda: _heuristic(task_id, range(seeds), clock, view=True, rewards=False),
        "gym": lambda: _gym(task_id, 1500, clock),
        "fork": lambda: _fork(task_id, recorded, clock),
    }
    names = list(parts)
    samples: dict[str, list[float]] = {n: [] for n in names}
    ratios: dict[str, list[float]] = {n: [] for n in TARGETS}
    for r in range(rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        got = {n: parts[n]() for n in order}
        for n in names:
            samples[n].append(got[n])
        for n in ratios:
            ratios[n].append(got[n] / got["cartpole"])
    forks = samples.pop("fork")
    med = {n: statistics.median(v) for n, v in samples.items()}
    return {
        "us": {n: med[n] * 1e6 for n in names if n != "fork"},
        "ratio": {n: statistics.median(v) for n, v in ratios.items()},
        "fork_steps": statistics.median(f["fork"] for f in forks),
        "fork_parts": {k: statistics.median(f[k] for f in forks) for k in FORK_PARTS if k in forks[0]},
    }


def _table(label: str, res: dict[str, Any]) -> list[str]:
    rows = [f"| {label} | CartPole-v1 step | {res['us']['cartpole']:.2f} us | 1x | |"]
    for n in TARGETS:
        ok = "met" if res["ratio"][n] <= TARGETS[n] else "not met"
        ratio, target = res["ratio"][n], TARGETS[n]
        rows.append(f"| {label} | {n} | {res['us'][n]:.1f} us | {ratio:.1f}x | <= {target:.0f}x: {ok} |")
    ok = "met" if res["fork_steps"] <= FORK_TARGET_STEPS else "not met"
    rows.append(f"| {label} | fork | {res['fork_steps']:.1f} core steps | | <= 2 steps: {ok} |")
    for name, steps in res.get("fork_parts", {}).items():
        rows.append(f"| {label} | {name} | {steps:.1f} core steps | | |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="task5")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--wall", action="store_true", help="wall time instead of process CPU time")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--compare", type=Path, default=None, help="another checkout, runs alternating")
    parser.add_argument("--runs", type=int, default=3,
                        help="subprocess runs per checkout with --compare (rounds are split over them)")
    args = parser.parse_args()
    clock = time.perf_counter if args.wall else time.process_time
    if args.json:
        print(json.dumps(measure(args.task, args.rounds, args.seeds, clock)))
        return
    load = os.getloadavg()
    runs: dict[str, list[dict[str, Any]]] = {"this": [], "other": []}
    checkouts = [("this", Path(__file__).resolve().parents[1])]
    if args.compare:
        checkouts.append(("other", args.compare.resolve()))
    # each checkout in its own subprocess, alternating, a few rounds at a time
    runs_each = max(1, args.runs) if args.compare else 1
    for i in range(runs_each):
        for name, root in checkouts if i % 2 == 0 else checkouts[::-1]:
            cmd = [sys.executable, str(Path(__file__).resolve()), "--json", "--task", args.task,
                   "--rounds", str(max(1, args.rounds // runs_each)),
                   "--seeds", str(args.seeds)] + (["--wall"] if args.wall else [])
            env = {**os.environ, "PYTHONPATH": str(root)}
            out = subprocess.run(cmd, env=env, cwd=root, capture_output=True, text=True, check=True)
            runs[name].append(json.loads(out.stdout))
    print(f"python {platform.python_version()}, gymnasium {gymnasium.__version__}, {os.cpu_count()} cpus, "
          f"{'wall' if args.wall else 'process CPU'} time, task {args.task}, {args.rounds} rounds, "
          f"load avg before {load[0]:.1f} / after {os.getloadavg()[0]:.1f}\n")
    print("| checkout | measurement | per step | ratio to CartPole | target |")
    print("|---|---|---|---|---|")
    for name, _ in checkouts:
        res = _merge(runs[name])
        label = "this" if name == "this" else args.compare.name
        print("\n".join(_table(label, res)))
    if args.compare:
        # on a loaded machine a neighbour only ever adds time: the fastest run of each
        # measurement is the least disturbed estimate of its own cost
        print("\nLeast disturbed (the fastest run of each measurement, ratio to the fastest CartPole run):\n")
        print("| checkout | " + " | ".join(TARGETS) + " | fork (core steps) |")
        print("|---|" + "---|" * (len(TARGETS) + 1))
        for name, _ in checkouts:
            fastest = {k: min(r["us"][k] for r in runs[name]) for k in runs[name][0]["us"]}
            ratios = " | ".join(f"{fastest[k] / fastest['cartpole']:.1f}x" for k in TARGETS)
            fork = min(r["fork_steps"] for r in runs[name])
            print(f"| {'this' if name == 'this' else args.compare.name} | {ratios} | {fork:.1f} |")


def _merge(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Median over the alternating runs of each run's medians."""
    return {
        "us": {k: statistics.median(r["us"][k] for r in results) for k in results[0]["us"]},
        "ratio": {k: statistics.median(r["ratio"][k] for r in results) for k in results[0]["ratio"]},
        "fork_steps": statistics.median(r["fork_steps"] for r in results),
        "fork_parts": {k: statistics.median(r["fork_parts"][k] for r in results)
                       for k in results[0].get("fork_parts", {})},
    }


if __name__ == "__main__":
    main()
