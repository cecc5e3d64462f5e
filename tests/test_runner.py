"""The one episode loop (codered_env.runner): hooks, replays and the policy for a crashing agent."""

from __future__ import annotations

from typing import Any

import pytest

from codered_env.agents import make_agent
from codered_env.runner import LocalEnv, ScriptedAgent, Step, play, raise_agent_errors, run_episode
from codered_env.sim import CodeRedSim


class Flaky:
    """Crashes on the given decisions, answers garbage on others, else plays the heuristic."""

    name = "flaky"

    def __init__(self, crash_at: set[int], garbage_at: set[int]) -> None:
        self.inner = make_agent("heuristic")
        self.crash_at, self.garbage_at, self.calls = crash_at, garbage_at, 0

    def reset(self, task_id: str, seed: int) -> None:
        self.inner.reset(task_id, seed)
        self.calls = 0

    def act(self, observation: dict[str, Any]) -> Any:
        self.calls += 1
        if self.calls in self.crash_at:
            raise ValueError("boom")
        if self.calls in self.garbage_at:
            return "dispatch everything"
        return self.inner.act(observation)


def test_a_crash_or_a_non_action_plays_maintain_plan_and_says_so() -> None:
    steps: list[Step] = []
    episode = play(LocalEnv(text=False), Flaky({2}, {3}), "task1", 0, max_steps=4, on_step=steps.append)
    assert [s.number for s in steps] == [1, 2, 3, 4] and episode.steps == steps
    assert steps[1].action == steps[2].action == {"action_type": "maintain_plan"}
    assert steps[1].error == "agent error (ValueError); played maintain_plan"
    assert steps[2].error == "agent returned no action; played maintain_plan"
    assert steps[0].error is None and episode.agent_crashes == 2


def test_the_crash_hook_can_stop_the_episode_instead() -> None:
    seen: list[Step] = []
    with pytest.raises(ValueError, match="boom"):
        play(LocalEnv(text=False), Flaky({3}, set()), "task1", 0, on_step=seen.append,
             on_agent_error=raise_agent_errors)
    assert len(seen) == 2  # the steps before the crash reached the hooks


def test_a_scripted_replay_reproduces_the_episode_including_refused_actions() -> None:
    played = run_episode("task2", 1, make_agent("random", 1), max_steps=12)
    actions = [*played.actions[:6], {"action_type": "warp_drive"}, {}, *played.actions[6:]]
    env = LocalEnv(text=False, observe=False)
    episode = play(env, ScriptedAgent(actions), "task2", 1, max_steps=len(actions))
    by_hand = CodeRedSim("task2", 1)
    for action in actions:
        by_hand.step(action)
    assert env.sim.grade() == by_hand.grade() and env.sim.action_log == by_hand.action_log
    assert [s.error is not None for s in episode.steps][6:8] == [True, True]
    assert all(s.observation == {} for s in episode.steps)  # observe=False builds none


def test_hooks_see_the_reset_observation_then_every_step() -> None:
    resets: list[dict[str, Any]] = []
    steps: list[Step] = []
    episode = play(LocalEnv(), make_agent("noop"), "task1", 0, on_reset=resets.append, on_step=steps.append)
    assert len(resets) == 1 and resets[0]["step"] == 0 and "text" in resets[0]
    assert episode.done and steps[-1].done and len(steps) == len(episode.steps)
    assert run_episode("task1", 0, make_agent("noop")).steps == len(steps)
