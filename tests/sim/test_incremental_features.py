"""The Gymnasium adapter's incremental state never changes an observation.

``CodeRedGymEnv`` keeps its feature rows between steps (a slot's memoised discrete part is
rewritten only when its key changes) and reuses the parsed options of an action type whose legal
options did not change. These tests play many random steps -- masked-out indices, resets with a
new task, a swap to a ``fork`` of the episode, a tiny ``max_actions`` -- and after every one
compare the environment's arrays, action count and decoded actions with a from-scratch build
(``sim_features``: a new builder, no memo) and with ``enumerate_actions`` of the simulation's own
legal actions.
"""

from __future__ import annotations

import numpy as np
import pytest

gym_env = pytest.importorskip("codered_env.gym_env")
from codered_env.gym_env import rows as gym_rows  # noqa: E402
from codered_env.sim.legal import legal_actions  # noqa: E402

_ROW_MEMOS = gym_rows.ROW_MEMOS


def _assert_matches_scratch(env: gym_env.CodeRedGymEnv, obs: dict[str, np.ndarray]) -> None:
    fresh = gym_env.sim_features(env.sim, env.max_actions)
    for key, array in obs.items():
        assert array.dtype == fresh[key].dtype and array.shape == fresh[key].shape, key
        assert array.tobytes() == fresh[key].tobytes(), key
    legal = {} if env.sim.done else legal_actions(env.sim.world)
    expected = gym_env.enumerate_actions(legal)[: env.max_actions]
    assert env.legal_wire_actions() == expected
    assert int(env.action_masks().sum()) == len(expected)


def _random_index(env: gym_env.CodeRedGymEnv, rng: np.random.Generator) -> int:
    """A legal index, or now and then a masked-out one (answered with an error)."""
    if rng.random() < 0.1:
        return int(rng.integers(env.max_actions))
    return int(rng.integers(int(env.action_masks().sum())))


@pytest.mark.parametrize(("task_id", "max_actions"), [("task1", 256), ("task3", 256), ("task5", 256),
                                                       ("task5", 6)])
def test_incremental_observations_match_a_fresh_build(task_id: str, max_actions: int) -> None:
    env = gym_env.CodeRedGymEnv(task_id, max_actions=max_actions)
    rng = np.random.default_rng(7)
    obs, _ = env.reset(seed=7)
    _assert_matches_scratch(env, obs)
    for step in range(400):
        obs, _, terminated, truncated, _ = env.step(_random_index(env, rng))
        _assert_matches_scratch(env, obs)
        if terminated or truncated or step % 97 == 96:  # also resets mid-episode
            obs, _ = env.reset(seed=100 + step)
            _assert_matches_scratch(env, obs)


def test_reset_to_another_task_and_a_fork_swapped_in() -> None:
    env = gym_env.CodeRedGymEnv("task5")
    rng = np.random.default_rng(11)
    obs, _ = env.reset(seed=11)
    tasks = ["task2", "task4", "task1", "task5"]
    for round_ in range(8):
        for _ in range(15):
            obs, _, terminated, truncated, _ = env.step(_random_index(env, rng))
            _assert_matches_scratch(env, obs)
            if terminated or truncated:
                break
        if round_ % 2:
            obs, _ = env.reset(seed=round_, options={"task_id": tasks[round_ // 2]})
        elif not env.sim.done:
            env.sim = env.sim.fork(round_)  # the same ids, other hidden draws: keys decide, not ids
            obs = env._observe()
        _assert_matches_scratch(env, obs)


def test_cleared_row_memos_do_not_change_the_next_observation() -> None:
    env = gym_env.CodeRedGymEnv("task5")
    rng = np.random.default_rng(5)
    env.reset(seed=5)
    for step in range(120):
        if step % 10 == 0:
            for memo in _ROW_MEMOS:
                memo.cache_clear()
        obs, _, terminated, truncated, _ = env.step(_random_index(env, rng))
        _assert_matches_scratch(env, obs)
        if terminated or truncated:
            env.reset(seed=step)


def test_returned_arrays_are_fresh_each_step() -> None:
    """The kept rows are copied out: an observation a caller holds never changes afterwards."""
    env = gym_env.CodeRedGymEnv("task5")
    rng = np.random.default_rng(2)
    obs, _ = env.reset(seed=2)
    held = [(obs, {k: v.copy() for k, v in obs.items()})]
    for _ in range(30):
        obs, _, terminated, truncated, _ = env.step(_random_index(env, rng))
        held.append((obs, {k: v.copy() for k, v in obs.items()}))
        if terminated or truncated:
            break
    for returned, snapshot in held:
        for key in returned:
            assert np.array_equal(returned[key], snapshot[key]), key


def test_memoised_rows_are_read_only() -> None:
    row = gym_rows._patient_row.__wrapped__(("stemi", "awaiting_unit", None, None, "N1", False, False, False,
                                            True, False, False, False, True))
    assert not row.flags.writeable
    with pytest.raises(ValueError):
        row[0] = 2.0
