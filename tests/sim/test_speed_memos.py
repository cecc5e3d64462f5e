"""The speed memos never change an answer: memoised and fresh computations agree."""

from __future__ import annotations

import statistics
from collections.abc import Iterator

import numpy as np
import pytest

from codered_env.agents import make_agent
from codered_env.sim import CodeRedSim, outcome, rubric
from codered_env.sim import actions as actions_module
from codered_env.sim.clinical import CONDITION_NUMBERS
from codered_env.sim.conditions import CONDITIONS
from codered_env.sim.obs_rows import alert_count, alert_texts
from codered_env.sim.params import STROKE_ONSET_BEFORE_CALL_RANGE, UNSEEN_CALLER_WINDOW_MIN
from codered_env.sim.plan import hope_share, unprepared_wait
from codered_env.sim.triage import report_condition_posterior

gym_env = pytest.importorskip("codered_env.gym_env")
from codered_env.gym_env import rows as gym_rows  # noqa: E402

_MEMOS = (
    *gym_rows.FEATURE_MEMOS,
    outcome.benefit_at,
    outcome.secondary_gain,
    outcome.treated_outcome,
    actions_module._validate_memo,
)


def _clear_memos() -> None:
    for memo in _MEMOS:
        memo.cache_clear()


def _random_play(task_id: str, seed: int) -> Iterator[CodeRedSim]:
    """The episode after each step of the random agent."""
    sim = CodeRedSim(task_id, seed)
    agent = make_agent("random", seed)
    agent.reset(task_id, seed)
    while not sim.done:
        sim.step(agent.act(sim.observation()))
        yield sim


@pytest.mark.parametrize("task_id", ["task2", "task5"])
def test_features_and_preview_do_not_depend_on_memo_state(task_id: str) -> None:
    for sim in _random_play(task_id, 11):
        warm = gym_env.sim_features(sim)
        warm_preview = rubric.preview_score(sim.world)
        _clear_memos()
        cold = gym_env.sim_features(sim)
        assert rubric.preview_score(sim.world) == warm_preview
        for key in warm:
            assert warm[key].tobytes() == cold[key].tobytes(), key
        assert alert_count(sim.world) == len(alert_texts(sim.world))


@pytest.mark.parametrize("units", [2, 2.0, True, "2", 2.5, None])
def test_validation_memo_keeps_types_apart(units: object) -> None:
    action = {"action_type": "allocate_blood", "patient_id": "P1", "hospital_id": "H1",
              "blood_type": "O-", "units": units}
    fresh = actions_module._validate("allocate_blood", dict(action))
    for _ in range(2):  # the second call is answered by the memo
        assert actions_module.parse_action(dict(action)) == fresh
    for other in (2, 2.0, True):  # equal-hashing values of other types do not share an answer
        actions_module.parse_action({**action, "units": other})
        assert actions_module.parse_action(dict(action)) == fresh


def test_unhashable_values_are_validated_without_the_memo() -> None:
    model, error = actions_module.parse_action({"action_type": "maintain_plan", "extra": [1, 2]})
    assert model is None and error is not None and "extra" in error


def test_memoised_rows_match_a_fresh_build_across_episodes() -> None:
    env = gym_env.CodeRedGymEnv("task5")
    rng = np.random.default_rng(3)
    obs, _ = env.reset(seed=3)
    for _ in range(60):
        obs, _, terminated, truncated, _ = env.step(int(rng.integers(int(env.action_masks().sum()))))
        _clear_memos()
        fresh = gym_env.sim_features(env.sim)
        assert all(obs[k].tobytes() == fresh[k].tobytes() for k in obs)
        if terminated or truncated:
            obs, _ = env.reset(seed=4)


def test_long_texts_bypass_the_validation_memo() -> None:
    before = actions_module._validate_memo.cache_info().currsize
    for i in range(5):
        model, error = actions_module.parse_action(
            {"action_type": "query_blood_type", "patient_id": f"P{i}" + "x" * 10_000})
        assert model is not None or error is not None
    assert actions_module._validate_memo.cache_info().currsize == before


def test_the_plain_answer_memo_tells_equal_values_of_other_types_apart() -> None:
    """``parse_action`` remembers a plain dict's answer by its items and their types: True, 1
    and 1.0 compare and hash equal but validate differently (a bool is no unit count)."""
    base = {"action_type": "allocate_blood", "patient_id": "P1", "hospital_id": "H1", "blood_type": "O-"}
    as_int = actions_module.parse_action(base | {"units": 1})
    as_bool = actions_module.parse_action(base | {"units": True})
    assert as_int[0] is not None and as_int[1] is None
    assert as_bool[0] is None and "units" in (as_bool[1] or "")
    assert actions_module.parse_action(base | {"units": 1}) == as_int  # a repeat: the same answer
    assert actions_module.parse_action(base | {"units": True}) == as_bool
    listed = actions_module.parse_action({"action_type": "maintain_plan", "extra": [1]})  # unhashable
    assert listed[0] is None and "extra" in (listed[1] or "")


def _caller_reference(report: str, delay: int, cpr: float) -> rubric._Entry:
    """An unseen caller's terms before the hope, summed over the posterior in one plain loop."""
    n = w = wk = wv = ready_wk = load_w = 0.0
    for condition, chance in report_condition_posterior(report).items():
        cond = CONDITIONS[condition]
        if cond.true_priority == "P4" or chance <= 0.0:
            continue
        onset = round(statistics.fmean(STROKE_ONSET_BEFORE_CALL_RANGE)) if condition == "stroke" else 0
        numbers = CONDITION_NUMBERS[condition]
        quality, therapy = outcome.best_therapy(cond)
        weight = chance * outcome.stake(condition, onset)
        reserve = statistics.fmean(numbers.initial_reserve) - numbers.deterioration_per_min * delay
        reserve = reserve if reserve > 0.0 else 0.0
        telephone_cpr = cpr if condition == "cardiac_arrest" else 0.0
        kept = weight * outcome.benefit_at(condition, delay + unprepared_wait(cond), quality, onset, therapy,
                                           telephone_cpr, delay)
        n += chance
        w += weight
        wk += kept
        wv += weight * reserve
        ready_wk += kept * rubric._readiness_credit(0.0 if cond.needs_prep else 1.0)
        load_w += weight if cond.transport else 0.0
    return rubric._Entry(n, 0.0, w, wk, wv, ready_wk, load_w, load_w, 0.0, 0.0, 0.0)


@pytest.mark.parametrize("task_id", ["task4", "task5"])  # the tasks with a call queue
def test_an_unseen_callers_terms_are_the_full_sum(task_id: str) -> None:
    """The preview's terms of an unseen caller (per-condition values shared by every report,
    the sums that do not move with the delay taken once) equal the full sum over the posterior
    times the hope, to the bit; past hope, the full sum times 0."""
    *_, sim = _random_play(task_id, 5)
    world = sim.world
    calls = list(world.calls.values())
    assert calls
    for call in calls:
        for delay, coded in ((0, None), (7, 2), (29, 0), (30, None), (45, 12), (200, None)):
            world.clock, call.coded_p1_at = call.received_at + delay, coded
            first = call.received_at
            hope = hope_share(first, world.clock, world.task.horizon_min, UNSEEN_CALLER_WINDOW_MIN)
            cpr = 0.0 if coded is None else float(max(0, world.clock - max(coded, call.received_at)))
            b = _caller_reference(call.report, delay, cpr)
            full = rubric._Entry(b.n, 0.0, b.w, b.wk * hope, b.wv * hope, b.prep_wkr * hope, b.load_w,
                                 b.load_wd * hope, 0.0, 0.0, 0.0)
            assert rubric._caller_entry(world, call, first) == full
