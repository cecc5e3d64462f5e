"""A crew on scene: it finds the patient (or a hidden death), assesses them, treats on scene
when that is the definitive care, and leaves for the agent's hospital unless it is on diversion
(docs/MODEL.md §4.3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..clinical import ON_SCENE_CARE_QUALITY
from ..conditions import CONDITIONS
from ..params import (
    FOUND_DEAD_SCENE_MIN,
    MCI_EXTRA_SCENE_MIN,
    MIN_SCENE_MIN,
    NO_TRANSPORT_SCENE_MIN,
    ON_SCENE_JITTER_MIN,
    TRANSPORT_FACTOR,
)
from ..types import Ambulance, Patient
from .care import note_destination
from .cascades import maybe_news_after_death
from .dispatch import return_home
from .travel import draw_noise, plan_trip

if TYPE_CHECKING:
    from ..state import World


def arrive(world: World, amb: Ambulance) -> None:
    p = world.patients[amb.patient_id or ""]
    cond = CONDITIONS[p.condition]
    amb.status = "on_scene"
    p.first_unit_at = world.clock if p.first_unit_at is None else p.first_unit_at
    if p.call_id and p.call_id in world.calls:
        world.calls[p.call_id].status = "on_scene"
        world.changed("calls")
    if p.status == "deceased":
        p.visible = True
        amb.busy_until = world.clock + FOUND_DEAD_SCENE_MIN
        world.due("units", amb.busy_until)
        world.event(f"{amb.ambulance_id} on scene: {p.patient_id} found dead")
        maybe_news_after_death(world, p.patient_id)
        return
    p.status = "on_scene"
    p.visible = True
    jitter = world.travel_rng.randint(-ON_SCENE_JITTER_MIN, ON_SCENE_JITTER_MIN)
    scene = cond.scene_min if cond.transport or cond.treated_on_scene else NO_TRANSPORT_SCENE_MIN
    scene += jitter
    if p.patient_id in world.mci:
        scene += MCI_EXTRA_SCENE_MIN
    amb.busy_until = world.clock + max(MIN_SCENE_MIN, scene)
    world.due("units", amb.busy_until)
    if cond.treated_on_scene:
        _treat_on_scene(world, p, amb.busy_until)
    where = f" (call {p.call_id})" if p.call_id else ""
    world.event(f"{amb.ambulance_id} on scene{where}: {p.patient_id} is {cond.label} [{cond.true_priority}]")


def _treat_on_scene(world: World, p: Patient, until: int) -> None:
    """Definitive care given by the crew itself (defibrillation, reassurance, advice); it
    ends when the crew leaves the scene (``leave``)."""
    p.status, p.treatment_start = "in_treatment", world.clock
    p.treatment_quality, p.therapy = ON_SCENE_CARE_QUALITY, "on_scene"
    p.treatment_end = until
    p.reserve_at_treatment = round(max(0.0, p.reserve), 3)


def leave(world: World, amb: Ambulance) -> None:
    p = world.patients[amb.patient_id or ""]
    cond = CONDITIONS[p.condition]
    if p.status == "deceased" or not cond.transport:
        if p.status != "deceased":
            resuscitated = cond.true_priority == "P1"
            p.status = "treated" if resuscitated else "released"
            world.event(f"{amb.ambulance_id} treated {p.patient_id} on scene, no transport needed")
        return_home(world, amb)
        return
    hid = transport_destination(world, p)
    if p.destination and hid != p.destination:
        world.event(f"{p.destination} on diversion: {amb.ambulance_id} takes {p.patient_id} to {hid}")
    if hid != p.destination:
        note_destination(world, p, hid)
    to = world.hospitals[hid].node
    trip = plan_trip(world, amb.node, to, world.clock, "hospital", TRANSPORT_FACTOR, draw_noise(world))
    if trip is None:  # every route closed: wait on scene one more minute
        amb.busy_until = world.clock + 1
        world.due("units", amb.busy_until)
        return
    amb.status, amb.trip = "transporting", trip
    world.due("units", trip.times[-1])
    p.status, p.hospital = "transporting", None
    p.destination = hid
    eta = world.clock + trip.eta_minutes(world.clock)
    world.event(f"{amb.ambulance_id} transporting {p.patient_id} to {hid}, ETA ~t{eta}")


def transport_destination(world: World, p: Patient) -> str:
    """The agent's choice unless that hospital is on diversion; then the nearest open hospital
    giving care as good as the choice would have (the crew keeps the intent of the choice:
    a diverted PCI patient goes to the nearest open cath lab), else the nearest able to treat
    them; with no choice made, the nearest open ED. A patient whom no open hospital can treat
    is taken to the hospital chosen for them even on diversion (``World.diverted_for``)."""
    if p.destination and not world.diverted_for(p.destination, p.condition):
        return p.destination
    hospitals, origin = world.hospitals, p.node
    open_ids = [h for h in hospitals if not world.diverted(h)] or list(hospitals)
    if p.destination is None:
        return min(open_ids, key=lambda h: (world.net.minutes(origin, hospitals[h].node), h))
    cond = CONDITIONS[p.condition]
    chosen = cond.care_at(hospitals[p.destination].tier)
    wanted = chosen.quality if chosen is not None else 0.0

    def preference(hid: str) -> tuple[bool, bool, float, str]:
        care = cond.care_at(hospitals[hid].tier)
        worse = care is None or care.quality < wanted
        return worse, care is None, world.net.minutes(origin, hospitals[hid].node), hid

    return min(open_ids, key=preference)
