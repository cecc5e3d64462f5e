"""Speed of the factored interface: one step next to a CartPole-v1 step in the same process, and
the native vector env next to N separate environments.

Only the ``step`` calls are timed (process time, so other processes taking the CPU count less),
the action choice is not. The policy is a masked random one that picks the action type first
(uniform over the legal types), then a legal vector of that type; ended episodes are reset with
the next seed (the reset is timed with the step that needs it). Every measurement is repeated
``--rounds`` times, alternating the contenders, and the median round is kept.

- single: ``gymnasium.make("CodeRedFactored-<task>-v14")`` vs ``gymnasium.make("CartPole-v1")``
  (fixed action) and ``gymnasium.make("CodeRedEnv-<task>-v16")`` (the flat interface, uniform
  over its legal indices), and the simulation's own step under the same policy (episodes of
  its own: a twin sent the same actions would find the simulation's memos warm) for the share
  of a step that is the adapters';
- vector: ``gymnasium.make_vec("CodeRedFactored-<task>-v14", num_envs=N)`` (the native vector
  env) vs ``gymnasium.vector.SyncVectorEnv`` of N ``gymnasium.make`` envs, both autoresetting.

- split (``--split TASK``, task5 by default): the unwrapped factored step of one task played
  piece by piece, each part timed on its own: decoding the action, the simulation's step, the
  reward (the rubric's score preview), the observation rows and masks, the copy and the info.
- ``--ab PATH``: the same single-env measurement of this checkout and of another one (e.g. the
  commit before a change) in one process, alternating rounds, so the load of other processes
  falls on both alike; both unwrapped (no ``gymnasium.make`` wrappers). The other package is
  imported under an alias (a symlink ``codered_other``).

Usage::

    uv run python bench/bench_gym_factored.py --tasks task1,task5 --envs 8 \\
        --out docs/results/gym_factored_speed.md
    uv run python bench/bench_gym_factored.py --tasks task5 --ab /path/to/other/checkout
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from codered_env.gym_env.registration import factored_id, flat_id  # the import registers the ids
from codered_env.sim import CodeRedSim

clock = time.process_time


def pick(legal: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A legal vector: a uniform legal type, then a uniform legal vector of that type."""
    types = np.unique(legal[:, 0])
    rows = legal[legal[:, 0] == types[rng.integers(len(types))]]
    return rows[rng.integers(len(rows))]


def factored_runner(task_id: str, steps: int, module: Any = None) -> Callable[[], float]:
    """``module``: a ``gym_env`` package whose env is timed unwrapped (default: ``gymnasium.make``)."""
    env_id = factored_id(task_id)
    made = gymnasium.make(env_id) if module is None else module.CodeRedFactoredEnv(task_id)
    env, rng, state = made, np.random.default_rng(0), {"seed": 0}
    env.reset(seed=0)
    inner = env.unwrapped

    def run() -> float:
        spent = 0.0
        for _ in range(steps):
            action = pick(inner.legal_actions(), rng)
            start = clock()
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                state["seed"] += 1
                env.reset(seed=state["seed"])
            spent += clock() - start
        return spent / steps

    return run


def flat_runner(task_id: str, steps: int, module: Any = None) -> Callable[[], float]:
    made = gymnasium.make(flat_id(task_id)) if module is None else module.CodeRedGymEnv(task_id)
    env, rng, state = made, np.random.default_rng(0), {"seed": 0}
    env.reset(seed=0)
    inner = env.unwrapped

    def run() -> float:
        spent = 0.0
        for _ in range(steps):
            action = int(rng.integers(int(inner.action_masks().sum())))
            start = clock()
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                state["seed"] += 1
                env.reset(seed=state["seed"])
            spent += clock() - start
        return spent / steps

    return run


def concrete_by_type(sim: CodeRedSim) -> dict[str, list[dict[str, Any]]]:
    """Every concrete legal action of ``sim`` (every combination inside each option), by type."""
    out: dict[str, list[dict[str, Any]]] = {}
    for action_type, options in sim.observation_view()["legal_actions"].items():
        concrete = out.setdefault(action_type, [])
        for option in options:
            names = list(option)
            for values in itertools.product(*(option[n] for n in names)):
                concrete.append({"action_type": action_type, **dict(zip(names, values, strict=True))})
    return out


def simulation_runner(task_id: str, steps: int) -> Callable[[], float]:
    """The simulation's own step (``CodeRedSim.step``) under the same policy (a uniform legal
    type, then a uniform legal action of that type), on episodes of its own: the rest of an
    adapter's step is the adapter's."""
    rng, state = np.random.default_rng(0), {"seed": 0, "sim": CodeRedSim(task_id, 0)}

    def run() -> float:
        spent = 0.0
        for _ in range(steps):
            sim = state["sim"]
            by_type = concrete_by_type(sim)
            actions = by_type[list(by_type)[rng.integers(len(by_type))]]
            action = actions[rng.integers(len(actions))]
            start = clock()
            result = sim.step(action)
            if result.done:
                state["seed"] += 1
                state["sim"] = CodeRedSim(task_id, state["seed"])
            spent += clock() - start
        return spent / steps

    return run


SPLIT_PARTS = (
    ("decode", "decode and check the factored action"),
    ("simulation", "the simulation's step without the reward"),
    ("preview", "the reward: the rubric's score preview"),
    ("observation", "observation rows and masks"),
    ("output", "the observation's copy and the info"),
)


def split_runner(task_id: str, steps: int) -> Callable[[], dict[str, float]]:
    """Seconds per step in each part of an unwrapped factored step (``SPLIT_PARTS``):
    ``FactoredCore.step`` played piece by piece, the same work in the same order."""
    from codered_env.gym_env.factored_env import CodeRedFactoredEnv

    env, rng, state = CodeRedFactoredEnv(task_id), np.random.default_rng(0), {"seed": 0}
    env.reset(seed=0)
    core = env.core

    def run() -> dict[str, float]:
        spent = dict.fromkeys((name for name, _ in SPLIT_PARTS), 0.0)
        for _ in range(steps):
            action = pick(env.legal_actions(), rng)
            core.sim.rewards = False  # the reward's preview is timed on its own
            marks = [clock()]
            wire, core.action_error = core._wire(action)
            marks.append(clock())
            done = core.sim.step(wire).done
            marks.append(clock())
            core.sim.potential  # noqa: B018  computes the preview, as the reward does
            marks.append(clock())
            core._observe()
            marks.append(clock())
            core.info(env._obs())
            marks.append(clock())
            for name, begin, end in zip(spent, marks, marks[1:], strict=False):
                spent[name] += end - begin
            if done:
                state["seed"] += 1
                env.reset(seed=state["seed"])
        return {name: total / steps for name, total in spent.items()}

    return run


def split_lines(task_id: str, steps: int, rounds: int, cartpole: float) -> list[str]:
    """The split table of one task: the median round of each part, and its share."""
    run = split_runner(task_id, steps)
    parts = [run() for _ in range(rounds)]
    medians = {name: statistics.median(p[name] for p in parts) for name, _ in SPLIT_PARTS}
    total = sum(medians.values())
    lines = [
        f"## Where a factored {task_id} step's time goes",
        "",
        "The unwrapped env's step played piece by piece (`bench/bench_gym_factored.py --split`); "
        f"CartPole-v1 {cartpole * 1e6:.1f} µs.",
        "",
        "| part | µs | share | / CartPole |",
        "|---|---|---|---|",
    ]
    for name, label in SPLIT_PARTS:
        t = medians[name]
        lines.append(f"| {label} | {t * 1e6:.0f} | {t / total:.0%} | {t / cartpole:.1f}x |")
    lines.append(f"| total | {total * 1e6:.0f} | 100% | {total / cartpole:.1f}x |")
    return lines


def cartpole_runner(steps: int) -> Callable[[], float]:
    env = gymnasium.make("CartPole-v1")
    env.reset(seed=0)

    def run() -> float:
        start = clock()
        for _ in range(steps):
            _, _, terminated, truncated, _ = env.step(0)
            if terminated or truncated:
                env.reset()
        return (clock() - start) / steps

    return run


def vector_runner(task_id: str, n: int, steps: int, native: bool) -> Callable[[], float]:
    """Seconds per ``step`` of N episodes: the native vector env or SyncVectorEnv of N envs."""
    env_id = factored_id(task_id)
    if native:
        vec = gymnasium.make_vec(env_id, num_envs=n)
        legal = vec.legal_actions
    else:
        vec = gymnasium.vector.SyncVectorEnv([lambda: gymnasium.make(env_id)] * n)

        def legal(i: int) -> np.ndarray:
            return vec.envs[i].unwrapped.legal_actions()

    vec.reset(seed=0)
    rng = np.random.default_rng(0)

    def run() -> float:
        spent = 0.0
        for _ in range(steps):
            actions = np.stack([pick(legal(i), rng) for i in range(n)])
            start = clock()
            vec.step(actions)
            spent += clock() - start
        return spent / steps

    return run


def ab_lines(other: Path, tasks: list[str], steps: int, rounds: int) -> list[str]:
    """The ``--ab`` table: both checkouts' unwrapped envs next to CartPole, alternating rounds."""
    import tempfile

    import codered_env.gym_env as ours

    alias = Path(tempfile.mkdtemp()) / "codered_other"
    alias.symlink_to(other.resolve() / "codered_env")
    sys.path.insert(0, str(alias.parent))
    import codered_other.gym_env as theirs  # type: ignore[import-not-found]

    lines = [
        f"## This checkout vs {other.name} (unwrapped envs, same process)",
        "",
        "| task | CartPole-v1 µs | factored before µs | factored now µs | flat before µs | flat now µs |",
        "|---|---|---|---|---|---|",
    ]
    for task_id in tasks:
        t = median_rounds(
            {
                "cartpole": cartpole_runner(steps * 10),
                "factored_before": factored_runner(task_id, steps, theirs),
                "factored_now": factored_runner(task_id, steps, ours),
                "flat_before": flat_runner(task_id, steps, theirs),
                "flat_now": flat_runner(task_id, steps, ours),
            },
            rounds,
        )
        cells = [f"{t['cartpole'] * 1e6:.1f}"] + [
            f"{t[k] * 1e6:.0f} ({t[k] / t['cartpole']:.1f}x)"
            for k in ("factored_before", "factored_now", "flat_before", "flat_now")
        ]
        lines.append(f"| {task_id} | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    return lines


def median_rounds(runners: dict[str, Callable[[], float]], rounds: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in runners}
    names = list(runners)
    for r in range(rounds):
        for name in names if r % 2 == 0 else reversed(names):
            times[name].append(runners[name]())
    return {name: statistics.median(t) for name, t in times.items()}


def header(command: str) -> list[str]:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        commit = "unknown"
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    return [
        "# Factored Gymnasium interface: speed",
        "",
        f"- Commit: `{commit}`",
        f"- Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"gymnasium {gymnasium.__version__}; load average at the end {load}",
        f"- Generated: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- Command: `{command}`",
        "",
        "Generated by `bench/bench_gym_factored.py` (process time of the `step` calls only; median of",
        "alternating rounds; a masked random policy that picks the action type first).",
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="task1,task5")
    parser.add_argument("--steps", type=int, default=400, help="steps per round (single env)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--envs", type=int, default=8, help="episodes per vector env")
    parser.add_argument("--out", type=Path, default=None, help="write the markdown here too")
    parser.add_argument(
        "--ab",
        type=Path,
        default=None,
        metavar="PATH",
        help="time this checkout against the one at PATH instead (single env)",
    )
    parser.add_argument(
        "--split",
        default="task5",
        metavar="TASK",
        help="the task whose step is split into its parts ('' for none)",
    )
    args = parser.parse_args()
    tasks = args.tasks.split(",")
    if args.ab:
        print("\n".join(ab_lines(args.ab, tasks, args.steps, args.rounds)))
        return
    lines = header(
        "uv run python bench/bench_gym_factored.py "
        + " ".join(
            f"--{k} {v}"
            for k, v in (
                ("tasks", args.tasks),
                ("steps", args.steps),
                ("rounds", args.rounds),
                ("envs", args.envs),
                ("split", args.split or "''"),
            )
            + ((("out", args.out),) if args.out else ())
        )
    )
    lines += [
        "## One step vs CartPole-v1",
        "",
        "simulation: `CodeRedSim.step` alone under the same policy (episodes of its own): the rest of a step",
        "is the adapter's.",
        "",
        "| task | CartPole-v1 µs | simulation µs | simulation / CartPole | factored µs | factored / CartPole "
        "| flat µs | flat / CartPole |",
        "|---|---|---|---|---|---|---|---|",
    ]
    cartpole: dict[str, float] = {}
    for task_id in tasks:
        t = median_rounds(
            {
                "cartpole": cartpole_runner(args.steps * 10),
                "simulation": simulation_runner(task_id, args.steps),
                "factored": factored_runner(task_id, args.steps),
                "flat": flat_runner(task_id, args.steps),
            },
            args.rounds,
        )
        cells = [f"{t['cartpole'] * 1e6:.1f}"] + [
            f"{t[k] * 1e6:.0f} | {t[k] / t['cartpole']:.1f}x" for k in ("simulation", "factored", "flat")
        ]
        lines.append(f"| {task_id} | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
        cartpole[task_id] = t["cartpole"]
    if args.split:
        if args.split not in cartpole:
            cartpole[args.split] = median_rounds({"c": cartpole_runner(args.steps * 10)}, args.rounds)["c"]
        lines += ["", *split_lines(args.split, args.steps, args.rounds, cartpole[args.split])]
        print("\n".join(lines[-(len(SPLIT_PARTS) + 2) :]), flush=True)
    n = args.envs
    lines += [
        "",
        f"## Vector env: one step of {n} episodes",
        "",
        f"| task | native vector env µs | SyncVectorEnv of {n} envs µs | native / sync |",
        "|---|---|---|---|",
    ]
    for task_id in tasks:
        steps = max(20, args.steps // n)
        t = median_rounds(
            {
                "native": vector_runner(task_id, n, steps, True),
                "sync": vector_runner(task_id, n, steps, False),
            },
            args.rounds,
        )
        lines.append(
            f"| {task_id} | {t['native'] * 1e6:.0f} | {t['sync'] * 1e6:.0f} | {t['native'] / t['sync']:.2f} |"
        )
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
