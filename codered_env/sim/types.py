"""State records of the world: patients, calls, ambulances, hospitals, ORs, specialists, events.

These are plain mutable dataclasses owned by ``World``; the agent never sees them directly (it
gets the observation built in view.py and obs_rows.py). Status strings are enumerated in the ``*_STATES``
tuples so tests can assert that every entity is always in exactly one valid state.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter

from .params import CHILDBEARING_AGE_RANGE

PATIENT_STATES = (
    "awaiting_unit",  # known, no unit assigned (phase 1) / call pending (phase 2, hidden)
    "unit_en_route",
    "on_scene",
    "transporting",
    "at_hospital",  # in the ED waiting for definitive care (or for a transfer out)
    "transferring",  # inter-facility transfer to a capable hospital
    "in_treatment",
    "treated",
    "released",  # treated and released on scene (no transport needed)
    "deceased",
)
AMBULANCE_STATES = ("available", "en_route", "on_scene", "transporting", "at_hospital", "returning")
OR_STATES = ("idle", "preparing", "ready", "in_use", "out_of_service")
SPECIALIST_STATES = ("on_call", "paged", "present", "unavailable")
CALL_STATES = ("pending", "dispatched", "on_scene", "closed_advice", "closed_callback")
#: Calls still open: the observation shows them and the agent may triage them (the others are
#: closed or have a crew on scene).
OPEN_CALL_STATES = ("pending", "dispatched")
#: Patients nothing more happens to (no deterioration; an episode may end with them all here).
FINAL_PATIENT_STATES = frozenset({"treated", "released", "deceased", "in_treatment"})


@dataclass(slots=True)
class Patient:
    patient_id: str
    condition: str
    node: str
    appeared_at: int  # call time (phase 2) or the start of the emergency (phase 1)
    reserve: float  # hidden physiological reserve: 1 stable .. 0 dead
    blood_type: str
    hr0: int
    sbp0: int
    onset_min: int  # symptom onset before the call (stroke outcome)
    sex: str = "M"  # "M" | "F": decides which uncross-matched group O is safe
    age: int = 40
    secondary: bool = False
    call_id: str | None = None
    visible: bool = True  # phase 2: hidden until a crew is on scene
    status: str = "awaiting_unit"
    ambulance_id: str | None = None
    destination: str | None = None  # assigned by the agent
    hospital: str | None = None  # where the patient is now / was treated
    blood_type_known: bool = False
    blood_type_ready_at: int | None = None  # query result time
    band: int = 0  # index of the last vitals band crossed
    first_unit_at: int | None = None  # crew on scene
    first_hospital_arrival: int | None = None
    arrival_prep: dict[str, float] | None = None  # prep credit measured at first arrival
    # prep_ready's reference (care.prompt_legs): the nearest unit's minutes to them and each
    # hospital's minutes from them when they became known; the credit of each readiness part,
    # judged against that reference when treatment began (care.prep_credit); rule_zero: no
    # credit (a hospital that could not treat them, or worse care while better was on offer)
    prompt_legs: tuple[float, tuple[tuple[int, float], ...]] | None = None
    prep_credit: dict[str, float] | None = None
    prep_rule_zero: bool = False
    wait_started: int | None = None
    blood_ready_at: int | None = None  # when blood is at hand at the current hospital
    transfer_arrives_at: int | None = None
    transfer_to: str | None = None
    transferred: bool = False
    treatment_start: int | None = None
    treatment_end: int | None = None
    treatment_quality: float = 0.0
    therapy: str | None = None  # outcome curve of the care given (pci, lysis, evt, surgery, ...)
    relaxed_target: bool = False  # sent where care is partial while no capable hospital could take them
    fallback: bool = False  # the capable hospital's lab was unavailable: fallback care there
    reserve_at_treatment: float | None = None
    or_ref: tuple[str, str] | None = None
    died_at: int | None = None
    transfused_units: int = 0
    cpr_from: int | None = None  # telephone CPR instructions since this minute (call coded P1)

    def o_pos_safe(self) -> bool:
        """Uncross-matched O-pos is safe unless she is a woman of child-bearing age."""
        lo, hi = CHILDBEARING_AGE_RANGE
        return self.sex == "M" or not lo <= self.age <= hi

    def has_blood(self, now: int) -> bool:
        return self.blood_ready_at is not None and self.blood_ready_at <= now


@dataclass(slots=True)
class Call:
    call_id: str
    received_at: int
    node: str
    report: str
    patient_id: str  # hidden link to the patient behind the call
    true_priority: str
    secondary: bool = False
    surge: bool = False
    status: str = "pending"
    priority: str | None = None  # the agent's triage
    ambulance_id: str | None = None
    callback_of: str | None = None
    closed_at: int | None = None  # when the agent closed it with advice (P4)
    coded_p1_at: int | None = None  # when the agent first coded it P1
    left_waiting: float = 0.0  # minutes left pending while a unit could answer (charge_waiting)


@dataclass(slots=True)
class Trip:
    nodes: list[str]
    times: list[int]  # absolute arrival minute at each node (times[0] = departure)
    noise: float
    speed_factor: float
    purpose: str  # "scene" | "hospital" | "home"
    target: str  # final node

    @property
    def arrival(self) -> int:
        return self.times[-1]

    def eta_minutes(self, now: int) -> int:
        """What dispatch can estimate: the remaining time without this trip's traffic noise.

        The true arrival (``arrival``) includes a lognormal noise factor drawn for the trip; the
        agent sees only the noise-free estimate, so ETAs are estimates, not oracles.
        """
        return max(0, round((self.arrival - now) / self.noise))

    def last_index(self, now: int) -> int:
        """Index of the last node reached by minute ``now`` (a route may revisit a node)."""
        for i in range(len(self.times) - 1, -1, -1):
            if self.times[i] <= now:
                return i
        return 0

    def position(self, now: int) -> tuple[str, str | None]:
        """(last node passed, next node or None) at minute ``now``."""
        i = self.last_index(now)
        return self.nodes[i], self.nodes[i + 1] if i + 1 < len(self.nodes) else None


@dataclass(slots=True)
class Ambulance:
    ambulance_id: str
    kind: str  # "ALS" | "BLS"
    home: str
    node: str
    mutual_aid: bool = False
    status: str = "available"
    trip: Trip | None = None
    busy_until: int = 0
    patient_id: str | None = None
    call_id: str | None = None
    held: bool = False  # waiting at a node because every route is closed


@dataclass(slots=True)
class OperatingRoom:
    or_id: str
    procedures: tuple[str, ...]
    state: str = "idle"
    procedure: str | None = None  # what it is prepared for / in use for
    until: int = 0  # end of the current preparing / ready / in_use / out_of_service period
    prep_total: int = 0
    elective: bool = False
    agent_prepared: bool = False
    patient_id: str | None = None  # claimed by / operating on
    failure_until: int = 0  # an equipment failure found while a case was running ends here
    ready_at: int = 0  # when the current preparation completed (state "ready")


@dataclass(slots=True)
class Specialist:
    specialty: str
    page_delay: int
    state: str = "on_call"
    until: int = 0  # arrival time (paged) / leave time (present) / end of unavailability
    agent_paged: bool = False
    used: bool = False  # a patient needing them was treated during this presence
    present_since: int = 0  # when they last arrived (state "present")


@dataclass(slots=True)
class Hospital:
    hospital_id: str
    name: str
    tier: int
    node: str
    capacity: int
    base_load: int
    icu_beds: int
    ors: list[OperatingRoom]
    specialists: dict[str, Specialist]
    blood: dict[str, int]
    icu_used: int = 0
    ed_patients: list[str] = field(default_factory=list)
    boarders: int = 0
    diverted_until: int = 0
    diversion_reason: str = ""
    overcrowding_events: int = 0

    @property
    def occupancy(self) -> int:
        return self.base_load + len(self.ed_patients) + self.boarders

    @property
    def crowded(self) -> bool:  # occupancy > capacity, without a second property call per minute
        return self.base_load + len(self.ed_patients) + self.boarders > self.capacity

    def or_by_id(self, or_id: str) -> OperatingRoom | None:
        for room in self.ors:
            if room.or_id == or_id:
                return room
        return None


@dataclass(slots=True)
class BloodAllocation:
    patient_id: str
    hospital_id: str
    blood_type: str
    units: int
    made_at: int
    ready_at: int = 0  # issued and at hand from this minute
    by_agent: bool = False
    used: bool = False
    awaiting_sample: bool = False  # type-specific: issued once the patient's sample reaches the lab


@dataclass(slots=True)
class BloodTransfer:
    from_hospital: str
    to_hospital: str
    blood_type: str
    units: int
    arrives_at: int


@dataclass(slots=True)
class Disruption:
    kind: str  # road_closure | accident_congestion | hospital_diversion | or_failure | specialist_unavailable
    start: int
    end: int
    edges: tuple[tuple[str, str], ...] = ()
    hospital_id: str | None = None
    or_id: str | None = None
    specialty: str | None = None
    text: str = ""
    active: bool = False


@dataclass(slots=True)
class MutualAidRequest:
    unit_id: str
    requested_at: int
    arrives_at: int
    target_id: str | None
    unneeded: bool
    arrived: bool = False


@dataclass(slots=True)
class PendingSpawn:
    """A patient or call that will appear later (scheduled by the generator or a cascade)."""

    at: int
    patient: Patient
    call: Call | None
    reason: str


def _pickled_by_fields(cls: type) -> None:
    """Pickle (and so ``CodeRedSim.private_copy``, every fork) stores a record as its field
    values and rebuilds it with its constructor: one C-level getter and one ``__init__`` call
    instead of the slotted dataclass's per-field ``__getstate__``/``__setstate__`` loops. The
    records hold no reference cycles, so shared records stay shared."""
    values = attrgetter(*(f.name for f in fields(cls)))

    def __reduce__(self: object) -> tuple[type, tuple]:
        return cls, values(self)

    cls.__reduce__ = __reduce__  # type: ignore[method-assign]


for _record in (Patient, Call, Trip, Ambulance, OperatingRoom, Specialist, Hospital, BloodAllocation,
                BloodTransfer, Disruption, MutualAidRequest, PendingSpawn):
    _pickled_by_fields(_record)


#: Patients whose outcome is settled: treatment over, released on scene, or dead.
OUTCOME_PATIENT_STATES = frozenset({"treated", "released", "deceased"})
