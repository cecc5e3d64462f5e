"""Sending units: the response level of a call (lights and sirens or not), a unit sent to a
scene, the route it would take, the response and waiting charges of the rubric, and a unit sent
home after its job (docs/MODEL.md §4.2-§4.3, §8.1)."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from ..conditions import CONDITIONS
from ..params import (
    HOT_PRIORITIES,
    LIGHTS_AND_SIRENS_FACTOR,
    NON_URGENT_FACTOR,
    NON_URGENT_TURNOUT_MIN,
    UNREACHED_PATIENT_WINDOW_MIN,
    UNSEEN_CALLER_WINDOW_MIN,
    UNTRIAGED_RESPONSE,
)
from ..triage import report_priority_posterior
from ..types import Ambulance, Call, Patient
from .travel import departure_point, draw_noise, plan_trip

if TYPE_CHECKING:
    from ..state import World

#: Unit states the agent may dispatch from.
DISPATCHABLE = ("available", "returning")


def response_level(call: Call | None) -> str | None:
    """The level a unit responds at: the call's triage, or the protocol default if the call
    is uncoded (params.UNTRIAGED_RESPONSE); None for a known patient in phase 1."""
    if call is None:
        return None
    return call.priority or UNTRIAGED_RESPONSE


def hot_response(call: Call | None) -> bool:
    level = response_level(call)
    return level is None or level in HOT_PRIORITIES


def speed_for_call(call: Call | None) -> float:
    return LIGHTS_AND_SIRENS_FACTOR if hot_response(call) else NON_URGENT_FACTOR


def can_reach(world: World, amb: Ambulance, p: Patient) -> bool:
    """Some open road leads from where the unit can turn to the patient now (``send_unit``
    plans a trip exactly when one does)."""
    node, _ = departure_point(world, amb)
    return world.net.reachable(node, p.node)


def priority_chances(p: Patient, call: Call | None) -> dict[str, float]:
    """What the dispatcher can know of the caller's priority: the posterior given the report for a
    call (``triage.priority_posterior``), the known priority of a phase-1 patient."""
    if call is None:
        return {CONDITIONS[p.condition].true_priority: 1.0}
    return report_priority_posterior(call.report)


def charge_response(world: World, amb: Ambulance, p: Patient, call: Call | None) -> None:
    """The rubric's response charges for sending ``amb`` (docs/MODEL.md §8.1), each the chance,
    given what the dispatcher knew, that the response was wrong: an ALS crew for a non-urgent
    caller (``over_triage``: P(P3 or P4)), any unit for an advice-only caller
    (``dispatch_no_need``: P(P4)), and a cold response or a BLS crew for an immediate one
    (``under_triage``: P(P1), phase 2)."""
    chances = priority_chances(p, call)
    if amb.kind == "ALS":
        world.count("over_triage", chances.get("P3", 0.0) + chances.get("P4", 0.0))
    if call is None:
        return
    world.count("dispatch_no_need", chances.get("P4", 0.0))
    if amb.kind != "ALS" or not hot_response(call):
        world.count("under_triage", chances.get("P1", 0.0))


def charge_advice(world: World, call: Call) -> None:
    """``under_triage`` for closing a call with advice: the chance, given the report, that the
    caller needed a hot response (P1 or P2)."""
    chances = report_priority_posterior(call.report)
    world.count("under_triage", chances.get("P1", 0.0) + chances.get("P2", 0.0))


def charge_waiting(world: World) -> None:
    """``dispatch_wait`` for the minute now ending: every caller the agent has left without a crew
    (a phase-1 patient awaiting a unit; a pending call) while a unit that could answer them stands
    free counts the chance, given what the dispatcher knows (``priority_chances``), that it could:
    an ALS crew for an immediate (P1) need, any crew for P2 or P3. Holding a response back costs
    from its first minute; waiting for the right kind of crew while only the other is free does
    not. A caller counts while a response could still keep their value (the preview's windows,
    ``waiting_counts``); past it, their outcome alone charges the abandonment. The same chance
    adds to a pending call's ``left_waiting``, which the running preview reads (``plan.answer_rates``)."""
    free = als_free = False
    for amb in world.ambulances.values():
        if amb.status in DISPATCHABLE:
            free = True
            if amb.kind == "ALS":
                als_free = True
                break
    if not free:
        return
    waiting = 0.0
    if world.task.phase == 1:  # known patients; in phase 2 every patient comes with a call
        for p in world.patients.values():
            if p.status == "awaiting_unit" and p.visible and waiting_counts(world, p.appeared_at):
                waiting += _answerable(priority_chances(p, None), als_free)
    else:
        patients = world.patients  # a patient appears at their first call, the window's start
        for call in itertools.islice(world.calls.values(), world.first_pending, None):
            # a callback comes only after its first call was closed
            if call.status == "pending" and waiting_counts(world, patients[call.patient_id].appeared_at):
                chance = _answerable(report_priority_posterior(call.report), als_free)
                call.left_waiting += chance
                waiting += chance
    if waiting:
        world.count("dispatch_wait", waiting)


def waiting_counts(world: World, first_call: int) -> bool:
    """A caller first known at ``first_call`` still counts for ``dispatch_wait``: within the window
    over which the preview's hope for them falls to 0 (``UNSEEN_CALLER_WINDOW_MIN`` after a call's
    first ring, ``UNREACHED_PATIENT_WINDOW_MIN`` for a phase-1 patient)."""
    window = UNREACHED_PATIENT_WINDOW_MIN if world.task.phase == 1 else UNSEEN_CALLER_WINDOW_MIN
    return world.clock - first_call < window


def _answerable(chances: dict[str, float], als_free: bool) -> float:
    """The chance a free crew could answer a caller of these priority chances (BLS: not a P1)."""
    urgent = chances.get("P2", 0.0) + chances.get("P3", 0.0)
    return urgent + chances.get("P1", 0.0) if als_free else urgent


def send_unit(world: World, amb: Ambulance, p: Patient, call: Call | None) -> bool:
    node, depart = departure_point(world, amb)
    if not hot_response(call):
        depart += NON_URGENT_TURNOUT_MIN
    trip = plan_trip(world, node, p.node, depart, "scene", speed_for_call(call), draw_noise(world))
    if trip is None:
        return False
    amb.status, amb.trip, amb.held = "en_route", trip, False
    world.due("units", trip.times[-1])
    amb.patient_id, amb.call_id = p.patient_id, call.call_id if call else None
    charge_response(world, amb, p, call)
    if p.status == "awaiting_unit":
        p.status = "unit_en_route"
    p.ambulance_id = amb.ambulance_id
    if call is not None:
        call.status, call.ambulance_id = "dispatched", amb.ambulance_id
        world.changed("calls")
    target = call.call_id if call else p.patient_id
    eta = world.clock + trip.eta_minutes(world.clock)
    world.event(f"{amb.ambulance_id} dispatched to {target} at {p.node}, ETA ~t{eta}")
    return True


def return_home(world: World, amb: Ambulance) -> None:
    """The unit's job is over: it drives home (or is available at once if it is home or cut off)."""
    amb.patient_id = amb.call_id = None
    trip = plan_trip(world, amb.node, amb.home, world.clock, "home", 1.0, draw_noise(world))
    if trip is None or amb.node == amb.home:
        amb.status, amb.trip = "available", None
        return
    amb.status, amb.trip = "returning", trip
    world.due("units", trip.times[-1])
