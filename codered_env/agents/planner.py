"""``planner``: rollout search over fair forks of the episode, on top of the heuristic.

Algorithm (one decision):
1. Ask the base policy for its action, the *proposal*: the heuristic (heuristic.py).
2. Build *candidates* around it, each a concrete legal action, the proposal first:
   - the same decision made differently: a triage at every priority P1..P4 (the level is also
     the response: P1/P2 lights and sirens, P3 a cold response, P4 advice without a unit -- and
     P1 starts telephone CPR for an arrest); a dispatch with the nearest free unit of the other
     kind, the next-nearest unit of the same kind, or waiting (``maintain_plan``); a hospital
     assignment to every other open hospital that can treat the patient;
   - a different decision first: the first action of every *later* heuristic rule that has
     one (dispatch before triaging the next call, preparing an OR before the next dispatch,
     blood before a hospital...), and the heuristic's second choice within the proposal's own
     rule (the next job, the next patient to assign). A decision costs a simulated minute,
     so the order of the heuristic's rules is itself a choice worth searching.
   At most ``max_candidates`` are kept, in that order (``reorder=False``: the first kind only).
3. With more than one candidate, *race* them on forks of the episode (``CodeRedSim.fork``:
   future calls and disruptions redrawn, unseen callers resampled from the report posterior,
   noise reseeded -- only what the agent could know). Common random numbers: the same fork
   seeds serve every candidate, so candidates are compared on the same imagined futures. A
   rollout plays the candidate, then lets the base policy finish the episode; its value is the
   final raw grade. Stage 1 plays every candidate on ``forks`` forks; stage 2 plays the
   proposal and the best challenger on ``confirm_forks`` more (fresh seeds).
4. The challenger is played when it won stage 1 (positive mean paired gain) and, on the fresh
   stage-2 forks alone, its mean paired gain over the proposal exceeds both ``min_gain`` and
   ``z`` standard errors of those paired differences. Testing on forks that did not pick the
   winner removes the winner's curse of a many-way race (the best of five noisy challengers looks
   better than it is on the forks that made it the best). ``pooled=True`` instead tests over all
   forks with ``z`` Bonferroni-corrected for the number of challengers (``_corrected_z``);
   ``max_loss`` vetoes a challenger that loses more than that on any single fork.
   Why so many fresh forks: task3's outcomes are heavy-tailed. A choice can gain +0.002 on most
   futures and lose 0.15-0.25 on one in five to twenty (a secondary casualty left waiting for a
   surgeon busy elsewhere: secondary harm 0.9 -> 0), so with three fresh forks such a choice was
   taken on luck, and lost in the real episode (seeds 905, 907; docs/PERFORMANCE.md).

Budget per decision: at most ``max_candidates x forks + 2 x confirm_forks`` rollouts (default
6 x 4 + 2 x 8 = 40; a decision whose race nobody wins stops after stage 1); decisions with a
single candidate (waiting, nothing else to do) cost none. Rollouts act on
``CodeRedSim.observation_view`` (the same actions as on the full observation, about half the
cost). Rollouts are seeded from the agent seed, the episode and the step, so an evaluation is
reproducible. ``decision_seconds`` and ``decision_cpu_seconds`` record the wall and CPU time of
every decision (on a shared machine the CPU time is the cost; the wall time includes waiting).

How it sees the world: the agent keeps a private replica of the episode (``CodeRedSim`` on the
same task and seed, stepped with the agent's own actions -- the simulator is deterministic, so
the replica is the episode) and only ever reads it through ``branch``, which for this agent is
``fork``: it drops what the agent could not know. (``oracle.py`` overrides ``branch`` with an
exact copy: the same search told the truth, a ceiling.) A decision freezes the replica once
(``CodeRedSim.snapshot``) and computes each fork seed's branch of it once (``branch_from``):
the first candidate plays on it, every later one on its own copy of it (frozen before the first
played; a pickle load), with the same values as a fresh branch per candidate
(tests/test_planner.py). If the replica ever disagrees with the observation (another driver, a
refused frame), the planner plays the heuristic's proposal from then on.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Iterator, Mapping
from random import Random
from typing import Any

from ..sim import CodeRedSim, Snapshot
from ..sim.city import PRAKASHNAGAR, city_by_key, city_key_of
from ..sim.conditions import CONDITIONS
from ..sim.triage import PRIORITIES
from .base import MAINTAIN, code_fingerprint
from .destination import closed_to
from .heuristic import RULE_MODULES, HeuristicAgent, road_view

DEFAULT_FORKS = 4
DEFAULT_CONFIRM_FORKS = 8
DEFAULT_MAX_CANDIDATES = 6
DEFAULT_MIN_GAIN = 0.003
DEFAULT_Z = 1.0
_NORMAL = statistics.NormalDist()
_DISPATCH = ("dispatch_als", "dispatch_bls", "dispatch_ambulance")


def _key(action: dict[str, Any]) -> str:
    return json.dumps(action, sort_keys=True)


def observation_digest(obs: Mapping[str, Any]) -> tuple:
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


def _corrected_z(z: float, challengers: int) -> float:
    """The one-sided threshold that keeps the false-acceptance rate of ``z`` when the best of
    ``challengers`` is tested (Bonferroni: the tail probability divided by their number)."""
    if challengers <= 1 or z <= 0.0:
        return z
    tail = 1.0 - _NORMAL.cdf(z)
    return _NORMAL.inv_cdf(1.0 - tail / challengers)


def _paired(a: list[float], b: list[float]) -> tuple[float, float]:
    """Mean of the paired differences a - b and its standard error."""
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    spread = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else 0.0
    return statistics.fmean(diffs), spread


class _BranchStarts:
    """One decision's rollout starts: the episode's state frozen once (``CodeRedSim.snapshot``,
    when first needed) and, per fork seed, ``PlannerAgent.branch_from`` of it, computed when
    first asked and frozen before it is handed out; later candidates get their own copies. Valid
    for one decision only: it refuses to hand out anything once closed or once the replica has
    stepped."""

    def __init__(self, agent: PlannerAgent, sim: CodeRedSim) -> None:
        self._agent = agent
        self.sim = sim  # the replica, which does not step while the decision lasts
        self._step: int | None = sim.step_count
        self._decision: Snapshot | None = None
        self._starts: dict[int, Snapshot] = {}

    def copy(self, fork_seed: int) -> CodeRedSim:
        if self._step is None or self.sim.step_count != self._step:
            raise RuntimeError("these rollout starts belong to a past decision")
        start = self._starts.get(fork_seed)
        if start is not None:
            return start.copy()
        if self._decision is None:
            self._decision = self.sim.snapshot()
        twin = self._agent.branch_from(self._decision, fork_seed)
        self._starts[fork_seed] = twin.snapshot()  # before anyone steps it
        return twin  # nobody else holds it: one copy saved

    def close(self) -> None:
        self._step, self._decision, self._starts = None, None, {}


class PlannerAgent:
    """Heuristic-guided rollout planner on ``CodeRedSim.fork`` (see the module docstring)."""

    name = "planner"
    units_per_kind = 1  # dispatch alternatives: this many nearest free units of each kind
    choices_per_rule = 1  # reordering: this many of each later rule's choices

    def __init__(
        self,
        seed: int = 0,
        forks: int = DEFAULT_FORKS,
        max_candidates: int = DEFAULT_MAX_CANDIDATES,
        min_gain: float = DEFAULT_MIN_GAIN,
        z: float = DEFAULT_Z,
        confirm_forks: int = DEFAULT_CONFIRM_FORKS,
        reorder: bool = True,
        wait: bool = True,
        max_loss: float | None = None,
        pooled: bool = False,
    ) -> None:
        if forks < 1 or max_candidates < 1 or confirm_forks < 0:
            raise ValueError(
                "forks and max_candidates must be >= 1 and confirm_forks >= 0, got "
                f"{forks}, {max_candidates}, {confirm_forks}"
            )
        self.seed = seed
        self.forks = forks
        self.confirm_forks = confirm_forks
        self.max_candidates = max_candidates
        self.min_gain = min_gain
        self.z = z
        self.reorder = reorder  # also try a different decision first (the later rules' choices)
        self.wait = wait  # also try waiting instead of a proposed dispatch
        self.max_loss = max_loss
        self.pooled = pooled
        self.rollouts = 0  # rollouts played this episode (budget accounting)
        self.decisions = 0
        self.decision_seconds: list[float] = []  # wall time of every decision this episode
        self.decision_rollouts: list[int] = []  # rollouts each decision played
        self.decision_cpu_seconds: list[float] = []  # this process's CPU time per decision
        self._sim: CodeRedSim | None = None
        self._base = self.base_policy(None)
        self._pending: dict[str, Any] | None = None
        self._task: tuple[str, int] = ("", 0)
        self._starts: _BranchStarts | None = None  # set while a decision races its candidates

    def fingerprint(self) -> dict[str, Any]:
        """Code (its own, the planner's, the heuristic's) and the per-decision budget that shapes
        its play."""
        code = code_fingerprint(self, "codered_env.agents.planner", *RULE_MODULES)
        return {**code, "forks": self.forks, "max_candidates": self.max_candidates,
                "min_gain": self.min_gain, "z": self.z, "confirm_forks": self.confirm_forks,
                "reorder": self.reorder, "wait": self.wait,
                "max_loss": self.max_loss, "pooled": self.pooled}

    def reset(self, task_id: str, seed: int, city: str = PRAKASHNAGAR.key) -> None:
        """``city``: the name of the episode's city; an episode's first observation names it too,
        and the replica is rebuilt there if it differs (``_follow_city``)."""
        self._sim = CodeRedSim(task_id, seed, city=city) if city_by_key(city) is not None else None
        if self._sim is not None:
            self._sim.rewards = False  # the replica is compared and forked, never rewarded
        self._base = self.base_policy(self._sim)
        self._base.reset(task_id, seed)
        self._pending = None
        self._task = (task_id, seed)
        self.rollouts = self.decisions = 0
        self.decision_seconds, self.decision_rollouts, self.decision_cpu_seconds = [], [], []

    def base_policy(self, sim: CodeRedSim | None) -> HeuristicAgent:
        """The policy that proposes and finishes rollouts (``sim``: the copy it will play on)."""
        return HeuristicAgent(self.seed)

    def branch(self, sim: CodeRedSim, fork_seed: int) -> CodeRedSim:
        """The copy a rollout plays on: a fair fork (only what the agent could know)."""
        return sim.fork(fork_seed)

    def branch_from(self, decision: Snapshot, fork_seed: int) -> CodeRedSim:
        """``branch`` of the decision's state (``decision``): computed once per fork seed and
        decision; every candidate's rollout on that seed starts from it or a copy of it."""
        return decision.fork(fork_seed)

    # ------------------------------------------------------------------ the decision
    def act(self, obs: dict[str, Any]) -> dict[str, Any]:
        start, cpu = time.perf_counter(), time.process_time()
        self._follow_city(obs)
        self._catch_up()
        proposal = self._base.act(obs)
        sim = self._sim
        if sim is None or sim.done or observation_digest(sim.observation_view()) != observation_digest(obs):
            self._sim = None  # out of sync: the heuristic plays on alone
            return proposal
        self.decisions += 1
        before = self.rollouts
        candidates = self._candidates(obs, proposal)
        chosen = self._choose(sim, candidates) if len(candidates) > 1 else proposal
        self._base._last = _key(chosen)  # a refused choice is then not repeated
        self._pending = chosen
        self.decision_seconds.append(time.perf_counter() - start)
        self.decision_rollouts.append(self.rollouts - before)
        self.decision_cpu_seconds.append(time.process_time() - cpu)
        return chosen

    def _follow_city(self, obs: Mapping[str, Any]) -> None:
        """At an episode's first step, replay it in the observation's city (a city only known by
        its map, not by a name, leaves no replica: the heuristic plays on alone)."""
        key = city_key_of(obs)
        if obs.get("step") == 0 and (self._sim is None or self._sim.city.key != key):
            self.reset(*self._task, city=key)

    def _catch_up(self) -> None:
        if self._sim is not None and self._pending is not None and not self._sim.done:
            self._sim.step(self._pending)
        self._pending = None

    def _fork_seeds(self, sim: CodeRedSim, n: int, offset: int = 0) -> list[int]:
        task_id, seed = self._task
        base = Random(f"planner:{self.seed}:{task_id}:{seed}:{sim.step_count}").getrandbits(40)
        return [base + offset + k for k in range(n)]

    def _choose(self, sim: CodeRedSim, candidates: list[dict[str, Any]]) -> dict[str, Any]:
        self._starts = _BranchStarts(self, sim)  # this decision's forks, shared by its candidates
        try:
            return self._race(sim, candidates)
        finally:
            self._starts.close()
            self._starts = None

    def _race(self, sim: CodeRedSim, candidates: list[dict[str, Any]]) -> dict[str, Any]:
        seeds = self._fork_seeds(sim, self.forks)
        values = [self._values(sim, c, seeds) for c in candidates]
        gains = [_paired(v, values[0])[0] for v in values]
        best = max(range(1, len(candidates)), key=lambda i: (gains[i], -i))
        if gains[best] <= 0.0:
            return candidates[0]
        fresh: tuple[list[float], list[float]] = ([], [])
        if self.confirm_forks:
            more = self._fork_seeds(sim, self.confirm_forks, offset=self.forks)
            fresh = (self._values(sim, candidates[best], more), self._values(sim, candidates[0], more))
            if _paired(*fresh)[0] <= 0.0:
                return candidates[0]
        ours, theirs = values[best] + fresh[0], values[0] + fresh[1]
        worst = min(a - b for a, b in zip(ours, theirs, strict=True))
        if self.max_loss is not None and worst < -self.max_loss:
            return candidates[0]
        if self.pooled:
            gain, spread = _paired(ours, theirs)
            z = _corrected_z(self.z, len(candidates) - 1)
        else:
            gain, spread = _paired(*fresh) if self.confirm_forks else _paired(ours, theirs)
            z = self.z
        return candidates[best] if gain > max(self.min_gain, z * spread) else candidates[0]

    def _values(self, sim: CodeRedSim, action: dict[str, Any], fork_seeds: list[int]) -> list[float]:
        values = []
        for fork_seed in fork_seeds:
            twin = self._rollout_start(sim, fork_seed)
            twin.step(action)
            values.append(self._rollout(twin))
        return values

    def _rollout_start(self, sim: CodeRedSim, fork_seed: int) -> CodeRedSim:
        """The copy a rollout on ``fork_seed`` plays on: from this decision's shared starts (the
        same state as ``branch(sim, fork_seed)``), or ``branch`` itself outside a decision."""
        starts = self._starts
        ours = starts is not None and starts.sim is sim
        twin = starts.copy(fork_seed) if ours else self.branch(sim, fork_seed)
        twin.rewards = False  # a rollout reads the final grade alone
        return twin

    def _rollout(self, twin: CodeRedSim) -> float:
        self.rollouts += 1
        policy = self.base_policy(twin)
        policy._refused = set(self._base._refused)
        while not twin.done:
            twin.step(policy.act(twin.observation_view()))
        grade = twin.grade()
        return float(grade.get("raw_score", grade["score"]))

    # ------------------------------------------------------------------ candidates
    def _candidates(self, obs: dict[str, Any], proposal: dict[str, Any]) -> list[dict[str, Any]]:
        kind = proposal.get("action_type")
        if kind == "triage_call":
            options = [proposal | {"priority": p} for p in PRIORITIES]
            call = next((c for c in obs["calls"] if c["call_id"] == proposal["call_id"]), None)
            if call is not None and call["status"] != "pending":
                options = options[:3]  # P4 needs a call without a unit
        elif kind in _DISPATCH:
            options = self._dispatch_options(obs, proposal)
        elif kind == "assign_hospital":
            options = self._hospital_options(obs, proposal)
        else:
            options = []
        unique: dict[str, dict[str, Any]] = {_key(proposal): proposal}
        reordered = self._rule_options(obs, proposal) if self.reorder else iter(())
        for option in [*options, *reordered]:
            unique.setdefault(_key(option), option)
        return list(unique.values())[: self.max_candidates]

    def _rule_options(self, obs: dict[str, Any], proposal: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The heuristic's second choice in the proposal's rule, then the first choice of every
        later rule (``HeuristicAgent.act`` plays the first choice of the first rule that has one)."""
        base = self._base
        legal = obs.get("legal_actions") or {}
        net = road_view(obs)
        rules = (base._triage, base._dispatch, base._mutual_aid, base._assign, base._prepare, base._blood)
        fired = False
        for rule in rules:
            playable = (
                a for a in rule(obs, legal, net)
                if a["action_type"] in legal and _key(a) not in base._refused
            )
            firsts = [a for _, a in zip(range(self.choices_per_rule + 1), playable, strict=False)]
            if not fired and firsts and _key(firsts[0]) == _key(proposal):
                fired = True
                yield from firsts[1:]
            elif fired:
                yield from firsts[: self.choices_per_rule]

    def _dispatch_options(self, obs: dict[str, Any], proposal: dict[str, Any]) -> list[dict[str, Any]]:
        target_key = "patient_id" if "patient_id" in proposal else "call_id"
        target = proposal[target_key]
        node = next(
            (x["node"] for x in obs["patients"] + obs["calls"] if x.get(target_key) == target), None
        )
        free = [a for a in obs["ambulances"] if a["status"] in ("available", "returning")]
        if node is None or not free:
            return []
        net = road_view(obs)
        free.sort(key=lambda u: (net.minutes(u["next_node"] or u["node"], node), u["ambulance_id"]))
        chosen = next((u for u in free if u["ambulance_id"] == proposal["ambulance_id"]), None)
        kind = chosen["kind"] if chosen else "ALS"
        width = self.units_per_kind
        others = [u for u in free if u["kind"] != kind][:width] + [
            u for u in free if u["kind"] == kind and u["ambulance_id"] != proposal["ambulance_id"]
        ][:width]
        options = []
        for unit in others:
            if obs["phase"] == 1:
                options.append({**proposal, "ambulance_id": unit["ambulance_id"]})
            else:
                action = "dispatch_als" if unit["kind"] == "ALS" else "dispatch_bls"
                options.append(
                    {"action_type": action, "ambulance_id": unit["ambulance_id"], "call_id": target}
                )
        return [*options, dict(MAINTAIN)] if self.wait else options

    @staticmethod
    def _hospital_options(obs: dict[str, Any], proposal: dict[str, Any]) -> list[dict[str, Any]]:
        patient = next((p for p in obs["patients"] if p["patient_id"] == proposal["patient_id"]), None)
        if patient is None:
            return []
        cond = CONDITIONS[patient["condition"]]
        hospitals = {h["hospital_id"]: h for h in obs["hospitals"]}
        return [
            {**proposal, "hospital_id": hid}
            for hid, h in hospitals.items()
            if not closed_to(cond, h, hospitals) and cond.care_at(h["tier"]) is not None
        ]
