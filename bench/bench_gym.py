"""Speed of the Gymnasium adapter through ``gymnasium.make``, side by side with CartPole-v1.

A masked uniform-random policy (``rng.integers`` over the legal prefix of ``action_masks()``)
plays whole episodes of each task through ``gymnasium.make("CodeRedEnv-<task>-v16")`` with its
default wrappers; resets are included (they are part of training). ``CartPole-v1`` runs in the
same process with a fixed action, reset on episode end. Each measurement is repeated and the
fastest repeat is kept (slower repeats measure interference from other processes).

``--compare PATH`` runs the same measurement in a subprocess against another checkout of the
project (e.g. a checkout before a change to the adapter), so before/after are measured under
the same load.

Usage::

    uv run python bench/bench_gym.py                         # all tasks, markdown on stdout
    uv run python bench/bench_gym.py --tasks task5 --compare /path/to/other/checkout
    uv run python bench/bench_gym.py --profile task5         # cProfile of the adapter loop
    uv run python bench/bench_gym.py --ab /path/to/other/checkout --tasks task1,task5
    uv run python bench/bench_gym.py --parts task5           # time per part of a step

``--ab PATH`` is the load-robust comparison: both adapters in one process, alternating chunks of
200 steps on the same episodes, so a neighbour process that starts or stops affects both alike.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np


def codered_rate(task_id: str, steps: int, seed: int = 0) -> float:
    from codered_env.gym_env.registration import flat_id  # importing the package registers the ids

    env = gymnasium.make(flat_id(task_id))
    inner, rng = env.unwrapped, np.random.default_rng(seed)
    env.reset(seed=seed)
    episode, done, start = seed, 0, time.perf_counter()
    while done < steps:
        legal = int(inner.action_masks().sum())
        _, _, terminated, truncated, _ = env.step(int(rng.integers(legal)))
        done += 1
        if terminated or truncated:
            episode += 1
            env.reset(seed=episode)
    return done / (time.perf_counter() - start)


def cartpole_rate(steps: int) -> float:
    env = gymnasium.make("CartPole-v1")
    env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(0)
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def ab_rates(other: Path, tasks: list[str], rounds: int, chunk: int = 200,
             clock: Any = time.perf_counter) -> dict[str, tuple[float, float]]:
    """Steps/s of the other checkout's adapter and of ours *in this process*, in alternating
    chunks of ``chunk`` steps (same episodes: same seeds and policy), so both see the same
    machine load at the same moments: robust when other processes come and go. The other
    package is imported under an alias (a symlink ``codered_other``). Returns task ->
    (other, ours), each the median chunk rate. Unwrapped envs: no ``gym.make`` wrappers.
    ``clock=time.process_time`` counts only this process's CPU time (steadier on a shared machine)."""
    import tempfile

    import codered_env.gym_env as ours

    alias = Path(tempfile.mkdtemp()) / "codered_other"
    alias.symlink_to(other.resolve() / "codered_env")
    sys.path.insert(0, str(alias.parent))
    import codered_other.gym_env as theirs  # type: ignore[import-not-found]

    out = {}
    for task_id in tasks:
        runs = [_chunk_runner(mod, task_id, chunk, clock) for mod in (theirs, ours)]
        times: list[list[float]] = [[], []]
        for r in range(rounds):
            for k in (0, 1) if r % 2 else (1, 0):
                times[k].append(runs[k]())
        out[task_id] = tuple(chunk / sorted(t)[len(t) // 2] for t in times)
    return out


def _chunk_runner(mod, task_id: str, chunk: int, clock: Any = time.perf_counter):
    env, rng, state = mod.CodeRedGymEnv(task_id), np.random.default_rng(0), {"episode": 0}
    env.reset(seed=0)

    def run() -> float:
        start = clock()
        for _ in range(chunk):
            _, _, terminated, truncated, _ = env.step(int(rng.integers(int(env.action_masks().sum()))))
            if terminated or truncated:
                state["episode"] += 1
                env.reset(seed=state["episode"])
        return clock() - start

    return run


def step_parts(task_id: str, steps: int, seed: int = 0) -> dict[str, float]:
    """Microseconds per step of each part of ``CodeRedGymEnv.step`` (process time, so another
    process taking the CPU does not count): the simulation's ``step``, its ``legal_actions``,
    ``index_legal`` and the feature build; the same masked-random play as ``codered_rate``."""
    import codered_env.gym_env as gym_env
    from codered_env.gym_env.actions import index_legal

    env, rng, clock = gym_env.CodeRedGymEnv(task_id), np.random.default_rng(seed), time.process_time_ns
    env.reset(seed=seed)
    totals, episode = [0, 0, 0, 0], seed
    for _ in range(steps):
        wire = env._wire(int(rng.integers(int(env.action_masks().sum()))))
        t0 = clock()
        result = env.sim.step(wire)
        t1 = clock()
        view = env.sim.observation_view()
        legal = view["legal_actions"]
        t2 = clock()
        index = index_legal(legal, env._legal_memo)
        t3 = clock()
        env._segments, env._n_legal = index.segments, min(index.total, env.max_actions)
        env._features.build(view, index, env._n_legal)
        t4 = clock()
        for k, (a, b) in enumerate(((t0, t1), (t1, t2), (t2, t3), (t3, t4))):
            totals[k] += b - a
        if result.done:
            episode += 1
            env.reset(seed=episode)
    names = ("sim.step", "legal_actions", "index_legal", "features")
    return {name: total / steps / 1e3 for name, total in zip(names, totals, strict=True)}


def best(fn, repeats: int) -> float:
    return max(fn() for _ in range(repeats))


def measure(tasks: list[str], steps: int, repeats: int) -> dict:
    out = {"cartpole": best(lambda: cartpole_rate(20_000), repeats)}
    for task_id in tasks:
        out[task_id] = best(lambda t=task_id: codered_rate(t, steps), repeats)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", default="task1,task2,task3,task4,task5")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--compare", type=Path, default=None, help="another checkout to measure too")
    parser.add_argument("--json", action="store_true", help="raw numbers only (used by --compare)")
    parser.add_argument("--profile", default=None, metavar="TASK")
    parser.add_argument("--ab", type=Path, default=None, metavar="PATH",
                        help="interleaved in-process A/B against another checkout (load-robust)")
    parser.add_argument("--rounds", type=int, default=20, help="chunks per side with --ab")
    parser.add_argument("--cpu", action="store_true",
                        help="--ab: time chunks in process CPU time, not wall time (shared machines)")
    parser.add_argument("--parts", default=None, metavar="TASK",
                        help="microseconds per step of each part of a step (process time)")
    args = parser.parse_args()
    tasks = args.tasks.split(",")
    if args.ab:
        load = os.getloadavg()[0]
        clock = time.process_time if args.cpu else time.perf_counter
        rates = ab_rates(args.ab, tasks, args.rounds, clock=clock)
        print(f"interleaved A/B, {args.rounds} chunks of 200 steps per side, median chunk, unwrapped envs, "
              f"{'process CPU time' if args.cpu else 'wall time'}, "
              f"load avg before {load:.1f} / after {os.getloadavg()[0]:.1f}\n")
        print(f"| env | {args.ab.name} steps/s | this checkout steps/s | speed-up |")
        print("|---|---|---|---|")
        for task_id, (theirs, ours) in rates.items():
            print(f"| {task_id} | {theirs:,.0f} | {ours:,.0f} | {ours / theirs:.2f}x |")
        return
    if args.parts:
        parts = step_parts(args.parts, args.steps)
        print(f"{args.parts}: " + ", ".join(f"{k} {v:.0f} us" for k, v in parts.items())
              + f"; sum {sum(parts.values()):.0f} us/step, load avg {os.getloadavg()[0]:.1f}")
        return
    if args.profile:
        prof = "/tmp/bench_gym.prof"
        cProfile.runctx("codered_rate(args.profile, args.steps)", globals(), {"args": args}, prof)
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        return
    load_before = os.getloadavg()
    ours = measure(tasks, args.steps, args.repeats)
    if args.json:
        print(json.dumps(ours))
        return
    other = None
    if args.compare:
        env = {**os.environ, "PYTHONPATH": str(args.compare)}
        cmd = [sys.executable, __file__, "--json", "--tasks", args.tasks, "--steps", str(args.steps),
               "--repeats", str(args.repeats)]
        other = json.loads(subprocess.run(cmd, env=env, capture_output=True, text=True, check=True,
                                          cwd=args.compare).stdout)
    print(f"python {platform.python_version()}, gymnasium {gymnasium.__version__}, numpy {np.__version__}, "
          f"{os.cpu_count()} cpus, load avg before {load_before[0]:.1f} / after {os.getloadavg()[0]:.1f}, "
          f"{args.steps} steps x best of {args.repeats}\n")
    head = "| env | steps/s | CartPole-v1 steps/s (same run) | ratio to CartPole |"
    if other:
        head += f" {args.compare.name} steps/s | its CartPole | speed-up |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for task_id in tasks:
        slower = ours["cartpole"] / ours[task_id]
        row = f"| {task_id} | {ours[task_id]:,.0f} | {ours['cartpole']:,.0f} | 1/{slower:.1f} |"
        if other:
            ratio = (ours[task_id] / ours["cartpole"]) / (other[task_id] / other["cartpole"])
            row += f" {other[task_id]:,.0f} | {other['cartpole']:,.0f} | {ratio:.1f}x (CartPole-normalised) |"
        print(row)


if __name__ == "__main__":
    main()
