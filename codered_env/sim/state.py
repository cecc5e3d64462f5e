"""``World``: all mutable state of one episode and the few questions every subsystem asks.

The rules that move the state live in ``dynamics/`` (one module per subsystem) and the order of
a minute in ``tick.py``; this module imports neither, so every subsystem can depend on it.

Two records serve the steps that skip work:

- the change record: ``changed(kind)`` is called wherever something of ``kind`` changes, and
  ``version(kind)`` is what a memo of it compares (kinds in ``CHANGE_KINDS``);
- the calendar: ``due(kind, at)`` says something of ``kind`` falls due at minute ``at``, and
  ``is_due(kind, t)`` is how the tick asks whether the step of ``kind`` has work at minute ``t``
  (kinds in ``DUE_KINDS``). The step that owns a kind scans everything of it: it calls
  ``clear_due`` first and enters again, through ``due``, what is still to come.

Seeded random streams keep the scenario independent of play: ``scenario`` (generator.py, drawn
once at reset), ``travel`` (trip-time noise, scene and handover jitter, in the order trips
happen), ``narrative`` (mutual-aid delays, in the order of the requests) and one stream per
cascade event (``narrative_draw``: whether a death makes the news, the surge calls, the
escalation's bystander), keyed by the event rather than by when it happens, so two policies that
meet the same event meet the same draw.
"""

from __future__ import annotations

import itertools
import math
from random import Random

from .city import PRAKASHNAGAR, City, RoadNetwork
from .conditions import CONDITIONS
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

#: What the change record counts: ``rooms`` (an OR's state, procedure or elective flag, a
#: specialist's state), ``calls`` (a call added, or its status, triage or unit set; a caller is
#: first seen as their call's status is set) and ``stock`` (a hospital's blood stock). The legal
#: actions, the Gymnasium rows and the preview's call terms built from them are reused while the
#: version they were built at is current.
CHANGE_KINDS = ("rooms", "calls", "stock")
#: What the calendar bounds: no ``disruptions`` start or clear, no mutual-``aid`` unit arrives,
#: no blood-type result (``labs``) comes back, no OR or specialist ``timers`` run out and no
#: ``units`` end a trip, a scene or a handover before the kind's minute.
DUE_KINDS = ("disruptions", "aid", "labs", "timers", "units")


class World:
    """All mutable state of one episode (``tick.new_world`` builds and starts one)."""

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
        narrative = stream_name(city, task.task_id, seed, "narrative")
        self.narrative_rng: Random | None = Random(narrative)
        # None in a fork and while its copy is taken: a fork draws its events from narrative_rng
        self.narrative_seed: str | None = narrative
        self.clock = 0
        self.events: list[str] = []
        self.notable = False
        self.allocations: list[BloodAllocation] = []
        self.transfers: list[BloodTransfer] = []
        self.initial_blood = stock_by_type(self.hospitals)
        self.mutual_aid: list[MutualAidRequest] = []
        # the last minute a hospital could give each condition its best care (rooms.note_best_care_open)
        self.best_care_open_at: dict[str, int] = {}
        # waste and response charges (rubric PENALTY keys): whole counts, and the chance, given the
        # caller's report, that a response was too much or too little (dispatch.charge_response)
        self.ledger: dict[str, float] = {}
        self.versions: dict[str, int] = dict.fromkeys(CHANGE_KINDS, 0)
        # nothing is asked of the labs or mutual aid yet; the other steps' first scans find
        # their real minute
        self.calendar: dict[str, float] = dict.fromkeys(DUE_KINDS, 0) | {"aid": math.inf, "labs": math.inf}
        self.query_result: dict[str, object] | None = None
        self.news_cycle_at: int | None = None
        self.news_cycle_reason = ""
        self.escalated = False
        self.escalation_casualty: str | None = None  # the bystander an unattended incident injured
        # calls before this place in ``calls`` have left "pending", which no call re-enters
        self.first_pending = 0
        self.id_counters = [self._max_id("P"), 0]  # call ids are given on arrival

    def _max_id(self, prefix: str) -> int:
        ids = list(self.patients) + [s.patient.patient_id for s in self.spawns]
        return max((int(i[len(prefix):]) for i in ids), default=0)

    # ------------------------------------------------------------------ change record and calendar
    def changed(self, kind: str) -> None:
        """Something of ``kind`` (``CHANGE_KINDS``) changed."""
        self.versions[kind] += 1

    def version(self, kind: str) -> int:
        """How many changes of ``kind`` there have been: a memo of it is current while equal."""
        return self.versions[kind]

    def due(self, kind: str, at: float) -> None:
        """Something of ``kind`` (``DUE_KINDS``) falls due at minute ``at``."""
        calendar = self.calendar
        if at < calendar[kind]:
            calendar[kind] = at

    def is_due(self, kind: str, t: int) -> bool:
        """Whether the step of ``kind`` may have work at minute ``t``."""
        return t >= self.calendar[kind]

    def clear_due(self, kind: str) -> None:
        """The step of ``kind`` is scanning everything of it (it re-enters what is to come)."""
        self.calendar[kind] = math.inf

    # ------------------------------------------------------------------ bookkeeping
    def event(self, text: str) -> None:
        self.events.append(f"t{self.clock} {text}")
        self.notable = True

    def count(self, key: str, n: float = 1) -> None:
        self.ledger[key] = self.ledger.get(key, 0) + n

    # ------------------------------------------------------------------ questions
    def narrative_draw(self, event: str) -> Random:
        """The random stream of one cascade event (``event`` names it: what and whose)."""
        if self.narrative_seed is None:
            assert self.narrative_rng is not None, "a world without streams is only being copied"
            return self.narrative_rng
        return Random(f"{self.narrative_seed}:{event}")

    def diverted(self, hospital_id: str) -> bool:
        return self.hospitals[hospital_id].diverted_until > self.clock

    def diverted_for(self, hospital_id: str, condition: str) -> bool:
        """Is ``hospital_id`` closed to a patient with ``condition``? While it is on diversion,
        unless the diversion is waived for them (``diversion_waived``)."""
        return self.diverted(hospital_id) and not self.diversion_waived(condition)

    def diversion_waived(self, condition: str) -> bool:
        """``Condition.diversion_waived`` over this city's hospitals now."""
        clock = self.clock
        return CONDITIONS[condition].diversion_waived((h.tier, h.diverted_until > clock)
                                                      for h in self.hospitals.values())

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
        for call in itertools.islice(self.calls.values(), self.first_pending, None):
            if call.status == "pending":
                return call
            self.first_pending += 1
        return None


def stock_by_type(hospitals: dict[str, Hospital]) -> dict[str, int]:
    """Blood units on the hospitals' shelves, per type."""
    totals: dict[str, int] = {}
    for h in hospitals.values():
        for blood_type, n in h.blood.items():
            totals[blood_type] = totals.get(blood_type, 0) + n
    return totals
