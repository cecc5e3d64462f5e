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
  ``call_sources.call_posterior``, with the prior the call's arrival minute implies
  (the task's regular call mix, the news-cycle surge mix while a surge runs, the incident's
  injuries for the calls at a known incident's place and minute); nothing else the agent sees
  depends on the truth (a hidden death raises no event, a callback's timing comes from the report
  alone). Then the patient's initial reserve (uniform on the condition's range) replayed minute
  by minute since the call, with telephone CPR from the minute the agent coded the call P1 for a
  cardiac arrest (so a hidden caller may have died), blood type, baseline HR/SBP, stroke onset,
  telephone-CPR start, the call's true priority, and release after P4 advice for a true P4;
  (sex and age are the reported ones and kept);
- callbacks still to come after P4 advice: ``triage.callback_plan`` on the report, given that
  none came so far;
- blood types nobody has typed yet (visible patients too);
- specialists' page delays while not paged, the cath lab's preparation time while it is idle,
  and the remaining minutes of elective cases (uniform given still running);
- the traffic noise of every trip in progress (the shown noise-free ETA is kept);
- calls and casualties not yet announced: replaced by a fresh draw of the task's generator
  (calls after the current minute; the task5 incident if it has not begun, at the known incident
  otherwise; the pending secondary casualty of task3/task5 at the known scene; a news-cycle surge
  already announced; an announced escalation casualty keeps its time, place and injury, its
  body and caller's report are redrawn);
- disruptions that have not started: the missing number (the task's count is public) redrawn
  from the task's pool without the kinds already seen;
- the travel and narrative random streams (trip noise, scene and handover jitter, mutual-aid
  delay, news-cycle draws).
Ids of future patients and calls are renumbered from the highest id the agent has seen, so the
id counters reveal nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from random import Random

from .call_sources import call_posterior, known_incident, source_key
from .city import RoadNetwork
from .clinical import TELEPHONE_CPR_FACTOR
from .conditions import CONDITIONS
from .dynamics.spawns import callback_spawn, next_patient_id, schedule
from .dynamics.travel import draw_noise
from .dynamics.vitals import band
from .generator import (
    DISRUPTION_POOLS,
    ShadowArrivals,
    draw_arrivals_after,
    draw_disruption,
    surge_calls,
)
from .params import (
    BASELINE_HR_RANGE,
    BASELINE_SBP_RANGE,
    BLOOD_TYPE_FREQUENCY,
    CATH_LAB_PREP_RANGE,
    ELECTIVE_REMAINING_RANGE,
    SPECIALIST_PAGE_DELAY_BY_TIER,
    STROKE_ONSET_BEFORE_CALL_RANGE,
)
from .rng import randint, weighted_draw
from .state import World
from .triage import callback_plan, caller_report, parse_report
from .types import Call, Patient, PendingSpawn

_MAX_DRAWS = 20
_ESCALATION = "incident escalated"


def fork_rng(task_id: str, seed: int, step: int, fork_seed: int) -> Random:
    return Random(f"codered:{task_id}:{seed}:fork:{step}:{fork_seed}")


@contextmanager
def hidden_future_detached(world: World) -> Iterator[None]:
    """While the block runs, ``world`` holds no random streams and only the future arrivals the
    agent knows of (announced escalations), so a copy taken inside carries nothing a fork must
    redraw anyway (``CodeRedSim.private_copy``); everything is put back afterwards."""
    saved = world.travel_rng, world.narrative_rng, world.narrative_seed, world.spawns
    world.travel_rng = world.narrative_rng = world.narrative_seed = None
    world.spawns = [s for s in saved[3] if _carried(s)]
    try:
        yield
    finally:
        world.travel_rng, world.narrative_rng, world.narrative_seed, world.spawns = saved


def _carried(spawn: PendingSpawn) -> bool:
    """Future arrivals whose existence the agent knows: announced escalations (whether and when
    an advised caller rings back is drawn from a stream the agent does not see: redrawn)."""
    return spawn.reason.startswith(_ESCALATION)


def secondary_pending(world: World) -> bool:
    """The incident's secondary casualty is still to come in ``world`` (the parent episode): the
    one fact about its hidden future a fork keeps (``_incident_future``), taken before the copy."""
    incident = world.mci
    return any(
        s.patient.secondary and s.patient.patient_id in incident and not s.reason.startswith(_ESCALATION)
        for s in world.spawns
    )


def fork_world(world: World, rng: Random, pending_secondary: bool) -> None:
    """Redraw every hidden part of ``world`` (a ``CodeRedSim.private_copy``) in place;
    ``pending_secondary`` is ``secondary_pending`` of the parent episode."""
    world.travel_rng = Random(rng.getrandbits(64))
    world.narrative_rng = Random(rng.getrandbits(64))
    _resample_callers(world, rng)
    callbacks = _redraw_callbacks(world, rng)
    _resample_blood_types(world, rng)
    _resample_hospital_timers(world, rng)
    # timers, the disruptions to come and trips' arrivals are redrawn: their steps scan afresh
    for kind in ("timers", "disruptions", "units"):
        world.due(kind, 0)
    _renoise_trips(world, rng)
    shadow = _shadow_arrivals(world, rng)
    _replace_future(world, rng, callbacks, shadow, pending_secondary)
    _replace_disruptions(world, rng, shadow)


def _shadow_arrivals(world: World, rng: Random) -> ShadowArrivals:
    """The patients and calls of a fresh draw of the task's generator (hospitals, fleet and
    disruptions are not drawn: a fork keeps the first two and redraws only missing disruptions).
    The draws of the calls a fork discards are made but nothing is built: the scheduled calls up
    to now, and the incident's first calls once ours has begun (``_incident_future``)."""
    begun = any(pid in world.patients for pid in world.mci)
    shadow_rng = Random(rng.getrandbits(64))
    return draw_arrivals_after(
        world.task, shadow_rng, world.clock, drop_incident_calls=begun, city=world.city
    )


# ------------------------------------------------------------------ callers
def _resample_callers(world: World, rng: Random) -> None:
    """Every caller no crew has reached, with the chain of calls (original, callbacks) they made."""
    chains: dict[str, list[Call]] = {}
    for call in world.calls.values():  # in the order they came in
        chains.setdefault(call.patient_id, []).append(call)
    incident_known = known_incident(world)
    for patient_id, chain in chains.items():
        p = world.patients[patient_id]
        if p.visible:
            continue
        key = source_key(world, chain[0], incident_known)
        condition = weighted_draw(rng, call_posterior(chain[0].report, key))
        priority = CONDITIONS[condition].true_priority
        for call in chain:
            call.true_priority = priority
        _redraw_patient(world, p, chain, condition, rng)


def _redraw_patient(world: World, p: Patient, chain: list[Call], condition: str, rng: Random) -> None:
    """The hidden patient behind ``chain`` as ``condition``: body, and the minutes since the call
    replayed (deterioration, telephone CPR, death, release after P4 advice)."""
    spec = CONDITIONS[condition]
    p.condition = condition
    p.blood_type = weighted_draw(rng, BLOOD_TYPE_FREQUENCY)
    p.hr0 = randint(rng, *BASELINE_HR_RANGE)
    p.sbp0 = randint(rng, *BASELINE_SBP_RANGE)
    p.onset_min = randint(rng, *STROKE_ONSET_BEFORE_CALL_RANGE) if condition == "stroke" else 0
    coded = [c.coded_p1_at for c in chain if c.coded_p1_at is not None]
    p.cpr_from = min(coded) if coded and spec.key == "cardiac_arrest" else None
    p.reserve = round(rng.uniform(*spec.initial_reserve), 3)
    p.died_at = None
    advised = any(c.status == "closed_advice" for c in chain)
    if advised and spec.true_priority == "P4":
        p.status = "released"
    else:
        en_route = world.ambulances.get(p.ambulance_id or "")
        p.status = "unit_en_route" if en_route and en_route.patient_id == p.patient_id else "awaiting_unit"
        _replay_wait(world, p, spec.deterioration_per_min)
    p.band = band(p.reserve)


def _replay_wait(world: World, p: Patient, rate: float) -> None:
    """``dynamics.physiology.deteriorate`` over the minutes since the call, for a patient nobody
    has reached (a spawn at t>0 deteriorates in its own tick; the first tick is minute 1)."""
    if rate == 0.0:
        return
    for minute in range(max(1, p.appeared_at), world.clock + 1):
        cpr = p.cpr_from is not None and minute > p.cpr_from
        p.reserve -= rate * (TELEPHONE_CPR_FACTOR if cpr else 1.0)
        if p.reserve <= 0.0:
            p.reserve, p.status, p.died_at = 0.0, "deceased", minute
            return


def _redraw_callbacks(world: World, rng: Random) -> dict[str, PendingSpawn]:
    """Original call id -> its callback still to come: for each call closed with advice whose
    caller has not rung back, ``callback_plan`` given that no callback came so far."""
    rung_back = {c.callback_of for c in world.calls.values() if c.callback_of}
    out: dict[str, PendingSpawn] = {}
    for call in world.calls.values():
        if call.status != "closed_advice" or call.call_id in rung_back:
            continue
        closed = call.closed_at if call.closed_at is not None else call.received_at
        delay = None
        for _ in range(_MAX_DRAWS):
            delay = callback_plan(call.report, rng)
            if delay is None or closed + delay > world.clock:
                break
        if delay is None or closed + delay <= world.clock:
            continue
        out[call.call_id] = callback_spawn(call, world.patients[call.patient_id], closed + delay)
    return out


# ------------------------------------------------------------------ other hidden state
def _resample_blood_types(world: World, rng: Random) -> None:
    for p in world.patients.values():
        if p.visible and not p.blood_type_known:
            p.blood_type = weighted_draw(rng, BLOOD_TYPE_FREQUENCY)


def _resample_hospital_timers(world: World, rng: Random) -> None:
    cath_prep = randint(rng, *CATH_LAB_PREP_RANGE)
    lo_e, hi_e = ELECTIVE_REMAINING_RANGE
    for h in world.hospitals.values():
        lo, hi = SPECIALIST_PAGE_DELAY_BY_TIER[h.tier]
        for spec in h.specialists.values():
            if spec.state in ("on_call", "unavailable"):
                spec.page_delay = randint(rng, lo, hi)
        for room in h.ors:
            if "cath_lab" in room.procedures and room.state == "idle" and not room.agent_prepared:
                room.prep_total = cath_prep
            if room.state == "in_use" and room.elective and room.until > world.clock:
                room.until = randint(rng, max(lo_e, world.clock + 1), max(hi_e, world.clock + 1))


def _renoise_trips(world: World, rng: Random) -> None:
    """Keep the shown (noise-free) ETA of every leg still ahead; redraw its traffic noise."""
    now = world.clock
    for amb in world.ambulances.values():
        trip = amb.trip
        if trip is None or trip.arrival <= now or trip.noise <= 0:
            continue
        noise = draw_noise(world)
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
    shadow: ShadowArrivals,
    pending_secondary: bool,
) -> None:
    carried = world.spawns
    world.mci = {pid for pid in world.mci if pid in world.patients}
    regular = [s for s in shadow.spawns if s.patient.patient_id not in shadow.mci_patients]
    future = [(s, False) for s in callbacks.values()]
    future += [(s, False) for s in regular if s.at > world.clock]
    future += [(s, True) for s in _incident_future(world, pending_secondary, shadow)]
    future += [(s, False) for s in _surge_future(world, rng)]
    future += [(_redraw_escalation(s, rng, world), True) for s in carried if s.reason.startswith(_ESCALATION)]
    world.spawns = []
    world.id_counters = [_max_id(world.patients, "P"), _max_id(world.calls, "C")]
    future.sort(key=lambda item: (item[0].at, item[0].reason))
    for spawn, in_incident in future:
        _renumber(world, spawn)
        if in_incident:
            world.mci.add(spawn.patient.patient_id)
        if spawn.reason.startswith(_ESCALATION):  # the announced bystander, under its new id
            world.escalation_casualty = spawn.patient.patient_id
        schedule(world, spawn)


def _incident_future(world: World, pending_secondary: bool, shadow: ShadowArrivals) -> list[PendingSpawn]:
    """The incident's casualties still to come: the shadow incident if ours has not begun, else
    only the pending secondary casualty, at the known scene."""
    mci = [s for s in shadow.spawns if s.patient.patient_id in shadow.mci_patients]
    if not mci:
        return []
    begun = any(pid in world.patients for pid in world.mci)
    shadow_start = shadow.incident_start
    if shadow_start is None:  # not reached: incident patients imply an incident start
        return []
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
    if not pending_secondary:
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
    spawns = surge_calls(rng, 0, world.news_cycle_at, world.city)
    return [s for s in spawns if s.at > world.clock]


def _redraw_escalation(spawn: PendingSpawn, rng: Random, world: World) -> PendingSpawn:
    """An announced escalation casualty: its time, place and injury are known, its body and its
    caller's report (phase 2) are not."""
    p = spawn.patient
    p.reserve = round(rng.uniform(*CONDITIONS[p.condition].initial_reserve), 3)
    p.blood_type = weighted_draw(rng, BLOOD_TYPE_FREQUENCY)
    p.hr0, p.sbp0 = randint(rng, *BASELINE_HR_RANGE), randint(rng, *BASELINE_SBP_RANGE)
    p.band = band(p.reserve)
    if spawn.call is not None:
        spawn.call.report = caller_report(p.condition, world.city.node_names[p.node], rng)
        facts = parse_report(spawn.call.report)
        if facts is not None:
            p.sex, p.age = facts.sex, facts.age
    return spawn


def _max_id(items: Mapping[str, object], prefix: str) -> int:
    return max((int(i[1:]) for i in items if i.startswith(prefix) and i[1:].isdigit()), default=0)


def _renumber(world: World, spawn: PendingSpawn) -> None:
    """A fresh id for a future patient unless it is a caller already known (call ids are given
    on arrival)."""
    p = spawn.patient
    if world.patients.get(p.patient_id) is not p:
        p.patient_id = next_patient_id(world)
        if spawn.call is not None:
            spawn.call.patient_id = p.patient_id


def _replace_disruptions(world: World, rng: Random, shadow: ShadowArrivals) -> None:
    seen = [d for d in world.disruptions if d.start <= world.clock]
    missing = world.task.disruptions - len(seen)
    if missing <= 0:
        world.disruptions = seen
        return
    kinds_seen = {d.kind for d in seen}
    pool = [k for k in DISRUPTION_POOLS.get(world.task.task_id, ()) if k not in kinds_seen]
    kinds = rng.sample(pool, min(missing, len(pool)))
    net = RoadNetwork(world.peak_hour, world.city.roads)
    origins = list(world.origins)
    if world.task.phase == 2:  # the first call is known; later callers' places are not
        origins = origins[:1] + shadow.places[1:]
    fresh = []
    for kind in kinds:
        for _ in range(_MAX_DRAWS):
            d = draw_disruption(rng, kind, net, origins, world.task, world.city)
            if d.start > world.clock:
                break
        if d.start <= world.clock:
            shift = world.clock + 1 - d.start
            d.start, d.end = d.start + shift, d.end + shift
        fresh.append(d)
    world.disruptions = seen + fresh
