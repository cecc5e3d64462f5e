"""Malformed actions and reset options on every Gymnasium adapter: an action is refused like an
illegal one (nothing raises, one minute passes, the world is otherwise unchanged, the message
says what was wrong and what is legal); a bad reset option raises before anything changes."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium
import numpy as np
import pytest

from codered_env.gym_env import CodeRedFactoredEnv, CodeRedFactoredVectorEnv, CodeRedGymEnv
from codered_env.gym_env.checks import factored_vector, flat_index, reset_options
from codered_env.gym_env.factored_env import MASKED_OUT
from codered_env.gym_env.gen_env import CodeRedGenGymEnv

MALFORMED: list[Any] = [None, "x", 3.7, float("nan"), float("inf"), True, {"a": 1}, [1, 2], np.zeros((2, 3)),
                        np.array([2.0]), b"\x00"]


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("action", MALFORMED, ids=repr)
def test_the_flat_env_refuses_a_malformed_action_as_an_illegal_index(action: Any) -> None:
    env, twin = CodeRedGymEnv("task4"), CodeRedGymEnv("task4")
    env.reset(seed=5)
    twin.reset(seed=5)
    obs, reward, _, _, info = env.step(action)
    n = int(twin.action_masks().sum())
    twin_obs, twin_reward, _, _, twin_info = twin.step(n)  # the first index not legal
    assert "is not an integer index" in info["action_error"] and f"legal: 0..{n - 1}" in info["action_error"]
    assert "\n" not in info["action_error"] and len(info["action_error"]) < 200
    assert info["last_action_error"] is not None
    legal = f"legal: 0..{n - 1} (info['action_mask'])"
    assert twin_info["action_error"] == f"action index {n} is not legal now; {legal}"
    assert _same(obs, twin_obs) and reward == twin_reward
    assert env.sim.grade()["penalties"]["invalid_action"] == 1


@pytest.mark.parametrize("form", [np.int64, np.int32, np.uint8, np.array, lambda i: np.array([i])])
def test_the_flat_env_takes_any_integer_form_of_an_index(form: Any) -> None:
    env, twin = CodeRedGymEnv("task2"), CodeRedGymEnv("task2")
    env.reset(seed=8)
    twin.reset(seed=8)
    for _ in range(6):
        index = int(np.flatnonzero(env.action_masks())[-1])
        obs, reward, *_, info = env.step(form(index))
        twin_obs, twin_reward, *_ = twin.step(index)
        assert info["action_error"] is None and info["last_action_error"] is None
        assert _same(obs, twin_obs) and reward == twin_reward


def test_an_action_after_the_end_says_the_episode_is_over() -> None:
    env = CodeRedGymEnv("task1", max_actions=4)
    env.reset(seed=0)
    terminated = truncated = False
    while not (terminated or truncated):
        _, _, terminated, truncated, _ = env.step(0)
    *_, info = env.step(0)
    assert info["action_error"] == "the episode is over: reset() starts the next"


@pytest.mark.parametrize("action", [*MALFORMED[:7], [1, 2, 3], [0.5, 0, 0, 0, 0], [np.inf, 0, 0, 0, 0],
                                    [True, False, False, False, False]], ids=repr)
def test_the_factored_env_refuses_a_malformed_action(action: Any) -> None:
    env = CodeRedFactoredEnv("task3")
    env.reset(seed=2)
    twin = copy.deepcopy(env.sim)
    _, _, _, _, info = env.step(action)
    assert info["action_error"].startswith("invalid factored action "), info["action_error"]
    assert "\n" not in info["action_error"]
    twin.step({"action_type": MASKED_OUT})
    assert env.sim.observation() == twin.observation()


def test_the_factored_env_takes_whole_number_floats_as_their_integers() -> None:
    env, twin = CodeRedFactoredEnv("task2"), CodeRedFactoredEnv("task2")
    env.reset(seed=4)
    twin.reset(seed=4)
    for _ in range(5):
        action = env.unwrapped.legal_actions()[-1]
        obs, reward, *_, info = env.step(action.astype(np.float32))
        twin_obs, twin_reward, *_ = twin.step(action)
        assert info["action_error"] is None and _same(obs, twin_obs) and reward == twin_reward


def test_the_vector_env_checks_the_batch_and_its_reset_before_changing_anything() -> None:
    vec = CodeRedFactoredVectorEnv(2, "task1")
    vec.reset(seed=1)
    clocks = [core.sim.clock for core in vec._cores]
    with pytest.raises(ValueError, match="2 rows of 5 integers"):
        vec.step(np.zeros((3, 5), np.int64))
    with pytest.raises(ValueError, match="one per episode: 2, not 3"):
        vec.reset(seed=[1, 2, 3])
    with pytest.raises(ValueError, match="unknown reset option 'seed'; valid: task_id, city"):
        vec.reset(options={"seed": 3})
    with pytest.raises(ValueError, match="unknown city 'atlantis'"):
        vec.reset(seed=4, options={"city": "atlantis"})
    with pytest.raises(ValueError, match="unknown task_id 'task0'"):
        vec.reset(seed=4, options={"task_id": "task0"})
    assert [core.sim.clock for core in vec._cores] == clocks
    _, _, _, _, infos = vec.step([[0, 0, 0, 0, 0], "nonsense"])
    assert infos["action_error"][0] is None and infos["action_error"][1].startswith("invalid factored action")


@pytest.mark.parametrize("make", [lambda: CodeRedGymEnv("task2"), lambda: CodeRedGenGymEnv("task2"),
                                  lambda: CodeRedFactoredEnv("task2"),
                                  lambda: gymnasium.make("CodeRedEnv-task2-v16")])
def test_a_bad_reset_option_raises_and_leaves_the_episode_as_it_was(make: Any) -> None:
    env = make()
    env.reset(seed=6)
    env.step(0 if isinstance(env.action_space, gymnasium.spaces.Discrete) else [0, 0, 0, 0, 0])
    sim, state = env.unwrapped.sim, env.unwrapped.np_random.bit_generator.state
    clock = sim.clock
    with pytest.raises(TypeError, match="reset options must be a dict with keys among task_id"):
        env.reset(seed=7, options=5)
    with pytest.raises(ValueError, match="unknown reset option 'speed'; valid: task_id"):
        env.reset(seed=7, options={"speed": 2})
    with pytest.raises(ValueError, match="unknown task_id 'task9'"):
        env.reset(seed=7, options={"task_id": "task9"})
    assert env.unwrapped.sim is sim and sim.clock == clock
    assert env.unwrapped.np_random.bit_generator.state == state


def test_the_checks_alone() -> None:
    assert reset_options(None, ("task_id",)) == {}
    assert reset_options({"task_id": "task1"}, ("task_id",)) == {"task_id": "task1"}
    assert [flat_index(a) for a in (3, np.int16(3), np.array(3), np.array([3]), 10**30, 3.0, True, "3")] == [
        3, 3, 3, 3, 10**30, None, None, None]
    assert factored_vector([1.0, 2, 3, 4, 5], 5).tolist() == [1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="out of range"):
        factored_vector([1e300, 0, 0, 0, 0], 5)
