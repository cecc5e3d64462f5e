"""``fork``: a copy of an episode that knows only what the agent could know (for planning).

A planning agent may simulate forward from the current state, but a plain copy of the world
also holds the future (calls and disruptions not yet announced) and every caller's true
condition. ``fork_world`` turns a copy into a *sample from the agent's belief*: everything the
agent has observed (or could have by a free look at the observation) is kept, every hidden part
is redrawn from the same distributions the generator uses, conditioned on what was observed.

Kept: the clock, the road network and active disruptions (with their announced end), the
hospitals' states (OR states, specialists' states and announced times, blood stock, crowding,
diversion), every unit's position, job and announced timers, visible patients' conditions and
reserve (shown as the vitals score), every call already received and its report, the agent's
triage, reservations, transfers, queries, mutual-aid requests (with their announced arrival),
the ledger of the episode so far, and the timers the agent started (OR preparation).

Redrawn (from a ``random.Random`` seeded by the parent's task, seed, step and the fork seed):
- callers nobody has reached (hidden patients): the true condition from
  ``triage.condition_posterior(call)``, restricted to conditions consistent with what happened
  (still alive after the minutes waited; a P4-advised caller who has not rung back yet, or whose
  callback came at the minute only one priority explains); then the patient's initial reserve
  (uniform on the part of the condition's range that keeps them alive until now), blood type,
  baseline HR/SBP, stroke onset, the call's true priority and any callback still to come;
- blood types nobody has typed yet (visible patients too);
- specialists' page delays while not paged, the cath lab's preparation time while it is idle,
  and the remaining minutes of elective cases (uniform given still running);
- the traffic noise of every trip in progress (the shown noise-free ETA is kept);
- calls and casualties not yet announced: replaced by a fresh draw of the task's generator
  (calls after the current minute; the task5 incident if it has not begun, at the known incident
  otherwise; the pending secondary casualty of task3/task5 at the known scene; a news-cycle surge
  already announced; an announced escalation casualty keeps its time and place);
- disruptions that have not started: the missing number (the task's count is public) redrawn
  from the task's pool without the kinds already seen;
- the travel and narrative random streams (trip noise, scene and handover jitter, mutual-aid
  delay, news-cycle draws).
Ids of future patients and calls are renumbered from the highest id the agent has seen, so the
id counters reveal nothing.
"""

from __future__ import annotations

import pickle
from random import Random
from typing import TYPE_CHECKING

from .city import RoadNetwork
from .conditions import CONDITIONS
from .generator import (
    _PHASE1_BUILDERS,
    DISRUPTION_POOLS,
    Scenario,
    _disruption,
    _Ids,
    _phase2,
    _weighted,
    surge_calls,
)
from .params import (
    BASELINE_HR_RANGE,
    BASELINE_SBP_RANGE,
    BLOOD_TYPE_FREQUENCY,
    CALLBACK_DELAY_BY_PRIORITY,
    CATH_LAB_PREP_RANGE,
    ELECTIVE_REMAINING_RANGE,
    SPECIALIST_PAGE_DELAY_BY_TIER,
    STROKE_ONSET_BEFORE_CALL_RANGE,
)
from .tasks import TaskSpec
from .triage import callback_report, condition_posterior
from .types import Call, Patient, PendingSpawn
from .world import World, _band

if TYPE_CHECKING:
    from .env import CodeRedSim

_MAX_DRAWS = 20
_ESCALATION = "incident escalated"


def fork_rng(task_id: str, seed: int, step: int, fork_seed: int) -> Random:
    return Random(f"codered:{task_id}:{seed}:fork:{step}:{fork_seed}")


def private_copy(sim: CodeRedSim) -> CodeRedSim:
    """A deep copy of an episode without the parts a fork redraws anyway (random streams, calls
    still to come): pickling copies every field, including fields added later, and keeps shared
    objects shared; about six times faster than ``copy.deepcopy`` (bench/bench_fork.py). The
    parent's attributes are detached only for the duration of the copy."""
    world = sim.world
    saved = world.travel_rng, world.narrative_rng, world.spawns
    world.travel_rng = world.narrative_rng = None
    world.spawns = [s for s in saved[2] if _carried(s)]
    try:
        return pickle.loads(pickle.dumps(sim, protocol=pickle.HIGHEST_PROTOCOL))
    finally:
        world.travel_rng, world.narrative_rng, world.spawns = saved


def _carried(spawn: PendingSpawn) -> bool:
    """Future arrivals whose existence the agent knows: callbacks and announced escalations."""
    return bool(spawn.call is not None and spawn.call.callback_of) or spawn.reason.startswith(_ESCALATION)


def fork_world(world: World, rng: Random, parent_spawns: list[PendingSpawn]) -> None:
    """Redraw every hidden part of ``world`` (a ``private_copy``) in place; ``parent_spawns``
    (read only) tells whether the incident's secondary casualty is still to come."""
    world.travel_rng = Random(rng.getrandbits(64))
    world.narrative_rng = Random(rng.getrandbits(64))
    callbacks = _pending_callbacks(world)
    _resample_callers(world, rng, callbacks)
    _resample_blood_types(world, rng)
    _resample_hospital_timers(world, rng)
    _renoise_trips(world, rng)
    shadow = _shadow_arrivals(world.task, rng)
    _replace_future(world, rng, callbacks, shadow, parent_spawns)
    _replace_disruptions(world, rng, shadow)


def _shadow_arrivals(task: TaskSpec, rng: Random) -> Scenario:
    """The patients and calls of a fresh draw of the task's generator (hospitals, fleet and
    disruptions are not drawn: a fork keeps the first two and redraws only missing disruptions)."""
    builder = _PHASE1_BUILDERS.get(task.task_id, _phase2)
    patients, calls, spawns, incident, mci = builder(Random(rng.getrandbits(64)), _Ids(), task)
    return Scenario(False, {}, {}, patients, calls, spawns, [], incident, mci)


# ------------------------------------------------------------------ callers
def _pending_callbacks(world: World) -> dict[str, PendingSpawn]:
    """Original call id -> its callback still to come."""
    return {s.call.callback_of: s for s in world.spawns if s.call is not None and s.call.callback_of}


def _resample_callers(world: World, rng: Random, callbacks: dict[str, PendingSpawn]) -> None:
    """Every caller no crew has reached, with the chain of calls (original, callbacks) they made."""
    chains: dict[str, list[Call]] = {}
    for call in world.calls.values():  # in the order they came in
        chains.setdefault(call.patient_id, []).append(call)
    for patient_id, chain in chains.items():
        p = world.patients[patient_id]
        if p.visible:
            continue
        last = chain[-1]
        advised = last.status == "closed_advice"
        if advised and p.status == "released":
            p.status = "awaiting_unit"  # released only if truly P4, which is what we redraw
        condition = _weighted(rng, _consistent(world, chain, p))
        _redraw_patient(world, p, condition, rng)
        for call in chain:
            call.true_priority = CONDITIONS[condition].true_priority
        if advised:
            callbacks.pop(last.call_id, None)
            _redo_callback(world, last, p, callbacks)


def _consistent(world: World, chain: list[Call], p: Patient) -> dict[str, float]:
    """The posterior from the report, times how likely each condition makes what happened since:
    alive after the minutes waited; after P4 advice, a callback exactly when that priority rings
    back (or none yet)."""
    posterior = condition_posterior(chain[0])
    weights: dict[str, float] = {}
    for condition, prob in posterior.items():
        spec = CONDITIONS[condition]
        w = prob * _callbacks_fit(world, chain, spec.true_priority)
        if p.status not in ("deceased", "released"):
            w *= _survival(spec.initial_reserve, spec.deterioration_per_min * _minutes_waited(world, p))
        if w > 0.0:
            weights[condition] = w
    return weights or posterior


def _callbacks_fit(world: World, chain: list[Call], priority: str) -> float:
    for i, call in enumerate(chain):
        if call.status != "closed_advice" or call.closed_at is None:
            continue
        due = call.closed_at + CALLBACK_DELAY_BY_PRIORITY.get(priority, 0)
        if i + 1 < len(chain):
            if priority == "P4" or due != chain[i + 1].received_at:
                return 0.0
        elif priority != "P4" and due <= world.clock:
            return 0.0
    return 1.0


def _minutes_waited(world: World, p: Patient) -> int:
    """Minutes of untreated deterioration since the call (a spawn at t>0 deteriorates in its tick)."""
    return world.clock - p.appeared_at + (1 if p.appeared_at > 0 else 0)


def _survival(reserve_range: tuple[float, float], drop: float) -> float:
    lo, hi = reserve_range
    if hi <= lo:
        return 1.0 if hi > drop else 0.0
    return min(1.0, max(0.0, (hi - max(lo, drop)) / (hi - lo)))


def _redraw_patient(world: World, p: Patient, condition: str, rng: Random) -> None:
    spec = CONDITIONS[condition]
    p.condition = condition
    p.blood_type = _weighted(rng, BLOOD_TYPE_FREQUENCY)
    p.hr0 = rng.randint(*BASELINE_HR_RANGE)
    p.sbp0 = rng.randint(*BASELINE_SBP_RANGE)
    p.onset_min = rng.randint(*STROKE_ONSET_BEFORE_CALL_RANGE) if condition == "stroke" else 0
    if p.status in ("deceased", "released"):
        return
    lo, hi = spec.initial_reserve
    drop = spec.deterioration_per_min * _minutes_waited(world, p)
    start = rng.uniform(max(lo, min(hi, drop)), hi)
    p.reserve = max(0.001, round(start, 3) - drop)
    p.band = _band(p.reserve)


def _redo_callback(world: World, call: Call, p: Patient, callbacks: dict[str, PendingSpawn]) -> None:
    """A P4-advised caller: released if truly P4, else rings back at the time the truth implies."""
    priority = call.true_priority
    if priority == "P4":
        if p.status != "deceased":
            p.status = "released"
        return
    closed = call.closed_at if call.closed_at is not None else call.received_at
    at = max(world.clock + 1, closed + CALLBACK_DELAY_BY_PRIORITY[priority])
    new = Call(
        "", at, call.node, callback_report(call.report), p.patient_id, priority,
        secondary=call.secondary, callback_of=call.call_id,
    )
    callbacks[call.call_id] = PendingSpawn(at, p, new, "callback")


# ------------------------------------------------------------------ other hidden state
def _resample_blood_types(world: World, rng: Random) -> None:
    for p in world.patients.values():
        if p.visible and not p.blood_type_known:
            p.blood_type = _weighted(rng, BLOOD_TYPE_FREQUENCY)


def _resample_hospital_timers(world: World, rng: Random) -> None:
    cath_prep = rng.randint(*CATH_LAB_PREP_RANGE)
    lo_e, hi_e = ELECTIVE_REMAINING_RANGE
    for h in world.hospitals.values():
        lo, hi = SPECIALIST_PAGE_DELAY_BY_TIER[h.tier]
        for spec in h.specialists.values():
            if spec.state in ("on_call", "unavailable"):
                spec.page_delay = rng.randint(lo, hi)
        for room in h.ors:
            if "cath_lab" in room.procedures and room.state == "idle" and not room.agent_prepared:
                room.prep_total = cath_prep
            if room.state == "in_use" and room.elective and room.until > world.clock:
                room.until = rng.randint(max(lo_e, world.clock + 1), max(hi_e, world.clock + 1))


def _renoise_trips(world: World, rng: Random) -> None:
    """Keep the shown (noise-free) ETA of every leg still ahead; redraw its traffic noise."""
    now = world.clock
    for amb in world.ambulances.values():
        trip = amb.trip
        if trip is None or trip.arrival <= now or trip.noise <= 0:
            continue
        noise = world.draw_noise()
        scale = noise / trip.noise
        last = now
        for i, t in enumerate(trip.times):
            if t > now:
                t = max(last, now + max(1, round((t - now) * scale)))
                trip.times[i] = t
                last = t
        trip.noise = noise


# ------------------------------------------------------------------ the future
def _replace_future(
    world: World,
    rng: Random,
    callbacks: dict[str, PendingSpawn],
    shadow: Scenario,
    parent_spawns: list[PendingSpawn],
) -> None:
    carried = world.spawns
    incident_ids = set(world.mci)
    world.mci = {pid for pid in world.mci if pid in world.patients}
    regular = [s for s in shadow.spawns if s.patient.patient_id not in shadow.mci_patients]
    future = [(s, False) for s in callbacks.values()]
    future += [(s, False) for s in regular if s.at > world.clock]
    future += [(s, True) for s in _incident_future(world, parent_spawns, shadow, incident_ids)]
    future += [(s, False) for s in _surge_future(world, rng)]
    future += [(_redraw_escalation(s, rng), True) for s in carried if s.reason.startswith(_ESCALATION)]
    world.spawns = []
    world.id_counters = [_max_id(world.patients, "P"), _max_id(world.calls, "C")]
    future.sort(key=lambda item: (item[0].at, item[0].reason))
    for spawn, in_incident in future:
        _renumber(world, spawn)
        if in_incident:
            world.mci.add(spawn.patient.patient_id)
        world.schedule(spawn)


def _incident_future(
    world: World, old: list[PendingSpawn], shadow: Scenario, incident_ids: set[str]
) -> list[PendingSpawn]:
    """The incident's casualties still to come: the shadow incident if ours has not begun, else
    only the pending secondary casualty, at the known scene."""
    mci = [s for s in shadow.spawns if s.patient.patient_id in shadow.mci_patients]
    if not mci:
        return []
    begun = any(pid in world.patients for pid in world.mci)
    at_start = [p.appeared_at for p in shadow.patients.values() if p.patient_id in shadow.mci_patients]
    shadow_start = min([s.at for s in mci] + at_start)
    if not begun:
        shift = max(0, world.clock + 1 - shadow_start)
        for s in mci:
            s.at += shift
            s.patient.appeared_at = s.at
            if s.call:
                s.call.received_at = s.at
        world.incident_node = shadow.incident_node
        world.incident_start = shadow_start + shift
        return mci
    pending = [
        s
        for s in old
        if s.patient.patient_id in incident_ids
        and s.patient.secondary
        and not s.reason.startswith(_ESCALATION)
    ]
    if not pending:
        return []
    secondary = next((s for s in mci if s.patient.secondary), mci[-1])
    secondary.at = max(world.clock + 1, world.incident_start + secondary.at - shadow_start)
    secondary.patient.appeared_at = secondary.at
    secondary.patient.node = world.incident_node or secondary.patient.node
    if secondary.call:
        secondary.call.received_at, secondary.call.node = secondary.at, secondary.patient.node
    return [secondary]


def _surge_future(world: World, rng: Random) -> list[PendingSpawn]:
    """An announced news cycle: its surge calls still to come (their number and times are hidden)."""
    if world.news_cycle_at is None:
        return []
    spawns = surge_calls(rng, (0, 0), world.news_cycle_at)
    return [s for s in spawns if s.at > world.clock]


def _redraw_escalation(spawn: PendingSpawn, rng: Random) -> PendingSpawn:
    """An announced escalation casualty: its time, place and injury are known, its body is not."""
    p = spawn.patient
    p.reserve = round(rng.uniform(*CONDITIONS[p.condition].initial_reserve), 3)
    p.blood_type = _weighted(rng, BLOOD_TYPE_FREQUENCY)
    p.hr0, p.sbp0 = rng.randint(*BASELINE_HR_RANGE), rng.randint(*BASELINE_SBP_RANGE)
    p.band = _band(p.reserve)
    return spawn


def _max_id(items: dict[str, object], prefix: str) -> int:
    return max((int(i[1:]) for i in items if i.startswith(prefix) and i[1:].isdigit()), default=0)


def _renumber(world: World, spawn: PendingSpawn) -> None:
    """Fresh ids for a future patient (unless it is a caller already known) and its call."""
    p = spawn.patient
    new_patient = world.patients.get(p.patient_id) is not p
    if new_patient:
        p.patient_id = world.next_patient_id()
    if spawn.call is not None:
        spawn.call.call_id = world.next_call_id()
        spawn.call.patient_id = p.patient_id
        if new_patient:
            p.call_id = spawn.call.call_id


def _replace_disruptions(world: World, rng: Random, shadow: Scenario) -> None:
    seen = [d for d in world.disruptions if d.start <= world.clock]
    missing = world.task.disruptions - len(seen)
    if missing <= 0:
        world.disruptions = seen
        return
    kinds_seen = {d.kind for d in seen}
    pool = [k for k in DISRUPTION_POOLS.get(world.task.task_id, ()) if k not in kinds_seen]
    kinds = rng.sample(pool, min(missing, len(pool)))
    net = RoadNetwork(world.peak_hour)
    origins = list(world.origins)
    if world.task.phase == 2:  # the first call is known; later callers' places are not
        origins = origins[:1] + [s.patient.node for s in shadow.spawns[1:]]
    fresh = []
    for kind in kinds:
        for _ in range(_MAX_DRAWS):
            d = _disruption(rng, kind, net, origins, world.task)
            if d.start > world.clock:
                break
        if d.start <= world.clock:
            shift = world.clock + 1 - d.start
            d.start, d.end = d.start + shift, d.end + shift
        fresh.append(d)
    world.disruptions = seen + fresh
