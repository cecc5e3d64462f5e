"""The running preview values a patient at the care planned for them (docs/MODEL.md §8.5): the
hospital chosen, once its room and specialist could be ready, so a poor choice or a part nobody
readies is charged when it is made, not when the patient arrives; and it reads nothing dispatch
cannot see."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from codered_env.sim import CodeRedSim
from codered_env.sim.conditions import CONDITIONS
from codered_env.sim.plan import plan_at, unprepared_wait
from codered_env.sim.rubric import preview_score

DISPATCH = {"action_type": "dispatch_ambulance", "ambulance_id": "ALS1", "patient_id": "P1"}
QUERY = {"action_type": "query_or_status", "hospital_id": "H1"}
PREPARE = {"action_type": "prepare_or", "hospital_id": "H1", "procedure": "cath_lab"}
PAGE = {"action_type": "page_specialist", "hospital_id": "H1", "specialty": "cardiology"}


def _assign(hospital_id: str) -> dict[str, Any]:
    return {"action_type": "assign_hospital", "patient_id": "P1", "hospital_id": hospital_id}


def _played(*actions: dict[str, Any]) -> CodeRedSim:
    sim = CodeRedSim("task1", 0)  # one STEMI; H1 gives PCI, H2 and H3 do not
    for action in actions:
        assert sim.step(action).error is None
    return sim


def test_choosing_a_hospital_without_the_best_care_is_charged_when_chosen() -> None:
    pci = preview_score(_played(DISPATCH, _assign("H1")).world)
    for other in ("H2", "H3"):
        assert preview_score(_played(DISPATCH, _assign(other)).world) < pci - 0.05
    assert pci >= preview_score(_played(DISPATCH, QUERY).world), "choosing the best costs nothing"


def test_a_part_nobody_readies_is_charged_minute_by_minute() -> None:
    ready = [preview_score(_played(DISPATCH, _assign("H1"), PREPARE, PAGE, *[QUERY] * k).world)
             for k in (0, 10)]
    idle = [preview_score(_played(DISPATCH, _assign("H1"), QUERY, QUERY, *[QUERY] * k).world)
            for k in (0, 10)]
    assert idle[1] < idle[0] - 0.01, "waiting to ready the lab costs as the minutes pass"
    assert ready[1] > idle[1] + 0.01
    assert ready[0] - ready[1] < idle[0] - idle[1]


def test_the_preview_does_not_read_a_rooms_hidden_readying_time() -> None:
    sim = _played(DISPATCH, _assign("H1"), PREPARE, QUERY)
    twin = copy.deepcopy(sim.world)
    room = next(r for r in twin.hospitals["H1"].ors if r.state == "preparing")
    room.prep_total += 9
    room.until += 9  # the same start, a slower lab: dispatch sees only "preparing"
    assert preview_score(twin) == preview_score(sim.world)


def test_a_transfer_is_valued_at_its_target_once_it_could_arrive() -> None:
    def preview_with_transfer(arrives_in: int) -> float:
        world = copy.deepcopy(_played(DISPATCH, _assign("H1")).world)
        p = world.patients["P1"]
        p.status, p.transfer_to, p.transfer_arrives_at = "transferring", "H1", world.clock + arrives_in
        p.first_unit_at = p.first_unit_at or world.clock
        return preview_score(world)

    assert preview_with_transfer(40) < preview_with_transfer(5)


@pytest.mark.parametrize("condition", ["stemi", "stroke", "trauma_haemorrhage"])
def test_an_unseen_caller_expects_what_a_known_patient_would_wait(condition: str) -> None:
    """A caller nobody has seen is valued as if bound for a hospital that has readied nothing,
    the wait a known patient arriving now at such a hospital is valued at, so reaching them
    swaps like for like."""
    world = _played().world
    p = world.patients["P1"]
    p.condition = condition
    best = CONDITIONS[condition].best_care
    assert best is not None
    hospital = next(h for h in world.hospitals.values()
                    if (care := CONDITIONS[condition].care_at(h.tier)) and care.quality >= best.quality)
    assert plan_at(world, p, hospital, world.clock).extra == unprepared_wait(CONDITIONS[condition])
