"""A hospital serves its theatres by acuity, not by arrival, and a diverted crew keeps the intent
of the agent's choice (docs/MODEL.md §4.3-§4.4): so holding back a less urgent patient never
frees a room a more urgent one would otherwise wait for, and a diversion does not drop a
patient at a hospital unable to give the care chosen for them."""

from __future__ import annotations

from codered_env.sim import CodeRedSim
from codered_env.sim.dynamics.care import admit
from codered_env.sim.dynamics.scene import transport_destination


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
