"""Does the grade rank policies the way patient outcomes do? (the grade's acceptance figures)

Runs a family of policies on unseen seeds (the tests use 1000-1039) and prints, per task:

* each policy's mean final score and mean weighted expected outcome
  (expected outcomes over the graded patients weighted by ``outcome.outcome_weight``);
* the Spearman rank correlation between the two columns (guard: >= 0.85 on every task);
* nearest-unit-only / heuristic score ratio (guard: <= 0.8 on tasks 2-5), next to the same
  ratio of outcome gains over noop (what the score ratio would be if the grade were outcome alone);
* the STEMI route probe on task1: CHC-then-transfer vs direct PCI vs thrombolysis at H2. Target:
  transfer scores below direct PCI. Transfer below thrombolysis is not a target: with Keeley's
  ratio taken at equal delay a transfer for PCI can beat on-site lysis by the
  cited curves (as in DANAMI-2), so that comparison is printed, not enforced: the curve wins.

Usage: ``uv run python bench/probe_grading.py --seeds 3000-3029`` (a few minutes on one core).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Iterator
from typing import Any

from redteam.probe import spearman  # bench/ is the script's folder, so on sys.path

from codered_env.agents import make_agent
from codered_env.agents.heuristic import HeuristicAgent, nearest_unit
from codered_env.runner import run_episode
from codered_env.sim import TASK_IDS
from codered_env.sim.outcome import outcome_weight

Action = dict[str, Any]
RHO_MIN = 0.85  # acceptance guards for the grade's ranking [design choice]
RATIO_MAX = 0.8


class FixedDestination(HeuristicAgent):
    """The heuristic, but every patient goes to one hospital (when it is open)."""

    def __init__(self, hospital_id: str, seed: int = 0) -> None:
        super().__init__(seed)
        self.hospital_id = hospital_id
        self.name = f"heuristic->{hospital_id}"

    def _hospital_scores(self, p, hospitals, inbound, net):
        if hospitals[self.hospital_id]["diverted_until"] is None:
            return {self.hospital_id: 1.0}
        return super()._hospital_scores(p, hospitals, inbound, net)


class NearestHospital(HeuristicAgent):
    """The heuristic, but every patient goes to the nearest open hospital, capable or not."""

    name = "heuristic->nearest"

    def _hospital_scores(self, p, hospitals, inbound, net):
        open_ids = [hid for hid, h in hospitals.items() if h["diverted_until"] is None] or list(hospitals)
        return {min(open_ids, key=lambda hid: (net.minutes(p["node"], hospitals[hid]["node"]), hid)): 1.0}


class NoPreparation(HeuristicAgent):
    """The heuristic without pre-activation (no OR preparation, pages or blood)."""

    name = "heuristic-no-prep"

    def _prepare(self, obs, legal, net) -> Iterator[Action]:
        return iter(())

    def _blood(self, obs, legal, net) -> Iterator[Action]:
        return iter(())


class NoBlood(HeuristicAgent):
    """The heuristic without blood management."""

    name = "heuristic-no-blood"

    def _blood(self, obs, legal, net) -> Iterator[Action]:
        return iter(())


class NoMutualAid(HeuristicAgent):
    name = "heuristic-no-mutual-aid"

    def _mutual_aid(self, obs, legal, net) -> Iterator[Action]:
        return iter(())


class NearestUnitOnly(NoPreparation):
    """Triage, then send the nearest free unit of any kind to each job, most urgent first. No
    hospital choice (the crew takes the nearest open ED), no preparation, no blood, no mutual aid."""

    name = "nearest-unit-only"

    def _pick_unit(self, pools, job, net):
        nearest = nearest_unit([*pools["ALS"], *pools["BLS"]], job["node"], net)
        return None if nearest is None else nearest[2]

    def _assign(self, obs, legal, net) -> Iterator[Action]:
        return iter(())

    def _mutual_aid(self, obs, legal, net) -> Iterator[Action]:
        return iter(())


POLICIES = {
    "noop": lambda s: make_agent("noop", s),
    "random": lambda s: make_agent("random", s),
    "nearest-unit-only": lambda s: NearestUnitOnly(s),
    "heuristic": lambda s: make_agent("heuristic", s),
    "heuristic->H1": lambda s: FixedDestination("H1", s),
    "heuristic->H2": lambda s: FixedDestination("H2", s),
    "heuristic->H3": lambda s: FixedDestination("H3", s),
    "heuristic->nearest": lambda s: NearestHospital(s),
    "heuristic-no-prep": lambda s: NoPreparation(s),
    "heuristic-no-blood": lambda s: NoBlood(s),
    "heuristic-no-mutual-aid": lambda s: NoMutualAid(s),
}


def weighted_outcome(grade: dict[str, Any]) -> float:
    """Weighted mean expected outcome over the graded patients (``outcome_weight``)."""
    total = weight = 0.0
    for rec in grade["patients"]:
        w = outcome_weight(rec["condition"])
        total += w * rec["expected_outcome"]
        weight += w
    return total / weight if weight else 0.0


def outcome_gain_ratio(table: dict[str, dict[str, float]], policy: str) -> float:
    """Share of the heuristic's gain in weighted expected outcome over doing nothing that
    ``policy`` achieves: what a score ratio would be if the grade were outcome alone."""
    floor = table["noop"]["outcome"]
    gain = table["heuristic"]["outcome"] - floor
    return (table[policy]["outcome"] - floor) / gain if gain else 0.0


def run_family(task_id: str, seeds: list[int]) -> dict[str, dict[str, float]]:
    table: dict[str, dict[str, float]] = {}
    for name, build in POLICIES.items():
        scores, outcomes, times = [], [], []
        for seed in seeds:
            result = run_episode(task_id, seed, build(seed))
            scores.append(result.score)
            outcomes.append(weighted_outcome(result.grade))
            times.append(result.grade["components"]["time_score"])
        table[name] = {
            "score": statistics.fmean(scores),
            "outcome": statistics.fmean(outcomes),
            "time_score": statistics.fmean(times),
        }
    return table


def parse_seeds(text: str) -> list[int]:
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in text.split(",")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="3000-3029", help="range lo-hi or comma list (default 3000-3029)")
    ap.add_argument("--tasks", default=",".join(TASK_IDS))
    args = ap.parse_args(argv)
    seeds = parse_seeds(args.seeds)
    started = time.perf_counter()
    ok = True
    print(f"seeds {seeds[0]}-{seeds[-1]} ({len(seeds)}), {len(POLICIES)} policies")
    for task_id in args.tasks.split(","):
        table = run_family(task_id, seeds)
        print(f"\n{task_id}: {'policy':<24} {'score':>7} {'w.outcome':>10} {'time_score':>10}")
        for name, row in sorted(table.items(), key=lambda kv: -kv[1]["score"]):
            print(f"        {name:<24} {row['score']:7.3f} {row['outcome']:10.4f} {row['time_score']:10.3f}")
        rho = spearman([r["score"] for r in table.values()], [r["outcome"] for r in table.values()])
        ratio = table["nearest-unit-only"]["score"] / table["heuristic"]["score"]
        gain_ratio = outcome_gain_ratio(table, "nearest-unit-only")
        rho_ok = rho >= RHO_MIN
        ratio_ok = task_id == "task1" or ratio <= RATIO_MAX
        ok = ok and rho_ok and ratio_ok
        print(f"  spearman(score, weighted outcome) = {rho:.3f}  [{'ok' if rho_ok else 'FAIL'} >= {RHO_MIN}]")
        verdict = "n/a on task1" if task_id == "task1" else f"{'ok' if ratio_ok else 'FAIL'} <= {RATIO_MAX}"
        print(f"  nearest-unit-only / heuristic = {ratio:.3f}  [{verdict}]")
        print(f"  nearest-unit-only / heuristic outcome gain over noop = {gain_ratio:.3f}  (for comparison)")
        if task_id == "task1":
            transfer, pci, lysis = (
                table[k]["score"] for k in ("heuristic->H3", "heuristic->H1", "heuristic->H2")
            )
            route_ok = transfer < pci
            ok = ok and route_ok
            print(
                f"  STEMI routes: CHC then transfer {transfer:.3f} < direct PCI {pci:.3f}  "
                f"[{'ok' if route_ok else 'FAIL'}]; thrombolysis at H2 {lysis:.3f} (printed, not a target)"
            )
    verdict = "all acceptance checks pass" if ok else "SOME CHECKS FAIL"
    print(
        f"\n{verdict} ({time.perf_counter() - started:.0f} s)"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
