"""The OpenEnv Environment over the simulation, in process (no server)."""

from __future__ import annotations

import asyncio

import pytest
from openenv.core.env_server.serialization import serialize_observation

from codered_env.models import CodeRedAction, CodeRedObservation, WireObservation
from codered_env.server.environment import (
    CodeRedEnvironment,
    SessionClosedError,
)

MAINTAIN = CodeRedAction(action_type="maintain_plan")


def _world(obs_json: dict) -> dict:
    """The observation without the parts that describe the last step rather than the world."""
    return {k: v for k, v in obs_json.items() if k not in ("last_action_error", "text", "events")}


def test_reset_seeds_everything_and_echoes_episode_id() -> None:
    a, b = CodeRedEnvironment(), CodeRedEnvironment()
    obs_a = a.reset(seed=7, episode_id="ep-a", task_id="task3")
    obs_b = b.reset(seed=7, episode_id="ep-b", task_id="task3")
    assert obs_a.model_dump() == obs_b.model_dump()
    state = a.state
    assert (state.episode_id, state.step_count, state.task_id, state.seed) == ("ep-a", 0, "task3", 7)
    assert obs_a.reward is None and obs_a.done is False
    c = CodeRedEnvironment()
    assert c.reset(seed=8, task_id="task3").model_dump() != obs_a.model_dump()


def test_defaults_are_task1_seed0_and_a_fresh_episode_id() -> None:
    env = CodeRedEnvironment()
    env.reset()
    first = env.state
    assert (first.task_id, first.seed) == ("task1", 0)
    env.reset()
    assert env.state.episode_id != first.episode_id


def test_step_increments_step_count_exactly_once_and_rewards_sum_to_score() -> None:
    env = CodeRedEnvironment()
    env.reset(task_id="task1", seed=0, episode_id="sum")
    rewards = []
    obs = None
    while obs is None or not obs.done:
        obs = env.step(MAINTAIN)
        rewards.append(obs.reward)
        assert env.state.step_count == len(rewards)
    assert sum(rewards) == pytest.approx(env.state.score, abs=1e-6)
    assert env.state.total_reward == pytest.approx(sum(rewards), abs=1e-6)
    assert all(-1.0 <= r <= 1.0 for r in rewards)


def test_semantically_invalid_action_reports_error_and_leaves_the_world_alone() -> None:
    one, two = CodeRedEnvironment(), CodeRedEnvironment()
    one.reset(task_id="task2", seed=1)
    two.reset(task_id="task2", seed=1)
    bad_a = one.step({"action_type": "assign_hospital", "patient_id": "P404", "hospital_id": "H1"})
    bad_b = two.step({"action_type": "query_or_status", "hospital_id": "H99"})
    assert "P404" in (bad_a.last_action_error or "")
    assert "H99" in (bad_b.last_action_error or "")
    assert _world(bad_a.model_dump()) == _world(bad_b.model_dump())
    assert one.state.invalid_actions == 1 and one.state.step_count == 1


def test_reset_refuses_bad_arguments_with_clear_messages() -> None:
    env = CodeRedEnvironment()
    with pytest.raises(ValueError, match="task_id"):
        env.reset(task_id="task9")
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed=-1)
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed=True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(difficulty="hard")
    with pytest.raises(ValueError, match="episode_id"):
        env.reset(episode_id="")


def test_step_before_reset_and_after_close_are_clear_errors() -> None:
    env = CodeRedEnvironment()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(MAINTAIN)
    env.reset(episode_id="closing")
    env.close()
    with pytest.raises(SessionClosedError):
        env.step(MAINTAIN)
    with pytest.raises(SessionClosedError):
        env.reset()


def test_async_twins_match_the_sync_methods() -> None:
    sync_env, async_env = CodeRedEnvironment(), CodeRedEnvironment()

    async def play() -> list[dict]:
        out = [(await async_env.reset_async(seed=3, task_id="task4")).model_dump()]
        out.append((await async_env.step_async(MAINTAIN)).model_dump())
        return out

    expected = [sync_env.reset(seed=3, task_id="task4").model_dump(), sync_env.step(MAINTAIN).model_dump()]
    assert asyncio.run(play()) == expected


def test_grade_of_a_live_episode_and_metadata() -> None:
    env = CodeRedEnvironment()
    env.reset(task_id="task1", seed=0)
    env.step(MAINTAIN)
    grade = env.grade()
    assert grade["steps"] == 1 and 0.0 <= grade["score"] <= 1.0 and "components" in grade
    assert env.finished is False
    meta = env.get_metadata()
    assert meta.name == "codered_env" and meta.description and meta.version
    assert meta.readme_content and "CodeRed" in meta.readme_content


@pytest.mark.parametrize("task_id", ["task1", "task2", "task3", "task4", "task5"])
def test_wire_observations_of_the_async_path_equal_the_validated_ones(task_id: str) -> None:
    """The WebSocket path skips re-validation; its wire dicts must be identical."""
    wire_env, typed_env = CodeRedEnvironment(), CodeRedEnvironment()

    async def wire_episode() -> list[dict]:
        out = [serialize_observation(await wire_env.reset_async(seed=2, task_id=task_id))]
        while not out[-1]["done"]:
            out.append(serialize_observation(await wire_env.step_async(MAINTAIN)))
        return out

    typed = [serialize_observation(typed_env.reset(seed=2, task_id=task_id))]
    while not typed[-1]["done"]:
        typed.append(serialize_observation(typed_env.step(MAINTAIN)))
    assert asyncio.run(wire_episode()) == typed
    last = typed_env.step(MAINTAIN)
    assert CodeRedObservation.model_validate(last.model_dump()).model_dump(mode="json") == (
        last.model_dump(mode="json")
    )


def test_wire_observation_falls_back_to_typed_dumps() -> None:
    env = CodeRedEnvironment()
    obs = asyncio.run(env.reset_async(task_id="task1"))
    assert isinstance(obs, WireObservation)
    dumped = obs.model_dump(mode="json", exclude={"text"})
    assert "text" not in dumped and dumped["patients"][0]["vitals"]["hr"] > 0
