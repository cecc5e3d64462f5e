"""``oracle``: the planner's search told the hidden truth -- a ceiling, NOT a fair agent.

The search is ``PlannerAgent``'s (planner.py) with two changes: a rollout plays on an exact copy
of the episode instead of a fair fork, and its base policy (proposals and rollouts) triages
every call at its true priority instead of from the report. The copy keeps everything a fork
redraws: every caller's true condition and reserve, the real calls, casualties, callbacks and
disruptions still to come, the real page delays, cath-lab and elective timers, blood types, and
the real random streams (so traffic noise and jitter are the ones the episode would draw for the
same actions). Such a copy is deterministic, so one rollout per candidate is exact, and the
default budget spends the forks on a wider candidate set instead (``forks=1``, no confirmation
stage, any gain above ``min_gain`` taken; up to 16 candidates: the three nearest free units of
each kind, two choices of every later rule).

A one-step search with exact rollouts improves on its own base policy, but not necessarily on
another policy in every episode (each choice assumes the heuristic finishes the episode). So
with ``best_of=True`` (the default) the oracle, at reset, plays the whole episode on exact
copies three ways -- this search, the fair ``planner`` and the heuristic, all deterministic --
and then plays the action list that ended best (ties: the search). It is therefore at least
the planner and the heuristic on every episode by construction; ``best_of=False`` is the search
alone (``search_score`` and ``choice`` record what the best-of found).

What it is for: a reference point, "how much of the achievable range" an agent reaches
(``codered report``'s normalised column, (score - random) / (oracle - random)). It reads the
simulator's hidden state, so it must never be reported as an agent's result; it is not in
``BUILTIN_AGENTS`` (the lists default runs, the server and the console draw from) and only
``make_agent("oracle")`` builds it. It is a ceiling of this search, not of the task: a cleverer
search with the same truth could score higher.
"""

from __future__ import annotations

import pickle
from typing import Any

from ..sim import CodeRedSim, Snapshot
from ..sim.city import PRAKASHNAGAR
from .heuristic import HeuristicAgent
from .planner import PlannerAgent, observation_digest

ORACLE_FORKS = 1
ORACLE_MAX_CANDIDATES = 16
ORACLE_MIN_GAIN = 0.001


def truth_copy(sim: CodeRedSim) -> CodeRedSim:
    """An exact, independent copy of the episode: hidden state, future and random streams kept."""
    return pickle.loads(pickle.dumps(sim, protocol=pickle.HIGHEST_PROTOCOL))


def play_through(sim: CodeRedSim, agent: Any) -> tuple[list[dict[str, Any]], float]:
    """Play ``agent`` on ``sim`` to the end as ``runner.run_episode`` does: actions and score."""
    agent.reset(sim.task.task_id, sim.seed)
    actions = []
    while not sim.done and sim.step_count < sim.max_steps:
        actions.append(agent.act(sim.observation()))
        sim.step(actions[-1])
    sim.finish()
    return actions, float(sim.grade()["score"])


class TruthTriageHeuristic(HeuristicAgent):
    """The heuristic triaging every call at its true priority, read from ``sim`` (hidden state)."""

    def __init__(self, seed: int, sim: CodeRedSim | None) -> None:
        super().__init__(seed)
        self.sim = sim

    def triage_priority(self, call: dict[str, Any]) -> str:
        truth = self.sim.world.calls.get(call["call_id"]) if self.sim is not None else None
        return truth.true_priority if truth is not None else super().triage_priority(call)


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
    ) -> None:
        super().__init__(seed, forks, max_candidates, min_gain, z, confirm_forks, reorder)
        self.best_of = best_of
        self.search_score: float | None = None
        self.choice = "search"  # which play the best-of kept: search, planner or heuristic
        self._script: list[dict[str, Any]] = []

    def fingerprint(self) -> dict[str, Any]:
        return {**super().fingerprint(), "best_of": self.best_of}

    def base_policy(self, sim: CodeRedSim | None) -> HeuristicAgent:
        """The heuristic told each call's true priority by ``sim`` (the episode or its copy)."""
        return TruthTriageHeuristic(self.seed, sim)

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
        assert self._sim is not None
        search = OracleAgent(self.seed, self.forks, self.max_candidates, self.min_gain, self.z,
                             self.confirm_forks, self.reorder, best_of=False)
        planner = PlannerAgent(self.seed)
        plays = {name: play_through(truth_copy(self._sim), agent) for name, agent in (
            ("search", search), ("planner", planner), ("heuristic", HeuristicAgent(self.seed)))}
        self.search_score = plays["search"][1]
        self.choice = max(plays, key=lambda name: plays[name][1])  # first of equals: the search
        self.rollouts = search.rollouts + planner.rollouts
        self.decisions = search.decisions
        self.decision_seconds, self.decision_rollouts = search.decision_seconds, search.decision_rollouts
        self.decision_cpu_seconds = search.decision_cpu_seconds
        return plays[self.choice][0]

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
