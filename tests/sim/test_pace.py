"""The step reward's pace (sim/pace.py): the table is what bench/calibrate_pace.py measures now,
the rewards still add up to the final score, and waiting in one-minute queries instead of
``maintain_plan`` (the same care in more decisions) does not buy discounted return."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest

from codered_env.agents import make_agent
from codered_env.agents.variants import wait_for_release
from codered_env.sim import TASK_IDS, CodeRedSim
from codered_env.sim.pace import PACE, PACE_STEP_MIN, pace_factor, potential
from codered_env.sim.tasks import TASKS

BENCH = str(Path(__file__).resolve().parents[2] / "bench")
if BENCH not in sys.path:
    sys.path.insert(0, BENCH)

import calibrate_pace  # noqa: E402

DISCOUNT = 0.99
SEEDS = range(2100, 2112)  # of their own: neither the table's seeds nor the red team's


def test_the_table_is_what_the_calibration_measures_now() -> None:
    assert set(PACE) == set(TASK_IDS)
    for task_id in TASK_IDS:
        assert PACE[task_id] == calibrate_pace.pace_table(task_id), (
            f"{task_id}: run python bench/calibrate_pace.py --write")


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_the_table_covers_the_horizon_and_ends_at_one(task_id: str) -> None:
    table = PACE[task_id]
    assert len(table) == TASKS[task_id].horizon_min // PACE_STEP_MIN + 1
    assert table[-1] == 1.0 and all(0.0 < f <= 1.0 for f in table)
    assert pace_factor(task_id, TASKS[task_id].horizon_min + 30) == 1.0


def test_the_factor_is_interpolated_between_grid_minutes() -> None:
    table = PACE["task3"]
    assert pace_factor("task3", PACE_STEP_MIN) == table[1]
    middle = pace_factor("task3", PACE_STEP_MIN + 2)
    assert middle == pytest.approx(table[1] + (table[2] - table[1]) * 2 / PACE_STEP_MIN)
    assert potential("task3", 0, 0.0) == 0.0
    assert pace_factor("unknown-task", 10) == 1.0


def _play(task_id: str, seed: int, pad: bool) -> tuple[float, float, list[float]]:
    """The heuristic (``pad``: every wait made a one-minute query): score, return, rewards."""
    sim, agent = CodeRedSim(task_id, seed), make_agent("heuristic", seed)
    agent.reset(task_id, seed)
    rewards: list[float] = []
    while not sim.done:
        observation = sim.observation()
        action = agent.act(observation)
        if pad and action["action_type"] == "maintain_plan":
            action = wait_for_release(observation, 0, action)  # nothing held: a one-minute query
        rewards.append(sim.step(action).reward)
        if not sim.done:
            assert sim.potential == pytest.approx(sim.score_preview * pace_factor(task_id, sim.clock))
    score = sim.grade()["score"]
    return score, sum(r * DISCOUNT**t for t, r in enumerate(rewards)), rewards


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_rewards_add_up_to_the_final_score(task_id: str) -> None:
    score, _, rewards = _play(task_id, 2100, pad=False)
    assert sum(rewards) == pytest.approx(score, abs=1e-9)


@pytest.mark.parametrize("task_id", ["task1", "task3", "task5"])
def test_more_decisions_for_the_same_care_do_not_buy_return(task_id: str) -> None:
    plain = [_play(task_id, seed, pad=False) for seed in SEEDS]
    padded = [_play(task_id, seed, pad=True) for seed in SEEDS]
    same_care = statistics.fmean(b[0] - a[0] for a, b in zip(plain, padded, strict=True))
    assert abs(same_care) < 0.002  # waiting minute by minute changes (almost) nothing for patients
    gain = statistics.fmean(b[1] - a[1] for a, b in zip(plain, padded, strict=True))
    # with the plain preview as the potential the padded twin gained 0.011 (task1) to 0.024 (task5)
    assert gain < 0.005, f"padding gained {gain:+.4f} return on {task_id}"
