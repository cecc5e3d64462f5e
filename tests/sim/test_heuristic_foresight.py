"""The heuristic plans with what the observation announces: an out-of-service room counts from the
repair its alert gives and a diverted hospital from the end of its diversion (rule 4), and a
caller whose report names a specialist's condition is pre-alerted before the crew has seen the
patient (rule 5)."""

from __future__ import annotations

import pytest

from codered_env.agents.heuristic import HeuristicAgent
from codered_env.agents.hospital_rooms import or_repairs
from codered_env.agents.triage_rule import suspected_condition
from codered_env.sim import CodeRedSim

# task2 episodes whose only cath lab fails at minute 1-2 with a repair announced in time for the
# stroke patient's thrombectomy (seed 1018: t82, 1022: t47, 1035: t49)
REPAIRED_IN_TIME = (1018, 1022, 1035)


def _play(task_id: str, seed: int) -> tuple[CodeRedSim, list[tuple[dict, dict]]]:
    sim, agent = CodeRedSim(task_id, seed), HeuristicAgent(seed)
    agent.reset(task_id, seed)
    played = []
    while not sim.done:
        obs = sim.observation()
        action = agent.act(obs)
        played.append((obs, action))
        sim.step(action)
    return sim, played


def test_or_repairs_reads_the_failure_alert() -> None:
    sim = CodeRedSim("task2", 1035)
    sim.step({"action_type": "query_or_status", "hospital_id": "H1"})
    assert or_repairs(sim.observation()["alerts"]) == {("H1", "OR1"): 49}
    assert or_repairs(["H2 on diversion: ED beds full (until ~t40)", "garbled"]) == {}


@pytest.mark.parametrize("seed", REPAIRED_IN_TIME)
def test_a_room_back_in_time_is_not_written_off(seed: int) -> None:
    sim, _ = _play("task2", seed)
    grade = {p["patient_id"]: p for p in sim.grade()["patients"]}
    stroke = next(p for p in grade.values() if p["condition"] == "stroke")
    assert stroke["therapy"] == "evt", stroke


@pytest.mark.parametrize(
    ("report", "condition"),
    [
        ("67M at Old City, family calling: face drooping; bad headache", "stroke"),
        ("55M at Nadi Ghat, patient calling: chest pain; pain up into the jaw", "stemi"),
        ("26F at Hitech City, family calling: contractions", "labour"),
        ("48M at Rajiv Chowk, passer-by calling: lot of blood; hit by a vehicle", "trauma_haemorrhage"),
        ("30F at Rajiv Chowk, patient calling: lot of blood", None),  # no injury named
        ("55M at Nadi Ghat, family calling: sweating a lot; chest pain", None),  # no sign of its own
        ("44M at Old City, passer-by calling: had a fall", None),
    ],
)
def test_suspected_condition(report: str, condition: str | None) -> None:
    assert suspected_condition(report) == condition


def test_a_labour_caller_is_pre_alerted_before_the_crew_arrives() -> None:
    _, played = _play("task4", 1000)
    early = []
    for obs, action in played:
        if action["action_type"] != "page_specialist" or action["specialty"] != "obstetrics":
            continue
        seen = {p["call_id"] for p in obs["patients"]}
        early += [
            c["call_id"] for c in obs["calls"]
            if c["status"] == "dispatched" and c["call_id"] not in seen
            and suspected_condition(c["report"]) == "labour"
        ]
    assert early, "no obstetrician paged for a labour caller before the crew reached her"


# task4 episodes in which a stroke patient is on scene while H1, the only thrombectomy centre, is
# on a diversion that lapses before the crew leaves (seed: the patient)
REOPENS_IN_TIME = {1003: "P6", 1007: "P5", 1038: "P6"}


@pytest.mark.parametrize("seed", sorted(REOPENS_IN_TIME))
def test_a_stroke_waits_for_the_thrombectomy_centre_to_reopen(seed: int) -> None:
    sim, played = _play("task4", seed)
    patient = REOPENS_IN_TIME[seed]
    assigned = [(obs["clock_min"], action["hospital_id"]) for obs, action in played
                if action["action_type"] == "assign_hospital" and action["patient_id"] == patient]
    diverted = [obs["clock_min"] for obs, _ in played
                if next(h for h in obs["hospitals"] if h["hospital_id"] == "H1")["diverted_until"]]
    assert assigned and assigned[0][1] == "H1" and assigned[0][0] > max(diverted)
    record = next(p for p in sim.grade()["patients"] if p["patient_id"] == patient)
    assert record["therapy"] == "evt"


@pytest.mark.parametrize("seed", sorted(REOPENS_IN_TIME))
def test_waiting_for_a_reopening_ends_before_the_crew_leaves(seed: int) -> None:
    _, played = _play("task4", seed)
    patient = REOPENS_IN_TIME[seed]
    statuses = [next(p["status"] for p in obs["patients"] if p["patient_id"] == patient)
                for obs, action in played
                if action["action_type"] == "assign_hospital" and action["patient_id"] == patient]
    assert statuses and statuses[0] == "on_scene"  # not taken to the nearest open ED meanwhile


def test_patients_bound_for_a_hospital_gone_on_diversion_are_sent_elsewhere() -> None:
    # task3 seed 7017: H2 goes on diversion at t9 with two trauma patients assigned to it; left
    # alone, the crews would take them to the nearest open ED, which cannot operate
    sim, played = _play("task3", 7017)
    start = next(obs["clock_min"] for obs, _ in played
                 if next(h for h in obs["hospitals"] if h["hospital_id"] == "H2")["diverted_until"])
    rerouted = {a["patient_id"]: a["hospital_id"] for obs, a in played
                if a["action_type"] == "assign_hospital" and obs["clock_min"] >= start}
    assert rerouted.get("P2") not in (None, "H2") and rerouted.get("P3") not in (None, "H2")
    grade = {p["patient_id"]: p for p in sim.grade()["patients"]}
    assert grade["P2"]["hospital"] != "H3" and grade["P3"]["hospital"] != "H3"


def _assignments(played: list[tuple[dict, dict]], patient_id: str) -> list[tuple[int, str, str, str]]:
    """(minute, status, destination before, hospital chosen) of each assignment of ``patient_id``."""
    chosen = []
    for obs, action in played:
        if action["action_type"] == "assign_hospital" and action["patient_id"] == patient_id:
            row = next(p for p in obs["patients"] if p["patient_id"] == patient_id)
            chosen.append((obs["clock_min"], row["status"], row["destination"], action["hospital_id"]))
    return chosen


def test_a_crew_near_a_hospital_gone_on_diversion_keeps_going() -> None:
    # task3 seed 52003: H1 diverts at t20 while BLS3 brings P5 there (arrival t21); turning round
    # to H2 had overcrowded it and cost about 3 deaths per 100
    sim, played = _play("task3", 52003)
    assert _assignments(played, "P5") == [(5, "on_scene", None, "H1")]
    assert sim.world.patients["P5"].hospital == "H1"


def test_a_room_back_from_repair_counts_against_the_queue() -> None:
    # task3 seed 60009: at t24 both trauma centres' rooms in service are claimed ahead of P6; H1's
    # failed theatre is announced back at t81, so H1 is sooner than queueing behind H2's cases
    # (without the repaired room: H2, treatment at t170)
    sim, played = _play("task3", 60009)
    assert _assignments(played, "P6") == [(24, "awaiting_unit", None, "H1")]
    assert sim.world.patients["P6"].treatment_start <= 110


def test_a_destination_is_chosen_again_when_another_keeps_much_more() -> None:
    # task3 seed 60002: P1, bound for H1 (open), is sent to H2 from the scene: it now keeps at
    # least REVISE_MARGIN points more
    _, played = _play("task3", 60002)
    first, again = _assignments(played, "P1")[:2]
    assert first[3] == "H1" and again[1:] == ("on_scene", "H1", "H2")
    obs = next(obs for obs, _ in played if obs["clock_min"] == again[0])
    assert next(h for h in obs["hospitals"] if h["hospital_id"] == "H1")["diverted_until"] is None
