"""What triage from the caller's report is worth in phase 2, reproducible in one run.

Prints:

* triage from the report alone, over ``--reports`` calls drawn from the phase-2 call mix: the
  best classifier's condition accuracy, and for three rules -- "trust the best guess" (the most
  probable level, ``triage.best_guess_priority``), "send hot when in doubt" (the least expected
  triage cost under the rubric, ``triage.cautious_priority``: the heuristic's rule) and the
  keyword card (``agents/triage_rule.py``) -- exact accuracy, over- and under-triage at the lights-and-sirens
  line as Dami 2015 defines them (``triage.triage_rates``), hot sensitivity and true P1 coded cold;
* mean final score, weighted expected outcome and expected deaths per 100 patients per
  policy on task4 and task5 over ``--seeds`` (default 3000-3049, seeds no test and no calibration
  uses): noop, random, heuristic, "heuristic but never triage", the heuristic triaging by the best
  guess and by the keyword card, and a triage oracle (the heuristic given each call's true
  priority) -- with the heuristic's differences to the others;
* the share of heuristic episodes that end by running out of decisions (``step_budget``).

Usage::

    nice -n 10 uv run python bench/probe_triage.py --seeds 3000-3049
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from random import Random
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codered_env.agents import HeuristicAgent, make_agent
from codered_env.agents.triage_rule import triage_report
from codered_env.sim import CodeRedSim
from codered_env.sim.conditions import CONDITIONS
from codered_env.sim.params import CALL_MIX
from codered_env.sim.triage import (
    best_guess_priority,
    caller_report,
    cautious_priority,
    condition_posterior,
    priority_posterior,
    triage_rates,
)

TASKS = ("task4", "task5")


class OracleTriageAgent(HeuristicAgent):
    """The heuristic, but each call is triaged at its true priority (reads the hidden state)."""

    name = "oracle_triage"

    def __init__(self, sim: CodeRedSim) -> None:
        super().__init__()
        self.sim = sim

    def triage_priority(self, call: dict[str, Any]) -> str:
        return self.sim.world.calls[call["call_id"]].true_priority


class OtherTriageAgent(HeuristicAgent):
    """The heuristic with another triage rule: the most probable level or the keyword card."""

    def __init__(self, seed: int, rule: str) -> None:
        super().__init__(seed)
        self.rule = rule

    def triage_priority(self, call: dict[str, Any]) -> str:
        if self.rule == "keyword":
            return triage_report(call["report"])
        return best_guess_priority(priority_posterior({"report": call["report"]}))


RULES = {
    "best guess (argmax)": lambda report, post: best_guess_priority(post),
    "hot when in doubt (min cost)": lambda report, post: cautious_priority(post),
    "keyword card (triage_rule.py)": lambda report, post: triage_report(report),
}


def report_accuracy(n: int, seed: int = 7) -> dict[str, Any]:
    rng = Random(seed)
    conditions, weights = list(CALL_MIX), list(CALL_MIX.values())
    pairs: dict[str, list[tuple[str, str]]] = {name: [] for name in RULES}
    right_condition = 0
    for _ in range(n):
        cond = rng.choices(conditions, weights)[0]
        truth = CONDITIONS[cond].true_priority
        report = caller_report(cond, "Rajiv Chowk", rng)
        posterior = condition_posterior({"report": report})
        right_condition += max(sorted(posterior), key=lambda k: posterior[k]) == cond
        post = priority_posterior({"report": report})
        for name, rule in RULES.items():
            pairs[name].append((truth, rule(report, post)))
    return {"condition": right_condition / n, **{name: triage_rates(p) for name, p in pairs.items()}}


def play(task: str, seed: int, policy: str) -> tuple[float, str, dict[str, Any]]:
    sim = CodeRedSim(task, seed)
    if policy == "oracle":
        agent: Any = OracleTriageAgent(sim)
    elif policy == "never_triage":
        agent = HeuristicAgent(seed, triage=False)
    elif policy in ("best_guess", "keyword"):
        agent = OtherTriageAgent(seed, policy)
    else:
        agent = make_agent(policy, seed)
    agent.reset(task, seed)
    while not sim.done:
        sim.step(agent.act(sim.observation()))
    grade = sim.grade()
    return grade["score"], sim.end_reason or "", grade["outcomes"]


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
    print(f"best classifier's condition accuracy: {acc['condition']:.3f}")
    print("| rule | exact level | over-triage | under-triage | hot sensitivity | true P1 coded cold |")
    print("|---|---|---|---|---|---|")
    for name in RULES:
        r = acc[name]
        print(
            f"| {name} | {r['exact']:.3f} | {r['over']:.3f} | {r['under']:.3f} | "
            f"{r['hot_sensitivity']:.3f} | {r['p1_sent_cold']:.3f} |"
        )

    policies = ("noop", "random", "heuristic", "never_triage", "best_guess", "keyword", "oracle")
    print(f"\n## Mean final score over seeds {seeds[0]}-{seeds[-1]} ({len(seeds)} seeds)")
    print("(each cell: score / weighted expected outcome / expected deaths per 100 patients)")
    extra = " | heur - never | heur - best guess | heur - keyword | heuristic ends by budget |"
    print("| task | " + " | ".join(policies) + extra)
    print("|---" * (len(policies) + 5) + "|")
    for task in TASKS:
        means: dict[str, tuple[float, float, float]] = {}
        budget = 0.0
        for policy in policies:
            runs = [play(task, s, policy) for s in seeds]
            means[policy] = (
                statistics.fmean(score for score, _, _ in runs),
                statistics.fmean(o["weighted_outcome"] for _, _, o in runs),
                statistics.fmean(o["deaths_per_100"] for _, _, o in runs),
            )
            if policy == "heuristic":
                budget = sum(reason == "step_budget" for _, reason, _ in runs) / len(runs)
        cells = " | ".join(f"{m[0]:.3f} / {m[1]:.3f} / {m[2]:.1f}" for m in means.values())
        print(
            f"| {task} | {cells} | {means['heuristic'][0] - means['never_triage'][0]:+.3f} | "
            f"{means['heuristic'][0] - means['best_guess'][0]:+.3f} | "
            f"{means['heuristic'][0] - means['keyword'][0]:+.3f} | {budget:.0%} |"
        )


if __name__ == "__main__":
    main()
