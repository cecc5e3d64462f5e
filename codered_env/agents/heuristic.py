"""The expert rule-set baseline. It reads only the observation (plus the public city map and
the medical care table every dispatcher knows) and applies, in order, the first rule that fires:

1. Triage every untriaged call from the caller's report: the level with the least expected
   triage cost given the report (``triage.cautious_priority`` on the public report model's
   posterior), which sends hot when in doubt as dispatch centres do (about 5 % under-triage;
   chosen on seeds 900-949 of task4/task5 over the most likely level, fixed P1 thresholds and
   the keyword card of ``triage_rule.py``).
2. Dispatch: most urgent first (P1 > P2 > P3, then lower vitals); P1 gets the ALS unit with
   the shortest ETA unless a BLS is more than 5 min closer; P2/P3 get the nearest BLS (P2 falls
   back to ALS, and so does a caller waiting 20 min or more where a 30-min wait makes the news:
   one ``maintain_plan`` jump before it would); P4 callers get advice only.
3. Mutual aid when more patients/calls wait for a unit than units are free or already coming.
4. Destination: the hospital maximising 100 x the benefit kept (the public outcome curve of
   the care it gives, at the estimated call-to-treatment delay: elapsed + scene + travel +
   door-to-treatment, or later if the room or the specialist cannot be ready by then; an
   out-of-service room counts from the repair time its alert announces; a room shared with
   patients bound or waiting there, or with an emergency case under way, adds a queue) - 15 if
   crowded - 25 if the needed OR is out of service with no repair announced in time, - 40 if
   the specialist is unavailable; hospitals on diversion excluded unless no open hospital can
   treat the patient (then diversion does not turn them away). A patient whose best hospital
   is a diverted one whose diversion lapses before they could leave for it (their crew's scene
   time, or their arrival where they are bound) waits for it, rerouted if the crew has left.
   A patient bound for a hospital that has since gone on diversion, or that cannot treat them,
   is chosen for again (without their own claim on the room there); one already in an
   ambulance keeps going there when that keeps more than any other hospital judged from where
   the crew is (a unit transporting is not turned away by a later diversion). Any other patient
   is chosen for again before arrival when another hospital now keeps 10 points more
   (``REVISE_MARGIN``). Where every room in service is claimed ahead, a room whose repair is
   announced counts if it would serve sooner than the queue. First assigned: the
   patient who loses most if their best hospital is taken (regret), unless another patient
   best bound for the same hospital needs a different procedure there (one room doing both,
   say thrombectomy and the cath lab) and the two keep more stake-weighted benefit
   (``sim.outcome.stake``) when that one claims it first.
5. Pre-activation on dispatch: prepare the needed OR (one per inbound patient; for a P1 or P2
   patient when no capable room is idle and fewer are being readied than patients bound there
   need, pre-empt an elective case) and page the needed
   specialist at the destination. A caller whose report names a condition needing a specialist
   by its own signs (stroke, STEMI, labour, a bleeding injury; ``triage_rule.suspected_condition``)
   is pre-alerted once a unit is on the way: the specialist is paged at the hospital rule 4
   would choose for that condition, when the call-in time is not shorter than the minutes left
   until the patient could reach the door.
6. Blood for haemorrhage: as soon as the destination is chosen, reserve 2 units of
   uncross-matched group O there (O-pos for men and older women, O-neg for women of
   child-bearing age); type the patient only when no suitable group O is in stock.
7. Otherwise ``maintain_plan``.
Actions refused once are not repeated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from ..sim.city import RoadNetwork, road_graph_of
from ..sim.conditions import CONDITIONS
from ..sim.dynamics.blood import COMPATIBLE_DONORS
from ..sim.dynamics.dispatch import DISPATCHABLE
from ..sim.params import (
    BLOOD_UNITS_PER_CASE,
    CHILDBEARING_AGE_RANGE,
    MAINTAIN_PLAN_CAP_MIN,
    MEMO_ENTRIES,
    NEWS_CYCLE_WAIT_MIN,
    UNTRIAGED_RESPONSE,
)
from ..sim.tasks import TASKS
from ..sim.triage import cautious_priority, priority_posterior
from ..sim.view import ObservationView
from .base import MAINTAIN, code_fingerprint
from .destination import BEFORE_ARRIVAL, EN_ROUTE, IN_ED, ON_SCENE, DestinationRule
from .hospital_rooms import RepairsOnDemand, ready_rooms
from .triage_rule import suspected_condition

_PRIORITY_RANK = {"P1": 0, "P2": 1, "P3": 2, "P4": 3}
# a caller left this long is sent any free unit where a long wait makes the news: one wait
# (maintain_plan's longest jump) before the news cycle would break
NEWS_WATCH_FROM_MIN = NEWS_CYCLE_WAIT_MIN - MAINTAIN_PLAN_CAP_MIN
BLOOD_UNITS = BLOOD_UNITS_PER_CASE


#: The modules the rules' decisions come from (this one included): what a fingerprint of the
#: heuristic, or of an agent playing it, must cover.
RULE_MODULES = ("codered_env.agents.heuristic", "codered_env.agents.triage_rule",
                "codered_env.agents.destination", "codered_env.agents.hospital_rooms",
                "codered_env.sim.triage")

# What each rule does, for people reading a suggestion (the web console's advice): rule n is
# RULES[n - 1]; the last one is the fallback when no rule fires.
RULES: tuple[str, ...] = (
    "every untriaged call is triaged first, from the caller's report: the level with the least "
    "expected triage cost given the report (hot when in doubt).",
    "the most urgent waiting patient or call gets a unit first (P1 > P2 > P3, then the lowest "
    "vitals); a P1 gets the ALS unit with the shortest ETA unless a BLS is more than 5 min "
    "closer, P2/P3 the nearest BLS (P2 falls back to ALS, and so does a caller waiting 20 min "
    "or more where a 30-min wait makes the news).",
    "more patients and calls wait for a unit than units are free or already coming.",
    "the destination maximises 100 x the benefit kept at the estimated call-to-treatment delay "
    "(an out-of-service room counts from its announced repair; a shared room adds a queue) - 15 "
    "if crowded - 25 if the needed OR is out of service with no repair in time - 40 if the "
    "specialist is unavailable; hospitals on diversion are excluded (not when no open hospital can "
    "treat the patient), unless the diversion lapses before the patient could "
    "leave for it and it would then be the best: the patient waits for it; a patient bound for a "
    "hospital gone on diversion since, or one that cannot treat them, is assigned again (one in "
    "an ambulance keeps going there when that keeps more, other hospitals judged from the crew); "
    "any other before arrival when another hospital now keeps 10 points more.",
    "at an inbound patient's destination the needed OR is readied (for a P1 or P2 when no capable "
    "room is idle and too few are being readied, an elective case is pre-empted) and the needed "
    "specialist paged; a "
    "caller whose report names a specialist's condition is pre-alerted once a unit is on the "
    "way (the specialist paged at the hospital that condition would go to, when the call-in "
    "time is not shorter than the minutes left until the patient could reach the door).",
    f"a haemorrhaging patient gets {BLOOD_UNITS_PER_CASE} units of group O reserved at the "
    "destination as soon as it is chosen (O-pos for men and older women, O-neg for women of "
    "child-bearing age); the patient is typed only when no suitable group O is in stock.",
    "no rule fires: nothing to triage, dispatch, assign, prepare or reserve now.",
)


def road_view(obs: dict[str, Any]) -> RoadNetwork:
    """The road network as the observation shows it (the city's map, peak hour, closed and
    congested roads): what an agent may route on. Shared with the planner."""
    roads = obs["roads"]
    net = RoadNetwork(roads["peak_hour"], road_graph_of(obs))
    for r in roads["closed"]:
        net.close(*r["edge"])
    for r in roads["congested"]:
        net.set_congestion(r["edge"][0], r["edge"][1], r["factor"])
    return net


class HeuristicAgent(DestinationRule):
    name = "heuristic"

    def __init__(self, seed: int = 0, triage: bool = True) -> None:
        self.seed = seed
        self.triage = triage  # False: never triage (calls go out at the protocol default level)
        self._refused: set[str] = set()
        self._waiting_for_reopening: set[str] = set()  # patients waiting for a diversion to lapse
        # the last action played (a copy: the caller may change the one returned), or its key
        # (``action_key``; the planner sets it so), refused for good if the next observation
        # reports an error; its key is made only then
        self._last: dict[str, Any] | str | None = None
        self._clock, self._horizon = 0, float("inf")
        self._lab_users: dict[str, list[str]] = {}
        self._repairs = RepairsOnDemand({})
        self._carriers: dict[str, dict[str, Any]] = {}  # transporting units by patient (rule 4)
        self._roads_seen: tuple | None = None  # the roads behind ``_net`` (``_road_view``)
        self._net = RoadNetwork(False)
        self._filtered: tuple[Any, Filtered] = _NO_ROWS  # a dict observation's rows (``_rows``)
        self.last_rule = len(RULES)  # the number of the rule behind the last action (see RULES)
        # the rules in order (see RULES), bound once: a subclass's overrides are the ones bound
        self._rules = (self._triage, self._dispatch, self._mutual_aid, self._assign, self._prepare,
                       self._blood)

    def reset(self, task_id: str, seed: int) -> None:
        self._refused = set()
        self._waiting_for_reopening = set()
        self._last = None

    def fingerprint(self) -> dict[str, Any]:
        return {**code_fingerprint(self, *RULE_MODULES), "triage": self.triage}

    # ------------------------------------------------------------------ main loop
    def act(self, obs: dict[str, Any]) -> dict[str, Any]:
        self._filtered = _NO_ROWS  # a dict observation may come back with new contents
        last = self._last
        if last is not None and obs.get("last_action_error"):
            self._refused.add(last if isinstance(last, str) else action_key(last))
        legal = obs.get("legal_actions") or {}
        net = _RoadsOnDemand(self, obs)
        refused = self._refused  # no key to make while nothing was refused
        for number, rule in enumerate(self._rules, 1):
            for action in rule(obs, legal, net):
                if action["action_type"] in legal and not (refused and action_key(action) in refused):
                    self._last, self.last_rule = dict(action), number
                    return action
        self._last, self.last_rule = None, len(RULES)
        return dict(MAINTAIN)

    def _rows(self, obs: Mapping[str, Any], part: str, statuses: frozenset[str]) -> list[dict[str, Any]]:
        """The rows of ``obs[part]`` in ``statuses``: from the observation view, its brief rows
        (only the fields the rules read; ``ObservationView.brief``), else the full rows,
        filtered once per decision."""
        if isinstance(obs, ObservationView):
            return obs.brief(part, statuses)
        seen, filtered = self._filtered
        if seen is not obs:
            self._filtered = (obs, filtered := {})
        rows = filtered.get((part, statuses))
        if rows is None:
            rows = filtered[part, statuses] = [row for row in obs[part] if row["status"] in statuses]
        return rows

    def _road_view(self, obs: Mapping[str, Any]) -> RoadNetwork:
        """``road_view(obs)``, reused while the roads shown are the same (they rarely change)."""
        roads = obs["roads"]
        closed, congested = roads["closed"], roads["congested"]
        state = (
            road_graph_of(obs),
            roads["peak_hour"],
            tuple(tuple(r["edge"]) for r in closed) if closed else (),
            tuple((*r["edge"], r["factor"]) for r in congested) if congested else (),
        )
        if state != self._roads_seen:
            self._roads_seen, self._net = state, road_view(obs)
        return self._net

    # ------------------------------------------------------------------ rules
    def triage_priority(self, call: dict[str, Any]) -> str:
        """The level this agent gives a call (overridable: the bench's triage oracle)."""
        return cautious_priority(priority_posterior({"report": call["report"]}))

    def _triage(self, obs, legal, net):
        if not self.triage:
            return
        for call in self._rows(obs, "calls", PENDING):
            if call["priority"] is None and call["status"] == "pending":
                yield {
                    "action_type": "triage_call",
                    "call_id": call["call_id"],
                    "priority": self.triage_priority(_full_call(obs, call)),
                }

    def _dispatch(self, obs, legal, net):
        free = self._rows(obs, "ambulances", FREE_UNITS)
        jobs = self._jobs(obs) if free else []
        if not jobs:
            return
        pools: dict[str, list[Row]] = {"ALS": [], "BLS": []}
        for unit in free:
            if unit["kind"] in pools:
                pools[unit["kind"]].append(unit)
        for job in jobs:
            unit = self._pick_unit(pools, job, net)
            if unit is None:
                continue
            if obs["phase"] == 1:
                yield {
                    "action_type": "dispatch_ambulance",
                    "ambulance_id": unit["ambulance_id"],
                    "patient_id": job["id"],
                }
            else:
                kind = "dispatch_als" if unit["kind"] == "ALS" else "dispatch_bls"
                yield {"action_type": kind, "ambulance_id": unit["ambulance_id"], "call_id": job["id"]}

    def _jobs(self, obs) -> list[dict[str, Any]]:
        jobs = []
        task = TASKS.get(obs["task_id"])
        news_watch = task is not None and task.cascades and task.phase == 2
        for p in self._rows(obs, "patients", EN_ROUTE):
            if p["status"] == "awaiting_unit":
                jobs.append(
                    {
                        "id": p["patient_id"],
                        "node": p["node"],
                        "priority": p["priority"],
                        "vitals": p["vitals"]["score"],
                    }
                )
        for c in self._rows(obs, "calls", PENDING):
            level = c["priority"] or UNTRIAGED_RESPONSE  # an uncoded call: the protocol default
            if c["status"] == "pending" and level in ("P1", "P2", "P3"):
                jobs.append(
                    {
                        "id": c["call_id"],
                        "node": c["node"],
                        "priority": level,
                        "vitals": 1.0 - c["waiting_min"] / 100,
                        "any_unit": news_watch and c["waiting_min"] >= NEWS_WATCH_FROM_MIN,
                    }
                )
        jobs.sort(key=lambda j: (_PRIORITY_RANK[j["priority"]], j["vitals"], j["id"]))
        return jobs

    @staticmethod
    def _pick_unit(pools: dict[str, list[Row]], job: Row, net: Router) -> Row | None:
        """The unit for ``job`` from the free units by kind (each kind looked at only when needed)."""
        node = job["node"]
        if job["priority"] == "P1":
            als, bls = nearest_unit(pools["ALS"], node, net), nearest_unit(pools["BLS"], node, net)
            if als is None or (bls is not None and bls[0] + 5 < als[0]):
                return None if bls is None else bls[2]
            return als[2]
        bls = nearest_unit(pools["BLS"], node, net)
        if bls is None and (job["priority"] == "P2" or job.get("any_unit")):
            bls = nearest_unit(pools["ALS"], node, net)
        return None if bls is None else bls[2]

    def _mutual_aid(self, obs, legal, net):
        waiting = []  # loops, not comprehensions: each would cost a frame, every decision
        for p in self._rows(obs, "patients", EN_ROUTE):
            if p["status"] == "awaiting_unit":
                waiting.append(p["patient_id"])
        for c in self._rows(obs, "calls", PENDING):
            if c["status"] == "pending" and c["priority"] in ("P1", "P2"):
                waiting.append(c["call_id"])
        free = self._rows(obs, "ambulances", FREE_UNITS)
        if len(waiting) <= len(free):  # the cheap tests first
            return
        coming = len(obs["mutual_aid"]["pending"])
        if len(waiting) > len(free) + coming and "request_mutual_aid" in legal:
            yield {"action_type": "request_mutual_aid", "target_id": waiting[-1]}

    def _prepare(self, obs, legal, net):
        need_rooms: dict[tuple[str, str], int] = {}
        for p in self._rows(obs, "patients", EN_ROUTE):
            if p["destination"] is None or p["status"] not in BEFORE_ARRIVAL:
                continue
            h = _hospital(obs, p["destination"])
            care = CONDITIONS[p["condition"]].care_at(h["tier"])
            if care is None:
                continue
            if care.procedure:
                key = (h["hospital_id"], care.procedure)
                need_rooms[key] = need_rooms.get(key, 0) + 1
                if ready_rooms(h, care.procedure) < need_rooms[key]:
                    yield from self._free_room(h, care.procedure, p["priority"])
            if care.specialist and h["specialists"].get(care.specialist, {}).get("state") == "on_call":
                yield {
                    "action_type": "page_specialist",
                    "hospital_id": h["hospital_id"],
                    "specialty": care.specialist,
                }
        if obs["phase"] == 2:
            yield from self._pre_alert(obs, net)

    def _pre_alert(self, obs, net):
        """Page ahead for triaged callers whose report names a specialist's condition."""
        units: dict[str, Row] | None = None  # the full unit rows, read only when needed
        for call in (*self._rows(obs, "calls", PENDING), *self._rows(obs, "calls", DISPATCHED)):
            condition = suspected_condition(call["report"]) if call["priority"] else None
            if condition is None:
                continue
            if units is None:
                units = {u["call_id"]: u for u in obs["ambulances"] if u.get("call_id")}
            unit = units.get(call["call_id"])
            caller = {
                "patient_id": call["call_id"], "condition": condition, "node": call["node"],
                "status": "unit_en_route" if unit else "awaiting_unit",
                "eta_min": unit["eta_min"] if unit else None,
                "minutes_since_call": call["waiting_min"], "minutes_since_onset": call["waiting_min"],
            }
            h = self._likely_destination(obs, caller, net)
            care = CONDITIONS[condition].care_at(h["tier"]) if h else None
            if h is None or care is None or not care.specialist:
                continue
            if h["specialists"].get(care.specialist, {}).get("state") == "on_call":
                yield {"action_type": "page_specialist", "hospital_id": h["hospital_id"],
                       "specialty": care.specialist}

    def _likely_destination(self, obs, caller: Row, net) -> Row | None:
        """The hospital rule 4 would choose now for ``caller`` (a patient-like row)."""
        hospitals = {h["hospital_id"]: h for h in obs["hospitals"]}
        self._lab_users = self._lab_load(obs, hospitals)
        self._clock, self._horizon = obs["clock_min"], obs["horizon_min"]
        self._repairs = RepairsOnDemand(obs)
        scores = self._hospital_scores(caller, hospitals, self._inbound(obs), net)
        return hospitals[max(scores, key=lambda hid: (scores[hid], hid))] if scores else None

    @staticmethod
    def _free_room(h: dict[str, Any], procedure: str, priority: str):
        """Prepare an idle room; with none idle, pre-empt an elective case for a P1 or P2 patient
        (called only while fewer rooms are being readied than inbound patients need)."""
        capable = [r for r in h["ors"] if procedure in r["procedures"]]
        if any(r["state"] == "idle" for r in capable):
            yield {"action_type": "prepare_or", "hospital_id": h["hospital_id"], "procedure": procedure}
            return
        electives = [r for r in capable if r["state"] == "in_use" and r["elective"]]
        if priority in ("P1", "P2") and electives:
            room = electives[0]["or_id"]
            yield {"action_type": "preempt_or", "hospital_id": h["hospital_id"], "or_id": room}

    def _blood(self, obs, legal, net):
        """Bleeding patients: reserve uncross-matched group O at the destination as soon as it is
        chosen (O-pos for men and older women, sparing O-neg for women of child-bearing age), so
        it is issued before arrival; type-specific only when no suitable group O is in stock."""
        queryable: set[str] | None = None  # read only when needed
        for p in self._rows(obs, "patients", EN_ROUTE):
            if not CONDITIONS[p["condition"]].needs_blood or p["status"] not in BEFORE_ARRIVAL:
                continue
            dest = p["destination"]
            if dest is None or p["blood_reserved"].get(dest):
                continue
            stock = _hospital(obs, dest)["blood"]
            options = list(_emergency_o(p))
            if p["blood_type"]:
                options += sorted(
                    COMPATIBLE_DONORS[p["blood_type"]], key=lambda t: (t != p["blood_type"], t == "O-")
                )
            allowed = COMPATIBLE_DONORS[p["blood_type"]] if p["blood_type"] else options
            choice = next((t for t in options if t in allowed and stock.get(t, 0) >= BLOOD_UNITS), None)
            if choice is not None:
                yield {
                    "action_type": "allocate_blood",
                    "patient_id": p["patient_id"],
                    "hospital_id": dest,
                    "blood_type": choice,
                    "units": BLOOD_UNITS,
                }
            else:
                if queryable is None:
                    options = legal.get("query_blood_type", [])
                    queryable = {pid for opt in options for pid in opt.get("patient_id", [])}
                if p["patient_id"] in queryable:
                    yield {"action_type": "query_blood_type", "patient_id": p["patient_id"]}


# The rows the rules read (every rule skips the others): free units, pending calls, patients
# before arrival, and (for the rooms they claim) patients waiting in an emergency department.
FREE_UNITS = frozenset(DISPATCHABLE)
PENDING = frozenset(("pending",))
DISPATCHED = frozenset(("dispatched",))
#: Every (part, statuses) the rules read through ``_rows``.
BRIEF_READS: tuple[tuple[str, frozenset[str]], ...] = (
    ("ambulances", FREE_UNITS), ("ambulances", ON_SCENE), ("calls", PENDING), ("calls", DISPATCHED),
    ("patients", EN_ROUTE), ("patients", IN_ED),
)


Filtered = dict[tuple[str, frozenset[str]], list[dict[str, Any]]]  # rows per (part, statuses)
_NO_ROWS: tuple[Any, Filtered] = (None, {})  # no dict observation filtered yet


_KEYS: dict[tuple[tuple, tuple], str] = {}


def action_key(action: dict[str, Any]) -> str:
    """``json.dumps(action, sort_keys=True)`` (how refused actions are remembered; the planner
    shares the format), memoised per action content: the rules build the same few actions
    step after step."""
    try:  # the types too: 2 and 2.0 are equal but print differently
        items = (tuple(action.items()), tuple(map(type, action.values())))
        key = _KEYS.get(items)
    except TypeError:  # an unhashable parameter value
        return json.dumps(action, sort_keys=True)
    if key is None:
        if len(_KEYS) >= MEMO_ENTRIES:
            _KEYS.clear()
        key = _KEYS[items] = json.dumps(action, sort_keys=True)
    return key


def _hospital(obs: Mapping[str, Any], hospital_id: str) -> dict[str, Any]:
    """A hospital's row; from the observation view without building the other hospitals'."""
    if isinstance(obs, ObservationView):
        return obs.hospital(hospital_id)
    return next(h for h in obs["hospitals"] if h["hospital_id"] == hospital_id)


def _full_call(obs: Mapping[str, Any], call: dict[str, Any]) -> dict[str, Any]:
    """The call's full row (``triage_priority`` may read any field of it), read from the view
    only when a call is to be triaged."""
    if not isinstance(obs, ObservationView):
        return call
    return obs.call(call["call_id"])


Row = dict[str, Any]


class Router(Protocol):
    """What the rules route on: a ``RoadNetwork`` (``road_view``) or ``_RoadsOnDemand``."""

    def minutes(self, a: str, b: str) -> float: ...


class _RoadsOnDemand:
    """``HeuristicAgent._road_view`` of one observation, read when a rule first asks for travel
    minutes: most decisions route nothing (no free unit for a waiting job, nobody to assign)."""

    __slots__ = ("_agent", "_net", "_obs")

    def __init__(self, agent: HeuristicAgent, obs: Mapping[str, Any]) -> None:
        self._agent, self._obs = agent, obs
        self._net: RoadNetwork | None = None

    def minutes(self, a: str, b: str) -> float:
        net = self._net
        if net is None:
            net = self._net = self._agent._road_view(self._obs)
        return net.minutes(a, b)


def nearest_unit(units: list[Row], node: str, net: Router) -> tuple[float, str, Row] | None:
    """(ETA, id, unit) of the unit with the shortest ETA to ``node``, the lower id on a tie."""
    best = None
    for u in units:
        here = (net.minutes(u["next_node"] or u["node"], node), u["ambulance_id"], u)
        if best is None or here < best:
            best = here
    return best


def _emergency_o(p: dict[str, Any]) -> tuple[str, ...]:
    """Uncross-matched group O that is safe for this patient, cheapest first."""
    lo, hi = CHILDBEARING_AGE_RANGE
    childbearing = p.get("sex") == "F" and lo <= p.get("age", 0) <= hi
    return ("O-",) if childbearing else ("O+", "O-")
