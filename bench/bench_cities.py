"""Baselines on generated cities: noop / random / heuristic means per task over many city seeds.

For every city seed (the first ``--cities`` of a split, see ``citygen.CITY_SPLITS``) and every
task, each policy plays ``--seeds`` episodes; the table shows the mean final score per task and
policy, how many heuristic episodes ended on the step budget, and the ordering check the
validity tests hold (noop < random < heuristic on every task). Prakashnagar's row is printed
beside it for reference.

Usage::

    uv run python bench/bench_cities.py                    # 50 test cities x 2 seeds (~1-2 min)
    uv run python bench/bench_cities.py --split train --cities 20 --seeds 1
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from codered_env.agents import make_agent
from codered_env.sim import TASK_IDS, CodeRedSim
from codered_env.sim.citygen import split_seeds

POLICIES = ("noop", "random", "heuristic")


def play(task_id: str, seed: int, city: Any, policy: str) -> tuple[float, str | None]:
    sim = CodeRedSim(task_id, seed, city=city)
    agent = make_agent(policy, seed)
    agent.reset(task_id, seed)
    while not sim.done:
        sim.step(agent.act(sim.observation_view()))
    return float(sim.grade()["score"]), sim.end_reason


def table(cities: list[Any], seeds: int) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for task_id in TASK_IDS:
        scores: dict[str, list[float]] = {p: [] for p in POLICIES}
        budget_ends = 0
        for city in cities:
            for seed in range(seeds):
                for policy in POLICIES:
                    score, reason = play(task_id, seed, city, policy)
                    scores[policy].append(score)
                    budget_ends += policy == "heuristic" and reason == "step_budget"
        means = {p: statistics.fmean(v) for p, v in scores.items()}
        rows[task_id] = {**means, "budget_ends": budget_ends, "episodes": len(scores["noop"])}
    return rows


def _print(title: str, rows: dict[str, dict[str, Any]]) -> None:
    print(f"\n{title}\n")
    print("| task | noop | random | heuristic | heuristic budget ends | noop < random < heuristic |")
    print("|---|---|---|---|---|---|")
    for task_id, r in rows.items():
        ordered = r["noop"] < r["random"] < r["heuristic"]
        print(f"| {task_id} | {r['noop']:.3f} | {r['random']:.3f} | {r['heuristic']:.3f} | "
              f"{r['budget_ends']}/{r['episodes']} | {'yes' if ordered else 'NO'} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--split", default="test")
    parser.add_argument("--cities", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=2, help="episode seeds per city and task")
    args = parser.parse_args()
    start = time.perf_counter()
    cities = list(split_seeds(args.split)[: args.cities])
    title = f"{len(cities)} {args.split} cities (seeds {cities[0]}..{cities[-1]}), {args.seeds} seeds each"
    _print(title, table(cities, args.seeds))
    episodes = args.seeds * len(cities)
    _print(f"Prakashnagar, {episodes} episode seeds", table(["prakashnagar"], episodes))
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
