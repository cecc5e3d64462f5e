"""What a trained policy does, next to the heuristic, on held-out seeds (docs/TRAINING.md).

Usage: ``uv run python bench/ppo_behaviour.py runs/train/task4/best.zip --task task4 --seeds 10000-10009``
(a MaskablePPO ``.zip``) or ``... RUN/policy.pt --task task1`` (a factored-interface policy of
``codered_env.factored_ppo``, played greedily on ``CodeRedFactoredEnv``).

Per agent: mean grade, the share of each action type among its decisions, refused decisions, and
the grade's components (from ``grade()``), to see which part of the job a policy has not learnt,
and the patients' outcomes beside the grade (mean over episodes of the weighted outcome and of
the expected deaths per 100 patients).
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
    return _episode(grade, kinds, refused)


def play_factored(policy: Any, task_id: str, seed: int) -> dict[str, Any]:
    """One greedy episode of a factored policy (``factored_ppo.greedy_grades``' loop, counted)."""
    import torch

    from codered_env.factored_ppo import batch_inputs
    from codered_env.gym_env import CodeRedFactoredEnv

    env, kinds = CodeRedFactoredEnv(task_id, maxima=policy.maxima), Counter()
    obs, _ = env.reset(seed=seed)
    done = False
    with torch.no_grad():
        while not done:
            legal = env.legal_actions()
            action = legal[int(policy(*batch_inputs([obs], [legal]))[0][0].argmax())]
            kinds[env.decode(action)["action_type"]] += 1
            obs, _, done, _, _ = env.step(action)
    return _episode(env.sim.grade(), kinds, 0)


def _episode(grade: dict[str, Any], kinds: Counter[str], refused: int) -> dict[str, Any]:
    return {"score": grade["score"], "kinds": kinds, "refused": refused, "components": grade["components"],
            "outcomes": grade["outcomes"]}


def load_factored(path: str) -> Any:
    from codered_env.agents.factored import load_policy

    return load_policy(path)[0]


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
    outcomes = [e["outcomes"] for e in episodes]
    print(f"    outcomes: weighted outcome {mean(o['weighted_outcome'] for o in outcomes):.3f}, "
          f"expected deaths per 100 patients {mean(o['deaths_per_100'] for o in outcomes):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("policy")
    parser.add_argument("--task", required=True)
    parser.add_argument("--seeds", default="10000-10009")
    args = parser.parse_args()
    lo, _, hi = args.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    summarise("heuristic", [play("heuristic", args.task, seed) for seed in seeds])
    if args.policy.endswith(".pt"):
        policy = load_factored(args.policy)
        summarise("factored", [play_factored(policy, args.task, seed) for seed in seeds])
    else:
        summarise("ppo", [play(f"ppo:{args.policy}", args.task, seed) for seed in seeds])


if __name__ == "__main__":
    main()
