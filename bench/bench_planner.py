"""Heuristic vs planner (and the oracle ceiling) on seeds: paired gains, standard errors, time.

    nice -n 10 uv run python bench/bench_planner.py --tasks task2,task3 --seeds 20000-20009 \\
        [--agents planner,oracle] [--forks 4 --confirm-forks 8 --max-candidates 6 --pooled] [--per-seed] \\
        [--db ladder.db]   # then: codered report --db ladder.db (random, heuristic, agents)

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

from codered_env.agents import HeuristicAgent, RandomAgent, make_agent
from codered_env.agents.planner import PlannerAgent
from codered_env.evaluation.episode import EpisodeOutcome, to_record
from codered_env.evaluation.store import EpisodeStore
from codered_env.evaluation.trajectory import StepRecord
from codered_env.runner import EpisodeResult, run_episode


def _store(db: EpisodeStore | None, result: EpisodeResult) -> None:
    """Keep the episode as ``codered eval`` would (``codered report --db`` then tables it)."""
    if db is None:
        return
    steps = [StepRecord(n + 1, dict(a), r, n + 1 == result.steps, e)
             for n, (a, r, e) in enumerate(zip(result.actions, result.rewards, result.errors, strict=True))]
    outcome = EpisodeOutcome(result.task_id, result.seed, steps, result.grade, result.score, True)
    db.add(to_record(result.agent, result.agent, outcome, result.wall_time_s, None))


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
    parser.add_argument("--no-wait", action="store_true", help="planner: never try waiting")
    parser.add_argument("--max-loss", type=float, default=None,
                        help="planner: refuse a challenger that loses more than this on any fork")
    parser.add_argument("--pooled", action=argparse.BooleanOptionalAction, default=None,
                        help="planner: test on every fork (Bonferroni z) or on the fresh forks only")
    parser.add_argument("--per-seed", action="store_true", help="also print each seed's scores")
    parser.add_argument("--db", default=None, help="also store every episode (with random's) here")
    args = parser.parse_args()
    flags = {"forks": args.forks, "confirm_forks": args.confirm_forks, "z": args.z,
             "max_candidates": args.max_candidates, "min_gain": args.min_gain,
             "max_loss": args.max_loss, "pooled": args.pooled}
    budget = {k: v for k, v in flags.items() if v is not None}
    if args.no_reorder:
        budget["reorder"] = False
    if args.no_wait:
        budget["wait"] = False
    seeds = _seeds(args.seeds)
    db = EpisodeStore(args.db) if args.db else None
    for task in args.tasks.split(","):
        heur = []
        for seed in seeds:
            result = run_episode(task, seed, HeuristicAgent(seed))
            heur.append(result.score)
            _store(db, result)
            if db is not None:
                _store(db, run_episode(task, seed, RandomAgent(seed)))
        for name in args.agents.split(","):
            scores, every, every_cpu, searched, cpu, rollouts, wall = [], [], [], [], [], 0, 0.0
            for seed in seeds:
                agent = make_agent(name, seed, **(budget if name == "planner" else {}))
                assert isinstance(agent, PlannerAgent)
                start = time.perf_counter()
                result = run_episode(task, seed, agent)
                wall += time.perf_counter() - start
                scores.append(result.score)
                _store(db, result)
                every += agent.decision_seconds
                every_cpu += agent.decision_cpu_seconds
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
                f"{_times('all CPU', every_cpu)}, "
                f"{_times('searched', searched)} ({len(searched)}/{len(every)} searched), "
                f"{_times('searched CPU', cpu)}; "
                f"{rollouts / max(1, len(every)):.1f} rollouts/decision, {wall / len(diff):.1f} s/episode",
                flush=True,
            )


if __name__ == "__main__":
    main()
