"""The Gymnasium env's incremental state equals a full rebuild at every step (issue 23).

``CodeRedGymEnv`` keeps between steps: the feature rows in one buffer (a slot's memoised part is
rewritten only when its key changed; the per-build values are written by one indexed assignment
whose indices are cached per entity counts), the parsed legal options per action type, and the
row memos. After every step of random play (with masked-out indices now and then) and of the
heuristic's play through the env, on all five tasks and both action sets, this compares

- every feature array, byte for byte (dtype, shape, bytes), with ``sim_features`` on a new builder
  after every feature memo was cleared (no state carried over at all);
- the mask, the action count, every decoded action and the per-type table with the enumeration of
  the simulation's own legal actions (``enumerate_actions``);
- the observation with the one a second env, stepped with the same indices but rebuilt from
  scratch (new builder, empty legal memo) before every step, returns.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from codered_env.agents import make_agent
from codered_env.gym_env import (
    ACTION_ORDER,
    CodeRedGymEnv,
    FeatureBuilder,
    enumerate_actions,
    sim_features,
)
from codered_env.gym_env.focus import focus_legal
from codered_env.gym_env.rows import FEATURE_MEMOS
from codered_env.sim.legal import legal_actions
from codered_env.sim.tasks import TASK_IDS

Chooser = Callable[[CodeRedGymEnv, np.random.Generator], int]


def _clear_feature_memos() -> None:
    for memo in FEATURE_MEMOS:
        memo.cache_clear()


def _expected_actions(env: CodeRedGymEnv) -> list[dict[str, Any]]:
    sim = env.sim
    legal = {} if sim.done else legal_actions(sim.world)
    if legal and env.actions == "focused":
        legal = focus_legal(sim.observation_view(), legal)
    return enumerate_actions(legal)


def _expected_table(actions: list[dict[str, Any]], max_actions: int) -> np.ndarray:
    """(count, first index) / max_actions per action type, from the full enumeration."""
    table = np.zeros((len(ACTION_ORDER), 2))
    for i, action in enumerate(actions):
        row = ACTION_ORDER.index(action["action_type"])
        if table[row, 0] == 0:
            table[row, 1] = i
        table[row, 0] += 1
    return np.minimum(table / max_actions, 1.0).astype(np.float32)


def _assert_equal_arrays(got: dict[str, np.ndarray], want: dict[str, np.ndarray], where: str) -> None:
    assert got.keys() == want.keys(), where
    for key, array in got.items():
        assert array.dtype == want[key].dtype, (where, key)
        assert array.shape == want[key].shape, (where, key)
        assert array.tobytes() == want[key].tobytes(), (where, key)


def _check(env: CodeRedGymEnv, obs: dict[str, np.ndarray], info: dict[str, Any], where: str) -> None:
    _clear_feature_memos()
    if env.actions == "full":
        _assert_equal_arrays(obs, sim_features(env.sim, env.max_actions), where)
    expected = _expected_actions(env)
    legal_now = expected[: env.max_actions]
    assert env.legal_wire_actions() == legal_now, where
    mask = env.action_masks()
    assert mask.dtype == bool and int(mask.sum()) == len(legal_now) and mask[: len(legal_now)].all(), where
    assert info["action_mask"].tobytes() == mask.astype(np.int8).tobytes(), where
    assert obs["actions"].tobytes() == _expected_table(expected, env.max_actions).tobytes(), where


def _scratch_twin(env: CodeRedGymEnv) -> dict[str, np.ndarray]:
    """What ``env`` would return now with nothing kept from earlier steps."""
    twin = CodeRedGymEnv(env.task_id, max_actions=env.max_actions, actions=env.actions)
    twin.sim = env.sim
    twin._features = FeatureBuilder(env.max_actions)
    return twin._observe()


def _random(env: CodeRedGymEnv, rng: np.random.Generator) -> int:
    if rng.random() < 0.1:  # a masked-out index now and then (answered with an error)
        return int(rng.integers(env.max_actions))
    return int(rng.integers(int(env.action_masks().sum())))


def _heuristic_player(task_id: str, seed: int) -> Chooser:
    agent = make_agent("heuristic", seed)
    agent.reset(task_id, seed)

    def choose(env: CodeRedGymEnv, rng: np.random.Generator) -> int:
        action = agent.act(env.sim.observation())
        wire = env.legal_wire_actions()
        return wire.index(action) if action in wire else 0

    return choose


def _play(task_id: str, seed: int, choose: Chooser, actions: str = "full", max_actions: int = 256,
          steps: int = 400) -> int:
    env = CodeRedGymEnv(task_id, max_actions=max_actions, actions=actions)
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    _check(env, obs, info, "reset")
    played = 0
    for step in range(steps):
        obs, _, terminated, truncated, info = env.step(choose(env, rng))
        where = f"{task_id} seed {seed} step {step}"
        _check(env, obs, info, where)
        if step % 5 == 0:
            _assert_equal_arrays(obs, _scratch_twin(env), where)
        played += 1
        if terminated or truncated:
            break
    return played


@pytest.mark.parametrize("task_id", TASK_IDS)
@pytest.mark.parametrize("seed", [0, 31])
def test_random_play_matches_a_full_rebuild_every_step(task_id: str, seed: int) -> None:
    assert _play(task_id, seed, _random) > 10


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_heuristic_play_matches_a_full_rebuild_every_step(task_id: str) -> None:
    assert _play(task_id, 5, _heuristic_player(task_id, 5)) > 10


@pytest.mark.parametrize("task_id", ["task3", "task5"])
def test_focused_actions_and_a_tiny_action_space(task_id: str) -> None:
    assert _play(task_id, 2, _random, actions="focused", steps=150) > 10
    assert _play(task_id, 3, _random, max_actions=5, steps=150) > 10


def test_indices_of_the_values_follow_the_entity_counts() -> None:
    """A builder that saw many entity counts (cached indices) equals a new one on every state."""
    env = CodeRedGymEnv("task5")
    rng = np.random.default_rng(9)
    env.reset(seed=9)
    seen = set()
    for _ in range(300):
        obs, _, terminated, truncated, _ = env.step(_random(env, rng))
        seen.add(tuple(int((obs[group][:, 0] > 0).sum()) for group in ("ambulances", "calls")))
        _assert_equal_arrays(obs, _scratch_twin(env), "counts")
        if terminated or truncated:
            env.reset(seed=len(seen))
    assert len(seen) > 5  # the counts did move, so several cached index arrays were used


def test_a_returned_observation_never_changes_later() -> None:
    env = CodeRedGymEnv("task4")
    rng = np.random.default_rng(4)
    obs, _ = env.reset(seed=4)
    held = [(obs, {k: v.copy() for k, v in obs.items()})]
    for step in range(60):
        obs, _, terminated, truncated, _ = env.step(_random(env, rng))
        _assert_equal_arrays(obs, _scratch_twin(env), f"step {step}")
        if step % 2:
            held.append((obs, {k: v.copy() for k, v in obs.items()}))
        else:  # a caller scribbling on what it got changes nothing the env keeps
            for array in obs.values():
                array[...] = 7.0
        if terminated or truncated:
            break
    for returned, snapshot in held:
        for key in returned:
            assert returned[key].tobytes() == snapshot[key].tobytes(), key


def test_a_stale_legal_memo_would_be_caught() -> None:
    """The comparison has teeth: an env whose memo holds another episode's parts disagrees."""
    env = CodeRedGymEnv("task5")
    rng = np.random.default_rng(1)
    env.reset(seed=1)
    for _ in range(20):
        env.step(_random(env, rng))
    legal = legal_actions(env.sim.world)
    action_type = next(t for t in ACTION_ORDER[1:] if legal.get(t))
    _, parts, slots, _ = env._legal_memo[action_type]
    env._legal_memo[action_type] = (legal[action_type], parts[:0], slots, 0)  # claims: no actions
    obs = env._observe()
    with pytest.raises(AssertionError):
        _check(env, obs, env._info(), "stale")


def test_a_copied_or_pickled_env_keeps_its_own_rows() -> None:
    """Deep copies and pickles rebuild the row views over their own buffer: each copy goes on
    incrementally, independently of the original, and matches a full rebuild."""
    env = CodeRedGymEnv("task5")
    rng = np.random.default_rng(6)
    env.reset(seed=6)
    for _ in range(25):
        env.step(_random(env, rng))
    twins = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    for step in range(40):
        index = _random(env, rng)
        results = [e.step(index) for e in (env, *twins)]
        for twin, (obs, *_rest) in zip((env, *twins), results, strict=True):
            _assert_equal_arrays(obs, _scratch_twin(twin), f"copy step {step}")
            _assert_equal_arrays(obs, results[0][0], f"copy step {step}")
        if results[0][2] or results[0][3]:
            break
