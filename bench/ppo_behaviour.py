"""What a trained MaskablePPO policy does, next to the heuristic, on held-out seeds (docs/TRAINING.md).

Usage: ``uv run python bench/ppo_behaviour.py runs/train/task4/best.zip --task task4 --seeds 10000-10009``

Per agent: mean grade, the share of each action type among its decisions, refused decisions, and
the grade's components (from ``grade()``), to see which part of the job a policy has not learnt.
"""

from __future__ import annotations

import argparse
from collections import Counter
from statistics import mean
from typing import Any

from codered_env.agents import make_agent
from codered_env.sim import CodeRedSim


def play(agent_name: str, task_id: str, seed: int) -> dict[str, Any]:
    agent, sim = make_agent(agent_name, seed), CodeRedSim(task_id, seed)
    agent.reset(task_id, seed)
    kinds: Counter[str] = Counter()
    refused = 0
    while not sim.done:
        action = agent.act(sim.observation())
        kinds[action["action_type"]] += 1
        refused += sim.step(action).error is not None
    grade = sim.grade()
    return {"score": grade["score"], "kinds": kinds, "refused": refused, "components": grade["components"]}


def summarise(name: str, episodes: list[dict[str, Any]]) -> None:
    kinds: Counter[str] = Counter()
    for e in episodes:
        kinds.update(e["kinds"])
    total = sum(kinds.values())
    shares = ", ".join(f"{k} {v / total:.0%}" for k, v in kinds.most_common())
    components = {k: [e["components"][k] for e in episodes if e["components"][k] is not None]
                  for k in episodes[0]["components"]}
    parts = ", ".join(f"{k} {mean(v):.2f}" for k, v in components.items() if v)
    print(f"{name}: grade {mean(e['score'] for e in episodes):.3f}; decisions/episode "
          f"{total / len(episodes):.1f}; refused {sum(e['refused'] for e in episodes)}; {shares}")
    print(f"    components: {parts}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("policy")
    parser.add_argument("--task", required=True)
    parser.add_argument("--seeds", default="10000-10009")
    args = parser.parse_args()
    lo, _, hi = args.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    for label, name in (("heuristic", "heuristic"), ("ppo", f"ppo:{args.policy}")):
        summarise(label, [play(name, args.task, seed) for seed in seeds])


if __name__ == "__main__":
    main()
