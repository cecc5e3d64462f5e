"""``oracle``: the best play the project knows how to find when told the hidden truth -- an upper
reference (a ceiling of these searches), NOT a fair agent.

It reads everything an agent may not: every caller's true condition and reserve, the real calls,
casualties, callbacks and disruptions still to come, the real page delays, cath-lab and elective
timers, blood types, and the real random streams (so traffic noise and jitter are the ones the
episode would draw for the same actions). An exact copy of the episode (``truth_copy``) is
deterministic, so every play on one is exact: the oracle scores a whole play before choosing it.

The search (``best_of=False``) is ``PlannerAgent``'s (planner.py) with two changes: a rollout
plays on an exact copy instead of a fair fork, and its base policy (proposals and rollouts) is
a heuristic variant told the truth (by default the heuristic triaging every call at its true
priority). One rollout per candidate is exact, so the budget goes to a wider candidate set
(``forks=1``, no confirmation stage, any gain above ``min_gain`` taken; up to 16 candidates: the
three nearest free units of each kind, waiting, two choices of every later rule).

A one-step search improves on its own base policy, but not necessarily on another policy in
every episode (each choice assumes its base policy finishes the episode). So with
``best_of=True`` (the default) the oracle, at reset, plays the whole episode on exact copies
every way it knows and then plays the action list that ended best (first of equals, in this
order): the search; every variant of the library (variants.py: 382 plays of the heuristic bent
along triage level, unit kind, dispatch hold, mutual aid, preparation and a few single bends --
where the red team of ``bench/redteam`` found scores above the heuristic's -- 16 random job
orders, the restarts of a stochastic search, and each of these again without re-choosing a
destination gone on diversion); the search again
on the rules of the best three variants; the fair ``planner``; the heuristic. It is therefore at least
each of them on every episode by construction. ``choice`` names the play kept, ``play_scores``
holds every play's score and ``search_score`` the search's.

What it is for: a reference point, "how much of the achievable range" an agent reaches
(``codered report``'s normalised column, (score - random) / (oracle - random)), and the ceiling
the red team is measured against (``bench/redteam/probe.py``). It reads the simulator's hidden
state, so it must never be reported as an agent's result; it is not in ``BUILTIN_AGENTS`` (the
lists default runs, the server and the console draw from) and only ``make_agent("oracle")``
builds it. It is a ceiling of these searches, not of the task: a cleverer search with the same
truth could score higher.
"""

from __future__ import annotations

import pickle
from dataclasses import replace
from typing import Any

from ..sim import CodeRedSim, Snapshot
from ..sim.city import PRAKASHNAGAR
from .base import source_digest
from .heuristic import HeuristicAgent
from .planner import PlannerAgent, observation_digest
from .variants import VARIANTS, Variant, VariantHeuristic

ORACLE_FORKS = 1
ORACLE_MAX_CANDIDATES = 16
ORACLE_MIN_GAIN = 0.001
ORACLE_SEARCH_BASES = 3  # design choice: the search is re-run on the best few variants' rules
TRUTH = Variant(triage="truth")  # the search's own base policy: the heuristic told the truth


def truth_copy(sim: CodeRedSim) -> CodeRedSim:
    """An exact, independent copy of the episode: hidden state, future and random streams kept."""
    return pickle.loads(pickle.dumps(sim, protocol=pickle.HIGHEST_PROTOCOL))


def play_through(sim: CodeRedSim, agent: Any) -> tuple[list[dict[str, Any]], float]:
    """Play ``agent`` on ``sim`` to the end as ``runner.run_episode`` does: actions and score
    (on the lazy observation view, without step rewards: the plays are compared by their grade)."""
    agent.reset(sim.task.task_id, sim.seed)
    sim.rewards = False
    actions = []
    while not sim.done and sim.step_count < sim.max_steps:
        actions.append(agent.act(sim.observation_view()))
        sim.step(actions[-1])
    sim.finish()
    return actions, float(sim.grade()["score"])


class OracleAgent(PlannerAgent):
    """The planner's search on exact copies of the episode (see the module docstring)."""

    name = "oracle"
    units_per_kind = 3
    choices_per_rule = 2

    def __init__(
        self,
        seed: int = 0,
        forks: int = ORACLE_FORKS,
        max_candidates: int = ORACLE_MAX_CANDIDATES,
        min_gain: float = ORACLE_MIN_GAIN,
        z: float = 0.0,
        confirm_forks: int = 0,
        reorder: bool = True,
        best_of: bool = True,
        base_variant: Variant = TRUTH,
        search_bases: int = ORACLE_SEARCH_BASES,
    ) -> None:
        self.base_variant = base_variant  # read by base_policy, which the planner calls first
        super().__init__(seed, forks, max_candidates, min_gain, z, confirm_forks, reorder)
        self.best_of = best_of
        self.search_bases = search_bases
        self.search_score: float | None = None
        self.choice = "search"  # which play the best-of kept (see ``_best_play``)
        self.play_scores: dict[str, float] = {}  # every play the best-of tried, by name
        self._script: list[dict[str, Any]] = []

    def fingerprint(self) -> dict[str, Any]:
        return {**super().fingerprint(), "best_of": self.best_of, "base": self.base_variant.label,
                "search_bases": self.search_bases, "variants": [v.label for v in VARIANTS],
                "variants_code": source_digest("codered_env.agents.variants")}

    def base_policy(self, sim: CodeRedSim | None) -> HeuristicAgent:
        """The heuristic bent as ``base_variant`` says (by default: told each call's true priority
        by ``sim``, the episode or its copy)."""
        return VariantHeuristic(self.seed, self.base_variant, sim)

    def branch(self, sim: CodeRedSim, fork_seed: int) -> CodeRedSim:
        """An exact copy (every fork seed gives the same one: the truth is not redrawn)."""
        return truth_copy(sim)

    def branch_from(self, decision: Snapshot, fork_seed: int) -> CodeRedSim:
        """An exact copy of the decision's state (``truth_copy``; every fork seed gives the same)."""
        return decision.copy()

    def reset(self, task_id: str, seed: int, city: str = PRAKASHNAGAR.key) -> None:
        super().reset(task_id, seed, city)
        self._script, self.search_score, self.choice = [], None, "search"
        if self.best_of and self._sim is not None:
            self._script = self._best_play()

    def _best_play(self) -> list[dict[str, Any]]:
        """Play the episode on exact copies every way the best-of knows and keep the best play
        (first of equals, in this order): the search; every variant of the library
        (variants.py); the search again on the rules of the best ``search_bases`` variants; the
        fair planner; the heuristic."""
        sim = self._sim
        assert sim is not None
        search = self._search(TRUTH)
        plays = {"search": play_through(truth_copy(sim), search)}
        library = {}
        for variant in VARIANTS:
            copy = truth_copy(sim)
            library[variant] = play_through(copy, VariantHeuristic(self.seed, variant, copy))
        plays.update((f"variant:{v.label}", play) for v, play in library.items())
        searches = [search]
        for variant in self._search_bases(library):
            searches.append(self._search(variant))
            plays[f"search:{variant.label}"] = play_through(truth_copy(sim), searches[-1])
        planner = PlannerAgent(self.seed)
        plays["planner"] = play_through(truth_copy(sim), planner)
        plays["heuristic"] = play_through(truth_copy(sim), HeuristicAgent(self.seed))
        self.play_scores = {name: score for name, (_, score) in plays.items()}
        self.search_score = plays["search"][1]
        self.choice = max(plays, key=lambda name: plays[name][1])  # first of equals: the search
        self.rollouts = sum(s.rollouts for s in searches) + planner.rollouts
        self.decisions = search.decisions
        self.decision_seconds, self.decision_rollouts = search.decision_seconds, search.decision_rollouts
        self.decision_cpu_seconds = search.decision_cpu_seconds
        return plays[self.choice][0]

    def _search(self, base: Variant) -> OracleAgent:
        """The search alone (``best_of=False``) on ``base``'s rules, with this agent's budget."""
        return OracleAgent(self.seed, self.forks, self.max_candidates, self.min_gain, self.z,
                           self.confirm_forks, self.reorder, best_of=False, base_variant=base)

    def _search_bases(self, library: dict[Variant, tuple[list[dict[str, Any]], float]]) -> list[Variant]:
        """The best variants' rules without their hold (the search tries waiting itself), other
        than the search's own base, best first, at most ``search_bases`` of them."""
        bases: list[Variant] = []
        for variant in sorted(library, key=lambda v: -library[v][1]):  # stable: library order on ties
            rules = replace(variant, hold=0)
            if rules != TRUTH and rules not in bases and len(bases) < self.search_bases:
                bases.append(rules)
        return bases

    def act(self, obs: dict[str, Any]) -> dict[str, Any]:
        self._follow_city(obs)
        if self._script:
            self._catch_up()
            step = obs.get("step")
            sim = self._sim
            if sim is not None and step == sim.step_count < len(self._script) and (
                observation_digest(sim.observation()) == observation_digest(obs)
            ):
                self._pending = self._script[sim.step_count]
                return self._pending
            self._script = []  # not the episode the play was chosen on: search from here
        return super().act(obs)
