"""Operating rooms and specialists: their timers (preparation, hold window, elective cases,
specialists arriving and leaving), the care a hospital gives a condition, and the rooms and
specialists a patient claims, most urgent first (docs/MODEL.md §3.3, §4.4)."""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

from ..conditions import CONDITIONS, Care
from ..params import (
    CATH_LAB_PREP_RANGE,
    CROWDED_DOOR_FACTOR,
    OR_HOLD_WINDOW_MIN,
    OR_PREP_MIN_BY_TIER,
    PROCEDURE_DURATION_MIN,
    SPECIALIST_WINDOW_MIN,
)
from ..triage import PRIORITIES
from ..types import Hospital, OperatingRoom, Patient, Specialist

if TYPE_CHECKING:
    from ..state import World

_TIMED_ROOM_STATES = frozenset({"preparing", "ready", "in_use"})
_TIMED_SPECIALIST_STATES = frozenset({"paged", "present"})
_CLAIM_RANK = {state: i for i, state in enumerate(("ready", "preparing", "idle"))}


def timers(world: World, t: int) -> None:
    """Tick step 5 (when "timers" are due): OR and specialist timers; the scan enters the
    earliest timer still running in the calendar."""
    due = math.inf
    for h in world.hospitals.values():
        for room in h.ors:
            if room.state in _TIMED_ROOM_STATES:  # the only rooms a timer moves
                if room.until <= t:
                    _room_timer(world, h, room, t)
                if room.state in _TIMED_ROOM_STATES and room.until < due:
                    due = room.until
        for spec in h.specialists.values():
            state = spec.state
            if state != "paged" and state != "present":
                continue
            if spec.until <= t:
                _specialist_timer(world, h, spec, t)
            if spec.state in _TIMED_SPECIALIST_STATES and spec.until < due:
                due = spec.until
    world.clear_due("timers")
    world.due("timers", due)


def _specialist_timer(world: World, h: Hospital, spec: Specialist, t: int) -> None:
    if spec.state == "paged":
        spec.state, spec.until, spec.present_since = "present", t + SPECIALIST_WINDOW_MIN, t
        world.changed("rooms")
        world.event(f"{h.hospital_id} {spec.specialty} specialist arrived")
    elif not _needs_specialist(world, h, spec.specialty):
        if spec.agent_paged and not spec.used:
            world.count("wasted_page")
        spec.state, spec.agent_paged, spec.used = "on_call", False, False
        world.changed("rooms")
        world.event(f"{h.hospital_id} {spec.specialty} specialist left")


def _room_timer(world: World, h: Hospital, room: OperatingRoom, t: int) -> None:
    if room.state == "preparing" and room.until <= t:
        room.state, room.until, room.ready_at = "ready", t + OR_HOLD_WINDOW_MIN, t
        world.changed("rooms")
        world.event(f"{h.hospital_id} {room.or_id} ready for {room.procedure}")
    elif room.state == "ready" and room.until <= t and room.patient_id is None:
        if room.agent_prepared:
            world.count("unused_or_prep")
        room.state, room.procedure, room.agent_prepared = "idle", None, False
        world.changed("rooms")
        world.event(f"{h.hospital_id} {room.or_id} preparation expired unused")
    elif room.state == "in_use" and room.until <= t and room.elective:
        room.state, room.elective, room.procedure = "idle", False, None
        world.changed("rooms")


def _needs_specialist(world: World, h: Hospital, specialty: str) -> bool:
    """Is a patient at this hospital waiting for (or being treated by) this specialty?"""
    for pid in h.ed_patients:
        care = care_for(world.patients[pid], h)
        if care and care.specialist == specialty:
            return True
    return False


def care_for(p: Patient, h: Hospital) -> Care | None:
    """The care this hospital gives the patient (the fallback once its lab was unavailable)."""
    return _care(p.condition, h.tier, p.fallback)


@functools.cache  # a few conditions x tiers, asked for every patient in an ED every minute
def _care(condition: str, tier: int, fallback: bool) -> Care | None:
    cond = CONDITIONS[condition]
    care = cond.care_at(tier)
    if fallback and care is not None and care.procedure and cond.fallback_care:
        return cond.fallback_care
    return care


def free_room(h: Hospital, procedure: str) -> OperatingRoom | None:
    """A room for ``procedure`` nobody else has claimed: readied for it, else preparing for it,
    else idle."""
    best: OperatingRoom | None = None
    for room in h.ors:
        if procedure not in room.procedures or room.patient_id is not None:
            continue
        if room.state in ("ready", "preparing") and room.procedure != procedure:
            continue
        if room.state not in _CLAIM_RANK:
            continue
        if best is None or _CLAIM_RANK[room.state] < _CLAIM_RANK[best.state]:
            best = room
    return best


def room_for(world: World, h: Hospital, procedure: str, p: Patient) -> OperatingRoom | None:
    """The room ``p`` would get now: a free one (``free_room``), else one readied or being readied
    for a less urgent patient whose case has not begun -- the hospital serves its theatre queue by
    acuity, not by arrival (the least urgent holder gives way first, a readied room before one
    being readied)."""
    room = free_room(h, procedure)
    if room is not None:
        return room
    rank = acuity(p)
    best: tuple[int, int] | None = None
    for candidate in h.ors:
        if candidate.procedure != procedure or candidate.state not in ("ready", "preparing"):
            continue
        holder = world.patients.get(candidate.patient_id or "")
        if holder is None or holder.status != "at_hospital" or acuity(holder) <= rank:
            continue
        key = (-acuity(holder), _CLAIM_RANK[candidate.state])
        if best is None or key < best:
            best, room = key, candidate
    return room


def acuity(p: Patient) -> int:
    """How urgent a hospital takes ``p`` to be (0 = P1), from the condition found on scene."""
    return PRIORITIES.index(CONDITIONS[p.condition].true_priority)


def room_wait(world: World, h: Hospital, procedure: str) -> float:
    """Minutes until some room able to host ``procedure`` could be free (inf if none). A room
    held for a patient is free once their case, begun no sooner than they could begin it, ends."""
    waits = []
    for room in h.ors:
        if procedure not in room.procedures:
            continue
        remaining = max(0, room.until - world.clock)
        if room.state in ("preparing", "ready") and room.patient_id is not None:
            begins = max(remaining, _holder_start(world, h, room.patient_id) - world.clock)
            remaining = begins + PROCEDURE_DURATION_MIN.get(room.procedure or procedure, 0)
        if room.state == "in_use" and room.failure_until > world.clock:
            remaining = max(remaining, room.failure_until - world.clock)
        waits.append(remaining)
    return min(waits, default=float("inf"))


def _holder_start(world: World, h: Hospital, patient_id: str) -> float:
    """The earliest minute the patient holding a room could begin their case: their door time
    from arrival (lengthened while the hospital is crowded), from now if still on the way."""
    holder = world.patients.get(patient_id)
    care = care_for(holder, h) if holder is not None else None
    if care is None:
        return world.clock
    arrived = holder.wait_started if holder.hospital == h.hospital_id else None
    return (world.clock if arrived is None else arrived) + door_minutes(care, h)


def door_minutes(care: Care, h: Hospital) -> float:
    """Arrival to the start of ``care`` at ``h`` at the least: its door time, longer while crowded."""
    return care.door_min * (CROWDED_DOOR_FACTOR if h.crowded else 1.0)


def claim(world: World, p: Patient, h: Hospital, care: Care, activated: bool) -> None:
    """Claim a room readied in advance at once; the hospital readies an idle room and pages
    the specialist itself only once it has activated (``care.activation_min`` after arrival)."""
    if care.procedure and p.or_ref is None:
        room = room_for(world, h, care.procedure, p)
        if room is not None and room.patient_id is not None:  # held by a less urgent patient
            if activated:
                _give_way(world, h, room, p)
            else:
                room = None  # only an activated team takes a room over
        if room is not None and (activated or room.state != "idle"):
            if room.state == "idle":
                room.state, room.procedure = "preparing", care.procedure
                world.changed("rooms")
                room.prep_total = _prep_minutes(h, room)
                room.until = world.clock + room.prep_total
                room.agent_prepared = False
                world.due("timers", room.until)
            room.patient_id = p.patient_id
            p.or_ref = (h.hospital_id, room.or_id)
    if care.specialist and activated:
        spec = h.specialists.get(care.specialist)
        if spec is not None and spec.state == "on_call":
            spec.state, spec.until = "paged", world.clock + spec.page_delay
            world.changed("rooms")
            world.due("timers", spec.until)


def _give_way(world: World, h: Hospital, room: OperatingRoom, p: Patient) -> None:
    """The less urgent holder of ``room`` waits for the next room; ``p`` takes it."""
    holder = world.patients[room.patient_id or ""]
    holder.or_ref = None
    world.changed("rooms")
    world.event(f"{h.hospital_id} {room.or_id} goes to {p.patient_id}, more urgent than {holder.patient_id}")


def _prep_minutes(h: Hospital, room: OperatingRoom) -> int:
    if "cath_lab" in room.procedures:
        return room.prep_total or CATH_LAB_PREP_RANGE[0]
    return OR_PREP_MIN_BY_TIER[h.tier]


def or_readiness(world: World, h: Hospital, procedure: str) -> float:
    best = 0.0
    for room in h.ors:
        if room.patient_id is not None or room.procedure != procedure:
            continue
        if room.state == "ready":
            return 1.0
        if room.state == "preparing" and room.prep_total > 0:
            best = max(best, 1.0 - (room.until - world.clock) / room.prep_total)
    return round(best, 3)


def specialist_readiness(world: World, spec: Specialist | None) -> float:
    if spec is None:
        return 0.0
    if spec.state == "present":
        return 1.0
    if spec.state == "paged" and spec.page_delay > 0:
        return round(max(0.0, 1.0 - (spec.until - world.clock) / spec.page_delay), 3)
    return 0.0


def best_care_available(world: World, condition: str) -> bool:
    """Could a hospital giving this condition's best care take a patient now (open, lab in
    service and free, specialist not unavailable)?"""
    cond = CONDITIONS[condition]
    best = cond.best_care
    if best is None:
        return True
    for h in world.hospitals.values():
        care = cond.care_at(h.tier)
        if care is None or care.quality < best.quality or world.diverted(h.hospital_id):
            continue
        if care.procedure and free_room(h, care.procedure) is None:
            continue
        spec = h.specialists.get(care.specialist or "")
        if care.specialist and (spec is None or spec.state == "unavailable"):
            continue
        return True
    return False


_TIERS = sorted({tier for cond in CONDITIONS.values() for tier in cond.care_by_tier})
#: Conditions some hospital tier treats with less than their best care, or not at all (a STEMI
#: thrombolysed at tier 2): the ones whose relaxed transfer target asks whether best care was on
#: offer.
PARTIAL_CARE_CONDITIONS = tuple(
    name for name, cond in CONDITIONS.items()
    if (best := cond.best_care) is not None
    and any((care := cond.care_at(tier)) is None or care.quality < best.quality for tier in _TIERS)
)


def note_best_care_open(world: World, t: int) -> None:
    """Record minute ``t`` for each condition whose best care a hospital could give now
    (``World.best_care_open_at``): a patient whose best care was on offer at any minute since
    their call never earns the relaxed transfer target, so holding their assignment until a lab
    is taken cannot earn it either."""
    for condition in PARTIAL_CARE_CONDITIONS:
        if best_care_available(world, condition):
            world.best_care_open_at[condition] = t


def best_care_refused(world: World, p: Patient) -> bool:
    """No hospital could have given ``p`` their best care at any minute since their call."""
    last_open = world.best_care_open_at.get(p.condition, -1)
    return last_open < p.appeared_at and not best_care_available(world, p.condition)
