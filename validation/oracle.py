"""CodeRedEnv's oracle for OpenEnv validation (``capabilities.oracle``, form ``script``).

The built-in heuristic agent (``codered_env.agents.heuristic``): a fast expert rule set, far
above the no-op and random agents (docs/results/baselines.md; the search-based planner scores
higher at a cost per decision). It plays
against a running server over ``/ws`` (``--url``), or in process without one, and prints one
JSON line per episode: ``{"task_id", "seed", "score", "steps"}``.

    python validation/oracle.py --url http://127.0.0.1:8000 --split eval --count 10
    python validation/oracle.py --in-process --tasks task1 task3 --seeds 0 1
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator

from codered_env.agents import make_agent
from codered_env.runner import run_episode
from codered_env.server.task_api import get_task
from codered_env.sim import TASK_IDS


def _episodes(args: argparse.Namespace) -> Iterator[tuple[str, int]]:
    if args.split:
        for index in range(args.count):
            spec = get_task(args.split, index)
            yield spec["task_id"], spec["seed"]
        return
    for task_id in args.tasks:
        for seed in args.seeds:
            yield task_id, seed


def _remote_score(url: str, task_id: str, seed: int) -> tuple[float, int]:
    from codered_env.client import CodeRedEnv

    agent = make_agent("heuristic")
    agent.reset(task_id, seed)
    with CodeRedEnv(base_url=url).sync() as env:
        result = env.reset(task_id=task_id, seed=seed)
        while not result.done:
            shown = result.observation.model_dump(exclude={"text", "reward", "metadata"})
            result = env.step(agent.act(shown))
        state = env.state()
    return state.score, state.step_count


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--url", default="http://127.0.0.1:8000", help="a running CodeRedEnv server")
    where.add_argument("--in-process", action="store_true", help="play without a server")
    parser.add_argument("--split", choices=["train", "eval"], help="play the first --count tasks of a split")
    parser.add_argument("--count", type=int, default=5)
    parser.add_argument("--tasks", nargs="+", default=list(TASK_IDS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    args = parser.parse_args(argv)
    for task_id, seed in _episodes(args):
        if args.in_process:
            result = run_episode(task_id, seed, make_agent("heuristic"))
            score, steps = result.score, result.steps
        else:
            score, steps = _remote_score(args.url, task_id, seed)
        print(json.dumps({"task_id": task_id, "seed": seed, "score": score, "steps": steps}), flush=True)


if __name__ == "__main__":
    main()
