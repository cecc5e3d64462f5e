"""A/B of the core step: this checkout against a baseline commit, in alternating processes.

The actions are recorded once (random and heuristic play on seeds ``0..N-1`` of every task, in
this checkout); each round then replays them with ``CodeRedSim.step`` alone (the core: tick loop,
action handling, running grade; CPU time of the process, summed per episode, reset excluded) in
a fresh process per tree and task, the two trees in turn
(A B, then B A), so drift in the machine's load falls on both. Each process keeps its fastest
of ``--repeats`` replays; the table shows, per task, the fastest round of each tree and the
median over rounds of the per-round ratio B / A (below 1: this checkout is faster).

The baseline tree is ``git archive`` of ``--baseline`` (its ``codered_env`` package only), run
with this checkout's interpreter and dependencies. Both trees must play the same episodes: the
replay checks that each tree reaches the same final scores.

Usage::

    uv run python bench/bench_core_ab.py --baseline 1306a78              # markdown on stdout
    uv run python bench/bench_core_ab.py --baseline main --seeds 3 --rounds 3 --tasks task5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
AGENTS = ("random", "heuristic")


def record(tasks: list[str], seeds: int) -> dict[str, dict[str, list[list[dict[str, Any]]]]]:
    """task -> "seed:agent" -> the actions the agent played."""
    from codered_env.agents import make_agent
    from codered_env.sim import CodeRedSim

    out: dict[str, dict[str, Any]] = {}
    for task_id in tasks:
        out[task_id] = {}
        for name in AGENTS:
            for seed in range(seeds):
                sim, agent = CodeRedSim(task_id, seed), make_agent(name, seed)
                agent.reset(task_id, seed)
                actions = []
                while not sim.done:
                    action = agent.act(sim.observation())
                    actions.append(action)
                    sim.step(action)
                out[task_id][f"{seed}:{name}"] = actions
    return out


def worker(task_id: str, episodes: dict[str, list[dict[str, Any]]], repeats: int) -> dict[str, Any]:
    """The fastest of ``repeats`` core replays of the episodes: total ns, steps, final scores."""
    import codered_env
    from codered_env.sim import CodeRedSim

    best = None
    scores: list[float] = []
    clock = time.process_time_ns  # CPU time of this process: other processes' load counts less
    for _ in range(repeats):
        total, steps, scores = 0, 0, []
        for key, actions in episodes.items():
            sim = CodeRedSim(task_id, int(key.split(":")[0]))
            step = sim.step
            t0 = clock()
            for action in actions:
                step(action)
            total += clock() - t0
            steps += len(actions)
            scores.append(sim.score_preview)
        best = total if best is None else min(best, total)
    return {"ns": best, "steps": steps, "scores": scores, "package": str(Path(codered_env.__file__).parent)}


def baseline_tree(ref: str, into: Path) -> str:
    """Unpack ``codered_env`` of commit ``ref`` under ``into``; its short hash."""
    commit = subprocess.run(["git", "rev-parse", "--short", ref], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    archive = subprocess.run(["git", "archive", commit, "codered_env"], cwd=ROOT, capture_output=True,
                             check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return commit


def run_worker(tree: Path, task_id: str, actions_file: Path, repeats: int) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, __file__, "--worker", task_id, "--actions", str(actions_file),
                           "--repeats", str(repeats)], env=env, cwd=tree, capture_output=True, text=True,
                          check=True)
    result = json.loads(done.stdout)
    if Path(result["package"]).resolve() != (tree / "codered_env").resolve():
        raise RuntimeError(f"the worker imported {result['package']}, not the tree {tree}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="main", help="the commit to compare against (A)")
    parser.add_argument("--seeds", type=int, default=5, help="episodes per task and agent (seeds 0..N-1)")
    parser.add_argument("--rounds", type=int, default=5, help="A/B rounds (each a process per tree and task)")
    parser.add_argument("--repeats", type=int, default=3, help="replays per process; the fastest is kept")
    parser.add_argument("--tasks", default="task1,task2,task3,task4,task5")
    parser.add_argument("--worker", metavar="TASK", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--actions", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        episodes = json.loads(args.actions.read_text())[args.worker]
        print(json.dumps(worker(args.worker, episodes, args.repeats)))
        return 0

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "baseline"
        commit = baseline_tree(args.baseline, base)
        actions_file = Path(tmp) / "actions.json"
        actions_file.write_text(json.dumps(record(tasks, args.seeds)))
        trees = {"A": base, "B": ROOT}
        us: dict[tuple[str, str], list[float]] = {}
        ratios: dict[str, list[float]] = {t: [] for t in tasks}
        steps: dict[str, int] = {}
        for r in range(args.rounds):
            for task_id in tasks:
                order = ("A", "B") if r % 2 == 0 else ("B", "A")
                got = {name: run_worker(trees[name], task_id, actions_file, args.repeats) for name in order}
                if got["A"]["scores"] != got["B"]["scores"]:
                    raise RuntimeError(f"{task_id}: the two trees played different episodes")
                steps[task_id] = got["A"]["steps"]
                for name in order:
                    us.setdefault((task_id, name), []).append(got[name]["ns"] / got[name]["steps"] / 1e3)
                ratios[task_id].append(us[task_id, "B"][-1] / us[task_id, "A"][-1])
            print(f"  round {r + 1}/{args.rounds} done", file=sys.stderr)

    lines = [f"A = `{commit}` (baseline), B = this checkout; {args.seeds} seeds x {len(AGENTS)} agents "
             f"per task, {args.rounds} rounds, fastest of {args.repeats} replays per process.", "",
             "| task | steps | A core µs/step | B core µs/step | B / A (median of rounds) "
             "| min - max of rounds |",
             "|---|---|---|---|---|---|"]
    all_ratios = []
    for task_id in tasks:
        a, b, rs = min(us[task_id, "A"]), min(us[task_id, "B"]), ratios[task_id]
        all_ratios += rs
        lines.append(f"| {task_id} | {steps[task_id]} | {a:.1f} | {b:.1f} | {statistics.median(rs):.3f} | "
                     f"{min(rs):.3f} - {max(rs):.3f} |")
    lines += ["", f"Median B / A over every task and round: {statistics.median(all_ratios):.3f}."]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
