"""``oracle``: the planner's search told the hidden truth -- a ceiling, NOT a fair agent.

It is ``PlannerAgent`` (planner.py) with two changes: a rollout plays on an exact copy of the
episode instead of a fair fork, and its base policy (proposals and rollouts) triages every call
at its true priority instead of from the report. The copy keeps everything a fork redraws: every caller's true
condition and reserve, the real calls, casualties, callbacks and disruptions still to come, the
real page delays, cath-lab and elective timers, blood types, and the real random streams (so
traffic noise and jitter are the ones the episode would draw for the same actions). Since such a
copy is deterministic, one rollout per candidate is exact and the default budget spends the
forks on a wider candidate set instead (``forks=1``, no confirmation stage, any gain above
``min_gain`` taken; up to 16 candidates: the three nearest free units of each kind, two
choices of every later rule).

What it is for: a reference point, "how much of the achievable range" an agent reaches
(``codered report``'s normalised column, (score - random) / (oracle - random)). It reads the
simulator's hidden state, so it must never be reported as an agent's result, it is not in
``BUILTIN_AGENTS`` (the lists that default runs, the server and the console draw from) and only
``make_agent("oracle")`` builds it. It is a ceiling of this search, not of the task: a
cleverer search with the same truth could score higher.
"""

from __future__ import annotations

import pickle
from typing import Any

from ..sim import CodeRedSim
from .heuristic import HeuristicAgent
from .planner import PlannerAgent

ORACLE_FORKS = 1
ORACLE_MAX_CANDIDATES = 16
ORACLE_MIN_GAIN = 0.001


def truth_copy(sim: CodeRedSim) -> CodeRedSim:
    """An exact, independent copy of the episode: hidden state, future and random streams kept."""
    return pickle.loads(pickle.dumps(sim, protocol=pickle.HIGHEST_PROTOCOL))


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
    ) -> None:
        super().__init__(seed, forks, max_candidates, min_gain, z, confirm_forks, reorder)

    def base_policy(self, sim: CodeRedSim | None) -> HeuristicAgent:
        """The heuristic told each call's true priority by ``sim`` (the episode or its copy)."""
        return TruthTriageHeuristic(self.seed, sim)

    def branch(self, sim: CodeRedSim, fork_seed: int) -> CodeRedSim:
        """An exact copy (every fork seed gives the same one: the truth is not redrawn)."""
        return truth_copy(sim)
