"""Where a planner's decision time goes: forking, the rollouts' policy, the rollouts' steps.

    nice -n 10 uv run python bench/planner_time_split.py --tasks task2,task3,task4,task5 --seeds 990-991

Plays the planner (or ``--agent oracle``) on each seed and splits the CPU time of its searching
decisions into:

``fork``     the copy a rollout plays on: ``PlannerAgent._rollout_start`` (per decision one
             snapshot, per fork seed one fair fork of it, or the oracle's truthful copy, frozen,
             per rollout a copy of that), or ``PlannerAgent.branch`` in checkouts without it
``policy``   the rollout policy's ``act`` (its reads of the lazy observation view included)
``step``     the rest of each rollout: the copy's ``step`` calls and the loop around them
``other``    everything else in a decision (candidates, the base proposal, the statistics)

A fork's share bounds what a cheaper fork can buy: with a free fork the planner would decide in
``1 - fork share`` of the time. Numbers are CPU seconds of this process (``time.process_time``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from codered_env.agents import make_agent
from codered_env.agents.planner import PlannerAgent
from codered_env.runner import run_episode

clock = time.process_time


class _Split:
    """Accumulated CPU seconds per part of a decision."""

    def __init__(self) -> None:
        self.seconds = {"fork": 0.0, "policy": 0.0, "rollout": 0.0, "decision": 0.0}
        self.forks = 0

    def timed(self, part: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            start = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[part] += clock() - start
        return run

    def rows(self) -> dict[str, float]:
        s = self.seconds
        rollout_rest = s["rollout"] - s["policy"]
        return {"fork": s["fork"], "policy": s["policy"], "step": rollout_rest,
                "other": s["decision"] - s["fork"] - s["rollout"]}


def _instrument(agent: PlannerAgent, split: _Split) -> None:
    """Time the agent's forks, rollouts and the rollout policy's decisions (instance attributes
    shadow the class's methods; nothing else about the agent changes)."""
    start_name = "_rollout_start" if hasattr(agent, "_rollout_start") else "branch"
    branch, rollout, base_policy = getattr(agent, start_name), agent._rollout, agent.base_policy

    def counted_branch(sim: Any, fork_seed: int) -> Any:
        split.forks += 1
        return branch(sim, fork_seed)

    def timed_policy(sim: Any) -> Any:
        policy = base_policy(sim)
        policy.act = split.timed("policy", policy.act)
        return policy

    setattr(agent, start_name, split.timed("fork", counted_branch))
    agent._rollout = split.timed("rollout", rollout)  # type: ignore[method-assign]
    agent.base_policy = timed_policy  # type: ignore[method-assign]


def _seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description="split a planner's decision time")
    parser.add_argument("--tasks", default="task2,task3,task4,task5")
    parser.add_argument("--seeds", default="990-991", help="a range, e.g. 990-993")
    parser.add_argument("--agent", default="planner", choices=("planner", "oracle"))
    args = parser.parse_args()
    print("| task | seeds | decisions CPU s | forks | µs per fork | fork | policy | step | other |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for task in args.tasks.split(","):
        split = _Split()
        for seed in _seeds(args.seeds):
            agent = make_agent(args.agent, seed)
            assert isinstance(agent, PlannerAgent)
            _instrument(agent, split)
            run_episode(task, seed, agent)
            split.seconds["decision"] += sum(agent.decision_cpu_seconds)
        total = split.seconds["decision"]
        shares = " | ".join(f"{v / total:.1%}" for v in split.rows().values())
        per_fork = split.seconds["fork"] / max(1, split.forks) * 1e6
        row = f"| {task} | {args.seeds} | {total:.1f} | {split.forks} | {per_fork:.0f} | {shares} |"
        print(row, flush=True)


if __name__ == "__main__":
    main()
