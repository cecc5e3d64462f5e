"""What memorising buys: the heuristic's action list from one episode, replayed blind elsewhere.

For every task, the heuristic plays a source episode; its action list is then replayed without
looking (invalid actions cost what they always cost) on target episodes:

``fixed city``   targets are other seeds on Prakashnagar (the map and fleet the list was made on);
``new cities``   targets are held-out generated cities (``citygen`` test split), one seed each.

The table shows the heuristic's own mean on the targets, the replay's mean, the share of the
heuristic's score the replay keeps, and the random agent's mean for scale.

Usage::

    uv run python bench/open_loop_cities.py                 # 5 sources x 7 targets per task
    uv run python bench/open_loop_cities.py --sources 3 --targets 5
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from codered_env.agents import make_agent
from codered_env.sim import TASK_IDS, CodeRedSim
from codered_env.sim.citygen import split_seeds


def heuristic_play(task_id: str, seed: int, city: Any) -> tuple[list[Any], float]:
    sim = CodeRedSim(task_id, seed, city=city)
    agent = make_agent("heuristic", seed)
    agent.reset(task_id, seed)
    while not sim.done:
        sim.step(agent.act(sim.observation_view()))
    return list(sim.action_log), float(sim.grade()["score"])


def replay(task_id: str, seed: int, city: Any, actions: list[Any]) -> float:
    sim = CodeRedSim(task_id, seed, city=city)
    for action in actions:
        if sim.done:
            break
        sim.step(action)
    sim.finish()
    return float(sim.grade()["score"])


def random_score(task_id: str, seed: int, city: Any) -> float:
    sim = CodeRedSim(task_id, seed, city=city)
    agent = make_agent("random", seed)
    agent.reset(task_id, seed)
    while not sim.done:
        sim.step(agent.act(sim.observation_view()))
    return float(sim.grade()["score"])


def measure(task_id: str, pairs: list[tuple[tuple[int, Any], list[tuple[int, Any]]]]) -> dict[str, float]:
    own, blind, rand = [], [], []
    for (seed, city), targets in pairs:
        actions, _ = heuristic_play(task_id, seed, city)
        for t_seed, t_city in targets:
            own.append(heuristic_play(task_id, t_seed, t_city)[1])
            blind.append(replay(task_id, t_seed, t_city, actions))
            rand.append(random_score(task_id, t_seed, t_city))
    h, r = statistics.fmean(own), statistics.fmean(blind)
    return {"heuristic": h, "replay": r, "kept": r / h, "random": statistics.fmean(rand)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sources", type=int, default=5)
    parser.add_argument("--targets", type=int, default=7)
    args = parser.parse_args()
    start = time.perf_counter()
    test = split_seeds("test")
    print("| task | where | heuristic | blind replay | kept | random |")
    print("|---|---|---|---|---|---|")
    for task_id in TASK_IDS:
        n = args.targets
        fixed = [((s, "prakashnagar"), [(s + 1 + k, "prakashnagar") for k in range(n)])
                 for s in range(args.sources)]
        fresh = [((s, test[s * (n + 1)]), [(s, test[s * (n + 1) + 1 + k]) for k in range(n)])
                 for s in range(args.sources)]
        for where, pairs in (("fixed city", fixed), ("new cities", fresh)):
            m = measure(task_id, pairs)
            print(f"| {task_id} | {where} | {m['heuristic']:.3f} | {m['replay']:.3f} | {m['kept']:.2f} | "
                  f"{m['random']:.3f} |", flush=True)
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
