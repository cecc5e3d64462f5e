"""The running preview values a patient at the care planned for them (docs/MODEL.md §8.5): the
hospital chosen, once its room and specialist could be ready, so a poor choice or a part nobody
readies is charged when it is made, not when the patient arrives; and it reads nothing dispatch
cannot see."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from codered_env.sim import CodeRedSim
from codered_env.sim.conditions import CONDITIONS
from codered_env.sim.dynamics.care import admit
from codered_env.sim.params import PROCEDURE_DURATION_MIN
from codered_env.sim.plan import plan_at, unprepared_wait
from codered_env.sim.rubric import _known_entry, preview_score

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


def _queued_at_h1(*patient_ids: str) -> Any:
    """Task3 seed 0 with ``patient_ids`` reached and admitted to H1 in that order (H1 has one
    trauma theatre free and one in an elective case)."""
    world = copy.deepcopy(CodeRedSim("task3", 0).world)
    for pid in patient_ids:
        p = world.patients[pid]
        p.first_unit_at = world.clock
        admit(world, p, world.hospitals["H1"])
    return world


def test_a_patient_queued_behind_more_urgent_ones_is_valued_after_their_cases() -> None:
    """P1 and P2 (haemorrhage) are served before P3 (major trauma): one takes the free theatre,
    the other the elective one once free, and P3 the first of them free again."""
    alone, queued = _queued_at_h1("P3"), _queued_at_h1("P1", "P2", "P3")
    h1 = queued.hospitals["H1"]
    p2_start = plan_at(queued, queued.patients["P2"], h1, queued.clock).extra
    p3_start = plan_at(queued, queued.patients["P3"], h1, queued.clock).extra
    case = PROCEDURE_DURATION_MIN["trauma_surgery"]
    assert p3_start >= min(p2_start, plan_at(queued, queued.patients["P1"], h1, queued.clock).extra) + case
    assert p3_start > plan_at(alone, alone.patients["P3"], alone.hospitals["H1"], alone.clock).extra
    assert preview_score(queued) < preview_score(_queued_at_h1("P1", "P2"))


def test_a_more_urgent_patient_on_the_way_counts_ahead_once_near() -> None:
    """P3 waits at H1 for the theatre whose elective case ends first; P1, on scene and bound
    there, takes it if they could claim it by then, and not if they are far."""
    def p3_start(road_minutes: float) -> int:
        world = _queued_at_h1("P2", "P3")
        p1 = world.patients["P1"]
        p1.status, p1.destination, p1.first_unit_at = "on_scene", "H1", world.clock
        world.net = _FixedRoads(world.net, road_minutes)
        return plan_at(world, world.patients["P3"], world.hospitals["H1"], world.clock).extra

    alone = _queued_at_h1("P2", "P3")
    base = plan_at(alone, alone.patients["P3"], alone.hospitals["H1"], alone.clock).extra
    assert p3_start(1.0) > base + 30  # the next theatre free after P1's and P2's cases
    assert p3_start(500.0) == base


class _FixedRoads:
    """A road network whose every trip takes ``minutes`` (the rest as ``net``)."""

    def __init__(self, net: Any, minutes: float) -> None:
        self._net, self._minutes = net, minutes

    def minutes(self, a: str, b: str) -> float:
        return self._minutes

    def __getattr__(self, name: str) -> Any:
        return getattr(self._net, name)


def test_the_less_urgent_queue_does_not_delay_the_more_urgent() -> None:
    first, behind = _queued_at_h1("P1", "P2"), _queued_at_h1("P3", "P1", "P2")
    for pid in ("P1", "P2"):
        assert (plan_at(behind, behind.patients[pid], behind.hospitals["H1"], behind.clock).extra
                == plan_at(first, first.patients[pid], first.hospitals["H1"], first.clock).extra)


def test_care_that_cannot_begin_by_the_horizon_is_worth_nothing_in_the_preview() -> None:
    world = _queued_at_h1("P1", "P2", "P3")
    start = plan_at(world, world.patients["P3"], world.hospitals["H1"], world.clock).extra
    kept = {pid: _known_entry(world, world.patients[pid], False).wk for pid in ("P2", "P3")}
    world.task = dataclasses.replace(world.task, horizon_min=start - 1)
    assert kept["P3"] > 0.0
    assert _known_entry(world, world.patients["P3"], False).wk == 0.0  # the final grade's "never treated"
    assert _known_entry(world, world.patients["P2"], False).wk == kept["P2"]
