"""The care planned for a patient, as the running preview values it (docs/MODEL.md §8.5): the
hospital they are in or bound for (or, while none is chosen, each open hospital able to treat
them), its care, and the minutes until that care could begin -- the door time, the room and the
specialist as things stand, a transfer out of a hospital unable to treat them. Read only, and
only what dispatch can see: a room's own readying time is hidden, so a room being readied counts
at its nominal time."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from .conditions import CONDITIONS, Condition
from .dynamics.care import parts_ready_at, readying_minutes, transfer_target
from .dynamics.rooms import care_for, door_minutes
from .dynamics.scene import transport_destination
from .params import (
    ANSWER_RATE_PRIOR,
    SPECIALIST_PAGE_DELAY_BY_TIER,
    TRANSFER_DOOR_IN_DOOR_OUT_MIN,
    TRANSPORT_FACTOR,
    UNANSWERED_AFTER_MIN,
)
from .triage import PRIORITIES, report_priority_posterior

if TYPE_CHECKING:
    from .state import World
    from .types import Call, Hospital, Patient


class Plan(NamedTuple):
    """Care ``p`` could get: its quality and therapy, the minutes from now until it could begin,
    the hospital and, where it treats them, its readiness parts (``parts_ready_at``)."""

    quality: float
    therapy: str
    extra: int
    hospital_id: str | None = None
    parts: dict[str, tuple[float, int]] | None = None


def care_plans(world: World, p: Patient, t: int) -> list[Plan]:
    """The care ``p`` could get from minute ``t`` where they are or are headed (a diverted
    choice: where the crew would go instead; a transfer: its target), or, while no hospital is
    chosen, at every open hospital able to treat them (the preview takes the best; at every open
    one if none is): the care a hospital gives once its door time has passed and its room and
    specialist could be ready, after the transfer out of one unable to treat them. Care that
    could not begin by the horizon is left out: the episode ends first (the final grade's
    "never treated"), so the preview charges it as soon as a plan shows it."""
    left = world.task.horizon_min - t
    return [plan for plan in _every_plan(world, p, t) if plan.extra <= left]


def _every_plan(world: World, p: Patient, t: int) -> list[Plan]:
    if p.status == "transferring" and p.transfer_to is not None:
        arrives = p.transfer_arrives_at if p.transfer_arrives_at is not None else t
        return [plan_at(world, p, world.hospitals[p.transfer_to], t, max(0, arrives - t))]
    if p.hospital is not None or p.destination is not None:
        return [plan_at(world, p, world.hospitals[p.hospital or transport_destination(world, p)], t)]
    hospitals = world.hospitals.values()
    closed = world.diverted_for
    open_ones = [h for h in hospitals if not closed(h.hospital_id, p.condition)] or list(hospitals)
    able = [h for h in open_ones if care_for(p, h) is not None]
    return [plan_at(world, p, h, t) for h in able or open_ones]


def plan_at(world: World, p: Patient, h: Hospital, t: int, arrives_in: int = 0) -> Plan:
    """``care_plans`` at hospital ``h``, reached ``arrives_in`` minutes from ``t``."""
    care = care_for(p, h)
    if care is not None:
        parts = parts_ready_at(world, p, h, care, t, earliest=True)
        room = parts["or"][0] + care.room_min if "or" in parts else t
        specialist = parts["specialist"][0] if "specialist" in parts else t
        waited = t - p.wait_started if p.hospital == h.hospital_id and p.wait_started is not None else 0
        door = door_minutes(care, h) - waited
        extra = max(0, round(max(arrives_in + door, room - t, specialist - t)))
        return Plan(care.quality, care.therapy, extra, h.hospital_id, parts)
    cond = CONDITIONS[p.condition]
    target = world.hospitals[transfer_target(world, p, h)]
    waited = t - p.wait_started if p.hospital and p.wait_started is not None else 0
    trip = min(world.net.minutes(h.node, target.node) * TRANSPORT_FACTOR, world.task.horizon_min)
    leaves_in = max(arrives_in, TRANSFER_DOOR_IN_DOOR_OUT_MIN - waited)
    there = plan_at(world, p, target, t, leaves_in + round(trip))
    allowance = cond.target_for(True) - cond.target_min if p.relaxed_target else 0
    return Plan(there.quality, there.therapy, there.extra - allowance, h.hospital_id)


def unprepared_wait(cond: Condition) -> int:
    """Minutes from the door to the best care at a hospital that readies nothing before the
    patient arrives (what ``plan_at`` gives a known patient there, arriving now)."""
    best = cond.best_care
    if best is None:
        return 0
    tier = min(tier for tier, care in cond.care_by_tier.items() if care.quality >= best.quality)
    legs = [best.door_min]
    if best.procedure:
        legs.append(best.activation_min + readying_minutes(best.procedure, tier) + best.room_min)
    if best.specialist:
        legs.append(best.activation_min + SPECIALIST_PAGE_DELAY_BY_TIER[tier][0])
    return max(legs)


def hope_share(appeared_at: int, t: int, horizon: int, window: int, answer_rate: float = 1.0) -> float:
    """The preview's share of the value of a patient no crew has reached at minute ``t``: 1 when
    they appeared, 0 at the horizon or ``window`` minutes later, so waiting costs as it happens;
    reaching them restores it (reaching a caller is rewarded, not punished). While no crew has been
    sent to them, times the dispatcher's ``answer_rate`` so far (``answer_rates``)."""
    span = min(horizon - appeared_at, window)
    share = 1.0 if span <= 0 else min(1.0, max(0.0, 1.0 - (t - appeared_at) / span))
    return share * answer_rate


UNTRIAGED = "untriaged"
_ANSWER_GROUPS = (*PRIORITIES, UNTRIAGED)


def answer_rates(world: World) -> dict[str, float] | None:
    """How far the dispatcher has answered callers like each one so far, as the preview expects
    them to go on (call-queue tasks; None where every patient is known from the start): over the
    calls given the same code, or those still untriaged (``answer_group``), ``(PRIOR + answered) /
    (PRIOR + answered + unanswered)``. Answered: a call a crew was sent to; unanswered: one still
    pending though a crew that could answer stood free for ``UNANSWERED_AFTER_MIN`` of its minutes
    (``left_waiting``, charged with ``dispatch_wait``), or closed with advice (at the chance, given
    the report, that they needed a crew). Read only from what dispatch sees."""
    if world.task.phase == 1:
        return None
    answered = dict.fromkeys(_ANSWER_GROUPS, 0.0)
    unanswered = dict.fromkeys(_ANSWER_GROUPS, 0.0)
    for call in world.calls.values():
        group = answer_group(call)
        if call.ambulance_id is not None:
            answered[group] += 1.0
        elif call.status == "pending":
            unanswered[group] += call.left_waiting >= UNANSWERED_AFTER_MIN
        elif call.status == "closed_advice":
            unanswered[group] += 1.0 - report_priority_posterior(call.report).get("P4", 0.0)
    return {group: (ANSWER_RATE_PRIOR + answered[group])
            / (ANSWER_RATE_PRIOR + answered[group] + unanswered[group]) for group in _ANSWER_GROUPS}


def answer_group(call: Call) -> str:
    """The callers a call is judged with: those given the same code, or the untriaged."""
    return call.priority or UNTRIAGED


def answer_rate(rates: dict[str, float] | None, call: Call) -> float:
    """The answer rate the preview expects for ``call``'s caller (``answer_rates``; 1 for none)."""
    return 1.0 if rates is None else rates[answer_group(call)]
