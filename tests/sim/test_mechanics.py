"""One test per mechanic: each shows that the mechanic changes what happens."""

from __future__ import annotations

from random import Random
from typing import Any

import pytest

from codered_env.sim import CodeRedSim
from codered_env.sim.conditions import CONDITIONS
from codered_env.sim.dynamics.blood import in_circulation
from codered_env.sim.params import PREP_READINESS_SHARE
from codered_env.sim.triage import callback_plan, report_priority_posterior
from codered_env.sim.types import Disruption

WAIT = {"action_type": "maintain_plan"}


def play(sim: CodeRedSim, actions: list[dict[str, Any]]) -> None:
    for action in actions:
        out = sim.step(action)
        assert out.error is None, (action, out.error)


def run_until_done(sim: CodeRedSim, limit: int = 200) -> None:
    for _ in range(limit):
        if sim.done:
            return
        sim.step(WAIT)
    sim.finish()


def patient(sim: CodeRedSim, pid: str = "P1"):
    return sim.world.patients[pid]


def stemi_plan(hospital: str, prep: bool = True) -> list[dict[str, Any]]:
    plan = [
        {"action_type": "dispatch_ambulance", "ambulance_id": "ALS1", "patient_id": "P1"},
        {"action_type": "assign_hospital", "patient_id": "P1", "hospital_id": hospital},
    ]
    if prep:
        plan += [
            {"action_type": "prepare_or", "hospital_id": hospital, "procedure": "cath_lab"},
            {"action_type": "page_specialist", "hospital_id": hospital, "specialty": "cardiology"},
        ]
    return plan


def free_cath_lab_seed() -> int:
    """A task1 seed whose cath lab is idle at the start (no elective case running)."""
    for seed in range(50):
        sim = CodeRedSim("task1", seed)
        if sim.world.hospitals["H1"].or_by_id("OR1").state == "idle":
            return seed
    raise AssertionError("no seed with an idle cath lab")


# ------------------------------------------------------------------------------ roads
def test_road_closure_lengthens_eta_and_reroutes_a_unit_en_route() -> None:
    sim = CodeRedSim("task1", 0)
    play(sim, [{"action_type": "dispatch_ambulance", "ambulance_id": "BLS2", "patient_id": "P1"}])
    amb = sim.world.ambulances["BLS2"]
    before_nodes, before_eta = list(amb.trip.nodes), amb.trip.arrival
    assert len(before_nodes) >= 3, "needs a multi-edge route to close a later edge"
    a, b = before_nodes[-2], before_nodes[-1]
    now = sim.clock
    sim.world.disruptions.append(Disruption("road_closure", now + 1, now + 60, edges=((a, b),), text="test"))
    sim.world.due("disruptions", now + 1)
    sim.step(WAIT)
    assert amb.status == "en_route"
    assert (a, b) not in list(zip(amb.trip.nodes[-2:], amb.trip.nodes[-1:], strict=False)), (
        "still uses the closed edge"
    )
    assert amb.trip.nodes != before_nodes
    assert amb.trip.arrival > before_eta
    assert any("rerouted" in e for e in sim.observation()["events"]) or amb.trip.arrival > before_eta


def test_congestion_raises_travel_time() -> None:
    sim = CodeRedSim("task1", 0)
    net = sim.world.net
    base = net.minutes("N8", "N0")
    net.set_congestion("N8", "N0", 2.5)
    assert net.edge_minutes("N0", "N8") == 2.5 * net.edge_minutes("N1", "N8")  # both 3 base minutes
    assert base < net.minutes("N8", "N0") <= 2.5 * base
    assert net.path("N8", "N0") == ["N8", "N1", "N0"]  # the detour now beats the jammed lane


# ------------------------------------------------------------------------------ hospital readiness
def test_prepared_or_and_paged_specialist_earn_prep_credit_and_time() -> None:
    seed = free_cath_lab_seed()
    ready = CodeRedSim("task1", seed)
    play(ready, stemi_plan("H1", prep=True))
    run_until_done(ready)
    cold = CodeRedSim("task1", seed)
    play(cold, [*stemi_plan("H1", prep=False), WAIT, WAIT])
    run_until_done(cold)
    g_ready, g_cold = ready.grade(), cold.grade()
    assert g_ready["patients"][0]["prep"] > 0.5
    # unprepared, the hospital readies the lab itself after arrival: credited only as late as that is
    assert g_cold["patients"][0]["prep"] < 0.25
    assert g_ready["components"]["prep_ready"] > g_cold["components"]["prep_ready"]
    assert patient(ready).treatment_start < patient(cold).treatment_start
    assert g_ready["score"] > g_cold["score"]


def test_preparation_expires_unused_and_is_counted_as_waste() -> None:
    seed = free_cath_lab_seed()
    sim = CodeRedSim("task1", seed)
    play(sim, [{"action_type": "prepare_or", "hospital_id": "H2", "procedure": "general"}])
    for _ in range(12):
        sim.step(WAIT)
    assert sim.world.ledger.get("unused_or_prep") == 1


# ------------------------------------------------------------------------------ blood
def _haemorrhage_run(allocate: bool, empty_stock: bool) -> CodeRedSim:
    sim = CodeRedSim("task3", 0)
    pid = next(p.patient_id for p in sim.world.patients.values() if p.condition == "trauma_haemorrhage")
    if empty_stock:
        for h in sim.world.hospitals.values():
            h.blood = dict.fromkeys(h.blood, 0)
        sim.world.hospitals["H1"].blood["O-"] = 2 if allocate else 0
        sim.world.initial_blood = in_circulation(sim.world)
    plan = [
        {"action_type": "dispatch_ambulance", "ambulance_id": "ALS1", "patient_id": pid},
        {"action_type": "assign_hospital", "patient_id": pid, "hospital_id": "H1"},
        {"action_type": "prepare_or", "hospital_id": "H1", "procedure": "trauma_surgery"},
        {"action_type": "page_specialist", "hospital_id": "H1", "specialty": "trauma_surgery"},
    ]
    if allocate:
        plan.append(
            {
                "action_type": "allocate_blood",
                "patient_id": pid,
                "hospital_id": "H1",
                "blood_type": "O-",
                "units": 2,
            }
        )
    play(sim, plan)
    sim.world.spawns.clear()  # keep the comparison about one patient
    for _ in range(60):
        if patient(sim, pid).treatment_start is not None:
            break
        sim.step(WAIT)
    sim.pid = pid  # type: ignore[attr-defined]
    return sim


def test_blood_at_hand_improves_a_haemorrhaging_patients_outcome() -> None:
    with_blood = _haemorrhage_run(allocate=True, empty_stock=True)
    without = _haemorrhage_run(allocate=False, empty_stock=True)
    p_with, p_without = patient(with_blood, with_blood.pid), patient(without, without.pid)
    assert p_with.treatment_start is not None and p_without.treatment_start is not None
    assert p_with.treatment_start < p_without.treatment_start  # surgery waits for blood
    assert p_with.reserve_at_treatment > p_without.reserve_at_treatment
    rec_with = next(r for r in with_blood.grade()["patients"] if r["patient_id"] == with_blood.pid)
    rec_without = next(r for r in without.grade()["patients"] if r["patient_id"] == without.pid)
    assert rec_with["expected_outcome"] > rec_without["expected_outcome"]
    assert rec_with["prep_parts"]["blood"] == 1.0 and rec_without["prep_parts"]["blood"] == 0.0


# ------------------------------------------------------------------------------ diversion and crowding
def _stemi_treatment_start(seed: int, setup) -> tuple[CodeRedSim, int]:
    sim = CodeRedSim("task1", seed)
    setup(sim)
    play(sim, stemi_plan("H2", prep=False)[:1])
    run_until_done(sim)
    return sim, patient(sim).treatment_start


def test_diversion_refuses_assignment_and_sends_the_crew_elsewhere() -> None:
    sim = CodeRedSim("task1", 0)
    sim.world.hospitals["H1"].diverted_until = 500
    out = sim.step({"action_type": "assign_hospital", "patient_id": "P1", "hospital_id": "H1"})
    assert out.error and "diversion" in out.error
    assert patient(sim).destination is None
    play(sim, [{"action_type": "dispatch_ambulance", "ambulance_id": "ALS1", "patient_id": "P1"}])
    run_until_done(sim)
    assert patient(sim).first_hospital_arrival is not None
    assert sim.world.patients["P1"].hospital != "H1" or patient(sim).status == "transferring"


def test_crowding_slows_care() -> None:
    seed = free_cath_lab_seed()

    def normal(sim: CodeRedSim) -> None:
        pass

    def crowded(sim: CodeRedSim) -> None:
        for h in sim.world.hospitals.values():
            h.base_load = h.capacity + 2

    calm_sim, calm = _stemi_treatment_start(seed, normal)
    busy_sim, busy = _stemi_treatment_start(seed, crowded)
    assert busy > calm
    assert patient(busy_sim).reserve_at_treatment < patient(calm_sim).reserve_at_treatment


def test_overcrowding_tips_a_hospital_into_diversion_in_cascade_tasks() -> None:
    sim = CodeRedSim("task3", 0)
    h1 = sim.world.hospitals["H1"]
    h1.base_load = h1.capacity + 1
    sim.step(WAIT)
    assert h1.diverted_until > sim.clock and h1.overcrowding_events == 1
    assert any("overcrowded" in a for a in sim.observation()["alerts"])


# ------------------------------------------------------------------------------ wrong tier
def test_wrong_tier_hospital_costs_time_and_score() -> None:
    seed = free_cath_lab_seed()
    right = CodeRedSim("task1", seed)
    play(right, stemi_plan("H1", prep=False))
    run_until_done(right)
    wrong = CodeRedSim("task1", seed)
    play(wrong, stemi_plan("H3", prep=False))
    run_until_done(wrong)
    assert patient(wrong).first_hospital_arrival is not None
    assert (
        patient(wrong).treatment_start is None
        or patient(wrong).treatment_start > patient(right).treatment_start
    )
    assert wrong.grade()["components"]["time_score"] < right.grade()["components"]["time_score"]
    assert wrong.grade()["patients"][0]["prep"] == 0.0


# ------------------------------------------------------------------------------ cascades and surge
def test_news_cycle_brings_a_surge_of_calls() -> None:
    for seed in range(10):
        sim = CodeRedSim("task5", seed)
        scheduled = len(sim.world.spawns) + len(sim.world.calls)
        run_until_done(sim)
        if sim.world.news_cycle_at is not None:
            surge = [c for c in sim.world.calls.values() if c.surge]
            assert surge, "news cycle fired but no surge call arrived"
            assert len(sim.world.calls) > scheduled - 1
            assert all(c.received_at >= sim.world.news_cycle_at for c in surge)
            return
    raise AssertionError("ignoring every call never triggered a news cycle")


def test_unattended_incident_escalates() -> None:
    sim = CodeRedSim("task3", 1)
    start = len(sim.world.patients) + len(sim.world.spawns)
    for _ in range(5):
        sim.step(WAIT)
    assert sim.world.escalated
    assert len(sim.world.patients) + len(sim.world.spawns) == start + 1


def test_p4_advice_callbacks_follow_the_report_not_the_truth() -> None:
    delays, rang_back = [], 0
    for seed in range(30):
        sim = CodeRedSim("task4", seed)
        call = sim.world.calls["C1"]
        play(sim, [{"action_type": "triage_call", "call_id": "C1", "priority": "P4"}])
        assert call.status == "closed_advice"
        expected = callback_plan(call.report, Random(f"codered:task4:{seed}:callback:C1"))
        while not sim.done and sim.clock < 100:
            sim.step(WAIT)
        callbacks = [c for c in sim.world.calls.values() if c.callback_of == "C1"]
        if expected is None:
            assert not callbacks
            continue
        rang_back += 1
        (callback,) = callbacks
        assert callback.received_at == expected  # advised at minute 0
        assert callback.report == f"CALLBACK (was C1), caller says it is worse: {call.report}"
        assert int(callback.call_id[1:]) > 1
        delays.append(expected)
    assert 0 < rang_back < 30 and len(set(delays)) > 3


def test_advice_to_a_likely_urgent_caller_counts_as_under_triage() -> None:
    """Charged when the call is closed, as the chance given the report that it needed a hot response."""
    for seed in range(60):
        sim = CodeRedSim("task4", seed)
        call = sim.world.calls["C1"]
        if call.true_priority != "P1":
            continue
        if callback_plan(call.report, Random(f"codered:task4:{seed}:callback:C1")) is not None:
            continue
        chances = report_priority_posterior(call.report)
        play(sim, [{"action_type": "triage_call", "call_id": "C1", "priority": "P4"}])
        charged = sim.grade()["penalties"].get("under_triage", 0)
        assert charged == pytest.approx(chances["P1"] + chances["P2"], abs=1e-4)
        sim.finish()
        assert sim.grade()["penalties"].get("under_triage", 0) == charged
        return
    raise AssertionError("no seed with a P1 first caller who does not ring back")


# ------------------------------------------------------------------------------ mutual aid and ALS
def test_mutual_aid_adds_a_unit_after_its_delay() -> None:
    sim = CodeRedSim("task2", 0)
    play(sim, [{"action_type": "request_mutual_aid"}])
    request = sim.world.mutual_aid[0]
    assert 10 <= request.arrives_at - request.requested_at <= 20
    assert "MA1" not in sim.world.ambulances
    while sim.clock < request.arrives_at:
        assert "MA1" not in sim.world.ambulances
        sim.step(WAIT)
    unit = sim.world.ambulances["MA1"]
    assert unit.kind == "ALS" and unit.node == "N7" and unit.status == "available"
    assert "MA1" in sim.observation()["legal_actions"]["dispatch_ambulance"][0]["ambulance_id"] or all(
        p.status != "awaiting_unit" for p in sim.world.patients.values()
    )


def test_als_care_slows_deterioration_compared_with_bls() -> None:
    def reserve_on_arrival(unit: str) -> float:
        sim = CodeRedSim("task1", 0)
        play(
            sim,
            [
                {"action_type": "dispatch_ambulance", "ambulance_id": unit, "patient_id": "P1"},
                {"action_type": "assign_hospital", "patient_id": "P1", "hospital_id": "H1"},
            ],
        )
        sim.world.ambulances[unit].trip.times[-1] = sim.clock + 1  # same response time for both
        sim.world.due("units", sim.clock + 1)
        while patient(sim).status != "at_hospital" and not sim.done:
            sim.step(WAIT)
        return patient(sim).reserve

    assert reserve_on_arrival("ALS1") > reserve_on_arrival("BLS1")


def test_phase2_observation_hides_the_true_condition_until_a_crew_arrives() -> None:
    sim = CodeRedSim("task4", 0)
    obs = sim.observation()
    assert obs["calls"], "task4 starts with a call"
    assert obs["patients"] == []
    text = sim.render_text().lower()
    assert all("condition" not in call and "true_priority" not in call for call in obs["calls"])
    for secret in ("stemi", "haemorrhage", "gastritis", "anxiety"):
        for call in obs["calls"]:
            assert secret not in call["report"].lower()
        assert secret not in text.split("legal:")[0]


def test_reserved_blood_takes_its_issue_time() -> None:
    sim = CodeRedSim("task3", 0)
    pid = next(p.patient_id for p in sim.world.patients.values() if p.condition == "trauma_haemorrhage")
    play(sim, [{"action_type": "query_blood_type", "patient_id": pid}])
    for _ in range(5):
        sim.step(WAIT)
    blood_type = patient(sim, pid).blood_type
    assert patient(sim, pid).blood_type_known
    play(
        sim,
        [
            {
                "action_type": "allocate_blood",
                "patient_id": pid,
                "hospital_id": "H1",
                "blood_type": "O-",
                "units": 2,
            }
        ],
    )
    o_neg = sim.world.allocations[-1]
    assert o_neg.ready_at == o_neg.made_at + 5  # emergency O-neg issue
    donors = [t for t in ("O+", "A+", "B+", "AB+", "A-", "B-", "AB-") if t == blood_type]
    if donors and sim.world.hospitals["H1"].blood.get(donors[0], 0) >= 1:
        play(
            sim,
            [
                {
                    "action_type": "allocate_blood",
                    "patient_id": pid,
                    "hospital_id": "H1",
                    "blood_type": donors[0],
                    "units": 1,
                }
            ],
        )
        assert sim.world.allocations[-1].ready_at == sim.world.allocations[-1].made_at + 12  # type-specific


# ------------------------------------------------------------------------------ transfusion service
def _bleeder(task: str = "task3", seed: int = 0) -> tuple[CodeRedSim, str]:
    sim = CodeRedSim(task, seed)
    pid = next(p.patient_id for p in sim.world.patients.values() if p.condition == "trauma_haemorrhage")
    return sim, pid


def _allocate(pid: str, hid: str, blood_type: str, units: int = 2) -> dict[str, Any]:
    return {
        "action_type": "allocate_blood",
        "patient_id": pid,
        "hospital_id": hid,
        "blood_type": blood_type,
        "units": units,
    }


def test_uncrossmatched_o_pos_for_a_man_o_neg_only_for_a_young_woman() -> None:
    sim, pid = _bleeder()
    p = patient(sim, pid)
    p.sex, p.age = "M", 40
    assert sim.step(_allocate(pid, "H1", "O+")).error is None
    assert sim.world.allocations[-1].ready_at == sim.world.allocations[-1].made_at + 5
    sim2, pid2 = _bleeder()
    p2 = patient(sim2, pid2)
    p2.sex, p2.age = "F", 28
    err = sim2.step(_allocate(pid2, "H1", "O+")).error
    assert err and "child-bearing" in err
    assert sim2.step(_allocate(pid2, "H1", "O-")).error is None


def test_type_specific_blood_waits_for_the_sample_to_reach_the_lab() -> None:
    sim, pid = _bleeder()
    p = patient(sim, pid)
    p.blood_type, p.blood_type_known, p.sex = "A+", True, "M"
    sim.world.hospitals["H1"].blood["A+"] = 4
    sim.world.initial_blood = in_circulation(sim.world)
    play(
        sim,
        [
            {"action_type": "dispatch_ambulance", "ambulance_id": "ALS1", "patient_id": pid},
            {"action_type": "assign_hospital", "patient_id": pid, "hospital_id": "H1"},
            _allocate(pid, "H1", "A+"),
        ],
    )
    alloc = sim.world.allocations[-1]
    assert alloc.awaiting_sample
    for _ in range(80):
        if p.first_hospital_arrival is not None:
            break
        sim.step(WAIT)
    assert not alloc.awaiting_sample
    assert alloc.ready_at == p.first_hospital_arrival + 12  # immediate-spin cross-match on arrival


def test_blood_given_to_stabilise_before_a_transfer_counts_as_used() -> None:
    sim, pid = _bleeder()
    p = patient(sim, pid)
    p.sex, p.age = "M", 40
    play(
        sim,
        [
            {"action_type": "dispatch_ambulance", "ambulance_id": "ALS1", "patient_id": pid},
            {"action_type": "assign_hospital", "patient_id": pid, "hospital_id": "H3"},
            _allocate(pid, "H3", "O+"),
        ],
    )
    for _ in range(120):
        if p.transferred or p.status == "deceased":
            break
        sim.step(WAIT)
    assert p.transferred
    alloc = next(a for a in sim.world.allocations if a.by_agent and a.hospital_id == "H3")
    assert alloc.used and p.transfused_units >= alloc.units
    sim.finish()
    assert "unneeded_blood" not in sim.grade()["penalties"]


# ------------------------------------------------------------------------------ hospitals
def test_h1_gives_thrombolysis_when_its_cath_lab_is_out_of_service() -> None:
    seed = free_cath_lab_seed()
    sim = CodeRedSim("task1", seed)
    room = sim.world.hospitals["H1"].or_by_id("OR1")
    room.state, room.until = "out_of_service", 10_000
    play(sim, stemi_plan("H1", prep=False))
    run_until_done(sim)
    rec = sim.grade()["patients"][0]
    assert rec["therapy"] == "lysis" and rec["hospital"] == "H1"
    assert rec["delay_min"] is not None and rec["delay_min"] < 120


def test_pre_activation_shortens_door_to_device() -> None:
    seed = free_cath_lab_seed()
    times = {}
    for prep in (True, False):
        sim = CodeRedSim("task1", seed)
        play(sim, stemi_plan("H1", prep=prep))
        run_until_done(sim)
        p = patient(sim)
        times[prep] = p.treatment_start - p.first_hospital_arrival
    assert times[True] < times[False]
    assert times[True] >= 40  # the door-to-device floor


def test_thrombolysis_while_pci_was_available_earns_no_readiness_credit() -> None:
    seed = free_cath_lab_seed()
    sim = CodeRedSim("task1", seed)
    play(sim, stemi_plan("H2", prep=False))
    run_until_done(sim)
    g = sim.grade()
    rec = g["patients"][0]
    assert rec["therapy"] == "lysis" and rec["prep"] == 0.0
    # readiness 0: only the share of prep_ready that follows the benefit kept
    share = 1.0 - PREP_READINESS_SHARE
    assert g["components"]["prep_ready"] == pytest.approx(share * g["components"]["time_score"], abs=1e-3)


def test_stroke_vitals_show_rising_blood_pressure() -> None:
    from codered_env.sim.obs_rows import displayed_vitals

    sim = CodeRedSim("task2", 0)
    stroke = next(p for p in sim.world.patients.values() if p.condition == "stroke")
    stroke.reserve = 0.4
    assert displayed_vitals(stroke)["sbp"] > stroke.sbp0


# ------------------------------------------------------------------------------ response modes
def _scene_arrival(seed: int, coded: str | None) -> int:
    sim = CodeRedSim("task4", seed)
    if coded:
        play(sim, [{"action_type": "triage_call", "call_id": "C1", "priority": coded}])
    dispatched_at = sim.clock
    play(sim, [{"action_type": "dispatch_bls", "ambulance_id": "BLS1", "call_id": "C1"}])
    return sim.world.ambulances["BLS1"].trip.arrival - dispatched_at


def test_triage_sets_the_response_mode() -> None:
    for seed in range(12):
        if CodeRedSim("task4", seed).world.calls["C1"].node == "N2":
            continue  # BLS1's own station: on scene within the minute
        hot, urgent, cold, uncoded = (_scene_arrival(seed, c) for c in ("P1", "P2", "P3", None))
        assert hot == urgent  # P1 and P2 both drive with lights and sirens
        assert cold > hot  # P3 goes cold, after the turnout of a non-urgent job
        assert uncoded == cold  # an uncoded call goes at the protocol default (cold)


def test_p4_closes_the_call_without_a_unit() -> None:
    sim = CodeRedSim("task4", 0)
    play(sim, [{"action_type": "triage_call", "call_id": "C1", "priority": "P4"}])
    legal = sim.observation()["legal_actions"]
    assert all("C1" not in option.get("call_id", []) for option in legal.get("dispatch_bls", []))
    out = sim.step({"action_type": "dispatch_bls", "ambulance_id": "BLS1", "call_id": "C1"})
    assert out.error and "closed_advice" in out.error


def _cardiac_arrest_call() -> tuple[str, int, str, int]:
    for task in ("task4", "task5"):
        for seed in range(200):
            for spawn in CodeRedSim(task, seed).world.spawns:
                if spawn.patient.condition == "cardiac_arrest":
                    return task, seed, spawn.patient.patient_id, spawn.at
    raise AssertionError("no cardiac arrest in the call mix")


def test_telephone_cpr_after_p1_coding_slows_a_cardiac_arrest() -> None:
    task, seed, pid, _ = _cardiac_arrest_call()
    reserves = {}
    for coded in ("P1", "P3"):
        sim = CodeRedSim(task, seed)
        while pid not in sim.world.patients:
            sim.step(WAIT)
        cid = sim.world.patients[pid].call_id
        play(sim, [{"action_type": "triage_call", "call_id": cid, "priority": coded}])
        start = sim.world.patients[pid].reserve
        for _ in range(6):
            sim.step({"action_type": "query_or_status", "hospital_id": "H1"})  # one minute each
        reserves[coded] = start - sim.world.patients[pid].reserve
    assert 0 < reserves["P1"] < 0.65 * reserves["P3"]  # Larsen: (1.1 + 2.1) / 5.5 = 0.58


def test_cardiac_arrest_survival_falls_steeply_and_cpr_helps() -> None:
    from codered_env.sim.conditions import cardiac_arrest_survival

    s0, s1, s10 = (cardiac_arrest_survival(m, 0) for m in (0, 1, 10))
    assert 0.07 <= 1 - s1 / s0 <= 0.10  # 7-10 % per minute without CPR
    assert cardiac_arrest_survival(2, 8) > 1.5 * s10  # telephone CPR for most of the wait


def _divert_every_capable_hospital(sim: CodeRedSim, pid: str = "P1") -> list[str]:
    care_at = CONDITIONS[patient(sim, pid).condition].care_at
    capable = [h.hospital_id for h in sim.world.hospitals.values() if care_at(h.tier) is not None]
    for hid in capable:
        sim.world.hospitals[hid].diverted_until = 500
    return capable


def test_diversion_does_not_turn_away_a_patient_no_open_hospital_can_treat() -> None:
    sim = CodeRedSim("task1", 0)
    capable = _divert_every_capable_hospital(sim)
    assert capable and sim.world.diversion_waived(patient(sim).condition)
    target = capable[0]
    options = sim.observation()["legal_actions"]["assign_hospital"]
    assert any("P1" in o["patient_id"] and target in o["hospital_id"] for o in options)
    others = [o for o in options if "P1" not in o["patient_id"]]
    assert all(target not in o["hospital_id"] for o in others)  # the rest are still turned away
    play(sim, [{"action_type": "assign_hospital", "patient_id": "P1", "hospital_id": target},
               {"action_type": "dispatch_ambulance", "ambulance_id": "ALS1", "patient_id": "P1"}])
    run_until_done(sim)
    assert patient(sim).first_hospital_arrival is not None
    assert patient(sim).hospital == target and not patient(sim).transferred


def test_a_crew_keeps_going_to_a_diverted_hospital_when_no_open_one_can_treat() -> None:
    sim = CodeRedSim("task1", 0)
    care_at = CONDITIONS[patient(sim).condition].care_at
    target = next(h.hospital_id for h in sim.world.hospitals.values() if care_at(h.tier) is not None)
    play(sim, [{"action_type": "assign_hospital", "patient_id": "P1", "hospital_id": target},
               {"action_type": "dispatch_ambulance", "ambulance_id": "ALS1", "patient_id": "P1"}])
    _divert_every_capable_hospital(sim)
    run_until_done(sim)
    assert patient(sim).hospital == target and not patient(sim).transferred


def test_the_diversion_waiver_needs_a_capable_hospital_and_every_capable_one_diverted() -> None:
    stemi = CONDITIONS["stemi"]
    able, unable = sorted(stemi.care_by_tier)[0], max(t for t in range(1, 10) if t not in stemi.care_by_tier)
    assert stemi.diversion_waived([(able, True), (unable, False)])
    assert not stemi.diversion_waived([(able, True), (able, False)])  # an open one can treat
    assert not stemi.diversion_waived([(unable, True)])  # no hospital can: nothing to waive
    assert not CONDITIONS["anxiety"].diversion_waived([(able, True)])  # needs no hospital
