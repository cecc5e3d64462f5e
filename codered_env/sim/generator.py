"""Scenario generation: everything the seed varies, and nothing else.

``generate(task, seed)`` returns a fresh ``Scenario``: hospitals (elective OR load, blood stock,
baseline ED load, specialists' page delays), the fleet, the patients known at the start
(phase 1) or the schedule of calls (phase 2), later spawns (secondary casualties), the
disruptions, and whether it is peak hour. One ``random.Random`` seeded from the task id and seed
drives it, so the same (task, seed) always yields the same scenario.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from random import Random

from .city import PRAKASHNAGAR, City, RoadGraph, RoadNetwork, edge_key
from .conditions import CONDITIONS
from .facilities import HospitalSpec
from .params import (
    ACCIDENT_CONGESTION_FACTOR,
    BASELINE_HR_RANGE,
    BASELINE_SBP_RANGE,
    BLOOD_STOCK_JITTER,
    BLOOD_TYPE_FREQUENCY,
    BLOOD_TYPES,
    CALL_MIX,
    CATH_LAB_PREP_RANGE,
    DIVERSION_WINDOW,
    ELECTIVE_CASE_PROBABILITY,
    ELECTIVE_REMAINING_RANGE,
    INCIDENT_CALL_RANGE,
    INCIDENT_SECONDARY_DELAY_RANGE,
    MEMO_ENTRIES,
    NEWS_CYCLE_SURGE_CALLS,
    NEWS_CYCLE_SURGE_SPREAD_MIN,
    OR_FAILURE_WINDOW,
    PEAK_HOUR_PROBABILITY,
    PHASE2_CALLS,
    REPORT_AGE_BANDS,
    REPORT_SHARE_MALE,
    RIVERSIDE_CLOSURE_PROBABILITY,
    ROAD_DISRUPTION_WINDOW,
    SPECIALIST_OUT_WINDOW,
    SPECIALIST_PAGE_DELAY_BY_TIER,
    STROKE_ONSET_BEFORE_CALL_RANGE,
    SURGE_MIX,
    TASK3_SECONDARY_RANGE,
)
from .rng import choice, randint, shuffle, weighted_draw
from .tasks import TaskSpec
from .triage import AGE_BANDS, drawn_report, skip_report
from .types import (
    Ambulance,
    Call,
    Disruption,
    Hospital,
    OperatingRoom,
    Patient,
    PendingSpawn,
    Specialist,
)

# Prakashnagar's, for the adapters that know only the fixed city (the tasks read the episode's City)
ENTRY_NODE = PRAKASHNAGAR.entry_node


@dataclass
class Scenario:
    peak_hour: bool
    hospitals: dict[str, Hospital]
    ambulances: dict[str, Ambulance]
    patients: dict[str, Patient]
    calls: dict[str, Call]
    spawns: list[PendingSpawn]
    disruptions: list[Disruption]
    incident_node: str | None
    mci_patients: set[str] = field(default_factory=set)


def _hospitals(rng: Random, city: City) -> dict[str, Hospital]:
    cath_prep = rng.randint(*CATH_LAB_PREP_RANGE)
    hospitals = {spec.hospital_id: _hospital(rng, spec, cath_prep) for spec in city.hospitals}
    for hospital in hospitals.values():
        for room in hospital.ors:
            if rng.random() < ELECTIVE_CASE_PROBABILITY:
                room.state, room.elective = "in_use", True
                room.procedure = room.procedures[-1] if "general" in room.procedures else room.procedures[0]
                room.until = rng.randint(*ELECTIVE_REMAINING_RANGE)
    return hospitals


def _hospital(rng: Random, spec: HospitalSpec, cath_prep: int) -> Hospital:
    """One hospital; the draws run in a fixed order (load, pages, blood, ICU)."""
    base_load = rng.randint(*spec.base_load)
    ors = [
        OperatingRoom(or_id, procs, prep_total=cath_prep if "cath_lab" in procs else 0)
        for or_id, procs in spec.ors
    ]
    lo, hi = SPECIALIST_PAGE_DELAY_BY_TIER[spec.tier]
    specialists = {name: Specialist(name, rng.randint(lo, hi)) for name in spec.specialists}
    blood = dict.fromkeys(BLOOD_TYPES, 0)
    for blood_type, units in spec.blood.items():
        jitter = rng.randint(-BLOOD_STOCK_JITTER, BLOOD_STOCK_JITTER) if units > 1 else 0
        blood[blood_type] = max(0, units + jitter)
    icu_used = rng.randint(*spec.icu_used) if spec.icu_used else 0
    return Hospital(
        spec.hospital_id,
        spec.name,
        spec.tier,
        spec.hospital_id,
        capacity=spec.capacity,
        base_load=base_load,
        icu_beds=spec.icu_beds,
        ors=ors,
        specialists=specialists,
        blood=blood,
        icu_used=icu_used,
    )


def _patient(
    rng: Random, pid: str, condition: str, node: str, at: int, secondary: bool = False, visible: bool = True,
    reported: bool = False,
) -> Patient:
    """A patient drawn from ``rng``. ``reported``: a caller will describe them (``_call`` gives
    them the reported sex and age), so their own demographics draw, on a stream of its own, is
    skipped."""
    spec = CONDITIONS[condition]
    lo, hi = spec.initial_reserve
    patient = Patient(
        patient_id=pid,
        condition=condition,
        node=node,
        appeared_at=at,
        reserve=round(rng.uniform(lo, hi), 3),
        blood_type=weighted_draw(rng, BLOOD_TYPE_FREQUENCY),
        hr0=randint(rng, *BASELINE_HR_RANGE),
        sbp0=randint(rng, *BASELINE_SBP_RANGE),
        onset_min=randint(rng, *STROKE_ONSET_BEFORE_CALL_RANGE) if condition == "stroke" else 0,
        secondary=secondary,
        visible=visible,
    )
    if not reported:
        patient.sex, patient.age = _demographics(patient)
    return patient


def _skip_reported_patient(rng: Random, condition: str) -> None:
    """Advance ``rng`` exactly as ``_patient(..., reported=True)`` and its ``_call`` would."""
    rng.random()
    weighted_draw(rng, BLOOD_TYPE_FREQUENCY)
    randint(rng, *BASELINE_HR_RANGE)
    randint(rng, *BASELINE_SBP_RANGE)
    if condition == "stroke":
        randint(rng, *STROKE_ONSET_BEFORE_CALL_RANGE)
    skip_report(condition, rng)


def _demographics(p: Patient) -> tuple[str, int]:
    """Sex and age from the triage model's tables (the same ones caller reports are drawn
    from), on a stream of their own so the scenario's other draws stay put. A phase-2 patient
    is then given the sex and age their caller reported (``_call``)."""
    rng = Random(f"codered:demographics:{p.patient_id}:{p.condition}:{p.node}:{p.appeared_at}:{p.reserve}")
    lo, hi = AGE_BANDS[weighted_draw(rng, REPORT_AGE_BANDS[p.condition])]
    age = rng.randint(lo, hi)
    return ("M" if rng.random() < REPORT_SHARE_MALE[p.condition] else "F"), age


def _call(rng: Random, patient: Patient, city: City, secondary: bool = False, surge: bool = False) -> Call:
    """A call whose id is given on arrival (dynamics.spawns.add_spawn), so ids follow arrival order."""
    report, sex, age = drawn_report(patient.condition, city.node_names[patient.node], rng)
    patient.sex, patient.age = sex, age  # the patient the caller described
    return Call(
        "",
        patient.appeared_at,
        patient.node,
        report,
        patient.patient_id,
        CONDITIONS[patient.condition].true_priority,
        secondary=secondary,
        surge=surge,
    )


def _route_edges(net: RoadNetwork, origins: list[str], target: str) -> list[tuple[str, str]]:
    """Edges on current shortest routes from origins to target (candidates for disruptions)."""
    found: list[tuple[str, str]] = []
    state = _road_state(net)
    for origin in origins:
        for key in _route_edge_keys(net, state, origin, target):
            if key not in found:
                found.append(key)
    return found


def _road_state(net: RoadNetwork) -> tuple[RoadGraph, float, frozenset, frozenset]:
    return net.roads, net.time_factor, frozenset(net.closed), frozenset(net.congestion.items())


#: Per road state (city graph, time factor, closed roads, congestion): the edges of each shortest route
#: and whether the roads stay connected without one more edge. Every reset and every fork
#: draws its disruptions on a fresh network, so the same few states recur; the values are
#: functions of the state alone.
_ROUTE_EDGES: dict[tuple, tuple[tuple[str, str], ...]] = {}
_CONNECTED_WITHOUT: dict[tuple, bool] = {}


def _route_edge_keys(net: RoadNetwork, state: tuple, origin: str, target: str) -> tuple[tuple[str, str], ...]:
    key = (state, origin, target)
    edges = _ROUTE_EDGES.get(key)
    if edges is None:
        route = net.path(origin, target) or []
        edges = tuple(edge_key(a, b) for a, b in itertools.pairwise(route))
        if len(_ROUTE_EDGES) >= MEMO_ENTRIES:
            _ROUTE_EDGES.clear()
        _ROUTE_EDGES[key] = edges
    return edges


def _connected_without(net: RoadNetwork, state: tuple, edge: tuple[str, str]) -> bool:
    """``net.is_connected_without([edge])``, memoised per road state."""
    key = (state[0], state[2], edge)
    connected = _CONNECTED_WITHOUT.get(key)
    if connected is None:
        connected = net.is_connected_without([edge])
        if len(_CONNECTED_WITHOUT) >= MEMO_ENTRIES:
            _CONNECTED_WITHOUT.clear()
        _CONNECTED_WITHOUT[key] = connected
    return connected


def _road_disruption(
    rng: Random, net: RoadNetwork, kind: str, origins: list[str], start: int, end: int, city: City
) -> Disruption:
    """A closure or an accident on a road that matters: on the routes from the patients to the
    tertiary centre or from the first stations to the first patient (a closure may hit the
    flood-prone riverside instead); never one that would cut the city in two."""
    state = _road_state(net)
    candidates = _route_edges(net, origins, city.tertiary) + _route_edges(
        net, list(city.route_stations), origins[0]
    )
    candidates = [e for e in candidates if _connected_without(net, state, e)]
    if kind == "road_closure":
        if not candidates or rng.random() < RIVERSIDE_CLOSURE_PROBABILITY:
            riverside = [edge_key(a, b) for a, b in city.riverside_edges]
            candidates = [e for e in riverside if _connected_without(net, state, e)]
        edge = choice(rng, candidates)
        label = city.edge_label(*edge)
        text = f"Waterlogging closes {label} ({edge[0]}-{edge[1]})"
        return Disruption(kind, start, end, edges=(edge,), text=text)
    options = candidates or sorted(city.roads.edge_base)
    edge = choice(rng, options)
    factor = f"x{ACCIDENT_CONGESTION_FACTOR:g} travel time"
    text = f"Accident blocks lanes on {city.edge_label(*edge)} ({edge[0]}-{edge[1]}), {factor}"
    return Disruption(kind, start, end, edges=(edge,), text=text)


def draw_disruption(
    rng: Random, kind: str, net: RoadNetwork, origins: list[str], task: TaskSpec, city: City
) -> Disruption:
    """One disruption of ``kind`` on ``city``: diversions hit one of its ``diversion_hospitals``
    (the tertiary centre and a district hospital), equipment failures and absent specialists the
    tertiary centre."""
    if kind in ("road_closure", "accident_congestion"):
        start = randint(rng, *ROAD_DISRUPTION_WINDOW[0])
        return _road_disruption(
            rng, net, kind, origins, start, start + randint(rng, *ROAD_DISRUPTION_WINDOW[1]), city
        )
    if kind == "hospital_diversion":
        first, second = city.diversion_hospitals
        hid = first if rng.random() < 0.5 else second
        start = randint(rng, *DIVERSION_WINDOW[0])
        return Disruption(
            kind,
            start,
            start + randint(rng, *DIVERSION_WINDOW[1]),
            hospital_id=hid,
            text=f"{hid} on diversion: ED beds full",
        )
    if kind == "or_failure":
        hid, or_id = city.cath_room if task.task_id in ("task2", "task4", "task5") else city.trauma_room
        if task.task_id == "task5" and rng.random() < 0.5:
            hid, or_id = city.trauma_room
        start = randint(rng, *OR_FAILURE_WINDOW[0])
        label = "cath lab" if (hid, or_id) == city.cath_room else "trauma theatre"
        return Disruption(
            kind,
            start,
            start + randint(rng, *OR_FAILURE_WINDOW[1]),
            hospital_id=hid,
            or_id=or_id,
            text=f"{hid} {or_id} ({label}) equipment failure",
        )
    specialty = {"task2": choice(rng, ("cardiology", "neurology")), "task3": "trauma_surgery"}.get(
        task.task_id, choice(rng, ("cardiology", "neurology", "trauma_surgery"))
    )
    start = randint(rng, *SPECIALIST_OUT_WINDOW[0])
    return Disruption(
        "specialist_unavailable",
        start,
        start + randint(rng, *SPECIALIST_OUT_WINDOW[1]),
        hospital_id=city.tertiary,
        specialty=specialty,
        text=f"{city.tertiary} {specialty} on-call team tied up in another case",
    )


DISRUPTION_POOLS = {
    "task2": ("or_failure", "specialist_unavailable", "road_closure", "accident_congestion"),
    "task3": (
        "road_closure",
        "accident_congestion",
        "hospital_diversion",
        "or_failure",
        "specialist_unavailable",
    ),
    "task4": ("road_closure", "accident_congestion", "hospital_diversion", "or_failure"),
    "task5": (
        "road_closure",
        "accident_congestion",
        "hospital_diversion",
        "or_failure",
        "specialist_unavailable",
    ),
}


class _Ids:
    def __init__(self) -> None:
        self.patients = 0

    def patient(self) -> str:
        self.patients += 1
        return f"P{self.patients}"


def stream_name(city: City, task_id: str, seed: int, stream: str) -> str:
    """The name a random stream of an episode is seeded from (Prakashnagar's as they always were)."""
    place = "" if city is PRAKASHNAGAR else f"{city.key}:"
    return f"codered:{place}{task_id}:{seed}:{stream}"


def generate(task: TaskSpec, seed: int, city: City = PRAKASHNAGAR) -> Scenario:
    rng = Random(stream_name(city, task.task_id, seed, "scenario"))
    peak = rng.random() < PEAK_HOUR_PROBABILITY
    hospitals = _hospitals(rng, city)
    ambulances = {u.unit_id: Ambulance(u.unit_id, u.kind, u.station, u.station) for u in city.fleet}
    patients, calls, spawns, incident, mci = draw_arrivals(task, rng, city)
    net = RoadNetwork(peak, city.roads)
    origins = [p.node for p in patients.values()] or [s.patient.node for s in spawns]
    kinds = rng.sample(DISRUPTION_POOLS.get(task.task_id, ()), task.disruptions) if task.disruptions else []
    disruptions = [draw_disruption(rng, k, net, origins, task, city) for k in kinds]
    return Scenario(peak, hospitals, ambulances, patients, calls, spawns, disruptions, incident, mci)


def draw_arrivals(task: TaskSpec, rng: Random, city: City = PRAKASHNAGAR):
    """The task's patients, calls and future arrivals in ``city``, drawn from ``rng`` (ids from P1
    on): ``(patients, calls, spawns, incident node, incident patient ids)``. Reset uses it, and a
    fork draws a fresh future with ``draw_arrivals_after``."""
    builder = _PHASE1_BUILDERS.get(task.task_id, _phase2)
    return builder(rng, _Ids(), task, city)


@dataclass
class ShadowArrivals:
    """``draw_arrivals`` as a fork needs it: the spawns in arrival order except the task's
    scheduled calls up to the fork's minute (and, on request, the incident's first calls) --
    their draws are made but nothing is built --, the place of every spawn in arrival order (the
    dropped ones too), the incident node, the incident patients' ids (the ids count the dropped
    calls, as in the full draw) and the minute of the incident's first arrival."""

    patients: dict[str, Patient]
    spawns: list[PendingSpawn]
    places: list[str]
    incident_node: str | None
    mci_patients: set[str]
    incident_start: int | None


def draw_arrivals_after(
    task: TaskSpec, rng: Random, minute: int, drop_incident_calls: bool = False, city: City = PRAKASHNAGAR
) -> ShadowArrivals:
    """``draw_arrivals(task, rng)`` with the same draws, leaving out the scheduled calls
    received at or before ``minute`` and, if ``drop_incident_calls``, the incident's first calls
    (tests/sim/test_fork_speed_equivalence.py)."""
    if task.task_id in _PHASE1_BUILDERS:
        patients, _, spawns, incident, mci = _PHASE1_BUILDERS[task.task_id](rng, _Ids(), task, city)
        times = [s.at for s in spawns if s.patient.patient_id in mci]
        times += [p.appeared_at for p in patients.values() if p.patient_id in mci]
        places = [s.patient.node for s in spawns]
        return ShadowArrivals(patients, spawns, places, incident, mci, min(times, default=None))
    order, incident = _phase2_plan(rng, task, city)
    start = min((at for at, _, _, _, reason in order if reason != "call"), default=None)
    spawns, mci = _phase2_spawns(rng, _Ids(), order, city, minute, drop_incident_calls)
    return ShadowArrivals({}, spawns, [node for _, _, _, node, _ in order], incident, mci, start)


def _task1(rng: Random, ids: _Ids, task: TaskSpec, city: City):
    p = _patient(rng, ids.patient(), "stemi", rng.choice(city.patient_nodes), 0)
    return {p.patient_id: p}, {}, [], None, set()


def _task2(rng: Random, ids: _Ids, task: TaskSpec, city: City):
    a, b = rng.sample(city.patient_nodes, 2)
    first, second = ("stemi", "stroke") if rng.random() < 0.5 else ("stroke", "stemi")
    p1 = _patient(rng, ids.patient(), first, a, 0)
    p2 = _patient(rng, ids.patient(), second, b, 0)
    return {p1.patient_id: p1, p2.patient_id: p2}, {}, [], None, set()


def _task3(rng: Random, ids: _Ids, task: TaskSpec, city: City):
    incident = rng.choice(city.incident_nodes)
    others = [n for n in city.patient_nodes if n != incident]
    casualties = ["trauma_haemorrhage", "trauma_haemorrhage", "trauma_major", "minor_injury"]
    patients = {}
    mci = set()
    for cond in casualties:
        p = _patient(rng, ids.patient(), cond, incident, 0)
        patients[p.patient_id] = p
        mci.add(p.patient_id)
    medical = _patient(rng, ids.patient(), rng.choice(("stemi", "stroke")), rng.choice(others), 0)
    patients[medical.patient_id] = medical
    at = rng.randint(*TASK3_SECONDARY_RANGE)
    secondary = _patient(
        rng, ids.patient(), rng.choice(("trauma_haemorrhage", "trauma_major")), incident, at, secondary=True
    )
    mci.add(secondary.patient_id)
    spawns = [PendingSpawn(at, secondary, None, "secondary casualty found in the wreckage")]
    return patients, {}, spawns, incident, mci


_Planned = tuple[int, float, str, str, str]  # (minute, tie-break, condition, node, reason)


def _phase2(rng: Random, ids: _Ids, task: TaskSpec, city: City):
    """The call schedule. Calls are drawn first as (minute, condition, node, kind), then put in
    arrival order with a random tie-break before patients and reports are made, so neither ids
    nor draw order tell an incident call from any other."""
    order, incident = _phase2_plan(rng, task, city)
    spawns, mci = _phase2_spawns(rng, ids, order, city)
    return {}, {}, spawns, incident, mci


# A call-queue task's schedule always holds one call of each entry (one of its conditions, drawn
# uniformly); the rest come from CALL_MIX. An incident brings one call of each injury, and a
# secondary casualty with one of them.
SCHEDULED_CALLS: tuple[tuple[str, ...], ...] = (("stemi",), ("stroke", "trauma_haemorrhage"), ("labour",))
INCIDENT_INJURIES: tuple[str, ...] = ("trauma_haemorrhage", "trauma_major")


def _phase2_plan(rng: Random, task: TaskSpec, city: City) -> tuple[list[_Planned], str | None]:
    n_calls, last_call = PHASE2_CALLS[task.task_id]
    times = sorted([0] + [randint(rng, 1, last_call) for _ in range(n_calls - 1)])
    conditions = [either[0] if len(either) == 1 else choice(rng, either) for either in SCHEDULED_CALLS]
    conditions += [weighted_draw(rng, CALL_MIX) for _ in range(n_calls - len(conditions))]
    shuffle(rng, conditions)
    planned = [
        (at, cond, choice(rng, city.patient_nodes), "call")
        for at, cond in zip(times, conditions, strict=False)
    ]
    incident = None
    if task.cascades:
        incident = choice(rng, city.incident_nodes)
        at = randint(rng, *INCIDENT_CALL_RANGE)
        planned += [(at, cond, incident, "incident call") for cond in INCIDENT_INJURIES]
        later = at + randint(rng, *INCIDENT_SECONDARY_DELAY_RANGE)
        cond = choice(rng, INCIDENT_INJURIES)
        planned.append((later, cond, incident, "secondary casualty at the incident"))
    draw = rng.random
    return sorted([(at, draw(), cond, node, reason) for at, cond, node, reason in planned]), incident


def _phase2_spawns(
    rng: Random,
    ids: _Ids,
    order: list[_Planned],
    city: City,
    drop_calls_until: int = -1,
    drop_incident_calls: bool = False,
) -> tuple[list[PendingSpawn], set[str]]:
    """Patients and reports in arrival order; scheduled calls received at or before
    ``drop_calls_until`` (and the incident's first calls if ``drop_incident_calls``) are drawn
    but not built (``draw_arrivals_after``)."""
    spawns: list[PendingSpawn] = []
    mci: set[str] = set()
    for at, _, cond, node, reason in order:
        pid = ids.patient()
        if reason != "call":
            mci.add(pid)
        passed = at <= drop_calls_until and reason == "call"
        if passed or (drop_incident_calls and reason == "incident call"):
            _skip_reported_patient(rng, cond)
            continue
        secondary = reason.startswith("secondary")
        p = _patient(rng, pid, cond, node, at, secondary=secondary, visible=False, reported=True)
        spawns.append(PendingSpawn(at, p, _call(rng, p, city, secondary=secondary), reason))
    return spawns, mci


_PHASE1_BUILDERS = {"task1": _task1, "task2": _task2, "task3": _task3}

#: The conditions each phase-1 builder above can produce (public: the task descriptions say so).
#: Phase-2 calls can carry any condition. ``tests/sim/test_generator_conditions.py`` checks both ways.
PHASE1_CONDITIONS: dict[str, tuple[str, ...]] = {
    "task1": ("stemi",),
    "task2": ("stemi", "stroke"),
    "task3": ("stemi", "stroke", "trauma_haemorrhage", "trauma_major", "minor_injury"),
}


def possible_conditions(task_id: str) -> tuple[str, ...]:
    """The conditions a task's patients can have, in ``CONDITIONS`` order (all for phase 2)."""
    allowed = PHASE1_CONDITIONS.get(task_id)
    return tuple(c for c in CONDITIONS if allowed is None or c in allowed)


def surge_calls(rng: Random, patients_start: int, start: int, city: City) -> list[PendingSpawn]:
    """The low-acuity calls a news cycle brings (drawn when the cascade fires)."""
    ids = _Ids()
    ids.patients = patients_start
    spawns = []
    for _ in range(randint(rng, *NEWS_CYCLE_SURGE_CALLS)):
        at = start + randint(rng, 1, NEWS_CYCLE_SURGE_SPREAD_MIN)
        p = _patient(
            rng, ids.patient(), weighted_draw(rng, SURGE_MIX), choice(rng, city.patient_nodes), at,
            visible=False, reported=True,
        )
        spawns.append(PendingSpawn(at, p, _call(rng, p, city, surge=True), "news-cycle surge"))
    spawns.sort(key=lambda s: s.at)
    return spawns


def escalation_casualty(rng: Random, pid: str, node: str, at: int, phase: int, city: City) -> PendingSpawn:
    """One more casualty at an incident nobody has reached in time (a call in phase 2)."""
    p = _patient(rng, pid, "trauma_major", node, at, secondary=True, visible=phase == 1, reported=phase == 2)
    call = _call(rng, p, city, secondary=True) if phase == 2 else None
    return PendingSpawn(at, p, call, "incident escalated: bystander injured")
