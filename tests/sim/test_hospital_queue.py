"""A hospital serves its theatres by acuity, not by arrival, and a diverted crew keeps the intent
of the agent's choice (docs/MODEL.md §4.3-§4.4): so holding back a less urgent patient never
frees a room a more urgent one would otherwise wait for, and a diversion does not drop a
patient at a hospital unable to give the care chosen for them."""

from __future__ import annotations

from codered_env.agents import make_agent
from codered_env.sim import CodeRedSim
from codered_env.sim.conditions import CONDITIONS
from codered_env.sim.dynamics.care import admit, advance
from codered_env.sim.dynamics.rooms import room_wait
from codered_env.sim.dynamics.scene import transport_destination
from codered_env.sim.params import CROWDED_DOOR_FACTOR, PROCEDURE_DURATION_MIN


def _trauma_world():
    world = CodeRedSim("task3", 0).world  # P1, P2 bleeding (P1); P3 major trauma (P2)
    h1 = world.hospitals["H1"]  # one trauma theatre in use (an elective case), one idle
    assert [p.condition for p in world.patients.values()][:3] == [
        "trauma_haemorrhage", "trauma_haemorrhage", "trauma_major"]
    return world, h1


def test_a_more_urgent_patient_takes_the_room_readied_for_a_less_urgent_one() -> None:
    world, h1 = _trauma_world()
    admit(world, world.patients["P3"], h1)
    room = next(r for r in h1.ors if r.patient_id == "P3")
    assert room.state == "preparing"
    admit(world, world.patients["P1"], h1)
    assert room.patient_id == "P1" and world.patients["P1"].or_ref == ("H1", room.or_id)
    assert world.patients["P3"].or_ref is None, "the less urgent patient waits for the next room"
    assert any("more urgent than P3" in e for e in world.events)


def test_equal_urgency_is_served_in_turn() -> None:
    world, h1 = _trauma_world()
    admit(world, world.patients["P1"], h1)
    room = next(r for r in h1.ors if r.patient_id == "P1")
    admit(world, world.patients["P2"], h1)
    assert room.patient_id == "P1" and world.patients["P2"].or_ref is None


def test_a_case_begun_is_never_taken() -> None:
    world, h1 = _trauma_world()
    admit(world, world.patients["P3"], h1)
    room = next(r for r in h1.ors if r.patient_id == "P3")
    room.state, world.patients["P3"].status = "in_use", "in_treatment"  # the operation has begun
    admit(world, world.patients["P1"], h1)
    assert room.patient_id == "P3" and world.patients["P1"].or_ref is None


def test_the_room_goes_to_the_most_urgent_whoever_arrived_first() -> None:
    orders = (("P3", "P1"), ("P1", "P3"))
    holders = []
    for order in orders:
        world, h1 = _trauma_world()
        for pid in order:
            admit(world, world.patients[pid], h1)
        holders.append(next(r.patient_id for r in h1.ors if r.patient_id in ("P1", "P3")))
    assert holders == ["P1", "P1"]


def test_a_diverted_crew_keeps_the_intent_of_the_choice() -> None:
    world = CodeRedSim("task1", 0).world  # one STEMI; only H1 gives PCI, H2 lysis, H3 neither
    p = world.patients["P1"]
    world.hospitals["H1"].diverted_until = world.clock + 500
    p.node, p.destination = "N3", "H1"  # H3 2 min away, H2 7, H1 14
    assert transport_destination(world, p) == "H2", "the nearest open ED (H3) cannot treat a STEMI"
    p.destination = None
    assert transport_destination(world, p) == "H3", "with no choice made: the nearest open ED"
    world.hospitals["H1"].diverted_until = 0
    world.hospitals["H2"].diverted_until = world.clock + 500
    p.node, p.destination = "N2", "H2"  # H3 7 min away, H1 9
    assert transport_destination(world, p) == "H1", "care at least as good as the choice"


def _lab_held_for_a_stroke(crowded: bool = False):
    """Task2 seed 0 at t5: the stroke (P1) holds H1's one lab, readied, and has just arrived; its
    door time (60 min) is still to run."""
    world = CodeRedSim("task2", 0).world  # P1 stroke, P2 STEMI; H1's OR1 hosts both procedures
    world.clock = 5
    h1 = world.hospitals["H1"]
    h1.base_load = h1.capacity if crowded else 0
    stroke = world.patients["P1"]
    admit(world, stroke, h1)
    lab = h1.or_by_id("OR1")
    lab.state, lab.procedure, lab.elective = "ready", "stroke_intervention", False
    lab.until, lab.patient_id, stroke.or_ref = world.clock + 1, "P1", ("H1", "OR1")
    return world, h1


def test_a_room_held_for_a_patient_is_free_once_their_case_could_end() -> None:
    door, case = CONDITIONS["stroke"].care_at(1).door_min, PROCEDURE_DURATION_MIN["stroke_intervention"]
    world, h1 = _lab_held_for_a_stroke()
    assert room_wait(world, h1, "cath_lab") == door + case, "not one case from the room's own timer"
    world, h1 = _lab_held_for_a_stroke(crowded=True)
    assert room_wait(world, h1, "cath_lab") == door * CROWDED_DOOR_FACTOR + case
    world, h1 = _lab_held_for_a_stroke()
    stroke = world.patients["P1"]
    stroke.status, stroke.hospital, stroke.wait_started = "transporting", None, None  # still on the way
    assert room_wait(world, h1, "cath_lab") == door + case, "at the soonest, from now"


def test_a_stemi_behind_a_lab_held_past_the_horizon_gets_lysis() -> None:
    """Task4 seed 1011: H1's lab is readied for a stroke whose (crowded) door time runs to t98; a
    STEMI arriving at t39 waited for it past the horizon, untreated, until a held room's wait
    counted from its holder's start (docs/MODEL.md §4.5)."""
    sim = CodeRedSim("task4", 1011)
    agent = make_agent("heuristic", 1011)
    agent.reset("task4", 1011)
    while not sim.done:
        sim.step(agent.act(sim.observation()))
    stemi = sim.world.patients["P3"]
    assert stemi.condition == "stemi" and stemi.hospital == "H1"
    assert stemi.fallback and stemi.treatment_start is not None


def test_a_patient_admitted_at_minute_zero_is_activated_on_time() -> None:
    world = CodeRedSim("task1", 0).world  # one STEMI; H1's lab idle
    stemi, h1 = world.patients["P1"], world.hospitals["H1"]
    admit(world, stemi, h1)
    assert stemi.wait_started == 0
    world.clock = CONDITIONS["stemi"].care_at(1).activation_min
    advance(world, world.clock)
    assert stemi.or_ref is not None and stemi.or_ref[0] == "H1", "the team activates at minute 0 + activation"
