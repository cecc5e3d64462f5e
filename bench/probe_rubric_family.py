"""Does the score order policies by patient outcome? A paired probe of the rubric's invariants.

Plays a family of policies on seeds the tests do not use and prints, per task, each policy's mean
score and expected deaths per 100 (``rubric.clinical_outcomes``), its paired gap to the heuristic
in both, the mean return discounted 0.99 per decision, and how many "a crew reaches a caller"
steps had a negative reward; then the outcome inversions (A above B by >= 0.01 beyond 2 SE while
A's patients fare worse by >= 1 death per 100 beyond 2 SE, or A above the heuristic at all beyond
2 SE while worse by >= 0.3 deaths per 100 beyond 2 SE; in score and in discounted return) and the
Spearman rank correlations of score and return with the priority-weighted expected outcome.

Family: noop, random, heuristic, every dispatch held 5-10 / 10-15 min, every call P1 + nearest
ALS, every call P2 + BLS only, preparing / paging / reserving blood everywhere, mutual aid at
once, lazy (acts one decision in three), reverse priority, never triaging, and a greedy one-step
reward maximiser on fair forks (the heuristic's action as tie-break). The repository's broader
red team is ``bench/redteam/``.

Usage: ``uv run python bench/probe_rubric_family.py --seeds 1000-1049`` (about 8 minutes for all
tasks on one loaded core).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Callable, Iterator
from itertools import permutations
from pathlib import Path
from random import Random
from typing import Any

from codered_env.agents import make_agent
from codered_env.agents.heuristic import HeuristicAgent, nearest_unit
from codered_env.sim import TASK_IDS, CodeRedSim

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the red team's statistics beside it
from redteam.probe import spearman

Action = dict[str, Any]
MAINTAIN: Action = {"action_type": "maintain_plan"}
GAMMA = 0.99


class HeldDispatch(HeuristicAgent):
    """The heuristic, holding each dispatch a random ``lo``-``hi`` minutes after first proposing it."""

    def __init__(self, seed: int, lo: int, hi: int) -> None:
        super().__init__(seed)
        self.lo, self.hi, self.rng, self.due = lo, hi, Random(seed), {}

    def _dispatch(self, obs, legal, net) -> Iterator[Action]:
        clock = obs["clock_min"]
        for action in super()._dispatch(obs, legal, net):
            job = action.get("patient_id") or action.get("call_id")
            due = self.due.setdefault(job, clock + self.rng.randint(self.lo, self.hi))
            if clock >= due:
                yield action


class Blanket(HeuristicAgent):
    """Every call coded ``level``; only ``kind`` units (ALS: nearest ALS, else BLS)."""

    def __init__(self, seed: int, level: str, kind: str) -> None:
        super().__init__(seed)
        self.level, self.kind = level, kind

    def triage_priority(self, call: dict[str, Any]) -> str:
        return self.level

    def _pick_unit(self, pools, job, net):
        if self.kind == "ALS":
            node = job["node"]
            unit = nearest_unit(pools["ALS"], node, net) or nearest_unit(pools["BLS"], node, net)
        else:
            unit = nearest_unit(pools["BLS"], job["node"], net)
        return None if unit is None else unit[2]


class Everywhere(HeuristicAgent):
    """The heuristic plus one kind of waste: ``prepare_or``, ``page_specialist`` or ``allocate_blood``
    at every hospital for everything legal, once each."""

    def __init__(self, seed: int, action_type: str) -> None:
        super().__init__(seed)
        self.action_type, self.done_keys = action_type, set()

    def _extra(self, legal) -> Iterator[Action]:
        for option in legal.get(self.action_type, []):
            fixed = {"blood_type": ["O-"], "units": [1]} if self.action_type == "allocate_blood" else {}
            keys = [k for k in option if k not in fixed]
            for values in _product([option[k] for k in keys]):
                action = {"action_type": self.action_type, **dict(zip(keys, values, strict=True)),
                          **{k: v[0] for k, v in fixed.items()}}
                key = repr(sorted(action.items()))
                if key not in self.done_keys:
                    self.done_keys.add(key)
                    yield action

    def _blood(self, obs, legal, net) -> Iterator[Action]:
        yield from super()._blood(obs, legal, net)
        yield from self._extra(legal)


def _product(lists: list[list[Any]]) -> Iterator[tuple[Any, ...]]:
    if not lists:
        yield ()
        return
    for head in lists[0]:
        for tail in _product(lists[1:]):
            yield (head, *tail)


class AidAtOnce(HeuristicAgent):
    def _triage(self, obs, legal, net) -> Iterator[Action]:
        if "request_mutual_aid" in legal:
            yield {"action_type": "request_mutual_aid"}
        yield from super()._triage(obs, legal, net)


class Lazy(HeuristicAgent):
    """Acts one decision in three; waits otherwise."""

    def act(self, obs: dict[str, Any]) -> Action:
        self.decisions = getattr(self, "decisions", 0) + 1
        return dict(MAINTAIN) if self.decisions % 3 else super().act(obs)


class Reverse(HeuristicAgent):
    def _jobs(self, obs) -> list[dict[str, Any]]:
        return list(reversed(super()._jobs(obs)))


POLICIES: dict[str, Callable[[int], Any]] = {
    "noop": lambda s: make_agent("noop", s),
    "random": lambda s: make_agent("random", s),
    "heuristic": lambda s: make_agent("heuristic", s),
    "hold5-10": lambda s: HeldDispatch(s, 5, 10),
    "hold10-15": lambda s: HeldDispatch(s, 10, 15),
    "P1+ALS": lambda s: Blanket(s, "P1", "ALS"),
    "P2+BLS": lambda s: Blanket(s, "P2", "BLS"),
    "prep-everywhere": lambda s: Everywhere(s, "prepare_or"),
    "page-everywhere": lambda s: Everywhere(s, "page_specialist"),
    "blood-everywhere": lambda s: Everywhere(s, "allocate_blood"),
    "aid-at-once": lambda s: AidAtOnce(s),
    "lazy": lambda s: Lazy(s),
    "reverse": lambda s: Reverse(s),
    "no-triage": lambda s: HeuristicAgent(s, triage=False),
    "greedy": lambda s: make_agent("heuristic", s),
}


def greedy_action(sim: CodeRedSim, agent: Any, obs: dict[str, Any], seed: int) -> Action:
    """The candidate with the largest one-step reward on a fair fork (ties: the heuristic's)."""
    candidates = [agent.act(obs), dict(MAINTAIN)]
    rng = Random(seed * 7919 + sim.step_count)
    for name in ("dispatch_als", "dispatch_bls", "dispatch_ambulance", "triage_call", "prepare_or",
                 "page_specialist"):
        for option in obs["legal_actions"].get(name, [])[:1]:
            candidates.append({"action_type": name, **{k: rng.choice(v) for k, v in option.items()}})
    snapshot = sim.snapshot()
    best, best_reward = candidates[0], None
    for i, action in enumerate(candidates):
        reward = snapshot.fork(seed + i).step(action).reward
        if best_reward is None or reward > best_reward + 1e-12:
            best, best_reward = action, reward
    return best


def episode(task_id: str, seed: int, policy: str) -> dict[str, Any]:
    sim = CodeRedSim(task_id, seed)
    agent = POLICIES[policy](seed)
    agent.reset(task_id, seed)
    discounted, factor, reach = 0.0, 1.0, []
    while not sim.done:
        obs = sim.observation()
        seen = sum(p.visible for p in sim.world.patients.values())
        action = greedy_action(sim, agent, obs, seed) if policy == "greedy" else agent.act(obs)
        reward = sim.step(action).reward
        discounted, factor = discounted + factor * reward, factor * GAMMA
        reached = sum(p.visible for p in sim.world.patients.values()) > seen
        if sim.world.task.phase == 2 and not sim.done and reached:
            reach.append(reward)
    grade = sim.grade()
    outcomes = grade["outcomes"]
    return {"score": grade["score"], "deaths": outcomes["deaths_per_100"],
            "outcome": outcomes["weighted_outcome"], "return": discounted, "reach": reach}


def _mean_se(values: list[float]) -> tuple[float, float]:
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return statistics.fmean(values), se


def inversions(runs: dict[str, list[dict[str, Any]]], key: str) -> list[str]:
    found = []
    for a, b in permutations(runs, 2):
        gap = _mean_se([x[key] - y[key] for x, y in zip(runs[a], runs[b], strict=True)])
        harm = _mean_se([x["deaths"] - y["deaths"] for x, y in zip(runs[a], runs[b], strict=True)])
        worse = 0.3 if b == "heuristic" else 1.0
        enough = 0.0 if b == "heuristic" else 0.01
        if harm[0] >= worse and harm[0] > 2 * harm[1] and gap[0] > 2 * gap[1] and gap[0] >= enough:
            found.append(f"{a} > {b} ({gap[0]:+.4f}, deaths {harm[0]:+.2f})")
    return found


def report(task_id: str, runs: dict[str, list[dict[str, Any]]]) -> None:
    base = runs["heuristic"]
    print(f"== {task_id}")
    print(f"{'policy':17s} {'score':>7s} {'d/100':>6s} {'gap to heuristic':>17s} {'deaths gap':>12s} "
          f"{'return':>7s} reach<0")
    for name, eps in runs.items():
        gap = _mean_se([x["score"] - y["score"] for x, y in zip(eps, base, strict=True)])
        harm = _mean_se([x["deaths"] - y["deaths"] for x, y in zip(eps, base, strict=True)])
        reach = [r for e in eps for r in e["reach"]]
        negative = "-"
        if reach:
            negative = f"{sum(r < -1e-12 for r in reach)}/{len(reach)} mean {statistics.fmean(reach):+.4f}"
        print(f"{name:17s} {statistics.fmean(e['score'] for e in eps):7.4f} "
              f"{statistics.fmean(e['deaths'] for e in eps):6.2f} {gap[0]:+.4f}±{gap[1]:.4f} "
              f"{harm[0]:+6.2f}±{harm[1]:.2f} {statistics.fmean(e['return'] for e in eps):7.3f} {negative}")
    for key in ("score", "return"):
        found = inversions(runs, key)
        print(f"inversions in {key}: {len(found)}" + ("".join(f"\n  {f}" for f in found)))
    outcome = [statistics.fmean(e["outcome"] for e in eps) for eps in runs.values()]
    for key in ("score", "return"):
        means = [statistics.fmean(e[key] for e in eps) for eps in runs.values()]
        print(f"Spearman({key}, weighted outcome) = {spearman(means, outcome):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASK_IDS))
    parser.add_argument("--seeds", default="1000-1049", help="lo-hi")
    parser.add_argument("--policies", default=",".join(POLICIES))
    args = parser.parse_args()
    lo, hi = (int(x) for x in args.seeds.split("-"))
    for task_id in args.tasks.split(","):
        names = args.policies.split(",")
        runs = {name: [episode(task_id, s, name) for s in range(lo, hi + 1)] for name in names}
        report(task_id, runs)


if __name__ == "__main__":
    main()
