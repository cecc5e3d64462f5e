"""The heuristic's dispatch keeps a caller from making the news, and its destination counts an
emergency case under way as a queue (docs of ``codered_env.agents.heuristic``, rules 2 and 4)."""

from __future__ import annotations

from typing import Any

import pytest

from codered_env.agents.heuristic import NEWS_WATCH_FROM_MIN, HeuristicAgent
from codered_env.sim import CodeRedSim
from codered_env.sim.conditions import CONDITIONS
from codered_env.sim.params import MAINTAIN_PLAN_CAP_MIN, NEWS_CYCLE_WAIT_MIN


def _only_als_free_with_a_p3_caller(task_id: str, waiting: int) -> dict[str, Any]:
    """A real observation with one coded P3 caller and every BLS busy."""
    sim = CodeRedSim(task_id, 0)
    obs = sim.observation()
    call = {**obs["calls"][0], "priority": "P3", "status": "pending", "waiting_min": waiting}
    obs["calls"] = [call]
    obs["ambulances"] = [a if a["kind"] == "ALS" else {**a, "status": "transporting"}
                         for a in obs["ambulances"]]
    return obs


def _dispatches(obs: dict[str, Any]) -> list[dict[str, Any]]:
    agent = HeuristicAgent(0)
    agent.reset(obs["task_id"], 0)
    return list(agent._dispatch(obs, obs["legal_actions"], agent._road_view(obs)))


def test_the_watch_starts_one_wait_before_the_news() -> None:
    assert NEWS_WATCH_FROM_MIN == NEWS_CYCLE_WAIT_MIN - MAINTAIN_PLAN_CAP_MIN


@pytest.mark.parametrize(("task_id", "waiting", "sent"), [
    ("task5", NEWS_WATCH_FROM_MIN, True),  # a long wait makes the news here: any free unit
    ("task5", NEWS_WATCH_FROM_MIN - 1, False),  # not yet: a P3 waits for a BLS
    ("task4", NEWS_CYCLE_WAIT_MIN, False),  # no cascades: no news cycle to avoid
])
def test_a_p3_caller_near_the_news_gets_an_als(task_id: str, waiting: int, sent: bool) -> None:
    actions = _dispatches(_only_als_free_with_a_p3_caller(task_id, waiting))
    assert bool(actions) is sent
    if sent:
        assert actions[0]["action_type"] == "dispatch_als"


def _trauma_patient_and_hospital(in_use: bool, elective: bool) -> tuple[HeuristicAgent, dict, dict]:
    sim = CodeRedSim("task3", 0)
    obs = sim.observation()
    agent = HeuristicAgent(0)
    agent.reset("task3", 0)
    patient = next(p for p in obs["patients"] if p["condition"] == "trauma_major")
    hospitals = {h["hospital_id"]: h for h in obs["hospitals"]}
    care = CONDITIONS["trauma_major"].care_at(hospitals["H2"]["tier"])
    rooms = [r for r in hospitals["H2"]["ors"] if care.procedure in r["procedures"]]
    for room in rooms[:-1]:
        room.update(state="in_use", procedure=care.procedure, elective=elective,
                    patient_id=None if elective else "P99")
    if not in_use:
        for room in rooms:
            room.update(state="idle", procedure=None, elective=False, patient_id=None)
    agent._lab_users = {"H2": [care.procedure]}  # one more patient already bound for H2's theatres
    agent._clock, agent._horizon = obs["clock_min"], obs["horizon_min"]
    return agent, patient, hospitals["H2"]


def _queue(in_use: bool, elective: bool) -> float:
    agent, patient, h2 = _trauma_patient_and_hospital(in_use, elective)
    care = CONDITIONS[patient["condition"]].care_at(h2["tier"])
    in_service = [r for r in h2["ors"] if care.procedure in r["procedures"]]
    return agent._queue_minutes(h2, care, in_service)


def test_an_emergency_case_under_way_is_a_queue_an_elective_one_is_not() -> None:
    assert _queue(in_use=False, elective=False) == 0.0
    assert _queue(in_use=True, elective=True) == 0.0  # an elective case can be pre-empted
    assert _queue(in_use=True, elective=False) > 0.0


def test_a_patient_chosen_for_again_does_not_queue_behind_themselves() -> None:
    agent, patient, h2 = _trauma_patient_and_hospital(in_use=True, elective=False)
    patient = {**patient, "destination": "H2", "status": "transporting"}
    hospitals = {"H2": h2}
    net = agent._road_view(CodeRedSim("task3", 0).observation())
    inbound = {"H2": 1}
    with_own_claim = agent._hospital_scores(patient, hospitals, inbound, net)["H2"]
    afresh = agent._scores_from_scratch(patient, hospitals, inbound, net)["H2"]
    assert afresh > with_own_claim
    assert agent._lab_users == {"H2": [CONDITIONS["trauma_major"].care_at(h2["tier"]).procedure]}
