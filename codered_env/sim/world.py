"""The world's dynamics: one ``tick`` advances everything by one simulated minute.

Order inside a tick (fixed, so episodes are reproducible): disruptions start/end -> new calls
and casualties -> mutual-aid arrivals -> blood (lab results, transfers) -> OR and specialist
timers -> ambulances (arrivals, scene, handover, return) -> hospital care (start and end of
treatment, transfers out) -> physiology (one minute of deterioration) -> cascades.

Three seeded random streams keep the scenario independent of play: ``scenario`` (generator.py,
drawn once at reset), ``travel`` (trip-time noise, scene and handover jitter, in the order
trips happen) and ``narrative`` (mutual-aid delays, news-cycle draws, surge calls).
"""

from __future__ import annotations

import itertools
import math
from random import Random

from .city import NODE_NAMES, RoadNetwork
from .conditions import CONDITIONS, Care, expected_outcome
from .generator import escalation_casualty, generate, surge_calls
from .params import (
    ACCIDENT_CONGESTION_FACTOR,
    ALS_DETERIORATION_FACTOR,
    BLOOD_PENDING_CREDIT,
    BLOOD_TRANSFUSION_FACTOR,
    BLOOD_TYPE_QUERY_MIN,
    BLOOD_UNITS_PER_CASE,
    BLS_DETERIORATION_FACTOR,
    CATH_LAB_PREP_RANGE,
    CROWDED_DOOR_FACTOR,
    CROWDED_HANDOVER_FACTOR,
    CROWDING_DIVERSION_MIN,
    CROWDING_HAZARD,
    ED_DETERIORATION_FACTOR,
    FOUND_DEAD_SCENE_MIN,
    HANDOVER_JITTER_MIN,
    HANDOVER_MIN,
    HOSPITAL_TYPING_MIN,
    HOT_PRIORITIES,
    INCIDENT_ESCALATION_MIN,
    LIGHTS_AND_SIRENS_FACTOR,
    MCI_EXTRA_SCENE_MIN,
    MIN_SCENE_MIN,
    NEWS_CYCLE_DEATH_PROBABILITY,
    NEWS_CYCLE_WAIT_MIN,
    NO_BLOOD_QUALITY,
    NO_BLOOD_SURGERY_WAIT_MIN,
    NO_TRANSPORT_SCENE_MIN,
    NON_URGENT_FACTOR,
    NON_URGENT_TURNOUT_MIN,
    O_NEG_RELEASE_MIN,
    ON_SCENE_CARE_QUALITY,
    ON_SCENE_JITTER_MIN,
    OR_HOLD_WINDOW_MIN,
    OR_PREP_MIN_BY_TIER,
    PROCEDURE_DURATION_MIN,
    SPECIALIST_STAY_AFTER_CASE_MIN,
    SPECIALIST_WINDOW_MIN,
    TELEPHONE_CPR_FACTOR,
    TRANSFER_DOOR_IN_DOOR_OUT_MIN,
    TRANSPORT_FACTOR,
    TRAVEL_NOISE_CV,
    TYPE_SPECIFIC_MIN,
    UNTRIAGED_RESPONSE,
    VITALS_BANDS,
)
from .tasks import TaskSpec
from .triage import callback_plan, callback_report
from .types import (
    Ambulance,
    BloodAllocation,
    BloodTransfer,
    Call,
    Disruption,
    Hospital,
    MutualAidRequest,
    OperatingRoom,
    Patient,
    PendingSpawn,
    Trip,
)

FINAL_PATIENT_STATES = frozenset({"treated", "released", "deceased", "in_treatment"})
MOVING = frozenset({"en_route", "transporting", "returning"})
_NOISE_SIGMA = math.sqrt(math.log(1.0 + TRAVEL_NOISE_CV**2))
_NOISE_MU = -math.log(math.sqrt(1.0 + TRAVEL_NOISE_CV**2))  # -sigma^2 / 2: mean factor 1


def emergency_group_o(p: Patient) -> tuple[str, ...]:
    """Uncross-matched group O a patient of unknown type may get (O-pos first when safe, to
    spare the scarce O-neg)."""
    return ("O+", "O-") if p.o_pos_safe() else ("O-",)


COMPATIBLE_DONORS: dict[str, tuple[str, ...]] = {
    "O-": ("O-",),
    "O+": ("O-", "O+"),
    "A-": ("O-", "A-"),
    "A+": ("O-", "O+", "A-", "A+"),
    "B-": ("O-", "B-"),
    "B+": ("O-", "O+", "B-", "B+"),
    "AB-": ("O-", "A-", "B-", "AB-"),
    "AB+": ("O-", "O+", "A-", "A+", "B-", "B+", "AB-", "AB+"),
}


def callback_spawn(call: Call, p: Patient, at: int) -> PendingSpawn:
    """The caller behind ``call`` (closed with advice) ringing back at minute ``at``."""
    new = Call(
        "",
        at,
        call.node,
        callback_report(call.report, call.call_id),
        p.patient_id,
        call.true_priority,
        secondary=call.secondary,
        callback_of=call.call_id,
    )
    return PendingSpawn(at, p, new, "callback")


def _band(reserve: float) -> int:
    """How many vitals thresholds the reserve is below."""
    return sum(1 for threshold in VITALS_BANDS if reserve < threshold)


class World:
    """All mutable state of one episode plus the rules that move it forward."""

    def __init__(self, task: TaskSpec, seed: int) -> None:
        self.task = task
        self.seed = seed
        scenario = generate(task, seed)
        self.peak_hour = scenario.peak_hour
        self.net = RoadNetwork(scenario.peak_hour)
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
        # None only while fork.private_copy pickles the world (it redraws both streams)
        self.travel_rng: Random | None = Random(f"codered:{task.task_id}:{seed}:travel")
        self.narrative_rng: Random | None = Random(f"codered:{task.task_id}:{seed}:narrative")
        self.clock = 0
        self.events: list[str] = []
        self.notable = False
        self.allocations: list[BloodAllocation] = []
        self.transfers: list[BloodTransfer] = []
        self.initial_blood = self._blood_totals_by_type()
        self.mutual_aid: list[MutualAidRequest] = []
        self.ledger: dict[str, int] = {}
        self.query_result: dict[str, object] | None = None
        self.news_cycle_at: int | None = None
        self.news_cycle_reason = ""
        self.escalated = False
        self.id_counters = [self._max_id("P"), 0]  # call ids are given on arrival
        self._start()

    # ------------------------------------------------------------------ bookkeeping
    def _max_id(self, prefix: str) -> int:
        ids = list(self.patients) + [s.patient.patient_id for s in self.spawns]
        return max((int(i[len(prefix):]) for i in ids), default=0)

    def event(self, text: str) -> None:
        self.events.append(f"t{self.clock} {text}")
        self.notable = True

    def count(self, key: str, n: int = 1) -> None:
        self.ledger[key] = self.ledger.get(key, 0) + n

    def _blood_totals_by_type(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for h in self.hospitals.values():
            for t, n in h.blood.items():
                totals[t] = totals.get(t, 0) + n
        return totals

    def _start(self) -> None:
        for p in self.patients.values():
            p.band = _band(p.reserve)
        self._disruptions(0)
        self._spawns(0)

    # ------------------------------------------------------------------ the tick
    def tick(self) -> None:
        self.clock += 1
        t = self.clock
        self._disruptions(t)
        self._spawns(t)
        self._mutual_aid_arrivals(t)
        self._blood(t)
        self._hospital_timers(t)
        self._ambulances(t)
        self._hospital_care(t)
        self._physiology()
        if self.task.cascades:
            self._cascades(t)

    # ------------------------------------------------------------------ trips
    def draw_noise(self) -> float:
        return self.travel_rng.lognormvariate(_NOISE_MU, _NOISE_SIGMA)

    def plan_trip(
        self, origin: str, target: str, depart: int, purpose: str, speed: float, noise: float
    ) -> Trip | None:
        route = self.net.path(origin, target)
        if route is None:
            return None
        times = [depart]
        acc = float(depart)
        for a, b in itertools.pairwise(route):
            acc += self.net.edge_minutes(a, b) * speed * noise
            times.append(max(times[-1], round(acc)))
        if times[-1] <= depart:
            times[-1] = depart + 1  # turn-out / short hop takes at least a minute
        return Trip(route, times, noise, speed, purpose, target)

    def departure_point(self, amb: Ambulance) -> tuple[str, int]:
        """Where and when a unit can start a new route (finishes its current road segment)."""
        node, depart, _ = self._split_point(amb)
        return node, depart

    def _split_point(self, amb: Ambulance) -> tuple[str, int, int]:
        """(node, departure minute, index of that node in the current trip; -1 without a trip)."""
        trip = amb.trip
        if trip is None:
            return amb.node, self.clock, -1
        i = min(trip.last_index(self.clock) + 1, len(trip.nodes) - 1)
        return trip.nodes[i], max(self.clock, trip.times[i]), i

    def reroute(self, amb: Ambulance) -> None:
        """Re-plan a moving unit after a road change, keeping its trip noise."""
        trip = amb.trip
        if trip is None:
            return
        node, depart, k = self._split_point(amb)
        new = self.plan_trip(node, trip.target, depart, trip.purpose, trip.speed_factor, trip.noise)
        head_nodes, head_times = trip.nodes[: k + 1], trip.times[: k + 1]
        if new is None:
            amb.trip = Trip(head_nodes, head_times, trip.noise, trip.speed_factor, trip.purpose, trip.target)
            amb.held = True
            return
        amb.held = False
        old_arrival = trip.arrival
        amb.trip = Trip(
            head_nodes + new.nodes[1:],
            head_times + new.times[1:],
            trip.noise,
            trip.speed_factor,
            trip.purpose,
            trip.target,
        )
        if amb.trip.arrival != old_arrival:
            eta = self.clock + amb.trip.eta_minutes(self.clock)
            self.event(f"{amb.ambulance_id} rerouted via {'-'.join(amb.trip.nodes)}, ETA ~t{eta}")

    def reroute_all(self) -> None:
        for amb in self.ambulances.values():
            if amb.status in MOVING:
                self.reroute(amb)

    # ------------------------------------------------------------------ disruptions
    def _disruptions(self, t: int) -> None:
        for d in self.disruptions:
            if not d.active and d.start <= t < d.end:
                d.active = True
                self._apply_disruption(d, True)
                self.event(f"ALERT {d.text} (until ~t{d.end})")
            elif d.active and t >= d.end:
                d.active = False
                self._apply_disruption(d, False)
                self.event(f"CLEARED {d.text}")

    def _apply_disruption(self, d: Disruption, on: bool) -> None:
        if d.kind == "road_closure":
            for a, b in d.edges:
                (self.net.close if on else self.net.reopen)(a, b)
            self.reroute_all()
        elif d.kind == "accident_congestion":
            for a, b in d.edges:
                self.net.set_congestion(a, b, ACCIDENT_CONGESTION_FACTOR if on else 1.0)
            self.reroute_all()
        elif d.kind == "hospital_diversion":
            h = self.hospitals[d.hospital_id or ""]
            if on:
                h.diverted_until, h.diversion_reason = max(h.diverted_until, d.end), "ED beds full"
        elif d.kind == "or_failure":
            self._or_failure(d, on)
        elif d.kind == "specialist_unavailable":
            spec = self.hospitals[d.hospital_id or ""].specialists[d.specialty or ""]
            if on:
                spec.state, spec.until, spec.agent_paged = "unavailable", d.end, False
            elif spec.state == "unavailable":
                spec.state = "on_call"

    def _or_failure(self, d: Disruption, on: bool) -> None:
        room = self.hospitals[d.hospital_id or ""].or_by_id(d.or_id or "")
        if room is None:
            return
        if not on:
            room.failure_until = 0
            if room.state == "out_of_service":
                room.state, room.procedure, room.until = "idle", None, 0
            return
        if room.state == "in_use" and room.patient_id:
            room.failure_until = d.end  # the running case finishes; the room fails afterwards
            return
        if room.patient_id and room.patient_id in self.patients:
            self.patients[room.patient_id].or_ref = None
        room.state, room.until, room.elective, room.patient_id = "out_of_service", d.end, False, None
        room.agent_prepared, room.procedure = False, None

    # ------------------------------------------------------------------ arrivals of calls
    def _spawns(self, t: int) -> None:
        while self.spawns and self.spawns[0].at <= t:
            spawn = self.spawns.pop(0)
            self._add_spawn(spawn)

    def _add_spawn(self, spawn: PendingSpawn) -> None:
        p = spawn.patient
        if p.patient_id not in self.patients:
            p.band = _band(p.reserve)
            self.patients[p.patient_id] = p
        if spawn.call is not None:
            call = spawn.call
            call.call_id = self.next_call_id()
            self.calls[call.call_id] = call
            p.call_id = call.call_id
            self.event(f'NEW CALL {call.call_id}: "{call.report}"')
        else:
            self.event(
                f"NEW PATIENT {p.patient_id} at {p.node}: {CONDITIONS[p.condition].label} ({spawn.reason})"
            )

    def schedule(self, spawn: PendingSpawn) -> None:
        self.spawns.append(spawn)
        self.spawns.sort(key=lambda s: s.at)  # stable: same-minute spawns keep scheduling order

    def next_patient_id(self) -> str:
        self.id_counters[0] += 1
        return f"P{self.id_counters[0]}"

    def next_call_id(self) -> str:
        self.id_counters[1] += 1
        return f"C{self.id_counters[1]}"

    def schedule_callback(self, call: Call) -> None:
        """A caller advised at P4 may ring back. Whether and when comes from the report alone
        (triage.callback_plan, on a stream seeded per call), never from the hidden truth."""
        rng = Random(f"codered:{self.task.task_id}:{self.seed}:callback:{call.call_id}")
        delay = callback_plan(call.report, rng)
        if delay is None:
            return
        self.schedule(callback_spawn(call, self.patients[call.patient_id], self.clock + delay))

    # ------------------------------------------------------------------ mutual aid
    def _mutual_aid_arrivals(self, t: int) -> None:
        for req in self.mutual_aid:
            if req.arrived or req.arrives_at > t:
                continue
            req.arrived = True
            amb = Ambulance(req.unit_id, "ALS", "N7", "N7", mutual_aid=True)
            self.ambulances[req.unit_id] = amb
            self.event(f"MUTUAL AID {req.unit_id} (ALS) arrived at N7 {NODE_NAMES['N7']}")
            if req.target_id:
                self._auto_dispatch_mutual_aid(amb, req.target_id)

    def _auto_dispatch_mutual_aid(self, amb: Ambulance, target_id: str) -> None:
        call = self.calls.get(target_id)
        if call is not None and call.status == "pending":
            self.send_unit(amb, self.patients[call.patient_id], call)
        elif target_id in self.patients and self.patients[target_id].status == "awaiting_unit":
            self.send_unit(amb, self.patients[target_id], None)

    def scene_trip(self, amb: Ambulance, p: Patient, call: Call | None) -> Trip | None:
        """The route a unit would take to a patient now (None when every route is closed)."""
        node, depart = self.departure_point(amb)
        return self.plan_trip(node, p.node, depart, "scene", self.speed_for_call(call), 1.0)

    def send_unit(self, amb: Ambulance, p: Patient, call: Call | None) -> bool:
        node, depart = self.departure_point(amb)
        if not self.hot_response(call):
            depart += NON_URGENT_TURNOUT_MIN
        trip = self.plan_trip(node, p.node, depart, "scene", self.speed_for_call(call), self.draw_noise())
        if trip is None:
            return False
        amb.status, amb.trip, amb.held = "en_route", trip, False
        amb.patient_id, amb.call_id = p.patient_id, call.call_id if call else None
        amb.dispatches += 1
        if p.status == "awaiting_unit":
            p.status = "unit_en_route"
        p.ambulance_id = amb.ambulance_id
        if call is not None:
            call.status, call.ambulance_id = "dispatched", amb.ambulance_id
        target = call.call_id if call else p.patient_id
        eta = self.clock + trip.eta_minutes(self.clock)
        self.event(f"{amb.ambulance_id} dispatched to {target} at {p.node}, ETA ~t{eta}")
        return True

    # ------------------------------------------------------------------ blood
    def _blood(self, t: int) -> None:
        for p in self.patients.values():
            if p.blood_type_ready_at is not None and p.blood_type_ready_at <= t and not p.blood_type_known:
                p.blood_type_known = True
                self.event(f"LAB {p.patient_id} blood type {p.blood_type}")
        arrived = [tr for tr in self.transfers if tr.arrives_at <= t]
        for tr in arrived:
            self.transfers.remove(tr)
            self.hospitals[tr.to_hospital].blood[tr.blood_type] += tr.units
            self.event(
                f"BLOOD {tr.units}u {tr.blood_type} arrived at {tr.to_hospital} from {tr.from_hospital}"
            )

    def blood_in_circulation(self) -> dict[str, int]:
        """stock + reserved + in transit + transfused, per type (must equal the initial totals)."""
        totals = self._blood_totals_by_type()
        for a in self.allocations:
            totals[a.blood_type] = totals.get(a.blood_type, 0) + a.units
        for tr in self.transfers:
            totals[tr.blood_type] = totals.get(tr.blood_type, 0) + tr.units
        return totals

    # ------------------------------------------------------------------ OR and specialist timers
    def _hospital_timers(self, t: int) -> None:
        for h in self.hospitals.values():
            for room in h.ors:
                self._room_timer(h, room, t)
            for spec in h.specialists.values():
                if spec.state == "paged" and spec.until <= t:
                    spec.state, spec.until = "present", t + SPECIALIST_WINDOW_MIN
                    self.event(f"{h.hospital_id} {spec.specialty} specialist arrived")
                elif (
                    spec.state == "present"
                    and spec.until <= t
                    and not self._needs_specialist(h, spec.specialty)
                ):
                    if spec.agent_paged and not spec.used:
                        self.count("wasted_page")
                    spec.state, spec.agent_paged, spec.used = "on_call", False, False
                    self.event(f"{h.hospital_id} {spec.specialty} specialist left")

    def _room_timer(self, h: Hospital, room: OperatingRoom, t: int) -> None:
        if room.state == "preparing" and room.until <= t:
            room.state, room.until, room.ready_at = "ready", t + OR_HOLD_WINDOW_MIN, t
            self.event(f"{h.hospital_id} {room.or_id} ready for {room.procedure}")
        elif room.state == "ready" and room.until <= t and room.patient_id is None:
            if room.agent_prepared:
                self.count("unused_or_prep")
            room.state, room.procedure, room.agent_prepared = "idle", None, False
            self.event(f"{h.hospital_id} {room.or_id} preparation expired unused")
        elif room.state == "in_use" and room.until <= t and room.elective:
            room.state, room.elective, room.procedure = "idle", False, None

    def _needs_specialist(self, h: Hospital, specialty: str) -> bool:
        """Is a patient at this hospital waiting for (or being treated by) this specialty?"""
        for pid in h.ed_patients:
            care = self.care_for(self.patients[pid], h)
            if care and care.specialist == specialty:
                return True
        return False

    # ------------------------------------------------------------------ ambulances
    def _ambulances(self, t: int) -> None:
        for amb in self.ambulances.values():
            status = amb.status
            if status == "available":
                continue
            if status in MOVING:
                trip = amb.trip
                if trip is None or t < trip.arrival:
                    continue
                amb.node = trip.nodes[-1]
                if trip.nodes[-1] != trip.target:
                    amb.held = True
                    continue
                amb.trip, amb.held = None, False
                if status == "en_route":
                    self._arrive_scene(amb)
                elif status == "transporting":
                    self._arrive_hospital(amb)
                else:
                    amb.status = "available"
                    self.event(f"{amb.ambulance_id} available at {amb.node}")
            elif status == "on_scene" and t >= amb.busy_until:
                self._leave_scene(amb)
            elif status == "at_hospital" and t >= amb.busy_until:
                self.event(f"{amb.ambulance_id} clear at {amb.node}, free for a new job")
                self._return_home(amb)

    def _arrive_scene(self, amb: Ambulance) -> None:
        p = self.patients[amb.patient_id or ""]
        cond = CONDITIONS[p.condition]
        amb.status = "on_scene"
        p.first_unit_at = self.clock if p.first_unit_at is None else p.first_unit_at
        if p.call_id and p.call_id in self.calls:
            self.calls[p.call_id].status = "on_scene"
        if p.status == "deceased":
            p.visible = True
            amb.busy_until = self.clock + FOUND_DEAD_SCENE_MIN
            self.event(f"{amb.ambulance_id} on scene: {p.patient_id} found dead")
            self._maybe_news_after_death(p.patient_id)
            return
        p.status = "on_scene"
        p.visible = True
        if cond.true_priority in ("P3", "P4") and amb.kind == "ALS":
            self.count("over_triage")
        if cond.true_priority == "P4":
            self.count("dispatch_no_need")
        if cond.true_priority == "P1" and not self.hot_response(self.calls.get(p.call_id or "")):
            self.count("under_triage")
        jitter = self.travel_rng.randint(-ON_SCENE_JITTER_MIN, ON_SCENE_JITTER_MIN)
        scene = (cond.scene_min if cond.transport or cond.treated_on_scene else NO_TRANSPORT_SCENE_MIN)
        scene += jitter
        if p.patient_id in self.mci:
            scene += MCI_EXTRA_SCENE_MIN
        amb.busy_until = self.clock + max(MIN_SCENE_MIN, scene)
        if cond.treated_on_scene:
            self._treat_on_scene(p, amb.busy_until)
        where = f" (call {p.call_id})" if p.call_id else ""
        self.event(
            f"{amb.ambulance_id} on scene{where}: {p.patient_id} is {cond.label} [{cond.true_priority}]"
        )

    def _treat_on_scene(self, p: Patient, until: int) -> None:
        """Definitive care given by the crew itself (defibrillation, reassurance, advice); it
        ends when the crew leaves the scene (``_leave_scene``)."""
        p.status, p.treatment_start = "in_treatment", self.clock
        p.treatment_quality, p.therapy = ON_SCENE_CARE_QUALITY, "on_scene"
        p.treatment_end = until
        p.reserve_at_treatment = round(max(0.0, p.reserve), 3)

    def _leave_scene(self, amb: Ambulance) -> None:
        p = self.patients[amb.patient_id or ""]
        cond = CONDITIONS[p.condition]
        if p.status == "deceased" or not cond.transport:
            if p.status != "deceased":
                resuscitated = cond.true_priority == "P1"
                p.status = "treated" if resuscitated else "released"
                self.event(f"{amb.ambulance_id} treated {p.patient_id} on scene, no transport needed")
            self._return_home(amb)
            return
        hid = self.transport_destination(p)
        if p.destination and hid != p.destination:
            self.event(f"{p.destination} on diversion: {amb.ambulance_id} takes {p.patient_id} to {hid}")
        if hid != p.destination:
            self.note_destination(p, hid)
        trip = self.plan_trip(
            amb.node, self.hospitals[hid].node, self.clock, "hospital", TRANSPORT_FACTOR, self.draw_noise()
        )
        if trip is None:  # every route closed: wait on scene one more minute
            amb.busy_until = self.clock + 1
            return
        amb.status, amb.trip = "transporting", trip
        p.status, p.hospital = "transporting", None
        p.destination = hid
        eta = self.clock + trip.eta_minutes(self.clock)
        self.event(f"{amb.ambulance_id} transporting {p.patient_id} to {hid}, ETA ~t{eta}")

    def transport_destination(self, p: Patient) -> str:
        """The agent's choice unless that hospital is on diversion; else the nearest open ED."""
        if p.destination and not self.diverted(p.destination):
            return p.destination
        origin = p.node
        open_ids = [h for h in self.hospitals if not self.diverted(h)] or list(self.hospitals)
        return min(open_ids, key=lambda h: (self.net.minutes(origin, self.hospitals[h].node), h))

    def diverted(self, hospital_id: str) -> bool:
        return self.hospitals[hospital_id].diverted_until > self.clock

    def _arrive_hospital(self, amb: Ambulance) -> None:
        p = self.patients[amb.patient_id or ""]
        h = self.hospitals[amb.node]
        handover = HANDOVER_MIN + self.travel_rng.randint(-HANDOVER_JITTER_MIN, HANDOVER_JITTER_MIN)
        if h.crowded:
            handover = round(handover * CROWDED_HANDOVER_FACTOR)
        amb.status, amb.busy_until = "at_hospital", self.clock + handover
        self.event(f"{amb.ambulance_id} arrived at {h.hospital_id} with {p.patient_id}")
        if p.status == "deceased":
            return
        self.admit(p, h)

    def _return_home(self, amb: Ambulance) -> None:
        amb.patient_id = amb.call_id = None
        trip = self.plan_trip(amb.node, amb.home, self.clock, "home", 1.0, self.draw_noise())
        if trip is None or amb.node == amb.home:
            amb.status, amb.trip = "available", None
            return
        amb.status, amb.trip = "returning", trip

    # ------------------------------------------------------------------ hospital care
    def care_for(self, p: Patient, h: Hospital) -> Care | None:
        cond = CONDITIONS[p.condition]
        care = cond.care_at(h.tier)
        if p.fallback and care is not None and care.procedure and cond.fallback_care:
            return cond.fallback_care
        return care

    def best_care_available(self, p: Patient) -> bool:
        """Could a hospital giving this condition's best care take the patient now (open, lab in
        service and free, specialist not unavailable)?"""
        cond = CONDITIONS[p.condition]
        best = cond.best_care
        if best is None:
            return True
        for h in self.hospitals.values():
            care = cond.care_at(h.tier)
            if care is None or care.quality < best.quality or self.diverted(h.hospital_id):
                continue
            if care.procedure and self._free_room(h, care.procedure) is None:
                continue
            spec = h.specialists.get(care.specialist or "")
            if care.specialist and (spec is None or spec.state == "unavailable"):
                continue
            return True
        return False

    def note_destination(self, p: Patient, hospital_id: str) -> None:
        """Record the destination and whether the relaxed (transfer) target applies to it."""
        cond = CONDITIONS[p.condition]
        care = cond.care_at(self.hospitals[hospital_id].tier)
        best = cond.best_care
        partial = best is not None and (care is None or care.quality < best.quality)
        p.destination = hospital_id
        p.relaxed_target = partial and not self.best_care_available(p)

    def admit(self, p: Patient, h: Hospital) -> None:
        p.status, p.hospital, p.node = "at_hospital", h.hospital_id, h.node
        p.wait_started = self.clock
        p.blood_ready_at, p.or_ref = None, None
        h.ed_patients.append(p.patient_id)
        care = self.care_for(p, h)
        if p.first_hospital_arrival is None:
            p.first_hospital_arrival = self.clock
            p.arrival_prep = self.measure_prep(p, h, care)
        self._issue_awaiting_sample(p, h)
        if CONDITIONS[p.condition].needs_blood:
            self._hospital_blood(p, h)  # also to stabilise a patient awaiting transfer
        if care is None:
            p.transfer_to = self._transfer_target(p, h)
            p.transfer_arrives_at = None
            self.event(
                f"{h.hospital_id} cannot treat {p.patient_id} ({CONDITIONS[p.condition].label}): "
                f"transfer to {p.transfer_to} after stabilisation"
            )
            return
        self._claim_resources(p, h, care, activated=care.activation_min == 0)

    def measure_prep(self, p: Patient, h: Hospital, care: Care | None) -> dict[str, float]:
        """Readiness on arrival: OR, specialist and blood, each 0..1 (partial while preparing)."""
        cond = CONDITIONS[p.condition]
        if not cond.needs_prep:
            return {}
        zeros = {"or": 0.0, "specialist": 0.0} | ({"blood": 0.0} if cond.needs_blood else {})
        if care is None:
            return zeros
        parts: dict[str, float] = {}
        if care.procedure:
            parts["or"] = self._or_readiness(h, care.procedure)
        if care.specialist:
            spec = h.specialists.get(care.specialist)
            parts["specialist"] = self._specialist_readiness(spec)
        if cond.needs_blood:
            parts["blood"] = self._blood_readiness(p, h)
        best = cond.best_care
        partial = best is not None and care.quality < best.quality
        if parts or not partial or p.relaxed_target or p.fallback:
            return parts  # empty: the care given needs nothing prepared and was the best on offer
        return zeros  # thrombolysis chosen while a hospital able to give PCI could take them

    def _blood_readiness(self, p: Patient, h: Hospital) -> float:
        """1 if blood reserved by the agent is issued and waiting, 0.5 if still being issued."""
        reserved = self._agent_blood(p, h)
        if not reserved:
            return 0.0
        issued = (
            all(not a.awaiting_sample for a in reserved) and min(a.ready_at for a in reserved) <= self.clock
        )
        return 1.0 if issued else BLOOD_PENDING_CREDIT

    def _or_readiness(self, h: Hospital, procedure: str) -> float:
        best = 0.0
        for room in h.ors:
            if room.patient_id is not None or room.procedure != procedure:
                continue
            if room.state == "ready":
                return 1.0
            if room.state == "preparing" and room.prep_total > 0:
                best = max(best, 1.0 - (room.until - self.clock) / room.prep_total)
        return round(best, 3)

    def _specialist_readiness(self, spec) -> float:
        if spec is None:
            return 0.0
        if spec.state == "present":
            return 1.0
        if spec.state == "paged" and spec.page_delay > 0:
            return round(max(0.0, 1.0 - (spec.until - self.clock) / spec.page_delay), 3)
        return 0.0

    def _transfer_target(self, p: Patient, h: Hospital) -> str:
        cond = CONDITIONS[p.condition]
        options = [x for x in self.hospitals.values() if cond.care_at(x.tier) and x is not h]
        options.sort(
            key=lambda x: (
                -cond.care_at(x.tier).quality,
                self.diverted(x.hospital_id),
                self.net.minutes(h.node, x.node),
                x.hospital_id,
            )
        )
        return options[0].hospital_id

    def _hospital_blood(self, p: Patient, h: Hospital) -> None:
        """Blood reserved by the agent, else the hospital's own supply: type-specific for a typed
        patient (immediate-spin cross-match on the sample), else uncross-matched group O (O-pos
        unless she is of child-bearing age), else typing then type-specific."""
        reserved = self._agent_blood(p, h)
        if reserved:
            p.blood_ready_at = min(a.ready_at for a in reserved)
            return
        units = BLOOD_UNITS_PER_CASE
        donors = sorted(COMPATIBLE_DONORS[p.blood_type], key=lambda t: (t == "O-", t != p.blood_type))
        type_specific = [t for t in donors if t != "O-"]
        if p.blood_type_known and self._reserve_first(p, h, type_specific, units):
            p.blood_ready_at = self.clock + TYPE_SPECIFIC_MIN
            return
        if self._reserve_first(p, h, list(emergency_group_o(p)), units):
            p.blood_ready_at = self.clock + O_NEG_RELEASE_MIN
            return
        if self._reserve_first(p, h, donors, units):
            typing = 0 if p.blood_type_known else HOSPITAL_TYPING_MIN
            p.blood_ready_at = self.clock + typing + TYPE_SPECIFIC_MIN

    def _issue_awaiting_sample(self, p: Patient, h: Hospital) -> None:
        """Type-specific units reserved before arrival are cross-matched once the sample is in."""
        for a in self._agent_blood(p, h):
            if a.awaiting_sample:
                a.awaiting_sample, a.ready_at = False, self.clock + TYPE_SPECIFIC_MIN

    def _transfuse(self, p: Patient, h: Hospital) -> None:
        """Blood issued for the patient at this hospital is given (treatment or stabilisation)."""
        for a in self.allocations:
            if (
                a.patient_id == p.patient_id
                and a.hospital_id == h.hospital_id
                and not a.used
                and not a.awaiting_sample
                and a.ready_at <= self.clock
            ):
                a.used = True
                p.transfused_units += a.units

    def _agent_blood(self, p: Patient, h: Hospital) -> list[BloodAllocation]:
        return [
            a
            for a in self.allocations
            if a.by_agent and not a.used and a.patient_id == p.patient_id and a.hospital_id == h.hospital_id
        ]

    def _reserve_first(self, p: Patient, h: Hospital, types: list[str], units: int) -> bool:
        for blood_type in types:
            if h.blood.get(blood_type, 0) >= 1:
                self._reserve(p, h, blood_type, min(units, h.blood[blood_type]))
                return True
        return False

    def _reserve(self, p: Patient, h: Hospital, blood_type: str, units: int) -> None:
        h.blood[blood_type] -= units
        self.allocations.append(
            BloodAllocation(p.patient_id, h.hospital_id, blood_type, units, self.clock, ready_at=self.clock)
        )

    def _claim_resources(self, p: Patient, h: Hospital, care: Care, activated: bool) -> None:
        """Claim a room readied in advance at once; the hospital readies an idle room and pages
        the specialist itself only once it has activated (``care.activation_min`` after arrival)."""
        if care.procedure and p.or_ref is None:
            room = self._find_room(h, care.procedure)
            if room is not None and (activated or room.state != "idle"):
                if room.state == "idle":
                    room.state, room.procedure = "preparing", care.procedure
                    room.prep_total = self._prep_minutes(h, room, care.procedure)
                    room.until = self.clock + room.prep_total
                    room.agent_prepared = False
                room.patient_id = p.patient_id
                p.or_ref = (h.hospital_id, room.or_id)
        if care.specialist and activated:
            spec = h.specialists.get(care.specialist)
            if spec is not None and spec.state == "on_call":
                spec.state, spec.until = "paged", self.clock + spec.page_delay

    def _prep_minutes(self, h: Hospital, room: OperatingRoom, procedure: str) -> int:
        if "cath_lab" in room.procedures:
            return room.prep_total or CATH_LAB_PREP_RANGE[0]
        return OR_PREP_MIN_BY_TIER[h.tier]

    def _find_room(self, h: Hospital, procedure: str) -> OperatingRoom | None:
        rank = {state: i for i, state in enumerate(("ready", "preparing", "idle"))}
        best: OperatingRoom | None = None
        for room in h.ors:
            if procedure not in room.procedures or room.patient_id is not None:
                continue
            if room.state in ("ready", "preparing") and room.procedure != procedure:
                continue
            if room.state not in rank:
                continue
            if best is None or rank[room.state] < rank[best.state]:
                best = room
        return best

    def _free_room(self, h: Hospital, procedure: str) -> OperatingRoom | None:
        """A room for ``procedure`` nobody else has claimed, idle or readied for it."""
        return self._find_room(h, procedure)

    def _hospital_care(self, t: int) -> None:
        for p in list(self.patients.values()):
            if p.status == "at_hospital":
                h = self.hospitals[p.hospital or ""]
                care = self.care_for(p, h)
                if care is None:
                    self._maybe_transfer_out(p, h, t)
                else:
                    activated = t >= (p.wait_started or t) + care.activation_min
                    self._claim_resources(p, h, care, activated)
                    if (
                        activated
                        and care.procedure
                        and p.or_ref is None
                        and self._lab_unavailable(p, h, care)
                    ):
                        care = self._fall_back(p, h)
                    self._maybe_start_treatment(p, h, care, t)
            elif (
                p.status == "transferring"
                and p.transfer_arrives_at is not None
                and p.transfer_arrives_at <= t
            ):
                h = self.hospitals[p.transfer_to or ""]
                self.event(f"{p.patient_id} arrived at {h.hospital_id} by inter-facility transfer")
                self.admit(p, h)
            elif (
                p.status == "in_treatment"
                and p.hospital is not None  # on-scene care ends when the crew leaves
                and p.treatment_end is not None
                and p.treatment_end <= t
            ):
                self._finish_treatment(p)

    def _lab_unavailable(self, p: Patient, h: Hospital, care: Care) -> bool:
        """Fallback care (thrombolysis) is given when the specialist is unavailable, or when no
        room for the procedure is free and the earliest the procedure could start gives a worse
        expected outcome than the fallback now (ESC: lysis when PCI would come too late)."""
        cond = CONDITIONS[p.condition]
        fallback = cond.fallback_care
        if fallback is None:
            return False
        spec = h.specialists.get(care.specialist or "")
        if spec is not None and spec.state == "unavailable":
            return True
        if self._free_room(h, care.procedure or "") is not None:
            return False
        wait = self._room_wait(h, care.procedure or "")
        prep = OR_PREP_MIN_BY_TIER[h.tier] if h.tier in OR_PREP_MIN_BY_TIER else CATH_LAB_PREP_RANGE[0]
        best_start = self.clock + wait + max(prep, CATH_LAB_PREP_RANGE[0]) + care.room_min
        lysis_start = max(self.clock, (p.wait_started or self.clock) + fallback.door_min)
        onset = p.onset_min
        procedure = expected_outcome(cond, best_start - p.appeared_at, care.quality, onset, care.therapy)
        lysis = expected_outcome(cond, lysis_start - p.appeared_at, fallback.quality, onset, fallback.therapy)
        return lysis > procedure

    def _room_wait(self, h: Hospital, procedure: str) -> float:
        """Minutes until some room able to host ``procedure`` could be free (inf if none)."""
        waits = []
        for room in h.ors:
            if procedure not in room.procedures:
                continue
            remaining = max(0, room.until - self.clock)
            if room.state in ("preparing", "ready") and room.patient_id is not None:
                remaining += PROCEDURE_DURATION_MIN.get(room.procedure or procedure, 0)
            if room.state == "in_use" and room.failure_until > self.clock:
                remaining = max(remaining, room.failure_until - self.clock)
            waits.append(remaining)
        return min(waits, default=float("inf"))

    def _fall_back(self, p: Patient, h: Hospital) -> Care | None:
        p.fallback = True
        care = self.care_for(p, h)
        self.event(f"{h.hospital_id} lab unavailable for {p.patient_id}: {care.label if care else 'no care'}")
        return care

    def _maybe_transfer_out(self, p: Patient, h: Hospital, t: int) -> None:
        if t < (p.wait_started or t) + TRANSFER_DOOR_IN_DOOR_OUT_MIN:
            return
        target = self.hospitals[p.transfer_to or ""]
        minutes = self.net.minutes(h.node, target.node)
        if minutes == float("inf"):
            return
        self._transfuse(p, h)  # blood given to stabilise before the transfer counts as used
        h.ed_patients.remove(p.patient_id)
        p.status, p.hospital, p.transferred = "transferring", None, True
        p.transfer_arrives_at = t + max(1, round(minutes * TRANSPORT_FACTOR))
        self.event(
            f"{p.patient_id} leaves {h.hospital_id} for {target.hospital_id}, ETA t{p.transfer_arrives_at}"
        )

    def _maybe_start_treatment(self, p: Patient, h: Hospital, care: Care, t: int) -> None:
        door = care.door_min * (CROWDED_DOOR_FACTOR if h.crowded else 1.0)
        waited = t - (p.wait_started or t)
        if waited < door:
            return
        room = None
        if care.procedure:
            if p.or_ref is None:
                return
            room = h.or_by_id(p.or_ref[1])
            if room is None or room.state != "ready" or t < room.ready_at + care.room_min:
                return
        if care.specialist and h.specialists[care.specialist].state != "present":
            return
        quality = care.quality
        if CONDITIONS[p.condition].needs_blood and not p.has_blood(t):
            if waited < NO_BLOOD_SURGERY_WAIT_MIN:
                return
            quality *= NO_BLOOD_QUALITY
        self._start_treatment(p, h, care, room, quality)

    def _start_treatment(
        self, p: Patient, h: Hospital, care: Care, room: OperatingRoom | None, quality: float
    ) -> None:
        cond = CONDITIONS[p.condition]
        p.status, p.treatment_start = "in_treatment", self.clock
        p.treatment_quality, p.therapy = quality, care.therapy
        p.reserve_at_treatment = round(max(0.0, p.reserve), 3)
        p.treatment_end = self.clock + cond.treatment_minutes(care)
        if room is not None:
            room.state, room.until, room.procedure = "in_use", p.treatment_end, care.procedure
            h.ed_patients.remove(p.patient_id)
        if care.specialist:
            h.specialists[care.specialist].used = True
        self._transfuse(p, h)
        delay = self.clock - p.appeared_at
        self.event(
            f"TREATMENT {p.patient_id} {care.label} started at {h.hospital_id} ({delay} min after call)"
        )

    def _finish_treatment(self, p: Patient) -> None:
        h = self.hospitals[p.hospital or ""]
        care = self.care_for(p, h)
        p.status = "treated"
        if p.or_ref:
            room = h.or_by_id(p.or_ref[1])
            if room is not None and room.patient_id == p.patient_id:
                room.state, room.patient_id, room.procedure = "idle", None, None
                room.agent_prepared = False
                if room.failure_until > self.clock:
                    room.state, room.until = "out_of_service", room.failure_until
        elif p.patient_id in h.ed_patients:
            h.ed_patients.remove(p.patient_id)
        if care and care.specialist:
            spec = h.specialists[care.specialist]
            if spec.state == "present":
                spec.until = max(spec.until, self.clock + SPECIALIST_STAY_AFTER_CASE_MIN)
        if CONDITIONS[p.condition].true_priority == "P1":
            if h.icu_used < h.icu_beds:
                h.icu_used += 1
            else:
                h.boarders += 1
        self.event(f"{p.patient_id} treatment complete at {h.hospital_id}")

    # ------------------------------------------------------------------ physiology
    def _physiology(self) -> None:
        for p in self.patients.values():
            if p.status in FINAL_PATIENT_STATES:
                continue
            rate = CONDITIONS[p.condition].deterioration_per_min
            if rate == 0.0:
                continue
            p.reserve -= rate * self._care_factor(p)
            if p.reserve <= 0.0:
                self._death(p)
            elif p.band < len(VITALS_BANDS) and p.reserve < VITALS_BANDS[p.band]:
                p.band = _band(p.reserve)
                if p.visible:
                    self.event(f"VITALS {p.patient_id} worsening (vitals score {p.reserve:.2f})")

    def _care_factor(self, p: Patient) -> float:
        status = p.status
        factor = 1.0
        if p.cpr_from is not None and status in ("awaiting_unit", "unit_en_route"):
            return TELEPHONE_CPR_FACTOR
        if status in ("on_scene", "transporting") and p.ambulance_id:
            kind = self.ambulances[p.ambulance_id].kind
            factor = ALS_DETERIORATION_FACTOR if kind == "ALS" else BLS_DETERIORATION_FACTOR
        elif status in ("at_hospital", "transferring"):
            factor = ED_DETERIORATION_FACTOR
            if status == "at_hospital" and self.hospitals[p.hospital or ""].crowded:
                factor *= CROWDING_HAZARD
            if CONDITIONS[p.condition].needs_blood and p.has_blood(self.clock):
                factor *= BLOOD_TRANSFUSION_FACTOR
        return factor

    def _death(self, p: Patient) -> None:
        p.reserve, p.status, p.died_at = 0.0, "deceased", self.clock
        if p.hospital and p.patient_id in self.hospitals[p.hospital].ed_patients:
            self.hospitals[p.hospital].ed_patients.remove(p.patient_id)
        if p.or_ref:
            room = self.hospitals[p.or_ref[0]].or_by_id(p.or_ref[1])
            if room is not None and room.patient_id == p.patient_id and room.state != "in_use":
                room.patient_id = None
            p.or_ref = None
        if not p.visible:
            return  # nobody knows yet: a crew will find out on scene
        self.event(f"DEATH {p.patient_id} died")
        self._maybe_news_after_death(p.patient_id)

    def _maybe_news_after_death(self, label: str) -> None:
        """A death becomes known (in view, or found by a crew) and may make the news."""
        if (
            self.task.cascades
            and self.task.phase == 2
            and self.news_cycle_at is None
            and self.narrative_rng.random() < NEWS_CYCLE_DEATH_PROBABILITY
        ):
            self._news_cycle(f"death of {label}")

    # ------------------------------------------------------------------ cascades
    def _cascades(self, t: int) -> None:
        for h in self.hospitals.values():
            if h.occupancy >= h.capacity + 1 and not self.diverted(h.hospital_id):
                h.diverted_until, h.diversion_reason = t + CROWDING_DIVERSION_MIN, "overcrowded"
                h.overcrowding_events += 1
                self.event(
                    f"ALERT {h.hospital_id} overcrowded ({h.occupancy}/{h.capacity}): "
                    f"on diversion until t{h.diverted_until}"
                )
        if self.incident_node and not self.escalated and t >= self.incident_start + INCIDENT_ESCALATION_MIN:
            self._maybe_escalate_incident(t)
        if self.task.phase == 2 and self.news_cycle_at is None:
            for call in self.calls.values():
                if call.status == "pending" and t - call.received_at >= NEWS_CYCLE_WAIT_MIN:
                    self._news_cycle(f"caller {call.call_id} waited {t - call.received_at} min for a unit")
                    break

    def _maybe_escalate_incident(self, t: int) -> None:
        self.escalated = True
        if any(self.patients[pid].first_unit_at is not None for pid in self.mci if pid in self.patients):
            return
        spawn = escalation_casualty(
            self.narrative_rng, self.next_patient_id(), self.incident_node or "N0", t + 1, self.task.phase
        )
        self.mci.add(spawn.patient.patient_id)
        self.schedule(spawn)
        self.event(
            f"ALERT incident at {self.incident_node} unattended for {INCIDENT_ESCALATION_MIN} min: "
            "a bystander has been hurt"
        )

    def _news_cycle(self, reason: str) -> None:
        self.news_cycle_at, self.news_cycle_reason = self.clock, reason
        spawns = surge_calls(self.narrative_rng, self.id_counters[0], self.clock)
        self.id_counters[0] += len(spawns)
        for spawn in spawns:
            self.schedule(spawn)
        self.event(f"ALERT news cycle after {reason}: call volume surging")

    # ------------------------------------------------------------------ queries used by several modules
    @staticmethod
    def response_level(call: Call | None) -> str | None:
        """The level a unit responds at: the call's triage, or the protocol default if the call
        is uncoded (params.UNTRIAGED_RESPONSE); None for a known patient in phase 1."""
        if call is None:
            return None
        return call.priority or UNTRIAGED_RESPONSE

    def hot_response(self, call: Call | None) -> bool:
        level = self.response_level(call)
        return level is None or level in HOT_PRIORITIES

    def speed_for_call(self, call: Call | None) -> float:
        return LIGHTS_AND_SIRENS_FACTOR if self.hot_response(call) else NON_URGENT_FACTOR

    def request_blood_type(self, p: Patient) -> None:
        p.blood_type_ready_at = self.clock + BLOOD_TYPE_QUERY_MIN

    def resolved(self) -> bool:
        """Nothing left to happen: no future calls, no open call, and every patient the dispatcher
        knows of in a final state (a hidden caller's fate never ends an episode early)."""
        if self.spawns or any(c.status in ("pending", "dispatched") for c in self.calls.values()):
            return False
        return all(p.status in FINAL_PATIENT_STATES for p in self.patients.values() if p.visible)
