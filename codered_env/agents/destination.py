"""The heuristic's destination rule (rule 4 of heuristic.py): which hospital each patient goes
to, by the benefit the public outcome curves say they keep there at the estimated
call-to-treatment delay, less penalties; and when to wait for a hospital whose diversion is
about to lapse."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ..sim.conditions import CONDITIONS, Care, Condition, benefit_kept
from ..sim.outcome import stake
from ..sim.params import (
    CATH_LAB_PREP_RANGE,
    OR_PREP_MIN_BY_TIER,
    PROCEDURE_DURATION_MIN,
    SPECIALIST_PAGE_DELAY_BY_TIER,
)
from .hospital_rooms import RepairsOnDemand, Rooms, rooms_for

Row = dict[str, Any]
BEFORE_ARRIVAL = ("awaiting_unit", "unit_en_route", "on_scene", "transporting")
EN_ROUTE = frozenset(BEFORE_ARRIVAL)
IN_ED = frozenset(("at_hospital",))
ON_SCENE = frozenset(("on_scene",))
TRANSPORTING = frozenset(("transporting",))
BENEFIT_SCALE = 100  # benefit kept in points, against the penalties below
# a destination chosen is chosen again before arrival when another keeps this many points more
# (design choice: below it, changes of mind cost decisions and readied rooms for little)
REVISE_MARGIN = 10


def closed_to(cond: Condition, h: Row, hospitals: dict[str, Row]) -> bool:
    """Is hospital row ``h`` closed to a patient with ``cond`` (``World.diverted_for``, from the
    observation's rows)?"""
    if h["diverted_until"] is None:
        return False
    return not cond.diversion_waived((x["tier"], x["diverted_until"] is not None) for x in hospitals.values())


class Candidate(NamedTuple):
    """A patient to assign: minus their regret, id, best hospital, row and hospital scores."""

    neg_regret: float
    patient_id: str
    best: str
    row: Row
    scores: dict[str, float]


class DestinationRule:
    """Rule 4 of ``HeuristicAgent`` (a mixin: it reads rows through the agent's ``_rows``)."""

    _waiting_for_reopening: set[str]
    _lab_users: dict[str, list[str]]
    _clock: int
    _horizon: float
    _repairs: RepairsOnDemand
    _carriers: dict[str, Row]

    def _rows(self, obs: Any, part: str, statuses: frozenset[str]) -> list[Row]:
        raise NotImplementedError

    def _assign(self, obs, legal, net):
        """Assign first the patient who loses most if their best hospital is not free (regret),
        unless another patient, competing for the same room with another procedure, keeps more
        for the pair when assigned first (``_first_by_joint_benefit``). A patient whose best
        hospital is on a diversion that lapses before they could leave for it waits for it
        (``_waiting_for_reopening``); if their crew leaves first, for the nearest open ED, they
        are rerouted once the diversion lapses. A patient bound for a hospital that has gone on
        diversion, or that cannot treat them, is assigned again; any other before arrival when a
        hospital now keeps ``REVISE_MARGIN`` points more than theirs."""
        waiting = self._waiting_for_reopening
        hospitals = {h["hospital_id"]: h for h in obs["hospitals"]}
        unassigned, revisable = [], []
        for p in self._rows(obs, "patients", EN_ROUTE):
            if not CONDITIONS[p["condition"]].transport:
                continue
            bound = hospitals.get(p["destination"]) if p["destination"] is not None else None
            if bound is None or (waiting and p["patient_id"] in waiting) or self._must_reroute(p, bound):
                unassigned.append(p)
            elif self._revises():
                revisable.append(p)
        if not unassigned and not revisable:
            return
        inbound = self._inbound(obs)
        self._lab_users = self._lab_load(obs, hospitals)
        self._clock, self._horizon = obs["clock_min"], obs["horizon_min"]
        self._repairs = RepairsOnDemand(obs)
        self._carriers = {u["patient_id"]: u for u in self._rows(obs, "ambulances", TRANSPORTING)}
        ranked: list[Candidate] = []
        for p in unassigned:
            pid = p["patient_id"]
            scores = self._scores_from_scratch(p, hospitals, inbound, net)
            if self._reopening_is_better(obs, p, hospitals, inbound, net, scores):
                waiting.add(pid)
                continue
            waiting.discard(pid)
            best = max(scores, key=scores.__getitem__, default=None)
            if best is None or best == p["destination"]:
                continue
            ordered = sorted(scores.values(), reverse=True)
            regret = ordered[0] - (ordered[1] if len(ordered) > 1 else 0.0)
            ranked.append(Candidate(-regret, pid, best, p, scores))
        for p in revisable:
            scores = self._scores_from_scratch(p, hospitals, inbound, net)
            best = max(scores, key=scores.__getitem__, default=None)
            here = scores.get(p["destination"])
            if best is not None and here is not None and scores[best] - here >= REVISE_MARGIN:
                ranked.append(Candidate(here - scores[best], p["patient_id"], best, p, scores))
        ranked.sort(key=lambda c: (c.neg_regret, c.patient_id))
        if len(ranked) > 1:
            ranked.insert(0, ranked.pop(self._first_by_joint_benefit(ranked, hospitals, inbound, net)))
        for c in ranked:
            yield {"action_type": "assign_hospital", "patient_id": c.patient_id, "hospital_id": c.best}

    def _scores_from_scratch(self, p: Row, hospitals, inbound, net) -> dict[str, float]:
        """``_hospital_scores`` for a patient chosen for again, without their own claim on the
        hospital they are bound for (so staying is not judged as queueing behind themselves)."""
        hid = p["destination"]
        care = CONDITIONS[p["condition"]].care_at(hospitals[hid]["tier"]) if hid is not None else None
        if care is None or p["status"] not in BEFORE_ARRIVAL:
            return self._hospital_scores(p, hospitals, inbound, net)
        users = self._lab_users.get(hid, [])
        own = care.procedure in users
        if own:
            users.remove(care.procedure)
        try:
            return self._hospital_scores(p, hospitals, {**inbound, hid: inbound.get(hid, 1) - 1}, net)
        finally:
            if own:
                users.append(care.procedure)

    def _first_by_joint_benefit(self, ranked: list[Candidate], hospitals, inbound, net) -> int:
        """Index of the patient to assign first: the regret leader, unless another patient best
        bound for the same hospital needs a different procedure there (one room may do both)
        and the pair keeps more stake-weighted benefit when that one claims it first."""
        lead = 0
        for index, other in enumerate(ranked[1:], 1):
            current = ranked[lead]
            if other.best != current.best or not _different_procedures(current, other, hospitals):
                continue
            if self._pair_value(other, current, hospitals, inbound, net) > self._pair_value(
                current, other, hospitals, inbound, net
            ):
                lead = index
        return lead

    def _pair_value(self, first: Candidate, second: Candidate, hospitals, inbound, net) -> float:
        """Stake-weighted benefit of two patients when ``first`` claims its best hospital (its
        procedure queued there) and ``second`` then goes where it keeps most."""
        procedure = CONDITIONS[first.row["condition"]].care_at(hospitals[first.best]["tier"]).procedure
        users = self._lab_users.setdefault(first.best, [])
        users.append(procedure)
        claimed = {**inbound, first.best: inbound.get(first.best, 0) + 1}
        try:
            then = self._hospital_scores(second.row, hospitals, claimed, net)
        finally:
            users.pop()
        kept_first = _stake(first.row) * first.scores[first.best]
        return kept_first + _stake(second.row) * max(then.values(), default=0.0)

    def _revises(self) -> bool:
        """Whether a destination chosen may be chosen again for a better one (``REVISE_MARGIN``)."""
        return True

    @staticmethod
    def _must_reroute(p: Row, bound: Row) -> bool:
        """``p`` is bound for a hospital that went on diversion after they were assigned (where
        no open hospital can treat them it still takes them, but another diverted one may now
        serve them better), or (sent on by a diversion to the nearest open ED) for one that
        cannot give their care: choose again before they get there."""
        cannot_treat = CONDITIONS[p["condition"]].care_at(bound["tier"]) is None
        return bound["diverted_until"] is not None or cannot_treat

    def _reopening_is_better(self, obs, p, hospitals, inbound, net, scores: dict[str, float]) -> bool:
        """A hospital on diversion until before ``p`` could leave for one (their crew leaving the
        scene, or reaching the ED it is bound for) would keep more benefit than every open one."""
        clock = obs["clock_min"]
        diverted = [h for h in hospitals.values() if h["diverted_until"] is not None]
        if not diverted:
            return False
        leave = self._minutes_to_leave(obs, p)
        reopening = {h["hospital_id"]: h["diverted_until"] - clock for h in diverted
                     if h["diverted_until"] - clock <= leave}
        if not reopening:
            return False
        later = self._hospital_scores(p, hospitals, inbound, net, reopening)
        return bool(later) and max(later.values()) > max(scores.values(), default=float("-inf"))

    def _minutes_to_leave(self, obs, p) -> float:
        """The earliest minute (from now) ``p`` could set off for another hospital: their crew's
        end of scene time, or their arrival where they are bound (a lower bound while no crew
        has reached them)."""
        status = p["status"]
        if status == "transporting":
            return p["eta_min"] or 0
        scene = CONDITIONS[p["condition"]].scene_min
        if status == "unit_en_route":
            return (p["eta_min"] or 0) + scene
        if status == "on_scene":
            for unit in self._rows(obs, "ambulances", ON_SCENE):
                if unit["patient_id"] == p["patient_id"]:
                    return unit["busy_min"] or 0
            return 0
        return scene

    def _inbound(self, obs) -> dict[str, int]:
        counts: dict[str, int] = {}
        for p in self._rows(obs, "patients", EN_ROUTE):
            if p["destination"] and p["status"] in BEFORE_ARRIVAL:
                counts[p["destination"]] = counts.get(p["destination"], 0) + 1
        return counts

    def _lab_load(self, obs, hospitals) -> dict[str, list[str]]:
        """Procedures already claimed per hospital: untreated patients bound there."""
        load: dict[str, list[str]] = {}
        for p in (*self._rows(obs, "patients", EN_ROUTE), *self._rows(obs, "patients", IN_ED)):
            hid = p["hospital"] if p["status"] == "at_hospital" else p["destination"]
            if hid is None or p["status"] not in (*BEFORE_ARRIVAL, "at_hospital"):
                continue
            care = CONDITIONS[p["condition"]].care_at(hospitals[hid]["tier"])
            if care is not None and care.procedure:
                load.setdefault(hid, []).append(care.procedure)
        return load

    def _queue_minutes(self, h, care, in_service: Sequence[Row]) -> float:
        """Extra wait when the rooms that can host this procedure (``in_service``) are claimed
        by others: untreated patients bound there or waiting there, and emergency cases under
        way in them."""
        shared = set()
        for r in in_service:
            shared.update(r["procedures"])
        users = 0
        for proc in self._lab_users.get(h["hospital_id"], ()):
            users += proc in shared
        for r in in_service:  # an emergency case under way is not pre-empted as an elective one is
            users += r["state"] == "in_use" and not r["elective"]
        behind = users - len(in_service) + 1
        if behind <= 0:
            return 0.0
        # each patient ahead: their own door time, the procedure, re-preparing the room
        turnover = care.door_min + PROCEDURE_DURATION_MIN.get(care.procedure, 0) + CATH_LAB_PREP_RANGE[1]
        return behind * (turnover + care.room_min)

    def _hospital_scores(self, p, hospitals, inbound, net, reopening=None) -> dict[str, float]:
        """Per open capable hospital: 100 x the benefit kept (the public outcome curves) at the
        estimated delay (elapsed + scene + travel + door-to-treatment + queue for a shared
        room), less penalties. With ``reopening`` (hospital -> minutes until its diversion
        lapses): those hospitals only, their room and specialist readied from then."""
        cond = CONDITIONS[p["condition"]]
        scores: dict[str, float] = {}
        legs = self._legs_from_ambulance(p, hospitals, net)
        for hid, h in hospitals.items():
            care = cond.care_at(h["tier"])
            closed = closed_to(cond, h, hospitals) and not (legs and hid == p["destination"])
            wait = (None if closed else 0) if reopening is None else reopening.get(hid)
            if care is None or wait is None:
                continue
            rooms = self._rooms(h, care.procedure) if care.procedure else None
            leg = legs.get(hid)
            delay = self._estimated_delay(p, cond, care, h, net, rooms, wait, leg)
            if rooms is not None:
                queue = self._queue_minutes(h, care, rooms.in_service or rooms.repaired)
                back = self._after_repair(p, cond, care, h, net, rooms, wait, leg) if queue else None
                delay = delay + queue if back is None else min(delay + queue, back)
            onset = p["minutes_since_onset"] - p["minutes_since_call"]
            score = benefit_kept(cond, delay, care.quality, onset, care.therapy) * BENEFIT_SCALE
            if self._clock - p["minutes_since_call"] + delay > self._horizon:
                score = 0.0  # treatment would come after the episode ends: no benefit counted
            if h["occupancy"] + inbound.get(hid, 0) >= h["capacity"]:
                score -= 15
            if rooms is not None and not rooms.in_service and not rooms.repaired:
                score -= 25
            if care.specialist and h["specialists"].get(care.specialist, {}).get("state") == "unavailable":
                score -= 40
            scores[hid] = score
        return scores

    def _legs_from_ambulance(self, p: Row, hospitals: dict[str, Row], net) -> dict[str, float]:
        """For a patient in an ambulance: the road minutes to each hospital from where it is (the
        one it is bound for, which it keeps going to even if that hospital has gone on diversion
        since, at its ETA); empty for a patient not yet on board."""
        unit = self._carriers.get(p["patient_id"]) if p["status"] == "transporting" else None
        if unit is None:
            return {}
        origin = unit["next_node"] or unit["node"]
        legs = {hid: net.minutes(origin, h["node"]) for hid, h in hospitals.items()}
        if p["destination"] in legs and p["eta_min"] is not None:
            legs[p["destination"]] = p["eta_min"]
        return legs

    def _after_repair(self, p: Row, cond: Condition, care: Care, h: Row, net: Any, rooms: Rooms,
                      wait: float, leg: float | None) -> float | None:
        """With every room in service claimed ahead of ``p``: the delay if they wait instead for
        a room whose repair is announced (None if none is)."""
        if not rooms.in_service:
            return None
        repaired = self._repaired(h, rooms.capable)
        if repaired is None:
            return None
        alone = rooms._replace(in_service=[], free_ready=False, repaired=repaired[0], repair_min=repaired[1])
        return self._estimated_delay(p, cond, care, h, net, alone, wait, leg)

    def _repaired(self, h: Row, capable: list[Row]) -> tuple[tuple[Row, ...], float] | None:
        """The rooms out of service whose repair is announced within the episode, and the minutes
        until the first is back; None if there are none."""
        repaired: list[Row] = []
        back = float("inf")
        for r in capable:
            if r["state"] != "out_of_service":
                continue
            until = self._repairs.until(h["hospital_id"], r["or_id"])
            if until is not None and until < self._horizon:
                repaired.append(r)
                back = min(back, until - self._clock)
        return (tuple(repaired), back) if repaired else None

    def _rooms(self, h: Row, procedure: str) -> Rooms:
        """``rooms_for`` with the out-of-service rooms' announced repairs (minutes from now)."""
        rooms = rooms_for(h, procedure)
        if rooms.in_service:
            return rooms
        repaired = self._repaired(h, rooms.capable)
        if repaired is None:
            return rooms
        return rooms._replace(repaired=repaired[0], repair_min=repaired[1])

    @staticmethod
    def _estimated_delay(
        p, cond, care, h, net, rooms: Rooms | None, wait: float = 0, leg: float | None = None
    ) -> float:
        """Call-to-treatment estimate: arrival + door time, or later if the specialist or the
        room (prepared from ``wait`` minutes on, or from its announced repair if every room for
        the procedure is out of service; ``rooms``: those for the procedure) cannot be ready by
        then."""
        now = p["minutes_since_call"]
        ready_from = now + wait
        scene = cond.scene_min if p["status"] in ("awaiting_unit", "unit_en_route") else 0
        reach = p["eta_min"] or 0 if p["status"] == "unit_en_route" else 0
        travel = net.minutes(p["node"], h["node"]) if leg is None else leg
        start = now + reach + scene + travel + care.door_min
        if care.specialist:
            state = h["specialists"].get(care.specialist, {}).get("state")
            if state in ("on_call", "unavailable"):
                start = max(start, ready_from + SPECIALIST_PAGE_DELAY_BY_TIER[h["tier"]][1])
        if rooms is not None and not rooms.free_ready:
            prep = (
                CATH_LAB_PREP_RANGE[1]
                if "cath_lab" in rooms.capable[0]["procedures"]
                else OR_PREP_MIN_BY_TIER[h["tier"]]
            )
            start = max(start, ready_from + (rooms.repair_min or 0) + prep + care.room_min)
        return start


def _stake(p: Row) -> float:
    """What the patient's outcome weighs (``sim.outcome.stake``), from their condition and the
    minutes from onset to the call."""
    return stake(p["condition"], p["minutes_since_onset"] - p["minutes_since_call"])


def _different_procedures(one: Candidate, other: Candidate, hospitals: dict[str, Row]) -> bool:
    """Both patients need a procedure at ``one.best``, and not the same one."""
    tier = hospitals[one.best]["tier"]
    cares = [CONDITIONS[c.row["condition"]].care_at(tier) for c in (one, other)]
    procedures = [care.procedure if care is not None else None for care in cares]
    return all(procedures) and procedures[0] != procedures[1]
