"""``World``: all mutable state of one episode, and ``tick``, which moves it one minute on.

The rules live in ``dynamics/``, one module per subsystem; ``World`` holds the state they act
on and the few questions every module asks (``event``, ``count``, ``diverted``, ``resolved``).

Three seeded random streams keep the scenario independent of play: ``scenario`` (generator.py,
drawn once at reset), ``travel`` (trip-time noise, scene and handover jitter, in the order
trips happen) and ``narrative`` (mutual-aid delays, news-cycle draws, surge calls).
"""

from __future__ import annotations

import itertools
import math
from random import Random

from .city import PRAKASHNAGAR, City, RoadNetwork
from .conditions import Care
from .dynamics import (
    ambulances,
    blood,
    care,
    cascades,
    dispatch,
    disruptions,
    mutual_aid,
    physiology,
    rooms,
    spawns,
    travel,
)
from .dynamics.blood import COMPATIBLE_DONORS, emergency_group_o
from .dynamics.spawns import callback_spawn
from .dynamics.vitals import band
from .generator import generate, stream_name
from .tasks import TaskSpec
from .types import (
    FINAL_PATIENT_STATES,
    OPEN_CALL_STATES,
    Ambulance,
    BloodAllocation,
    BloodTransfer,
    Call,
    Disruption,
    Hospital,
    MutualAidRequest,
    Patient,
    PendingSpawn,
)

__all__ = ["COMPATIBLE_DONORS", "FINAL_PATIENT_STATES", "World", "callback_spawn", "emergency_group_o"]


class World:
    """All mutable state of one episode; ``tick`` advances it by one simulated minute.

    Order inside a tick, as docs/MODEL.md §4.1 documents it
    (MODEL.md#41-time-decisions-ticks-and-maintain_plan, "Order inside a tick"), one ``dynamics``
    module per step:

    1. ``disruptions.start_and_end``: disruptions start and clear (roads, diversions, ORs,
       specialists);
    2. ``spawns.release_due``: new calls and casualties;
    3. ``mutual_aid.arrivals``: mutual-aid units arriving;
    4. ``blood.results_and_transfers``: lab results, blood transfers arriving;
    5. ``rooms.timers``: OR and specialist timers;
    6. ``ambulances.move``: arrivals, scene, handover, return;
    7. ``care.advance``: hospital care (treatment start and end, transfers);
    8. ``physiology.deteriorate``: one minute of deterioration;
    9. ``cascades.advance``: overcrowding, escalation, news cycle (only in tasks with cascades).
    """

    def __init__(self, task: TaskSpec, seed: int, city: City = PRAKASHNAGAR) -> None:
        self.task = task
        self.seed = seed
        self.city = city  # immutable, shared by every copy and fork (pickled by name)
        scenario = generate(task, seed, city)
        self.peak_hour = scenario.peak_hour
        self.net = RoadNetwork(scenario.peak_hour, city.roads)
        self.hospitals: dict[str, Hospital] = scenario.hospitals
        self.ambulances: dict[str, Ambulance] = scenario.ambulances
        self.patients: dict[str, Patient] = scenario.patients
        self.calls: dict[str, Call] = scenario.calls
        self.spawns: list[PendingSpawn] = scenario.spawns
        self.disruptions: list[Disruption] = scenario.disruptions
        self.incident_node = scenario.incident_node
        self.mci: set[str] = scenario.mci_patients
        # where the first patients were (disruptions are drawn around them; fork.py redraws them)
        self.origins = [p.node for p in self.patients.values()] or [s.patient.node for s in self.spawns]
        arrivals = [p.appeared_at for p in self.patients.values() if p.patient_id in self.mci]
        arrivals += [s.at for s in self.spawns if s.patient.patient_id in self.mci]
        self.incident_start = min(arrivals, default=0)
        # None only while CodeRedSim.private_copy pickles the world (a fork redraws both streams)
        self.travel_rng: Random | None = Random(stream_name(city, task.task_id, seed, "travel"))
        self.narrative_rng: Random | None = Random(stream_name(city, task.task_id, seed, "narrative"))
        self.clock = 0
        self.events: list[str] = []
        self.notable = False
        self.allocations: list[BloodAllocation] = []
        self.transfers: list[BloodTransfer] = []
        self.initial_blood = blood.totals_by_type(self)
        self.mutual_aid: list[MutualAidRequest] = []
        # waste and response charges (rubric PENALTY keys): whole counts, and the chance, given the
        # caller's report, that a response was too much or too little (dispatch.charge_response)
        self.ledger: dict[str, float] = {}
        # bumped wherever an OR's state, procedure or elective flag or a specialist's state is
        # set: what the legal room actions and the Gymnasium hospital rows read of the rooms
        self.rooms_version = 0
        # bumped wherever a call is added or its status, triage or unit is set: what the legal
        # dispatch and triage actions and the Gymnasium call rows read of the calls
        self.calls_version = 0
        # bumped wherever a hospital's blood stock is changed: what the legal blood actions and
        # the Gymnasium hospital rows read of the stock
        self.stock_version = 0
        self.query_result: dict[str, object] | None = None
        self.news_cycle_at: int | None = None
        self.news_cycle_reason = ""
        self.escalated = False
        # calls before this place in ``calls`` have left "pending", which no call re-enters
        self.first_pending_call = 0
        self.next_lab_at: float = math.inf  # the first blood-type result due (request_blood_type)
        # no OR or specialist timer falls due before this minute (rooms.timers; lowered by
        # ``timer_set`` wherever a room or specialist starts a timer outside the timers step)
        self.next_timer_at: float = 0
        # no disruption starts or clears before this minute (disruptions.start_and_end; a fork,
        # which redraws the disruptions to come, sets it back to 0)
        self.next_disruption_at: float = 0
        # no requested mutual-aid unit arrives before this minute (mutual_aid.arrivals; lowered by
        # the request)
        self.next_aid_at: float = math.inf
        # no unit ends a trip, a scene or a handover before this minute (ambulances.move; lowered
        # by ``unit_due`` wherever a unit's trip or timer is set outside the units step)
        self.next_unit_at: float = 0
        self.id_counters = [self._max_id("P"), 0]  # call ids are given on arrival
        self._start()

    def _max_id(self, prefix: str) -> int:
        ids = list(self.patients) + [s.patient.patient_id for s in self.spawns]
        return max((int(i[len(prefix):]) for i in ids), default=0)

    def _start(self) -> None:
        for p in self.patients.values():
            p.band = band(p.reserve)
            care.note_prompt_reference(self, p)
        disruptions.start_and_end(self, 0)
        spawns.release_due(self, 0)

    # ------------------------------------------------------------------ the tick
    def tick(self) -> None:
        self.clock += 1
        t = self.clock
        # the guards skip a call when the step has nothing to do this minute
        if t >= self.next_disruption_at:
            disruptions.start_and_end(self, t)
        if self.spawns and self.spawns[0].at <= t:
            spawns.release_due(self, t)
        if t >= self.next_aid_at:
            mutual_aid.arrivals(self, t)
        if self.transfers or t >= self.next_lab_at:
            blood.results_and_transfers(self, t)
        if t >= self.next_timer_at:
            rooms.timers(self, t)
        ambulances.move(self, t)
        care.advance(self, t)
        physiology.deteriorate(self)
        if self.task.cascades:
            cascades.advance(self, t)

    # ------------------------------------------------------------------ bookkeeping
    def event(self, text: str) -> None:
        self.events.append(f"t{self.clock} {text}")
        self.notable = True

    def timer_set(self, at: int) -> None:
        """An OR or specialist timer now runs to minute ``at``."""
        if at < self.next_timer_at:
            self.next_timer_at = at

    def add_disruption(self, d: Disruption) -> None:
        """One more disruption (``disruptions.start_and_end`` starts and clears it on time)."""
        self.disruptions.append(d)
        self.next_disruption_at = min(self.next_disruption_at, d.start)

    def unit_due(self, at: int) -> None:
        """A unit's trip or on-scene or handover timer now ends at minute ``at``."""
        if at < self.next_unit_at:
            self.next_unit_at = at

    def count(self, key: str, n: float = 1) -> None:
        self.ledger[key] = self.ledger.get(key, 0) + n

    # ------------------------------------------------------------------ questions
    def diverted(self, hospital_id: str) -> bool:
        return self.hospitals[hospital_id].diverted_until > self.clock

    def resolved(self) -> bool:
        """Nothing left to happen: no future calls, no open call, and every patient the dispatcher
        knows of in a final state (a hidden caller's fate never ends an episode early)."""
        if self.spawns:
            return False
        # asked after every step: loops, not generators; newest first, as they are the likeliest
        # to be open
        for c in reversed(self.calls.values()):
            if c.status in OPEN_CALL_STATES:
                return False
        for p in reversed(self.patients.values()):
            if p.visible and p.status not in FINAL_PATIENT_STATES:
                return False
        return True

    def oldest_pending_call(self) -> Call | None:
        """The first pending call: calls come in the order of their minute and never return to
        "pending", so no later one has waited longer."""
        for call in itertools.islice(self.calls.values(), self.first_pending_call, None):
            if call.status == "pending":
                return call
            self.first_pending_call += 1
        return None

    def care_for(self, p: Patient, h: Hospital) -> Care | None:
        return rooms.care_for(p, h)

    def blood_in_circulation(self) -> dict[str, int]:
        """stock + reserved + in transit + transfused, per type (must equal the initial totals)."""
        return blood.in_circulation(self)

    # ------------------------------------------------------------------ what actions do (handlers.py)
    def send_unit(self, amb: Ambulance, p: Patient, call: Call | None) -> bool:
        return dispatch.send_unit(self, amb, p, call)

    def can_reach(self, amb: Ambulance, p: Patient) -> bool:
        return dispatch.can_reach(self, amb, p)

    def reroute(self, amb: Ambulance) -> None:
        travel.reroute(self, amb)

    def note_destination(self, p: Patient, hospital_id: str) -> None:
        care.note_destination(self, p, hospital_id)

    def request_blood_type(self, p: Patient) -> None:
        blood.request_blood_type(self, p)

    def schedule(self, spawn: PendingSpawn) -> None:
        spawns.schedule(self, spawn)

    def schedule_callback(self, call: Call) -> None:
        spawns.schedule_callback(self, call)

    def next_patient_id(self) -> str:
        return spawns.next_patient_id(self)

    def draw_noise(self) -> float:
        return travel.draw_noise(self)
