"""The red-team family: cheap, degenerate and exploitative policies, each deterministic given the
episode seed, built on the public API of ``codered_env`` only.

Most are the expert heuristic (``HeuristicAgent``) with one or more *twists* (``Twist``): held
dispatches, assignments, preparations or triage; a blanket triage level or a shifted one; one
unit kind, the farthest unit, ALS everywhere; the worst or the nearest hospital, a STEMI sent
where it cannot be treated while the cath labs are busy (``RelaxedTransferAgent``); no preparation;
waste of each kind (pages, OR preparations, blood, pre-emptions, invalid actions); mutual aid at
once, never or held; lazy waiting; reverse priority; serving only some priorities; stopping early;
triaging and then serving nobody; preparing without ever dispatching; priority-blind job orders
(nearest job first, random); random codes; codes collapsed (P2/P3 advised, P2 sent cold); other
triage rules (the keyword card, the most probable level); padding (waiting in one-minute queries,
so the same care takes more decisions).
Mixes are several twists at once. ``GreedyRewardAgent`` is the one-step reward maximiser: it
tries each candidate action on a fair fork of the episode (``CodeRedSim.fork``: only what the
agent could know) and plays the one whose step reward is highest. ``planner`` and ``oracle``
(the project's own agents) can be added by name; the oracle reads the hidden truth, so it is the
ceiling, never a fair member of the family.

A hold of ``k`` minutes is measured from the first decision at which the heuristic would have
taken the action; while something is held and nothing else is to be done, the agent waits with
``maintain_plan`` when the release is at least ``MAINTAIN_PLAN_CAP_MIN`` away and otherwise with a
one-minute ``query_or_status`` (a query costs no score), so the hold ends on time. Meanwhile
the agent's other rules go on acting (a dispatcher who holds one job still works the others).
A mix's *waiting* twin (``WaitingTwin``, ``--mix-twins waiting``) holds instead as the delay
invariant states it, all else equal: in place of a held action it waits one minute, so nothing
else moves earlier.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from random import Random
from typing import Any

from codered_env.agents import HeuristicAgent, make_agent
from codered_env.agents.destination import EN_ROUTE
from codered_env.agents.heuristic import FREE_UNITS, action_key, nearest_unit, road_view
from codered_env.agents.triage_rule import triage_report
from codered_env.agents.variants import wait_for_release
from codered_env.sim import CodeRedSim
from codered_env.sim.conditions import CONDITIONS
from codered_env.sim.triage import PRIORITIES, best_guess_priority, priority_posterior

Action = dict[str, Any]
MAINTAIN: Action = {"action_type": "maintain_plan"}
LEVELS = PRIORITIES
SENT_A_UNIT = LEVELS[:-1]  # P1-P3: the levels a crew goes out to (P4 is advice)
BEFORE_ARRIVAL = ("awaiting_unit", "unit_en_route", "on_scene", "transporting")
BLOOD_UNITS = 2  # what the heuristic reserves per case
INVALID_EVERY = 5  # the "invalid" waste: one invalid action every this many decisions
INVALID_ACTION: Action = {"action_type": "assign_hospital", "patient_id": "NOBODY", "hospital_id": "H1"}
GREEDY_FORKS = 1  # forks per candidate of the one-step maximiser (the step reward varies little)
GREEDY_CHOICES_PER_RULE = 2


@dataclass(frozen=True)
class Twist:
    """What a red-team agent does differently from the heuristic (the defaults: nothing)."""

    hold_dispatch: int = 0  # minutes a job waits after the heuristic would first dispatch it
    hold_levels: tuple[str, ...] = SENT_A_UNIT  # the levels of the jobs ``hold_dispatch`` holds
    hold_assign: int = 0  # minutes a patient waits for a hospital after the heuristic would assign
    hold_prep: int = 0  # minutes every preparation (OR, page, pre-emption, blood, typing) waits
    hold_triage: int = 0  # minutes a call waits to be triaged
    hold_aid: int = 0  # minutes a mutual-aid request waits (per the caller it is for)
    # a blanket level for every call; "random": a level drawn per call; "keyword": the keyword
    # card of agents/triage_rule.py; "best-guess": the report's most probable level
    triage: str | None = None
    triage_map: tuple[tuple[str, str], ...] = ()  # the heuristic's level -> the level given
    triage_shift: int = 0  # -1: one level more urgent than the heuristic's, +1: one less
    skip_triage: bool = False  # never triage (calls go out at the protocol default)
    units: str = "heuristic"  # heuristic | ALS | BLS | ALS-first | nearest | farthest
    serve: tuple[str, ...] = SENT_A_UNIT  # the levels that get a unit at all
    reverse: bool = False  # least urgent job first
    order: str = "priority"  # priority (the heuristic's) | nearest (to a free unit, any level) | random
    hospital: str = "heuristic"  # heuristic | worst (lowest-valued capable) | nearest (any)
    prepare: bool = True  # False: no OR preparation, page, pre-emption or blood
    mutual_aid: str = "heuristic"  # heuristic | never | at_once
    waste: frozenset[str] = frozenset()  # pages | ors | ors-all | blood | preempt | invalid
    lazy: int = 0  # act only on every n-th decision, maintain_plan on the others
    stop_after: int | None = None  # maintain_plan after this many decisions
    pad: bool = False  # wait in one-minute status queries, never maintain_plan: more decisions


def _allowed(legal: dict[str, Any], action: Action) -> bool:
    """``action`` is among the legal actions (every parameter value in one listed option)."""
    for option in legal.get(action["action_type"], ()):
        if all(value in option.get(name, ()) for name, value in action.items() if name != "action_type"):
            return True
    return False


def _ranked_units(units: list[dict[str, Any]], node: str, net: Any) -> list[dict[str, Any]]:
    """Free units by ETA to ``node`` (ties: the lower id), nearest first."""
    return sorted(units, key=lambda u: (net.minutes(u["next_node"] or u["node"], node), u["ambulance_id"]))


class RedTeamAgent(HeuristicAgent):
    """The heuristic with a ``Twist`` (see the module docstring)."""

    def __init__(self, seed: int, twist: Twist, name: str) -> None:
        super().__init__(seed, triage=not twist.skip_triage)
        self.twist = twist
        self.name = name
        pre = (self._aid_at_once,) if twist.mutual_aid == "at_once" else ()
        post = (self._waste,) if twist.waste - {"invalid"} else ()
        self._rules = (*pre, *self._rules, *post)
        self._first_seen: dict[tuple[str, str], int] = {}
        self._decisions = 0
        self._now = 0
        self._release: int | None = None  # the earliest release of what this decision held

    def reset(self, task_id: str, seed: int) -> None:
        super().reset(task_id, seed)
        self._first_seen, self._decisions, self._release = {}, 0, None

    # ------------------------------------------------------------------ the decision
    def act(self, observation: dict[str, Any]) -> Action:
        twist = self.twist
        self._decisions += 1
        if twist.stop_after is not None and self._decisions > twist.stop_after:
            return self._idle()
        if twist.lazy and (self._decisions - 1) % twist.lazy:
            return self._idle()
        if "invalid" in twist.waste and self._decisions % INVALID_EVERY == 0:
            self._last = None
            return dict(INVALID_ACTION)
        self._now, self._release = observation["clock_min"], None
        action = super().act(observation)
        if action["action_type"] == "maintain_plan" and self._release is not None:
            return wait_for_release(observation, self._release - self._now, dict(MAINTAIN))
        if action["action_type"] == "maintain_plan" and twist.pad:
            return wait_for_release(observation, 0, action)
        return action

    def _idle(self) -> Action:
        self._last = None
        return dict(MAINTAIN)

    def _held(self, kind: str, key: str, minutes: int) -> bool:
        """Hold the action ``(kind, key)`` ``minutes`` from the first decision that offered it."""
        if minutes <= 0:
            return False
        release = self._first_seen.setdefault((kind, key), self._now) + minutes
        if self._now >= release:
            return False
        self._release = release if self._release is None else min(self._release, release)
        return True

    # ------------------------------------------------------------------ twisted rules
    def triage_priority(self, call: dict[str, Any]) -> str:
        if self.twist.triage == "random":
            return Random(f"triage:{self.seed}:{call['call_id']}").choice(LEVELS)
        if self.twist.triage == "keyword":
            return triage_report(call["report"])
        if self.twist.triage == "best-guess":
            return best_guess_priority(priority_posterior({"report": call["report"]}))
        if self.twist.triage is not None:
            return self.twist.triage
        level = super().triage_priority(call)
        level = dict(self.twist.triage_map).get(level, level)
        shifted = LEVELS.index(level) + self.twist.triage_shift
        return LEVELS[min(len(LEVELS) - 1, max(0, shifted))]

    def _triage(self, obs, legal, net) -> Iterator[Action]:
        for action in list(super()._triage(obs, legal, net)):
            if not self._held("triage", action["call_id"], self.twist.hold_triage):
                yield action

    def _jobs(self, obs) -> list[dict[str, Any]]:
        twist = self.twist
        jobs = [job for job in super()._jobs(obs) if job["priority"] in twist.serve]
        if twist.reverse:
            jobs.sort(key=lambda j: (-LEVELS.index(j["priority"]), j["vitals"], j["id"]))
        elif twist.order == "nearest":
            free, net = self._rows(obs, "ambulances", FREE_UNITS), road_view(obs)
            eta = {j["id"]: (nearest_unit(free, j["node"], net) or (float("inf"),))[0] for j in jobs}
            jobs.sort(key=lambda j: (eta[j["id"]], j["id"]))
        elif twist.order == "random":
            Random(f"order:{self.seed}:{self._now}").shuffle(jobs)
        return [job for job in jobs if not self._dispatch_held(job)]

    def _dispatch_held(self, job: dict[str, Any]) -> bool:
        twist = self.twist
        return job["priority"] in twist.hold_levels and self._held("dispatch", job["id"], twist.hold_dispatch)

    def _pick_unit(self, pools, job, net):
        mode = self.twist.units
        if mode == "heuristic":
            return super()._pick_unit(pools, job, net)
        if mode in ("ALS", "BLS"):
            candidates = pools[mode]
        elif mode == "ALS-first":
            candidates = pools["ALS"] or pools["BLS"]
        else:
            candidates = [*pools["ALS"], *pools["BLS"]]
        ranked = _ranked_units(candidates, job["node"], net)
        if not ranked:
            return None
        return ranked[-1] if mode == "farthest" else ranked[0]

    def _mutual_aid(self, obs, legal, net) -> Iterator[Action]:
        if self.twist.mutual_aid == "heuristic":
            for action in list(super()._mutual_aid(obs, legal, net)):
                if not self._held("aid", action.get("target_id", ""), self.twist.hold_aid):
                    yield action

    def _aid_at_once(self, obs, legal, net) -> Iterator[Action]:
        if "request_mutual_aid" in legal:
            yield {"action_type": "request_mutual_aid"}

    def _hospital_scores(self, p, hospitals, inbound, net, reopening=None) -> dict[str, float]:
        mode = self.twist.hospital
        if reopening is not None and mode != "heuristic":
            return {}  # the twisted choices never wait for a diversion to lapse
        if mode == "nearest":
            open_ids = [hid for hid, h in hospitals.items() if h["diverted_until"] is None] or list(hospitals)
            return {min(open_ids, key=lambda hid: (net.minutes(p["node"], hospitals[hid]["node"]), hid)): 1.0}
        scores = super()._hospital_scores(p, hospitals, inbound, net, reopening)
        if mode == "worst" and scores:
            return {min(scores, key=lambda hid: (scores[hid], hid)): 1.0}
        return scores

    def _assign(self, obs, legal, net) -> Iterator[Action]:
        for action in list(super()._assign(obs, legal, net)):
            if not self._held("assign", action["patient_id"], self.twist.hold_assign):
                yield action

    def _prepare(self, obs, legal, net) -> Iterator[Action]:
        if self.twist.prepare:
            yield from self._held_preparations(super()._prepare(obs, legal, net))

    def _blood(self, obs, legal, net) -> Iterator[Action]:
        if self.twist.prepare:
            yield from self._held_preparations(super()._blood(obs, legal, net))

    def _held_preparations(self, actions: Iterator[Action]) -> Iterator[Action]:
        for action in list(actions):
            key = "|".join(f"{k}={action[k]}" for k in sorted(action))
            if not self._held("prep", key, self.twist.hold_prep):
                yield action

    # ------------------------------------------------------------------ waste
    def _waste(self, obs, legal, net) -> Iterator[Action]:
        waste = self.twist.waste
        for action in self._waste_candidates(obs, waste):
            if _allowed(legal, action):
                yield action

    def _waste_candidates(self, obs, waste: frozenset[str]) -> Iterator[Action]:
        hospitals = obs["hospitals"]
        if "pages" in waste:
            for h in hospitals:
                for specialty, info in sorted(h["specialists"].items()):
                    if info.get("state") == "on_call":
                        yield {"action_type": "page_specialist", "hospital_id": h["hospital_id"],
                               "specialty": specialty}
        if "ors" in waste or "ors-all" in waste:
            yield from self._needless_preparations(obs, every_room="ors-all" in waste)
        if "blood" in waste:
            for p in obs["patients"]:
                dest = p["destination"]
                if dest and p["status"] in BEFORE_ARRIVAL and not p["blood_reserved"].get(dest):
                    stock = next(h["blood"] for h in hospitals if h["hospital_id"] == dest)
                    group = "O+" if stock.get("O+", 0) >= BLOOD_UNITS else "O-"
                    yield {"action_type": "allocate_blood", "patient_id": p["patient_id"],
                           "hospital_id": dest, "blood_type": group, "units": BLOOD_UNITS}
        if "preempt" in waste:
            for h in hospitals:
                for room in h["ors"]:
                    if room["state"] == "in_use" and room["elective"]:
                        yield {"action_type": "preempt_or", "hospital_id": h["hospital_id"],
                               "or_id": room["or_id"]}

    @staticmethod
    def _needless_preparations(obs, every_room: bool) -> Iterator[Action]:
        """Prepare, at every hospital that could host it, the procedure of every patient still
        before arrival (``every_room``: every procedure of every idle room)."""
        needed: set[str] = set()
        for p in obs["patients"]:
            if p["status"] in BEFORE_ARRIVAL:
                for h in obs["hospitals"]:
                    care = CONDITIONS[p["condition"]].care_at(h["tier"])
                    if care is not None and care.procedure:
                        needed.add(care.procedure)
        for h in obs["hospitals"]:
            rooms = h["ors"]
            procedures = sorted({proc for r in rooms if r["state"] == "idle" for proc in r["procedures"]})
            for proc in procedures:
                readied = any(r["procedure"] == proc and r["state"] in ("preparing", "ready") for r in rooms)
                if not readied and (every_room or proc in needed):
                    yield {"action_type": "prepare_or", "hospital_id": h["hospital_id"], "procedure": proc}


#: The action types each hold of a mix holds back (a waiting twin's).
HELD_TYPES: dict[str, tuple[str, ...]] = {
    "hold_dispatch": ("dispatch_ambulance", "dispatch_als", "dispatch_bls"),
    "hold_assign": ("assign_hospital",),
    "hold_prep": ("prepare_or", "preempt_or", "page_specialist", "allocate_blood", "query_blood_type"),
    "hold_triage": ("triage_call",),
    "hold_aid": ("request_mutual_aid",),
}


class WaitingTwin:
    """``base`` holding every action of ``held`` back ``minutes`` from the first decision at which
    ``base`` would have played it, all else equal: in a held action's place it waits one minute
    (an OR status query), so no other action is played earlier than ``base`` would play it. When
    ``base`` proposes a held action, every action its rule offers at that decision (say, each
    waiting job's dispatch) counts as proposed then, so queued actions are each held ``minutes``,
    not one after the other."""

    def __init__(self, base: RedTeamAgent, held: tuple[str, ...], minutes: int, name: str) -> None:
        self.base, self.held, self.minutes, self.name = base, held, minutes, name
        self._first_proposed: dict[str, int] = {}

    def reset(self, task_id: str, seed: int) -> None:
        self.base.reset(task_id, seed)
        self._first_proposed = {}

    def act(self, observation: dict[str, Any]) -> Action:
        base = self.base
        action = base.act(observation)
        if action["action_type"] not in self.held:
            return action
        now = observation["clock_min"]
        first = self._first_proposed
        rule = base._rules[base.last_rule - 1]
        for offered in rule(observation, observation.get("legal_actions") or {}, road_view(observation)):
            if offered["action_type"] in self.held:
                first.setdefault(_held_entity(offered), now)
        if now - first.setdefault(_held_entity(action), now) >= self.minutes:
            return action
        base._last = None  # not played: nothing to remember as refused
        return wait_for_release(observation, 0, dict(MAINTAIN))


def _held_entity(action: Action) -> str:
    """What a hold is counted for: the job of a dispatch, the patient of an assignment, the call
    of a triage; a preparation by its content."""
    if action["action_type"] != "allocate_blood":  # blood: by its content (type, units, hospital)
        for name in ("call_id", "patient_id"):
            if name in action:
                return f"{action['action_type']}:{action[name]}"
    return action_key(action)


def _cath_lab_free(obs: dict[str, Any]) -> bool:
    """Some open hospital that gives a STEMI PCI, its cardiologist not unavailable, shows a cath
    lab no patient holds that is idle or readied for PCI."""
    for h in obs["hospitals"]:
        care = CONDITIONS["stemi"].care_at(h["tier"])
        if care is None or care.procedure is None or h["diverted_until"] is not None:
            continue
        if h["specialists"].get("cardiology", {}).get("state") == "unavailable":
            continue
        for room in h["ors"]:
            readied = room["state"] in ("ready", "preparing") and room["procedure"] == "cath_lab"
            if "cath_lab" in room["procedures"] and room["patient_id"] is None and (
                    room["state"] == "idle" or readied):
                return True
    return False


def _no_pci(h: dict[str, Any]) -> bool:
    return CONDITIONS["stemi"].care_at(h["tier"]) is None and h["diverted_until"] is None


class RelaxedTransferAgent(RedTeamAgent):
    """The heuristic, but while no cath lab shows free a STEMI patient is sent to the nearest open
    hospital that cannot treat them: the inter-facility transfer then works to the 120-min target
    and the lab stays with whoever holds it (on task2, a stroke's thrombectomy)."""

    def __init__(self, seed: int, twist: Twist, name: str) -> None:
        super().__init__(seed, twist, name)
        rules = list(self._rules)
        rules.insert(rules.index(self._assign), self._stemi_elsewhere)
        self._rules = tuple(rules)

    def _stemi_elsewhere(self, obs, legal, net) -> Iterator[Action]:
        elsewhere = [h for h in obs["hospitals"] if _no_pci(h)]
        if not elsewhere or _cath_lab_free(obs):
            return
        by_id = {h["hospital_id"]: h for h in obs["hospitals"]}
        for p in self._rows(obs, "patients", EN_ROUTE):
            bound = by_id.get(p["destination"]) if p["destination"] is not None else None
            if p["condition"] != "stemi" or p["status"] not in BEFORE_ARRIVAL or (bound and _no_pci(bound)):
                continue
            nearest = min(elsewhere, key=lambda h: (net.minutes(p["node"], h["node"]), h["hospital_id"]))
            yield {"action_type": "assign_hospital", "patient_id": p["patient_id"],
                   "hospital_id": nearest["hospital_id"]}

    def _assign(self, obs, legal, net) -> Iterator[Action]:
        by_id = {h["hospital_id"]: h for h in obs["hospitals"]}
        rows = {p["patient_id"]: p for p in obs["patients"]}
        for action in super()._assign(obs, legal, net):
            p = rows[action["patient_id"]]
            bound = by_id.get(p["destination"]) if p["destination"] is not None else None
            if not (p["condition"] == "stemi" and bound is not None and _no_pci(bound)):
                yield action  # else: kept on its transfer route


class GreedyRewardAgent:
    """The one-step reward maximiser: every decision, each candidate (the heuristic's proposal,
    the first choices of every heuristic rule, every triage level, ``maintain_plan``) is played one
    step on the same fair fork(s) of the episode, and the one with the highest mean step reward is
    played. Ties go to the first candidate: the heuristic's proposal (``ties="heuristic"``) or
    ``maintain_plan`` (``ties="maintain"``). The episode replica it forks is stepped with its own
    actions and read only through ``CodeRedSim.fork``, so nothing hidden reaches a decision."""

    def __init__(self, seed: int, ties: str = "heuristic", forks: int = GREEDY_FORKS) -> None:
        self.seed, self.ties, self.forks = seed, ties, forks
        self.name = f"greedy-reward/{ties}"
        self._base = HeuristicAgent(seed)
        self._sim: CodeRedSim | None = None
        self._pending: Action | None = None
        self._task = ("", 0)

    def reset(self, task_id: str, seed: int) -> None:
        self._base = HeuristicAgent(self.seed)
        self._base.reset(task_id, seed)
        self._sim, self._pending, self._task = CodeRedSim(task_id, seed), None, (task_id, seed)

    def act(self, observation: dict[str, Any]) -> Action:
        sim = self._sim
        if sim is not None and self._pending is not None and not sim.done:
            sim.step(self._pending)
        proposal = self._base.act(observation)
        if sim is None or sim.done or sim.step_count != observation.get("step") or (
            sim.clock != observation.get("clock_min")
        ):
            self._sim = None  # out of step with the episode: the heuristic plays on alone
            return proposal
        candidates = self._candidates(observation, proposal)
        chosen = max(zip(self._rewards(sim, candidates), range(0, -len(candidates), -1), candidates,
                         strict=True), key=lambda t: (t[0], t[1]))[2]
        self._base._last = None if chosen["action_type"] == "maintain_plan" else dict(chosen)
        self._pending = chosen
        return chosen

    def _rewards(self, sim: CodeRedSim, candidates: list[Action]) -> list[float]:
        task_id, seed = self._task
        base = Random(f"greedy:{self.seed}:{task_id}:{seed}:{sim.step_count}").getrandbits(40)
        fork_seeds = [base + k for k in range(self.forks)]
        frozen = sim.snapshot() if hasattr(sim, "snapshot") else None
        totals = []
        for action in candidates:
            total = 0.0
            for fork_seed in fork_seeds:
                twin = frozen.fork(fork_seed) if frozen is not None else sim.fork(fork_seed)
                total += float(twin.step(dict(action)).reward)
            totals.append(total / len(fork_seeds))
        return totals

    def _candidates(self, obs: dict[str, Any], proposal: Action) -> list[Action]:
        legal = obs.get("legal_actions") or {}
        net = road_view(obs)
        found = [proposal]
        if proposal["action_type"] == "triage_call":
            found += [proposal | {"priority": level} for level in LEVELS]
        base = self._base
        for rule in base._rules:
            playable = (a for a in rule(obs, legal, net) if a["action_type"] in legal)
            found += [a for _, a in zip(range(GREEDY_CHOICES_PER_RULE), playable, strict=False)]
        found.insert(0 if self.ties == "maintain" else len(found), dict(MAINTAIN))
        unique: dict[str, Action] = {}
        for action in found:
            unique.setdefault(repr(sorted(action.items())), action)
        return list(unique.values())


@dataclass(frozen=True)
class Policy:
    """One member of the family. ``base``: the policy it is the delayed variant of (for the delay
    gains), ``hold``: its delay in minutes; ``fair``: it reads only the observation; ``search``:
    slow (plays rollouts), so not in the default family; ``default``: False for a policy played
    only when named."""

    name: str
    build: Callable[[int], Any]
    base: str | None = None
    hold: int = 0
    fair: bool = True
    search: bool = False
    default: bool = True  # in the default family (False: played only when named)
    note: str = ""  # what a generated member does (a random mix's bends)


def _twisted(name: str, twist: Twist, base: str | None = None, hold: int = 0, note: str = "") -> Policy:
    return Policy(name, lambda seed: RedTeamAgent(seed, twist, name), base, hold, note=note)


ALL_WASTE = frozenset({"pages", "ors", "blood"})
P1_ALS = Twist(triage="P1", units="ALS")
P2_BLS = Twist(triage="P2", units="BLS")


def _family() -> list[Policy]:
    family = [
        Policy("heuristic", lambda seed: HeuristicAgent(seed)),
        Policy("noop", lambda seed: make_agent("noop", seed)),
        Policy("random", lambda seed: make_agent("random", seed)),
        Policy("greedy-reward", lambda seed: GreedyRewardAgent(seed, "heuristic")),
        Policy("greedy-reward-wait-ties", lambda seed: GreedyRewardAgent(seed, "maintain")),
    ]
    for k in (2, 5, 10, 15):
        family.append(_twisted(f"hold-dispatch-{k}", Twist(hold_dispatch=k), "heuristic", k))
    for k in (1, 5, 10):
        family.append(_twisted(f"hold-assign-{k}", Twist(hold_assign=k), "heuristic", k))
    family.append(Policy("wait-assign-1", lambda seed: WaitingTwin(
        RedTeamAgent(seed, Twist(), "heuristic"), HELD_TYPES["hold_assign"], 1, "wait-assign-1"),
        "heuristic", 1,
        note="every assignment held 1 min, all else equal (a lab taken meanwhile)"))
    for k in (5, 10, 20):
        family.append(_twisted(f"hold-prep-{k}", Twist(hold_prep=k), "heuristic", k))
    for k in (5, 10):
        family.append(_twisted(f"hold-triage-{k}", Twist(hold_triage=k), "heuristic", k))
    family.append(_twisted("hold-all-5", Twist(hold_dispatch=5, hold_assign=5, hold_prep=5), "heuristic", 5))
    for k in (10, 20):
        family.append(_twisted(f"hold-aid-{k}", Twist(hold_aid=k), "heuristic", k))
    family.append(Policy("wait-aid-20", lambda seed: WaitingTwin(
        RedTeamAgent(seed, Twist(), "heuristic"), HELD_TYPES["hold_aid"], 20, "wait-aid-20"), "heuristic", 20,
        note="every mutual-aid request held 20 min, all else equal"))
    for level in LEVELS:
        family.append(_twisted(f"triage-all-{level}", Twist(triage=level)))
    family += [
        _twisted("over-triage", Twist(triage_shift=-1)),
        _twisted("under-triage", Twist(triage_shift=1)),
        _twisted("skip-triage", Twist(skip_triage=True)),
        _twisted("als-only", Twist(units="ALS")),
        _twisted("bls-only", Twist(units="BLS")),
        _twisted("als-everywhere", Twist(units="ALS-first")),
        _twisted("nearest-unit", Twist(units="nearest")),
        _twisted("farthest-unit", Twist(units="farthest")),
        _twisted("triage-all-P1+als", P1_ALS),
        _twisted("triage-all-P2+bls", P2_BLS),
        _twisted("serve-P1-only", Twist(serve=("P1",))),
        _twisted("reverse-priority", Twist(reverse=True)),
        _twisted("worst-hospital", Twist(hospital="worst")),
        # a STEMI sent where it cannot be treated while the cath lab is busy (a stroke keeps it)
        Policy("relaxed-transfer", lambda seed: RelaxedTransferAgent(seed, Twist(), "relaxed-transfer")),
        _twisted("nearest-hospital", Twist(hospital="nearest")),
        _twisted("never-prepare", Twist(prepare=False)),
        _twisted("waste-pages", Twist(waste=frozenset({"pages"}))),
        _twisted("waste-ors", Twist(waste=frozenset({"ors"}))),
        _twisted("waste-every-or", Twist(waste=frozenset({"ors-all"}))),
        _twisted("waste-blood", Twist(waste=frozenset({"blood"}))),
        _twisted("waste-preempt", Twist(waste=frozenset({"preempt"}))),
        _twisted("waste-invalid", Twist(waste=frozenset({"invalid"}))),
        _twisted("waste-all", Twist(waste=ALL_WASTE)),
        _twisted("mutual-aid-at-once", Twist(mutual_aid="at_once")),
        _twisted("no-mutual-aid", Twist(mutual_aid="never")),
        _twisted("lazy-2", Twist(lazy=2)),
        _twisted("lazy-3", Twist(lazy=3)),
        _twisted("lazy-5", Twist(lazy=5)),
        _twisted("stop-after-10", Twist(stop_after=10)),
        # mixes
        _twisted("P1+als+hold-5", replace(P1_ALS, hold_dispatch=5), "triage-all-P1+als", 5),
        _twisted("P2+bls+hold-10", replace(P2_BLS, hold_dispatch=10), "triage-all-P2+bls", 10),
        _twisted("waste-all+hold-5", Twist(waste=ALL_WASTE, hold_dispatch=5), "waste-all", 5),
        _twisted("never-prepare+hold-10", Twist(prepare=False, hold_dispatch=10), "never-prepare", 10),
        _twisted("lazy-2+never-prepare", Twist(lazy=2, prepare=False)),
        _twisted("skip-triage+bls-only", Twist(skip_triage=True, units="BLS")),
        _twisted("reverse+farthest", Twist(reverse=True, units="farthest")),
        _twisted("P1+als+never-prepare", replace(P1_ALS, prepare=False)),
        _twisted("over-triage+als-everywhere", Twist(triage_shift=-1, units="ALS-first")),
        _twisted("aid-at-once+hold-5", Twist(mutual_aid="at_once", hold_dispatch=5), "mutual-aid-at-once", 5),
        _twisted("worst-hospital+waste-all", Twist(hospital="worst", waste=ALL_WASTE)),
        _twisted("P3-cold+no-prep", Twist(triage="P3", prepare=False)),
        # kinds the family above leaves out: ignoring what was triaged, priority-blind orders,
        # random or collapsed codes, preparation without transport
        _twisted("triage-then-ignore", Twist(serve=())),
        _twisted("prepare-never-dispatch", Twist(serve=(), waste=frozenset({"ors", "pages"}))),
        _twisted("serve-P1-P2-only", Twist(serve=("P1", "P2"))),
        _twisted("nearest-job-first", Twist(order="nearest")),
        _twisted("random-job-order", Twist(order="random")),
        _twisted("random-triage", Twist(triage="random")),
        _twisted("P1-or-advice", Twist(triage_map=(("P2", "P4"), ("P3", "P4")))),
        _twisted("P2-sent-cold", Twist(triage_map=(("P2", "P3"),))),
        _twisted("P3-advised", Twist(triage_map=(("P3", "P4"),))),
        _twisted("nearest-job+bls-only", Twist(order="nearest", units="BLS")),
        _twisted("random-triage+als-only", Twist(triage="random", units="ALS")),
        _twisted("P1-or-advice+hold-prep-10", Twist(triage_map=(("P2", "P4"), ("P3", "P4")), hold_prep=10),
                 "P1-or-advice", 10),
        _twisted("nearest-job+hold-dispatch-5", Twist(order="nearest", hold_dispatch=5),
                 "nearest-job-first", 5),
        # other triage rules: the keyword card, the most probable level (accuracy over caution)
        _twisted("keyword-triage", Twist(triage="keyword")),
        _twisted("best-guess-triage", Twist(triage="best-guess")),
        # named only: a hold that reorders the keyword card's queue (docs/MODEL.md §8.8)
        replace(_twisted("keyword-triage+hold-dispatch-2", Twist(triage="keyword", hold_dispatch=2),
                         "keyword-triage", 2), default=False),
        _twisted("best-guess+nearest-unit", Twist(triage="best-guess", units="nearest")),
        # named only: low-acuity jobs held while crews stay free for the next call (docs/MODEL.md §8.8)
        *(replace(_twisted(f"hold-dispatch-{'+'.join(levels)}-{k}",
                           Twist(hold_dispatch=k, hold_levels=levels), "heuristic", k), default=False)
          for levels, k in ((("P3",), 10), (("P3",), 20), (("P2", "P3"), 10))),
        # padding: the same care in more decisions (one-minute queries instead of waits), which a
        # return discounted per decision must not reward
        _twisted("pad-waits", Twist(pad=True)),
        _twisted("nearest-hospital+pad", Twist(hospital="nearest", pad=True)),
        _twisted("serve-P1-only+pad", Twist(serve=("P1",), pad=True)),
        _twisted("farthest-unit+pad", Twist(units="farthest", pad=True)),
        _twisted("never-prepare+pad", Twist(prepare=False, pad=True)),
        _twisted("random-job-order+pad", Twist(order="random", pad=True)),
        Policy("planner", lambda seed: make_agent("planner", seed), search=True),
        Policy("oracle", lambda seed: make_agent("oracle", seed), fair=False, search=True),
    ]
    return family


POLICIES: dict[str, Policy] = {policy.name: policy for policy in _family()}
DEFAULT_FAMILY: tuple[str, ...] = tuple(name for name, p in POLICIES.items() if p.default and not p.search)

# Random mixes: members nobody chose. Each axis keeps the heuristic's value (the first) or, with
# probability MIX_TWIST_CHANCE, takes one of the others; a mix bends at least two axes.
MIX_AXES: dict[str, tuple[Any, ...]] = {
    "triage": (None, "P1", "P2", "P3", "keyword", "best-guess", "random"),
    "triage_shift": (0, -1, 1),
    "units": ("heuristic", "ALS", "BLS", "ALS-first", "nearest", "farthest"),
    "order": ("priority", "nearest", "random"),
    "serve": (SENT_A_UNIT, SENT_A_UNIT[:2], SENT_A_UNIT[:1]),
    "hospital": ("heuristic", "worst", "nearest"),
    "prepare": (True, False),
    "mutual_aid": ("heuristic", "never", "at_once"),
    "waste": (frozenset(), frozenset({"pages"}), frozenset({"ors"}), frozenset({"blood"}),
              frozenset({"preempt"}), ALL_WASTE),
    "lazy": (0, 2, 3),
}
MIX_TWIST_CHANCE = 0.25
MIX_HOLDS = (("hold_dispatch", 2), ("hold_dispatch", 5), ("hold_assign", 5), ("hold_prep", 5),
             ("hold_triage", 5))


_TWIN_SUFFIX = {"held": "hold-{}", "waiting": "wait-{}", "padded": "pad"}  # a twin's name after "+"
MIX_TWINS = tuple(_TWIN_SUFFIX)


def mix_names(count: int, seed: int, twins: str = "held") -> list[str]:
    """``count`` random mixes drawn with ``seed``, each followed by its twins of the kinds in the
    comma list ``twins`` (``MIX_TWINS``), by name: ``mix<seed>.<i>``; ``+hold-<kind>-<k>``
    (held: one hold drawn from ``MIX_HOLDS``, the other rules acting meanwhile);
    ``+wait-<kind>-<k>`` (waiting: the same hold, a ``WaitingTwin``, all else equal); ``+pad``
    (padded: every wait a one-minute query, the same care in more decisions). A lazy mix has no
    twin: it idles on a count of decisions, so added waits would change when it acts."""
    kinds = twins.split(",")
    if not kinds or any(kind not in MIX_TWINS for kind in kinds):
        raise ValueError(f"twins {twins!r}: a comma list of {', '.join(MIX_TWINS)}")
    names = []
    for i in range(count):
        names.append(f"mix{seed}.{i}")
        if not _mix_twist(seed, i).lazy:
            field_name, k = Random(f"mix-hold:{seed}:{i}").choice(MIX_HOLDS)
            hold = f"{field_name.removeprefix('hold_')}-{k}"
            names += [f"mix{seed}.{i}+{_TWIN_SUFFIX[kind].format(hold)}"
                      for kind in MIX_TWINS if kind in kinds]
    return names


def _mix_twist(seed: int, index: int) -> Twist:
    rng = Random(f"mix:{seed}:{index}")
    while True:
        bends = {axis: rng.choice(values[1:]) for axis, values in MIX_AXES.items()
                 if rng.random() < MIX_TWIST_CHANCE}
        if len(bends) >= 2:
            return Twist(**bends)


def _mix(name: str) -> Policy:
    """The policy a ``mix_names`` name stands for (KeyError for any other name)."""
    head, _, hold = name.partition("+")
    seed_text, dot, index_text = head.removeprefix("mix").partition(".")
    if not head.startswith("mix") or not dot or not seed_text.isdigit() or not index_text.isdigit():
        raise KeyError(name)
    twist = _mix_twist(int(seed_text), int(index_text))
    default = vars(Twist())
    note = ", ".join(f"{k}={_shown(v)}" for k, v in vars(twist).items() if v != default[k])
    if not hold:
        return _twisted(name, twist, note=note)
    if hold == "pad" and not twist.lazy:
        return _twisted(name, replace(twist, pad=True), note=f"{note}; padded")
    prefix, _, rest = hold.partition("-")
    kind, _, minutes = rest.rpartition("-")
    field_name = f"hold_{kind}"
    if (twist.lazy or prefix not in ("hold", "wait") or not minutes.isdigit()
            or (field_name, int(minutes)) not in MIX_HOLDS):
        raise KeyError(name)
    if prefix == "hold":
        return _twisted(name, replace(twist, **{field_name: int(minutes)}), head, int(minutes), note)
    held, k = HELD_TYPES[field_name], int(minutes)
    return Policy(name, lambda seed: WaitingTwin(RedTeamAgent(seed, twist, head), held, k, name),
                  head, k, note=f"{note}; waiting, all else equal")


def _shown(value: Any) -> str:
    if isinstance(value, (frozenset, tuple)):
        return "+".join(sorted(value))
    return str(value)


def policy(name: str) -> Policy:
    """A member of the family, or a random mix (``mix_names``), by name; KeyError if neither."""
    return POLICIES[name] if name in POLICIES else _mix(name)
