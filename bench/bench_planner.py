"""Heuristic vs planner (and the oracle ceiling) on seeds: paired gains, standard errors, time.

    nice -n 10 uv run python bench/bench_planner.py --tasks task2,task3 --seeds 20000-20009 \\
        [--agents planner,oracle] [--forks 3 --confirm-forks 3 --max-candidates 6] [--per-seed]

Prints one line per task and agent: the heuristic's and the agent's mean ± standard error, the
paired difference (agent - heuristic) ± its standard error and wins/losses, and the agent's wall
seconds per decision (median and 90th percentile over every decision, and over the decisions
that searched, in wall and in CPU seconds: on a shared machine the CPU time is the cost),
rollouts per decision and seconds per episode. Budget flags apply to the planner
only (the oracle keeps its own defaults). Tune on seeds 900-999 only; report on seeds never
tuned on. CPU-bound; run it with ``nice -n 10`` on a shared machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

from codered_env.agents import HeuristicAgent, make_agent
from codered_env.agents.planner import PlannerAgent
from codered_env.runner import run_episode


def _seeds(text: str) -> list[int]:
    seeds: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        seeds += range(int(lo), int(hi or lo) + 1)
    return seeds


def _se(values: list[float]) -> float:
    return statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else 0.0


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def _times(label: str, seconds: list[float]) -> str:
    return f"{label} median {_quantile(seconds, 0.5):.3f} p90 {_quantile(seconds, 0.9):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description="heuristic vs planner/oracle on seeds")
    parser.add_argument("--tasks", default="task2,task3,task4,task5")
    parser.add_argument("--seeds", default="900-904", help="e.g. 20000-20009 or 900-904,950")
    parser.add_argument("--agents", default="planner", help="comma-separated: planner, oracle")
    parser.add_argument("--forks", type=int, default=None)
    parser.add_argument("--confirm-forks", type=int, default=None)
    parser.add_argument("--max-candidates", type=int, default=None)
    parser.add_argument("--z", type=float, default=None)
    parser.add_argument("--min-gain", type=float, default=None)
    parser.add_argument("--no-reorder", action="store_true", help="planner: only the proposal's own kind")
    parser.add_argument("--per-seed", action="store_true", help="also print each seed's scores")
    args = parser.parse_args()
    flags = {"forks": args.forks, "confirm_forks": args.confirm_forks, "z": args.z,
             "max_candidates": args.max_candidates, "min_gain": args.min_gain}
    budget = {k: v for k, v in flags.items() if v is not None}
    if args.no_reorder:
        budget["reorder"] = False
    seeds = _seeds(args.seeds)
    for task in args.tasks.split(","):
        heur = [run_episode(task, seed, HeuristicAgent(seed)).score for seed in seeds]
        for name in args.agents.split(","):
            scores, every, searched, cpu, rollouts, wall = [], [], [], [], 0, 0.0
            for seed in seeds:
                agent = make_agent(name, seed, **(budget if name == "planner" else {}))
                assert isinstance(agent, PlannerAgent)
                start = time.perf_counter()
                scores.append(run_episode(task, seed, agent).score)
                wall += time.perf_counter() - start
                every += agent.decision_seconds
                searched += [s for s, n in zip(agent.decision_seconds, agent.decision_rollouts,
                                               strict=True) if n]
                cpu += [s for s, n in zip(agent.decision_cpu_seconds, agent.decision_rollouts,
                                          strict=True) if n]
                rollouts += agent.rollouts
                if args.per_seed:
                    print(f"  {task} seed {seed}: heuristic {heur[len(scores) - 1]:.4f} "
                          f"{name} {scores[-1]:.4f}", flush=True)
            diff = [a - h for a, h in zip(scores, heur, strict=True)]
            wins, losses = sum(d > 0 for d in diff), sum(d < 0 for d in diff)
            print(
                f"{task} {name}: heuristic {statistics.fmean(heur):.3f}±{_se(heur):.3f} "
                f"{name} {statistics.fmean(scores):.3f}±{_se(scores):.3f} "
                f"diff {statistics.fmean(diff):+.4f}±{_se(diff):.4f} ({wins} wins, {losses} losses; "
                f"{len(diff)} seeds {args.seeds}); s/decision {_times('all', every)}, "
                f"{_times('searched', searched)} ({len(searched)}/{len(every)} searched), "
                f"{_times('searched CPU', cpu)}; "
                f"{rollouts / max(1, len(every)):.1f} rollouts/decision, {wall / len(diff):.1f} s/episode",
                flush=True,
            )


if __name__ == "__main__":
    main()
