"""``planner``: rollout search over fair forks of the episode, on top of the heuristic.

Algorithm (one decision):
1. Ask the heuristic (heuristic.py) for its action, the *proposal*.
2. Build a few *candidates* around it, each a concrete legal action:
   - a triage proposal: the call at every priority P1..P4 (the level is also the response:
     P1/P2 lights and sirens, P3 a cold response, P4 advice without a unit -- and P1 starts
     telephone CPR for an arrest);
   - a dispatch proposal: the proposed unit, the nearest free unit of the other kind, the
     nearest other unit of the same kind, and waiting (``maintain_plan``);
   - a hospital assignment: every open hospital that can treat the patient;
   - anything else (preparation, blood, mutual aid, waiting): the proposal alone, no search.
   At most ``max_candidates`` are kept (the proposal first).
3. With more than one candidate, score each on ``forks`` forks of the episode
   (``CodeRedSim.fork``: future calls and disruptions redrawn, unseen callers resampled from the
   report posterior, noise reseeded -- only what the agent could know). The same fork seeds
   serve every candidate (common random numbers), so candidates are compared on the same
   imagined futures. A rollout plays the candidate, then lets the heuristic finish the episode;
   its value is the final raw grade.
4. Compare each alternative with the proposal fork by fork (paired differences). An
   alternative qualifies when its mean gain exceeds both ``min_gain`` and ``z`` standard errors
   of the paired differences; the qualifying alternative with the largest gain is played, else
   the proposal (so noise alone never overrides the expert rule).

The budget per decision is therefore at most ``max_candidates x forks`` rollouts (default 4 x
4 = 16), and most decisions (waiting, preparation, blood) cost none. Rollouts are seeded from
the agent seed, the episode and the step, so an evaluation is reproducible.

How it sees the world: the agent keeps a private replica of the episode (``CodeRedSim`` on the
same task and seed, stepped with the agent's own actions -- the simulator is deterministic, so
the replica is the episode) and only ever reads it through ``fork``, which drops what the agent
could not know. If the replica ever disagrees with the observation (another driver, a refused
frame), the planner plays the heuristic's proposal from then on.
"""

from __future__ import annotations

import json
import statistics
from random import Random
from typing import Any

from ..sim import CodeRedSim
from ..sim.conditions import CONDITIONS
from ..sim.triage import PRIORITIES
from .base import MAINTAIN, code_fingerprint
from .heuristic import HeuristicAgent, _road_view

DEFAULT_FORKS = 4
DEFAULT_MAX_CANDIDATES = 4
DEFAULT_MIN_GAIN = 0.005
DEFAULT_Z = 1.5


def _key(action: dict[str, Any]) -> str:
    return json.dumps(action, sort_keys=True)


def _digest(obs: dict[str, Any]) -> tuple:
    """What must agree between the replica and the episode the agent is really playing."""
    return (
        obs.get("task_id"),
        obs.get("seed"),
        obs.get("step"),
        obs.get("clock_min"),
        [(c.get("call_id"), c.get("report"), c.get("status")) for c in obs.get("calls", [])],
        [(p.get("patient_id"), p.get("status"), p.get("node")) for p in obs.get("patients", [])],
        [(a.get("ambulance_id"), a.get("status"), a.get("node")) for a in obs.get("ambulances", [])],
    )


class PlannerAgent:
    """Heuristic-guided rollout planner on ``CodeRedSim.fork`` (see the module docstring)."""

    name = "planner"

    def __init__(
        self,
        seed: int = 0,
        forks: int = DEFAULT_FORKS,
        max_candidates: int = DEFAULT_MAX_CANDIDATES,
        min_gain: float = DEFAULT_MIN_GAIN,
        z: float = DEFAULT_Z,
    ) -> None:
        if forks < 1 or max_candidates < 1:
            raise ValueError(f"forks and max_candidates must be >= 1, got {forks}, {max_candidates}")
        self.seed = seed
        self.forks = forks
        self.max_candidates = max_candidates
        self.min_gain = min_gain
        self.z = z
        self.rollouts = 0  # rollouts played this episode (budget accounting)
        self.decisions = 0
        self._sim: CodeRedSim | None = None
        self._base = HeuristicAgent(seed)
        self._pending: dict[str, Any] | None = None
        self._task: tuple[str, int] = ("", 0)

    def fingerprint(self) -> dict[str, Any]:
        """Code (its own, the heuristic's) and the per-decision budget that shapes its play."""
        code = code_fingerprint(self, "codered_env.agents.heuristic", "codered_env.agents.triage_rule")
        return {**code, "forks": self.forks, "max_candidates": self.max_candidates,
                "min_gain": self.min_gain, "z": self.z}

    def reset(self, task_id: str, seed: int) -> None:
        self._sim = CodeRedSim(task_id, seed)
        self._base.reset(task_id, seed)
        self._pending = None
        self._task = (task_id, seed)
        self.rollouts = self.decisions = 0

    # ------------------------------------------------------------------ the decision
    def act(self, obs: dict[str, Any]) -> dict[str, Any]:
        self._catch_up()
        proposal = self._base.act(obs)
        sim = self._sim
        if sim is None or sim.done or _digest(sim.observation()) != _digest(obs):
            self._sim = None  # out of sync: the heuristic plays on alone
            return proposal
        self.decisions += 1
        candidates = self._candidates(obs, proposal)
        chosen = self._choose(sim, candidates) if len(candidates) > 1 else proposal
        self._base._last = _key(chosen)  # a refused choice is then not repeated
        self._pending = chosen
        return chosen

    def _catch_up(self) -> None:
        if self._sim is not None and self._pending is not None and not self._sim.done:
            self._sim.step(self._pending)
        self._pending = None

    def _choose(self, sim: CodeRedSim, candidates: list[dict[str, Any]]) -> dict[str, Any]:
        task_id, seed = self._task
        base = Random(f"planner:{self.seed}:{task_id}:{seed}:{sim.step_count}").getrandbits(40)
        fork_seeds = [base + k for k in range(self.forks)]
        values = [self._values(sim, c, fork_seeds) for c in candidates]
        best, best_gain = 0, 0.0
        for i in range(1, len(candidates)):
            diffs = [v - v0 for v, v0 in zip(values[i], values[0], strict=True)]
            gain = statistics.fmean(diffs)
            spread = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else 0.0
            if gain > max(self.min_gain, self.z * spread) and gain > best_gain:
                best, best_gain = i, gain
        return candidates[best]

    def _values(self, sim: CodeRedSim, action: dict[str, Any], fork_seeds: list[int]) -> list[float]:
        values = []
        for fork_seed in fork_seeds:
            twin = sim.fork(fork_seed)
            twin.step(action)
            values.append(self._rollout(twin))
        return values

    def _rollout(self, twin: CodeRedSim) -> float:
        self.rollouts += 1
        policy = HeuristicAgent(self.seed)
        policy._refused = set(self._base._refused)
        while not twin.done:
            twin.step(policy.act(twin.observation()))
        grade = twin.grade()
        raw = grade.get("raw_score", grade["score"])
        return float(raw)

    # ------------------------------------------------------------------ candidates
    def _candidates(self, obs: dict[str, Any], proposal: dict[str, Any]) -> list[dict[str, Any]]:
        kind = proposal.get("action_type")
        if kind == "triage_call":
            options = [proposal | {"priority": p} for p in PRIORITIES]
            call = next((c for c in obs["calls"] if c["call_id"] == proposal["call_id"]), None)
            if call is not None and call["status"] != "pending":
                options = options[:3]  # P4 needs a call without a unit
        elif kind in ("dispatch_als", "dispatch_bls", "dispatch_ambulance"):
            options = self._dispatch_options(obs, proposal)
        elif kind == "assign_hospital":
            options = self._hospital_options(obs, proposal)
        else:
            options = []
        unique: list[dict[str, Any]] = [proposal]
        for option in options:
            if _key(option) not in {_key(u) for u in unique}:
                unique.append(option)
        return unique[: self.max_candidates]

    def _dispatch_options(self, obs: dict[str, Any], proposal: dict[str, Any]) -> list[dict[str, Any]]:
        target_key = "patient_id" if "patient_id" in proposal else "call_id"
        target = proposal[target_key]
        node = next(
            (x["node"] for x in obs["patients"] + obs["calls"] if x.get(target_key) == target), None
        )
        free = [a for a in obs["ambulances"] if a["status"] in ("available", "returning")]
        if node is None or not free:
            return []
        net = _road_view(obs)
        free.sort(key=lambda u: (net.minutes(u["next_node"] or u["node"], node), u["ambulance_id"]))
        chosen = next((u for u in free if u["ambulance_id"] == proposal["ambulance_id"]), None)
        kind = chosen["kind"] if chosen else "ALS"
        others = [u for u in free if u["kind"] != kind][:1] + [
            u for u in free if u["kind"] == kind and u["ambulance_id"] != proposal["ambulance_id"]
        ][:1]
        options = []
        for unit in others:
            if obs["phase"] == 1:
                options.append({**proposal, "ambulance_id": unit["ambulance_id"]})
            else:
                action = "dispatch_als" if unit["kind"] == "ALS" else "dispatch_bls"
                options.append(
                    {"action_type": action, "ambulance_id": unit["ambulance_id"], "call_id": target}
                )
        return [*options, dict(MAINTAIN)]

    @staticmethod
    def _hospital_options(obs: dict[str, Any], proposal: dict[str, Any]) -> list[dict[str, Any]]:
        patient = next((p for p in obs["patients"] if p["patient_id"] == proposal["patient_id"]), None)
        if patient is None:
            return []
        cond = CONDITIONS[patient["condition"]]
        return [
            {**proposal, "hospital_id": h["hospital_id"]}
            for h in obs["hospitals"]
            if h["diverted_until"] is None and cond.care_at(h["tier"]) is not None
        ]
