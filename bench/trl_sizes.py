"""Prompt and tool-reply sizes of the TRL tool environment (codered_env.trl), in characters.

The heuristic agent plays each (task, seed) through ``CodeRedToolEnv`` tool calls. For every
decision the compact reply is measured next to the full state text a naive environment would
return (``render_text()`` after the step, i.e. the "before"). The opening prompt is the system and
user messages of ``episode_dataset`` plus the ``reset`` text plus the JSON tool schemas that
transformers derives from the methods (what TRL puts in the chat template).

Usage: ``uv run python bench/trl_sizes.py [--seeds 0-4]``
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics

from codered_env.agents import make_agent
from codered_env.sim import TASK_IDS
from codered_env.trl import CodeRedToolEnv, episode_dataset


def tools(env: CodeRedToolEnv) -> list:
    return [getattr(env, n) for n, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
            if n not in ("reset", "get_reward") and not n.startswith("_")]


def schema_chars(env: CodeRedToolEnv) -> int:
    try:
        from transformers.utils import get_json_schema
    except ImportError:
        return -1
    return sum(len(json.dumps({"type": "function", "function": get_json_schema(t)})) for t in tools(env))


def episode(task_id: str, seed: int) -> dict:
    env, agent = CodeRedToolEnv(), make_agent("heuristic", seed)
    row = episode_dataset([task_id], [seed])[0]
    opening = env.reset(**row)
    agent.reset(task_id, seed)
    compact, full = [], []
    while not env.sim.done:
        action = agent.act(env.sim.observation())
        params = {k: v for k, v in action.items() if k != "action_type"}
        compact.append(len(getattr(env, action["action_type"])(**params)))
        full.append(len(env.sim.render_text()))
    messages = sum(len(m["content"]) for m in row["prompt"])
    return {"opening": messages + len(opening), "compact": compact, "full": full,
            "grade": env.get_reward()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", default="0-4")
    args = parser.parse_args()
    lo, _, hi = args.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    schemas = schema_chars(CodeRedToolEnv())
    print(f"tool schemas (15 tools, JSON as given to the chat template): {schemas:,} chars\n")
    print("| task | opening prompt (messages + state) | + schemas | reply median before | after | "
          "replies per episode before | after | reduction |")
    print("|---|---|---|---|---|---|---|---|")
    for task_id in TASK_IDS:
        runs = [episode(task_id, s) for s in seeds]
        opening = statistics.median(r["opening"] for r in runs)
        full = [n for r in runs for n in r["full"]]
        compact = [n for r in runs for n in r["compact"]]
        per_full = statistics.fmean(sum(r["full"]) for r in runs)
        per_compact = statistics.fmean(sum(r["compact"]) for r in runs)
        print(f"| {task_id} | {opening:,.0f} | {opening + schemas:,.0f} | {statistics.median(full):,.0f} | "
              f"{statistics.median(compact):,.0f} | {per_full:,.0f} | {per_compact:,.0f} | "
              f"{per_full / per_compact:.1f}x |")


if __name__ == "__main__":
    main()
