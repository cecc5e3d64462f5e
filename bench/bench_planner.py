"""Heuristic vs planner on unseen seeds: mean, standard error and seconds per decision.

    nice -n 10 uv run python bench/bench_planner.py --tasks task1,task2 --seeds 3000-3004 [--forks 4]

Prints one line per task: each agent's mean ± standard error, the paired difference (planner -
heuristic) ± its standard error, and the planner's wall seconds per decision. CPU-bound; run it
with ``nice -n 10`` on a shared machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

from codered_env.agents import HeuristicAgent, PlannerAgent
from codered_env.runner import run_episode


def _seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def _se(values: list[float]) -> float:
    return statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description="heuristic vs planner on unseen seeds")
    parser.add_argument("--tasks", default="task1,task2,task3,task4,task5")
    parser.add_argument("--seeds", default="3000-3004")
    parser.add_argument("--forks", type=int, default=None)
    parser.add_argument("--max-candidates", type=int, default=None)
    parser.add_argument("--per-seed", action="store_true", help="also print each seed's two scores")
    args = parser.parse_args()
    budget = {k: v for k, v in (("forks", args.forks), ("max_candidates", args.max_candidates)) if v}
    for task in args.tasks.split(","):
        heur, plan, decisions, wall, rollouts = [], [], 0, 0.0, 0
        for seed in _seeds(args.seeds):
            heur.append(run_episode(task, seed, HeuristicAgent(seed)).score)
            planner = PlannerAgent(seed, **budget)
            start = time.perf_counter()
            plan.append(run_episode(task, seed, planner).score)
            wall += time.perf_counter() - start
            decisions += planner.decisions
            rollouts += planner.rollouts
            if args.per_seed:
                print(f"  {task} seed {seed}: heuristic {heur[-1]:.4f} planner {plan[-1]:.4f}", flush=True)
        diff = [p - h for p, h in zip(plan, heur, strict=True)]
        print(
            f"{task}: heuristic {statistics.fmean(heur):.3f}±{_se(heur):.3f} "
            f"planner {statistics.fmean(plan):.3f}±{_se(plan):.3f} "
            f"diff {statistics.fmean(diff):+.3f}±{_se(diff):.3f} "
            f"({len(diff)} seeds; {wall / max(1, decisions):.3f} s/decision, "
            f"{rollouts / max(1, decisions):.1f} rollouts/decision, {wall / len(diff):.1f} s/episode)",
            flush=True,
        )


if __name__ == "__main__":
    main()
