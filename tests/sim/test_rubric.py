"""The grader's contract (docs/MODEL.md#grading).

No credit for inaction; ``null`` components only where nothing can be measured, their weight
shared out in proportion; the score rounded to 4 decimals and clamped to [0.01, 0.99]; a
per-patient breakdown; a running preview that ends at the final grade; the grade as a pure
function of (task, seed, actions); and penalties that respond to waste.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
from collections.abc import Callable
from typing import Any

import pytest

from codered_env.agents import make_agent
from codered_env.runner import run_episode
from codered_env.sim import TASK_IDS, TASKS, CodeRedSim, grade_episode
from codered_env.sim.conditions import CONDITIONS, benefit_kept
from codered_env.sim.outcome import outcome_weight
from codered_env.sim.params import (
    MUTUAL_AID_PENALTY_UNNEEDED,
    PENALTY,
    PREP_READINESS_SHARE,
    RUBRIC_WEIGHTS,
    SCORE_CEIL,
    SCORE_FLOOR,
)
from codered_env.sim.rubric import grade
from codered_env.sim.triage import report_priority_posterior

WAIT: dict[str, Any] = {"action_type": "maintain_plan"}
NULLABLE = ("secondary_harm", "cascade_score")
NO_CASCADES = ("task1", "task2", "task4")


def act(action_type: str, **params: Any) -> dict[str, Any]:
    return {"action_type": action_type, **params}


def play(sim: CodeRedSim, actions: list[dict[str, Any]]) -> None:
    for action in actions:
        out = sim.step(action)
        assert out.error is None, (action, out.error)


def run_policy(task_id: str, seed: int, policy: Callable[[dict[str, Any]], Any]) -> tuple[CodeRedSim, list]:
    """Play ``policy(observation)`` to the end; return the sim and the per-step rewards."""
    sim = CodeRedSim(task_id, seed)
    rewards = []
    while not sim.done:
        rewards.append(sim.step(policy(sim.observation())).reward)
    return sim, rewards


def heuristic_episode(task_id: str, seed: int = 0):
    return run_episode(task_id, seed, make_agent("heuristic"))


# ------------------------------------------------------------------------------ no credit for inaction
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_noop_scores_the_floor(task_id: str, seed: int) -> None:
    sim, rewards = run_policy(task_id, seed, lambda obs: WAIT)
    g = sim.grade()
    assert g["final"] is True
    assert g["score"] == SCORE_FLOOR
    assert g["raw_score"] <= 0.0
    for key, value in g["components"].items():
        if value is None:
            assert key in NULLABLE and task_id in NO_CASCADES
        else:
            assert value == 0.0, (key, value)
    assert g["coverage"] == 0.0
    # the running preview values the callers at the benefit care could still keep and charges
    # the waiting minute by minute: with nobody reached, nearly all of it before the last step
    assert rewards[0] >= 0.0
    gained = max(rewards[0], 0.0) + sum(r for r in rewards[1:-1] if r > 0)
    assert -math.fsum(rewards[1:-1]) >= 0.5 * gained - 1e-9
    assert math.fsum(rewards) == pytest.approx(SCORE_FLOOR, abs=1e-9)


def _queries_only(obs: dict[str, Any]) -> dict[str, Any]:
    """Looks busy, does nothing: OR queries, blood typing, waiting."""
    legal = obs["legal_actions"]
    step = obs["step"]
    if step % 3 == 0 and "query_blood_type" in legal:
        return act("query_blood_type", patient_id=legal["query_blood_type"][0]["patient_id"][0])
    if step % 3 == 1:
        return act("query_or_status", hospital_id=("H1", "H2", "H3")[step % 3])
    return WAIT


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_queries_and_waiting_earn_no_efficiency(task_id: str) -> None:
    sim, _ = run_policy(task_id, 1, _queries_only)
    g = sim.grade()
    assert sim.step_count > 3
    assert g["penalties"].get("invalid_action", 0) == 0
    assert g["components"]["efficiency"] == 0.0
    assert g["components"]["time_score"] == 0.0
    assert g["score"] == SCORE_FLOOR


def _triage_only(task_id: str, seed: int) -> Callable[[dict[str, Any]], Any]:
    """The heuristic's triage codes, and nothing else: every call coded, no crew sent."""
    agent = make_agent("heuristic", seed)
    agent.reset(task_id, seed)

    def policy(obs: dict[str, Any]) -> dict[str, Any]:
        action = agent.act(obs)
        return action if action["action_type"] == "triage_call" else WAIT
    return policy


@pytest.mark.parametrize("seed", [3, 4])
def test_cascade_process_credit_needs_the_benefit_kept(seed: int) -> None:
    """Triage codes and deliveries are process: with every outcome lost they earn nothing, so a
    policy coding every call and serving no one scores the floor, and ``cascade_score`` never
    exceeds ``time_score`` (a policy with more deaths cannot buy score by delivering more)."""
    sim, _ = run_policy("task5", seed, _triage_only("task5", seed))
    g = sim.grade()
    assert any(c.priority is not None for c in sim.world.calls.values())
    assert g["components"]["cascade_score"] == 0.0 and g["score"] == SCORE_FLOOR
    for task_id, agent in itertools.product(("task3", "task5"), ("random", "heuristic")):
        c = run_episode(task_id, seed, make_agent(agent, seed)).components
        assert c["cascade_score"] <= c["time_score"] + 1e-4, (task_id, agent, c)


def test_grader_is_not_constant() -> None:
    """Failure mode of the earlier implementation: the same score whatever the agent did."""
    for task_id in TASK_IDS:
        noop = run_episode(task_id, 0, make_agent("noop")).score
        rand = run_episode(task_id, 0, make_agent("random")).score
        expert = heuristic_episode(task_id).score
        assert noop == SCORE_FLOOR
        assert expert > max(noop, rand) + 0.05, (task_id, noop, rand, expert)


# ------------------------------------------------------------------------------ nulls and weights
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_null_components_and_redistributed_weights(task_id: str) -> None:
    g = heuristic_episode(task_id).grade
    comps, weights = g["components"], g["weights"]
    assert set(comps) == set(RUBRIC_WEIGHTS) == set(weights)
    if TASKS[task_id].cascades:
        assert all(v is not None for v in comps.values())
        assert weights == RUBRIC_WEIGHTS
    else:
        assert task_id in NO_CASCADES
        assert [k for k, v in comps.items() if v is None] == list(NULLABLE)
        assert all(weights[k] == 0.0 for k in NULLABLE)
        applicable = sum(w for k, w in RUBRIC_WEIGHTS.items() if k not in NULLABLE)
        for key, w in RUBRIC_WEIGHTS.items():
            if key not in NULLABLE:
                assert weights[key] == pytest.approx(w / applicable, abs=1e-4)
                assert weights[key] > w  # the shared-out weight went somewhere
    assert sum(weights.values()) == pytest.approx(1.0, abs=5e-4)
    # the score is the weighted sum of the reported components minus the mutual-aid penalty
    recomputed = sum(weights[k] * (comps[k] or 0.0) for k in weights) - g["mutual_aid_penalty"]
    assert g["raw_score"] == pytest.approx(recomputed, abs=1e-3)
    assert g["score"] == min(SCORE_CEIL, max(SCORE_FLOOR, g["raw_score"]))


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_nullness_depends_on_the_task_not_the_episode(task_id: str) -> None:
    """A cascade task reports 0 (not null) for cascades when nothing was done about them."""
    sim, _ = run_policy(task_id, 5, lambda obs: WAIT)
    comps = sim.grade()["components"]
    for key in NULLABLE:
        assert (comps[key] is None) == (task_id in NO_CASCADES)


# ------------------------------------------------------------------------------ clamping and rounding
def test_score_is_clamped_at_the_ceiling() -> None:
    """A flawless episode (instant, full-quality, fully prepared care) is reported as 0.99."""
    sim = CodeRedSim("task1", 0)
    p = sim.world.patients["P1"]
    p.status, p.hospital = "treated", "H1"
    p.treatment_start, p.treatment_end, p.treatment_quality = p.appeared_at, p.appeared_at + 60, 1.0
    p.therapy = "pci"
    p.reserve_at_treatment, p.first_unit_at, p.first_hospital_arrival = 1.0, 0, 0
    p.arrival_prep = p.prep_credit = {"or": 1.0, "specialist": 1.0}
    g = grade(sim.world, final=True)
    assert g["raw_score"] == 1.0
    assert g["score"] == SCORE_CEIL
    preview = grade(sim.world, final=False)
    assert preview["score"] == SCORE_CEIL


def test_score_is_clamped_at_the_floor() -> None:
    """Doing nothing but call unneeded mutual aid gives a negative raw score, reported as 0.01."""
    sim = CodeRedSim("task2", 0)
    play(sim, [act("request_mutual_aid")])
    while not sim.done:
        sim.step(WAIT)
    g = sim.grade()
    assert g["mutual_aid_penalty"] == pytest.approx(MUTUAL_AID_PENALTY_UNNEEDED)
    assert g["raw_score"] < 0.0
    assert g["score"] == SCORE_FLOOR


@pytest.mark.parametrize("task_id", TASK_IDS)
@pytest.mark.parametrize("agent", ["heuristic", "random"])
def test_score_rounded_to_four_decimals(task_id: str, agent: str) -> None:
    g = run_episode(task_id, 2, make_agent(agent, seed=1)).grade
    assert SCORE_FLOOR <= g["score"] <= SCORE_CEIL
    assert g["score"] == round(g["score"], 4)
    assert g["raw_score"] == round(g["raw_score"], 4)
    assert g["score"] == min(SCORE_CEIL, max(SCORE_FLOOR, g["raw_score"]))
    for value in g["components"].values():
        assert value is None or value == round(value, 4)


def _kept(key: str, delay: float, therapy: str | None = None, quality: float = 1.0, onset: int = 60) -> float:
    cond = CONDITIONS[key]
    best = cond.best_care
    return benefit_kept(cond, delay, quality, onset, therapy or (best.therapy if best else "definitive"))


@pytest.mark.parametrize("key", [k for k, c in CONDITIONS.items() if c.true_priority != "P4"])
def test_benefit_kept_is_a_share_that_falls_with_delay(key: str) -> None:
    values = [_kept(key, d) for d in range(0, 300, 5)]
    assert values[0] == pytest.approx(1.0)
    assert all(0.0 <= v <= 1.0 for v in values)
    assert all(a >= b for a, b in itertools.pairwise(values))
    assert values[-1] < values[0], "delay must cost something"


def test_time_score_is_steep_where_minutes_cost_lives() -> None:
    """Per minute over the first hour: haemorrhage > STEMI > non-shock trauma (Clarke, Rathore,
    Newgard); non-shock trauma keeps most of its benefit even at 3 hours."""
    loss = {k: _kept(k, 0) - _kept(k, 60) for k in ("trauma_haemorrhage", "stemi", "trauma_major")}
    assert loss["trauma_haemorrhage"] > loss["stemi"] > loss["trauma_major"]
    assert _kept("trauma_major", 180) >= 0.6
    assert _kept("trauma_haemorrhage", 90) < 0.5


def test_stroke_thrombolysis_ends_at_four_and_a_half_hours() -> None:
    onset = 120
    inside = _kept("stroke", 270 - onset - 30, therapy="lysis", onset=onset)
    outside = _kept("stroke", 270 - onset + 1, therapy="lysis", onset=onset)
    assert inside > 0.0 and outside == 0.0
    assert _kept("stroke", 60, therapy="evt", onset=onset) > _kept("stroke", 60, therapy="lysis", onset=onset)


def _treated_stemi(delay: int, transferred: bool, relaxed: bool) -> dict:
    sim = CodeRedSim("task1", 0)
    p = sim.world.patients["P1"]
    p.status, p.hospital, p.therapy = "treated", "H1", "pci"
    p.treatment_start, p.treatment_end, p.treatment_quality = delay, delay + 60, 1.0
    p.transferred, p.relaxed_target = transferred, relaxed
    return grade(sim.world, final=True)["patients"][0]


def test_relaxed_transfer_target_only_when_no_pci_hospital_could_take_the_patient() -> None:
    direct = _treated_stemi(100, transferred=False, relaxed=False)
    shortcut = _treated_stemi(130, transferred=True, relaxed=False)
    forced = _treated_stemi(130, transferred=True, relaxed=True)
    assert shortcut["target_min"] == 90 and forced["target_min"] == 120
    assert shortcut["benefit_kept"] < direct["benefit_kept"] == pytest.approx(forced["benefit_kept"])
    assert {"delay_min", "target_min", "benefit_kept", "expected_outcome"} <= set(direct)


# ------------------------------------------------------------------------------ per-patient breakdown
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_per_patient_breakdown(task_id: str) -> None:
    sim = CodeRedSim(task_id, 0)
    agent = make_agent("heuristic")
    agent.reset(task_id, 0)
    while not sim.done:
        sim.step(agent.act(sim.observation()))
    g = sim.grade()
    scored = [p for p in sim.world.patients.values() if CONDITIONS[p.condition].true_priority != "P4"]
    records = {r["patient_id"]: r for r in g["patients"]}
    assert len(records) == len(g["patients"])
    assert set(records) == {p.patient_id for p in scored}
    assert scored, "every task has patients to score"
    for p in scored:
        rec = records[p.patient_id]
        assert rec["condition"] == p.condition
        assert rec["status"] == p.status
        assert rec["priority"] == CONDITIONS[p.condition].true_priority
        assert 0.0 <= rec["time_score"] <= 1.0
        assert (rec["delay_min"] is None) == (p.treatment_start is None)
        if p.treatment_start is None:
            assert rec["time_score"] == 0.0 and rec["vitals_at_treatment"] == 0.0
    # the components are the stake-weighted aggregates of the breakdown
    weights = {i: r["stake"] for i, r in records.items()}
    assert all(w > 0 for w in weights.values())
    time_score = sum(weights[i] * r["time_score"] for i, r in records.items()) / sum(weights.values())
    assert g["components"]["time_score"] == pytest.approx(time_score, abs=1e-3)
    vitals = sum(weights[i] * r["vitals_at_treatment"] for i, r in records.items()) / sum(weights.values())
    assert g["components"]["vitals_score_avg"] == pytest.approx(vitals, abs=1e-3)
    # readiness gated on the benefit kept, over every patient (nothing to prepare: ready), and
    # deciding PREP_READINESS_SHARE of it
    ready = {i: 1.0 - PREP_READINESS_SHARE * (1.0 - (1.0 if r["prep"] is None else r["prep"]))
             for i, r in records.items()}
    prep = sum(weights[i] * r["time_score"] * ready[i] for i, r in records.items())
    assert g["components"]["prep_ready"] == pytest.approx(prep / sum(weights.values()), abs=2e-3)
    assert g["components"]["prep_ready"] <= g["components"]["time_score"] + 1e-9
    reached = [r["first_unit_min"] is not None for r in records.values()]
    assert g["coverage"] == pytest.approx(sum(reached) / len(reached), abs=1e-4)
    assert any(r["time_score"] > 0 for r in records.values()), "the heuristic treats someone"


# ------------------------------------------------------------------------------ preview and replay
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_preview_never_exceeds_ceiling_and_ends_at_the_final_grade(task_id: str) -> None:
    previews: list[float] = []
    finals: list[bool] = []

    def hook(n: int, action: Any, reward: float, done: bool, error: str | None, sim: CodeRedSim) -> None:
        previews.append(sim.score_preview)
        finals.append(sim.grade()["final"])
        assert sim.observation()["score_preview"] == sim.score_preview

    result = run_episode(task_id, 0, make_agent("heuristic"), on_step=hook)
    assert previews and all(0.0 <= s <= SCORE_CEIL for s in previews)
    assert finals[-1] is True and not any(finals[:-1])
    assert previews[-1] == result.score == result.grade["score"]
    assert math.fsum(result.rewards) == pytest.approx(result.score, abs=1e-9)
    assert max(previews) > 0.0


@pytest.mark.parametrize("ending", ["played", "stopped"])
def test_the_final_breakdown_built_late_is_the_grade_of_the_ended_world(ending: str) -> None:
    """The final score is taken when the episode ends, the breakdown when first asked for: it
    is the rubric's grade of the world as it ended, and a fork or copy of the ended episode (a
    fork redraws its own world's hidden parts) reports the parent's grade, not one of its own."""
    sim, agent = CodeRedSim("task5", 2), make_agent("heuristic", seed=2)
    agent.reset("task5", 2)
    while not sim.done and (ending == "played" or sim.step_count < 20):
        sim.step(agent.act(sim.observation()))
    sim.finish()
    expected = grade(sim.world, final=True) | {"steps": sim.step_count}
    twins = [sim.fork(7), sim.private_copy(), sim.snapshot().copy()]
    assert sim.score_preview == expected["score"]
    assert sim.grade() == expected
    for twin in twins:
        assert twin.done and twin.grade() == expected and twin.score_preview == expected["score"]
    forked = CodeRedSim("task5", 2)
    forked.finish()
    twin = forked.fork(11)  # forked before anyone asked for the breakdown
    assert twin.grade() == forked.grade() == grade(forked.world, final=True) | {"steps": 0}


@pytest.mark.parametrize("task_id", TASK_IDS)
@pytest.mark.parametrize("agent", ["heuristic", "random"])
def test_grade_episode_equals_live_grade(task_id: str, agent: str) -> None:
    result = run_episode(task_id, 4, make_agent(agent, seed=3))
    saved = json.loads(json.dumps(result.actions))  # as stored in a trajectory file
    assert grade_episode(task_id, 4, saved) == result.grade
    # extra actions after the end are ignored
    assert grade_episode(task_id, 4, [*saved, WAIT, {"action_type": "bogus"}]) == result.grade


@pytest.mark.parametrize("task_id", ["task2", "task5"])
def test_grade_episode_of_a_truncated_list_equals_stopping_early(task_id: str) -> None:
    early = run_episode(task_id, 0, make_agent("heuristic"), max_steps=6)
    assert early.steps == 6
    assert grade_episode(task_id, 0, early.actions) == early.grade
    full = heuristic_episode(task_id)
    assert full.grade != early.grade


# ------------------------------------------------------------------------------ penalties respond
def _heuristic_with_first_action(task_id: str, seed: int, first: Any) -> tuple[CodeRedSim, list[Any]]:
    """Play ``first``, then let the heuristic agent finish the episode."""
    sim = CodeRedSim(task_id, seed)
    agent = make_agent("heuristic")
    agent.reset(task_id, seed)
    sim.step(first)
    actions = []
    while not sim.done:
        action = agent.act(sim.observation())
        actions.append(action)
        sim.step(action)
    return sim, actions


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_invalid_action_lowers_efficiency(task_id: str) -> None:
    ref, ref_actions = _heuristic_with_first_action(task_id, 0, act("query_or_status", hospital_id="H1"))
    bad, bad_actions = _heuristic_with_first_action(task_id, 0, act("query_or_status", hospital_id="H7"))
    assert bad_actions == ref_actions  # same play after the refused action
    g_ref, g_bad = ref.grade(), bad.grade()
    assert g_bad["penalties"]["invalid_action"] == g_ref["penalties"].get("invalid_action", 0) + 1
    eff_ref, eff_bad = g_ref["components"]["efficiency"], g_bad["components"]["efficiency"]
    assert eff_ref > 0
    # waste per scored patient (those the play caused aside) discounts the benefit delivered
    base = sum(not p["caused"] for p in g_ref["patients"])
    expected = eff_ref * math.exp(-PENALTY["invalid_action"] / base)
    assert eff_bad == pytest.approx(expected, abs=2e-4)
    assert g_bad["score"] < g_ref["score"]
    assert {k: v for k, v in g_bad["components"].items() if k != "efficiency"} == {
        k: v for k, v in g_ref["components"].items() if k != "efficiency"
    }


def _stemi_plan_then(extra: dict[str, Any]) -> tuple[CodeRedSim, dict[str, Any]]:
    """task1: dispatch, destination H1, then ``extra``; returns the sim and the preview after it."""
    seed = next(
        s
        for s in range(60)
        if CodeRedSim("task1", s).world.hospitals["H2"].ors[0].state == "idle"
        and CodeRedSim("task1", s).world.hospitals["H1"].or_by_id("OR1").state == "idle"
    )
    sim = CodeRedSim("task1", seed)
    play(
        sim,
        [
            act("dispatch_ambulance", ambulance_id="ALS1", patient_id="P1"),
            act("assign_hospital", patient_id="P1", hospital_id="H1"),
            act("prepare_or", hospital_id="H1", procedure="cath_lab"),
            act("page_specialist", hospital_id="H1", specialty="cardiology"),
            extra,
        ],
    )
    return sim, sim.grade()


def _finish(sim: CodeRedSim) -> dict[str, Any]:
    while not sim.done:
        sim.step(WAIT)
    return sim.grade()


WASTE = [
    ("unused_or_prep", act("prepare_or", hospital_id="H2", procedure="general")),
    ("wasted_page", act("page_specialist", hospital_id="H2", specialty="obstetrics")),
    ("wasted_page", act("page_specialist", hospital_id="H1", specialty="neurology")),
]


@pytest.mark.parametrize(("key", "waste"), WASTE, ids=[f"{k}-{w['hospital_id']}" for k, w in WASTE])
def test_waste_is_charged_while_unused(key: str, waste: dict[str, Any]) -> None:
    ref, ref_preview = _stemi_plan_then(act("query_or_status", hospital_id="H2"))
    sim, preview = _stemi_plan_then(waste)
    charged = preview["penalties"].get(key, 0) - ref_preview["penalties"].get(key, 0)
    assert charged == 1, "the preview charges it while nothing uses it"
    g_ref, g = _finish(ref), _finish(sim)
    assert g["final"] is True
    assert g["penalties"].get(key) == 1
    assert key not in g_ref["penalties"]
    assert g_ref["components"]["time_score"] > 0  # the patient was treated in both
    eff_ref, eff = g_ref["components"]["efficiency"], g["components"]["efficiency"]
    assert eff == pytest.approx(eff_ref * math.exp(-PENALTY[key] / len(g_ref["patients"])), abs=2e-4)
    assert g["score"] < g_ref["score"]


def test_used_preparation_is_not_penalised() -> None:
    """The same preparation, when the patient uses it, costs nothing."""
    sim, _ = _stemi_plan_then(WAIT)
    g = _finish(sim)
    assert sim.world.patients["P1"].treatment_start is not None
    assert "unused_or_prep" not in g["penalties"] and "wasted_page" not in g["penalties"]
    assert g["components"]["prep_ready"] > 0.5


def test_unneeded_blood_is_penalised() -> None:
    sim, preview = _stemi_plan_then(
        act("allocate_blood", patient_id="P1", hospital_id="H1", blood_type="O-", units=2)
    )
    assert preview["penalties"].get("unneeded_blood") == 1  # a STEMI never needs blood: counted at once
    g = _finish(sim)
    assert g["penalties"].get("unneeded_blood") == 1  # and not counted twice at the end


def test_unused_blood_for_a_bleeding_patient_is_penalised() -> None:
    """task3: blood reserved at a hospital the casualty never reaches is wasted (charged while it
    lies unused, and still at the end)."""
    sim = CodeRedSim("task3", 0)
    bleeding = next(p.patient_id for p in sim.world.patients.values() if p.condition == "trauma_haemorrhage")
    play(sim, [act("allocate_blood", patient_id=bleeding, hospital_id="H3", blood_type="O-", units=1)])
    assert sim.grade()["penalties"].get("unneeded_blood") == 1
    g = _finish(sim)
    assert g["penalties"].get("unneeded_blood") == 1


def test_mutual_aid_that_is_needed_and_used_costs_nothing() -> None:
    sim = CodeRedSim("task3", 0)
    waiting = sum(1 for p in sim.world.patients.values() if p.status == "awaiting_unit")
    assert waiting >= len(sim.world.ambulances)  # more demand than own units
    play(sim, [act("request_mutual_aid", patient_id="P1")])
    g = _finish(sim)
    assert [p.patient_id for p in sim.world.patients.values() if p.ambulance_id == "MA1"] == ["P1"]
    assert g["mutual_aid_penalty"] == 0.0


def test_over_triage_is_charged_by_what_the_report_supports() -> None:
    """An ALS unit sent to a call costs the chance, given the report, that the caller is P3/P4:
    charged at dispatch (from what the dispatcher knew), unchanged when the crew finds the truth."""
    for seed in range(40):
        sim = CodeRedSim("task4", seed)
        for _ in range(15):
            calls = sim.world.calls.values()
            low = [c for c in calls if c.status == "pending" and c.true_priority in ("P3", "P4")]
            if low:
                chances = report_priority_posterior(low[0].report)
                play(sim, [act("dispatch_als", ambulance_id="ALS1", call_id=low[0].call_id)])
                charged = sim.grade()["penalties"].get("over_triage")
                assert charged == pytest.approx(chances["P3"] + chances["P4"], abs=1e-4)
                while sim.world.calls[low[0].call_id].status != "on_scene":
                    sim.step(WAIT)
                assert sim.grade()["penalties"].get("over_triage") == charged
                return
            sim.step(WAIT)
    raise AssertionError("no low-acuity call found")


def _first_call_with(priority: str) -> tuple[int, str]:
    for seed in range(60):
        call = CodeRedSim("task4", seed).world.calls.get("C1")
        if call is not None and call.true_priority == priority:
            return seed, "C1"
    raise AssertionError(f"no task4 seed opens with a {priority} call")


@pytest.mark.parametrize(("coded", "cold"), [("P1", False), ("P2", False), ("P3", True), (None, True)])
def test_a_cold_response_is_charged_the_chance_the_caller_needed_more(coded: str | None, cold: bool) -> None:
    seed, cid = _first_call_with("P1")
    sim = CodeRedSim("task4", seed)
    if coded:
        play(sim, [act("triage_call", call_id=cid, priority=coded)])
    play(sim, [act("dispatch_als", ambulance_id="ALS1", call_id=cid)])
    p1 = report_priority_posterior(sim.world.calls[cid].report)["P1"]
    assert p1 > 0
    assert sim.grade()["penalties"].get("under_triage", 0) == pytest.approx(p1 if cold else 0.0, abs=1e-4)


def test_triage_accuracy_is_the_expected_cost_under_the_report_posterior() -> None:
    """Judged on what the report supports, never on the hidden truth; under-triage dearer."""
    from codered_env.sim.triage import PRIORITIES, triage_accuracy, triage_cost

    assert triage_cost("P3", "P1") > triage_cost("P1", "P3")
    assert triage_cost("P2", "P1") > triage_cost("P1", "P2")
    sim = CodeRedSim("task4", 3)
    while len(sim.world.calls) < 5:
        sim.step(WAIT)
    for call in sim.world.calls.values():
        assert triage_accuracy(call) == 0.0  # untriaged
        chances = report_priority_posterior(call.report)
        for code in PRIORITIES:
            call.priority = code
            expected = 1.0 - sum(chances[level] * triage_cost(code, level) for level in PRIORITIES)
            assert triage_accuracy(call) == pytest.approx(expected)
            truth = call.true_priority
            call.true_priority = "P4" if truth != "P4" else "P1"
            assert triage_accuracy(call) == pytest.approx(expected)  # the truth plays no part
            call.true_priority = truth


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_clinical_outcomes_beside_the_score(task_id: str) -> None:
    """grade["outcomes"]: the priority-weighted expected outcome of the graded patients and the
    expected deaths per 100 (patients the play caused in what is lost, not in what it is a share of); doing
    nothing leaves more deaths and a worse outcome than the
    heuristic, and the numbers follow the per-patient records (never the score)."""
    results = {a: run_episode(task_id, 1005, make_agent(a, 1005)) for a in ("noop", "heuristic")}
    noop, heur = (results[a].grade["outcomes"] for a in ("noop", "heuristic"))
    assert heur["weighted_outcome"] > noop["weighted_outcome"]
    assert heur["deaths_per_100"] < noop["deaths_per_100"]
    for result in results.values():
        records = result.grade["patients"]
        outcomes = result.grade["outcomes"]
        weights = [outcome_weight(r["condition"]) for r in records]
        short = sum(w * (1 - r["expected_outcome"]) for w, r in zip(weights, records, strict=True))
        mean = 1 - short / sum(w for w, r in zip(weights, records, strict=True) if not r["caused"])
        assert outcomes["patients"] == len(records)
        assert outcomes["weighted_outcome"] == pytest.approx(mean, abs=1e-3)
        assert 0.0 <= outcomes["deaths_per_100"] <= 100.0


def test_expected_deaths_follow_each_curve() -> None:
    from codered_env.sim.conditions import expected_death

    assert expected_death(CONDITIONS["stemi"], 0.95) == pytest.approx(0.05)
    assert expected_death(CONDITIONS["labour"], 0.95) == 0.0
    assert expected_death(CONDITIONS["labour"], 0.0, died=True) == 1.0
    stroke = CONDITIONS["stroke"]
    assert expected_death(stroke, 0.13) == pytest.approx(0.189)  # HERMES control
    assert expected_death(stroke, 0.46) == pytest.approx(0.153)  # HERMES thrombectomy


@pytest.mark.parametrize("condition", sorted(CONDITIONS))
def test_outcome_weight_adds_the_deaths_a_unit_of_outcome_averts(condition: str) -> None:
    """Deaths first: a patient's weight is the priority weight plus DEATH_WEIGHT x the slope of
    ``expected_death`` (measured here on the curve, between two outcomes its clamps leave alone)."""
    from codered_env.sim.conditions import expected_death
    from codered_env.sim.params import DEATH_WEIGHT, PRIORITY_WEIGHT

    cond = CONDITIONS[condition]
    if cond.true_priority not in PRIORITY_WEIGHT:
        assert outcome_weight(condition) == 0.0
        return
    low, high = 0.2, 0.4
    slope = (expected_death(cond, low) - expected_death(cond, high)) / (high - low)
    priority_weight = PRIORITY_WEIGHT[cond.true_priority]
    assert outcome_weight(condition) == pytest.approx(priority_weight + DEATH_WEIGHT * slope)
    if slope > 0.99:  # a survival curve weighs more than any functional-outcome curve of its priority
        assert outcome_weight(condition) > priority_weight + DEATH_WEIGHT * 0.5


def test_haemorrhage_minutes_cost_twice_as_much_after_the_hospital_door() -> None:
    cond = CONDITIONS["trauma_haemorrhage"]
    base = benefit_kept(cond, 40, 1.0, 0, "surgery", door_min=30)
    later_outside = benefit_kept(cond, 50, 1.0, 0, "surgery", door_min=40)
    later_inside = benefit_kept(cond, 50, 1.0, 0, "surgery", door_min=30)
    assert base > later_outside > later_inside
    assert (base - later_inside) == pytest.approx(2 * (base - later_outside))


def test_a_news_cycle_surge_cannot_dilute_the_death_rate() -> None:
    """Callers a news cycle brought count in the expected deaths but not in the hundred: adding
    low-acuity survivors by setting off a surge leaves the rate where the other patients put it."""
    from codered_env.sim.rubric import clinical_outcomes

    sim = CodeRedSim("task5", 1003)
    sim.finish()
    patients = [sim.world.patients[r["patient_id"]] for r in sim.grade()["patients"]]
    plain = clinical_outcomes(patients)
    low = [copy.copy(p) for p in patients if CONDITIONS[p.condition].true_priority == "P3"
           and p.status != "deceased" and p.treatment_start is None]
    assert low, "the seed has untreated low-acuity callers"
    for i, p in enumerate(low):
        p.patient_id = f"SURGE{i}"
    diluted = clinical_outcomes(patients + low)  # more low-acuity callers, counted as patients
    as_surge = clinical_outcomes(patients + low, frozenset(p.patient_id for p in low))
    assert diluted["deaths_per_100"] < plain["deaths_per_100"]  # what a surge used to do
    assert as_surge["deaths_per_100"] == pytest.approx(plain["deaths_per_100"], abs=0.011)


def test_an_escalation_bystander_counts_in_the_deaths_not_in_the_hundred() -> None:
    """The bystander an unattended incident injures is harm the play caused: in the expected
    deaths, not in the base, so holding every dispatch back cannot dilute the rate with them."""
    from codered_env.sim.rubric import caused_patients, clinical_outcomes

    unattended = CodeRedSim("task3", 0)
    unattended.finish()
    bystander = unattended.world.escalation_casualty
    assert bystander is not None, "nobody reached the incident in time"
    caused = caused_patients(unattended.world)
    assert bystander in caused
    patients = [unattended.world.patients[r["patient_id"]] for r in unattended.grade()["patients"]]
    assert bystander in {p.patient_id for p in patients}
    outcomes = unattended.grade()["outcomes"]
    assert outcomes == clinical_outcomes(patients, caused)
    assert outcomes["deaths_per_100"] > clinical_outcomes(patients)["deaths_per_100"]
    attended = CodeRedSim("task3", 0)
    agent = make_agent("heuristic", 0)
    agent.reset("task3", 0)
    while not attended.done:
        attended.step(agent.act(attended.observation()))
    assert attended.world.escalation_casualty is None


def test_a_casualty_the_play_caused_can_only_lower_the_grade() -> None:
    """The bystander an incident left unattended injures enters the grade by what they lost alone:
    treated well, they cannot raise a component (as a share they diluted the losses of the others:
    every dispatch held 15 min outscored serving P1 and P2 only on task3, with 1.4 more expected
    deaths per 100)."""
    from codered_env.sim.rubric import grade

    sim = CodeRedSim("task3", 0)
    agent = make_agent("heuristic", 0)
    agent.reset("task3", 0)
    while not sim.done:
        action = agent.act(sim.observation())
        held = sim.clock < 25 and action["action_type"] == "dispatch_ambulance"
        sim.step(act("query_or_status", hospital_id="H1") if held else action)
    sim.finish()
    bystander = sim.world.escalation_casualty
    assert bystander is not None and sim.world.patients[bystander].treatment_start is not None
    without = copy.deepcopy(sim.world)
    without.escalation_casualty = None
    del without.patients[bystander]
    with_them, alone = grade(sim.world, True), grade(without, True)
    for key, value in with_them["components"].items():
        assert value <= alone["components"][key], key
    assert with_them["components"]["time_score"] < alone["components"]["time_score"]
    assert with_them["outcomes"]["deaths_per_100"] >= alone["outcomes"]["deaths_per_100"]


def test_the_preview_cannot_tell_a_news_cycle_caller_from_any_other() -> None:
    """Which callers a news cycle brought is not shown, so the running score (and the reward) values
    them as any caller; the final grade, on the truth, counts them by their loss alone."""
    from codered_env.sim.rubric import grade, preview_score

    sim = CodeRedSim("task5", 0)
    for _ in range(15):
        sim.step(act("query_or_status", hospital_id="H1"))
    unseen = [c for c in sim.world.calls.values() if not sim.world.patients[c.patient_id].visible]
    assert unseen, "callers no crew has reached"
    surge = copy.deepcopy(sim.world)
    surge.calls[unseen[0].call_id].surge = True
    assert preview_score(surge) == preview_score(sim.world)
    truth = grade(surge, True)["waste_per_patient"], grade(sim.world, True)["waste_per_patient"]
    assert truth[0] > truth[1], "the final grade leaves a caller the play caused out of the base"


def _heuristic_then_wait(task_id: str, seed: int, decisions: int) -> CodeRedSim:
    """The heuristic for ``decisions`` decisions, then only waiting: bleeding callers die untreated."""
    sim = CodeRedSim(task_id, seed)
    agent = make_agent("heuristic", seed)
    agent.reset(task_id, seed)
    while not sim.done:
        sim.step(agent.act(sim.observation()) if sim.step_count < decisions else WAIT)
    return sim


@pytest.mark.parametrize(("task_id", "seed"), [("task3", 1), ("task4", 4)])
def test_benefit_kept_moves_with_the_weighted_outcome_deaths_included(task_id: str, seed: int) -> None:
    """stake x benefit kept = priority weight x (expected outcome - untreated outcome) for every
    patient, so a death before care (outcome 0, below the untreated outcome) costs the score what
    it costs the weighted outcome; the breakdown shows it as a negative benefit kept."""
    g = _heuristic_then_wait(task_id, seed, 10).grade()
    died = [r for r in g["patients"] if r["status"] == "deceased" and r["delay_min"] is None
            and CONDITIONS[r["condition"]].untreated_outcome > 0]
    assert died, "the seed has a patient who died before care"
    assert all(r["benefit_kept"] < 0 for r in died)
    for r in g["patients"]:
        cond = CONDITIONS[r["condition"]]
        weight = outcome_weight(r["condition"])
        gained = weight * (r["expected_outcome"] - cond.untreated_outcome)
        relaxed_transfer = r["target_min"] != cond.target_min  # benefit measured with an allowance
        rounding = 1e-3 + (r["stake"] + weight) * 5e-5  # both records are rounded to 4 decimals
        if r["therapy"] is None or not relaxed_transfer:
            assert r["stake"] * r["benefit_kept"] == pytest.approx(gained, abs=rounding), r
    assert 0.0 <= g["components"]["time_score"] <= 1.0
    assert g["components"]["prep_ready"] <= g["components"]["time_score"]


def test_a_death_before_care_is_charged_in_the_step_it_happens() -> None:
    """The preview counts the death when the patient dies (a negative step reward then), not
    only at the end."""
    sim = CodeRedSim("task3", 1)
    agent = make_agent("heuristic", 1)
    agent.reset("task3", 1)
    charged = []
    while not sim.done:
        patients = sim.world.patients.values()
        visible_dead = {p.patient_id for p in patients if p.visible and p.status == "deceased"}
        result = sim.step(agent.act(sim.observation()) if sim.step_count < 10 else WAIT)
        newly = {p.patient_id for p in sim.world.patients.values()
                 if p.visible and p.status == "deceased" and p.treatment_start is None} - visible_dead
        if newly:
            preview = {r["patient_id"]: r for r in sim.grade()["patients"]}
            charged.append((result.reward, [preview[pid]["benefit_kept"] for pid in newly]))
    assert charged
    for reward, kept in charged:
        assert reward < 0 and all(k < 0 for k in kept)
