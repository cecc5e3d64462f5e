"""Acceptance figures for issue #7 (Phase 2 tests dispatching), reproducible in one run.

Prints:

* triage accuracy from the report alone, over calls drawn from the phase-2 call mix: the
  Bayes-optimal priority (argmax of ``triage.priority_posterior``, computed from the model's own
  likelihood tables) and the heuristic's keyword rule (``agents/triage_rule.py``), on
  ``--reports`` sampled calls, plus the keyword rule's under-triage of true P1 calls;
* mean final score per policy on task4 and task5 over ``--seeds`` (default 3000-3049, seeds no
  test and no calibration uses): noop, random, heuristic, "heuristic but never triage", and a
  triage oracle (the heuristic given each call's true priority) -- with the differences the
  issue asks for;
* the share of heuristic episodes that end by running out of decisions (``step_budget``).

Usage::

    nice -n 10 uv run python bench/probe_triage.py --seeds 3000-3049
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter
from pathlib import Path
from random import Random
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codered_env.agents import HeuristicAgent, make_agent
from codered_env.agents.triage_rule import triage_report
from codered_env.sim import CodeRedSim
from codered_env.sim.conditions import CONDITIONS
from codered_env.sim.params import CALL_MIX
from codered_env.sim.triage import caller_report, priority_posterior

TASKS = ("task4", "task5")


class OracleTriageAgent(HeuristicAgent):
    """The heuristic, but each call is triaged at its true priority (reads the hidden state)."""

    name = "oracle_triage"

    def __init__(self, sim: CodeRedSim) -> None:
        super().__init__()
        self.sim = sim

    def triage_priority(self, call: dict[str, Any]) -> str:
        return self.sim.world.calls[call["call_id"]].true_priority


def report_accuracy(n: int, seed: int = 7) -> dict[str, float]:
    rng = Random(seed)
    conditions, weights = list(CALL_MIX), list(CALL_MIX.values())
    bayes = keyword = p1 = p1_under = p1_bayes_under = 0
    confusion: Counter[tuple[str, str]] = Counter()
    for _ in range(n):
        cond = rng.choices(conditions, weights)[0]
        truth = CONDITIONS[cond].true_priority
        report = caller_report(cond, "Rajiv Chowk", rng)
        post = priority_posterior({"report": report})
        best = max(sorted(post), key=lambda k: post[k])
        guess = triage_report(report)
        bayes += best == truth
        keyword += guess == truth
        confusion[(truth, guess)] += 1
        if truth == "P1":
            p1 += 1
            p1_under += guess != "P1"
            p1_bayes_under += best != "P1"
    return {
        "bayes": bayes / n,
        "keyword": keyword / n,
        "keyword_p1_under": p1_under / max(p1, 1),
        "bayes_p1_under": p1_bayes_under / max(p1, 1),
    }


def play(task: str, seed: int, policy: str) -> tuple[float, str]:
    sim = CodeRedSim(task, seed)
    if policy == "oracle":
        agent: Any = OracleTriageAgent(sim)
    elif policy == "never_triage":
        agent = HeuristicAgent(seed, triage=False)
    else:
        agent = make_agent(policy, seed)
    agent.reset(task, seed)
    while not sim.done:
        sim.step(agent.act(sim.observation()))
    return sim.grade()["score"], sim.end_reason or ""


def parse_seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", default="3000-3049", help="inclusive range, e.g. 3000-3049")
    parser.add_argument("--reports", type=int, default=20000, help="sampled reports for the accuracy")
    args = parser.parse_args()
    seeds = parse_seeds(args.seeds)

    acc = report_accuracy(args.reports)
    print(f"## Triage from the report alone ({args.reports} calls from CALL_MIX)")
    for label, key in (("Bayes-optimal", "bayes"), ("keyword rule ", "keyword")):
        print(
            f"{label} priority accuracy: {acc[key]:.3f} "
            f"(true P1 under-triaged: {acc[key + '_p1_under']:.3f})"
        )

    policies = ("noop", "random", "heuristic", "never_triage", "oracle")
    print(f"\n## Mean final score over seeds {seeds[0]}-{seeds[-1]} ({len(seeds)} seeds)")
    print("| task | " + " | ".join(policies) + " | heur - never | oracle - heur | heuristic ends by budget |")
    print("|---" * (len(policies) + 4) + "|")
    for task in TASKS:
        means, budget = {}, 0.0
        for policy in policies:
            runs = [play(task, s, policy) for s in seeds]
            means[policy] = statistics.fmean(score for score, _ in runs)
            if policy == "heuristic":
                budget = sum(reason == "step_budget" for _, reason in runs) / len(runs)
        cells = " | ".join(f"{means[p]:.3f}" for p in policies)
        print(
            f"| {task} | {cells} | {means['heuristic'] - means['never_triage']:+.3f} | "
            f"{means['oracle'] - means['heuristic']:+.3f} | {budget:.0%} |"
        )


if __name__ == "__main__":
    main()
