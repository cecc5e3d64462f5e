"""Cost of ``CodeRedSim.fork`` against a step (a benchmark, not a test).

A planner that cannot fork must replay the episode from reset to reach the current state, so a
fork replaces ``step_count`` core steps (plus the reset). For every task the benchmark records
heuristic episodes (seeds ``0..N-1``), stops each at a few decision points, and times there:

``fork``       ``sim.fork(seed)`` (copy + redraw of every hidden part)
``copy``       ``sim.private_copy()`` alone (the pickle-based copy without the future)
``snap fork``  ``snapshot.fork(seed)`` from a snapshot taken once (``sim.snapshot()``, a planner's
               decision: the fork without pickling the episode again)
``repeat``     ``start.copy()`` of a frozen fork (``start = snapshot.fork(seed).snapshot()``): a
               repeated fork, what a planner's later candidates pay per rollout
``deepcopy``   ``copy.deepcopy(sim)`` (the obvious first version)
``replay``     ``CodeRedSim(task, seed)`` + replaying the actions so far (what a fork replaces)
``step``       one core ``sim.step(action)``, averaged over the replay

Each timing is the fastest of ``--repeats`` (the ``timeit`` convention). Usage::

    nice -n 10 uv run python bench/bench_fork.py            # markdown table on stdout
    nice -n 10 uv run python bench/bench_fork.py --seeds 3 --repeats 3
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import statistics
import time
from collections.abc import Callable

from codered_env.agents import HeuristicAgent
from codered_env.sim import TASK_IDS, CodeRedSim

CHECKPOINTS = (0, 10, 20, 35)


def best_us(fn: Callable[[], object], repeats: int, inner: int = 20) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        best = min(best, (time.perf_counter() - start) / inner)
    return best * 1e6


def record(task_id: str, seed: int) -> list:
    sim = CodeRedSim(task_id, seed)
    agent = HeuristicAgent(seed)
    agent.reset(task_id, seed)
    while not sim.done:
        sim.step(agent.act(sim.observation()))
    return list(sim.action_log)


def replay(task_id: str, seed: int, actions: list) -> CodeRedSim:
    sim = CodeRedSim(task_id, seed)
    for action in actions:
        sim.step(action)
    return sim


def measure(task_id: str, seeds: int, repeats: int) -> dict[str, float]:
    names = ("fork", "copy", "snap_fork", "repeat", "deepcopy", "replay", "step", "at")
    rows: dict[str, list[float]] = {k: [] for k in names}
    for seed in range(seeds):
        actions = record(task_id, seed)
        for at in CHECKPOINTS:
            if at >= len(actions):
                continue
            sim = replay(task_id, seed, actions[:at])
            sim.observation()  # warm the route cache as a live episode has it
            rows["fork"].append(best_us(lambda sim=sim: sim.fork(1), repeats))
            rows["copy"].append(best_us(lambda sim=sim: sim.private_copy(), repeats))
            frozen = sim.snapshot()
            rows["snap_fork"].append(best_us(lambda frozen=frozen: frozen.fork(1), repeats))
            start = frozen.fork(1).snapshot()
            rows["repeat"].append(best_us(start.copy, repeats))
            rows["deepcopy"].append(best_us(lambda sim=sim: copy.deepcopy(sim), repeats))
            prefix = actions[:at]
            rows["replay"].append(best_us(lambda p=prefix, s=seed: replay(task_id, s, p), repeats, inner=5))
            rows["at"].append(at)
        full = best_us(lambda a=actions, s=seed: replay(task_id, s, a), repeats, inner=3)
        reset = best_us(lambda s=seed: CodeRedSim(task_id, s), repeats, inner=5)
        rows["step"].append((full - reset) / len(actions))
    return {k: statistics.fmean(v) for k, v in rows.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description="fork cost vs a step")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, load {load:.1f}, "
          f"{args.seeds} seeds x checkpoints {CHECKPOINTS}, best of {args.repeats}\n")
    print("| task | fork µs | copy µs | snap fork µs | repeat µs | deepcopy µs | step µs | mean step of fork "
          "| replay µs | fork / replay | fork / step | repeat / step |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for task_id in TASK_IDS:
        m = measure(task_id, args.seeds, args.repeats)
        print(f"| {task_id} | {m['fork']:.0f} | {m['copy']:.0f} | {m['snap_fork']:.0f} | {m['repeat']:.0f} "
              f"| {m['deepcopy']:.0f} | {m['step']:.0f} | {m['at']:.1f} | {m['replay']:.0f} "
              f"| {m['fork'] / m['replay']:.2f} | {m['fork'] / m['step']:.1f} "
              f"| {m['repeat'] / m['step']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
