"""``CodeRedSim.rewards``: a rollout that reads only the final grade skips the step reward, and
the preview is then computed only when read; the episode itself is the same either way."""

from __future__ import annotations

import pytest

from codered_env.agents import make_agent
from codered_env.agents.planner import PlannerAgent
from codered_env.sim import CodeRedSim

SEEDS = (2300, 2301)  # of their own


def _play(
    task_id: str, seed: int, rewards_from: int | None, read_at: frozenset[int] | None = None
) -> tuple[CodeRedSim, list[float], dict[int, float]]:
    """The heuristic, with rewards off until step ``rewards_from`` (None: off throughout);
    returns the episode, its rewards and the previews read after the steps in ``read_at``
    (None: after every step)."""
    sim, agent = CodeRedSim(task_id, seed), make_agent("heuristic", seed)
    agent.reset(task_id, seed)
    sim.rewards = rewards_from == 0
    rewards, previews = [], {}
    while not sim.done:
        if rewards_from is not None and sim.step_count == rewards_from:
            sim.rewards = True
        rewards.append(sim.step(agent.act(sim.observation_view())).reward)
        if read_at is None or sim.step_count in read_at:
            previews[sim.step_count] = sim.score_preview
    return sim, rewards, previews


@pytest.mark.parametrize("task_id", ["task1", "task3", "task5"])
def test_the_episode_is_the_same_without_rewards(task_id: str) -> None:
    for seed in SEEDS:
        eager, rewards, previews = _play(task_id, seed, 0)
        lazy, no_rewards, lazy_previews = _play(task_id, seed, None)
        assert lazy.action_log == eager.action_log
        assert lazy.grade() == eager.grade()
        assert lazy_previews == previews  # computed when read, the same values
        assert set(no_rewards) == {0.0} and any(rewards)
        # previews skipped for many steps, then read: the same as if read all along
        sparse = frozenset(range(7, len(rewards) + 1, 7))
        unread, _, sparse_previews = _play(task_id, seed, None, sparse)
        assert unread.action_log == eager.action_log and unread.grade() == eager.grade()
        assert sparse_previews == {step: previews[step] for step in sparse}


def test_rewards_switched_on_add_up_from_there() -> None:
    sim, rewards, _ = _play("task3", SEEDS[0], 6)
    assert set(rewards[:6]) == {0.0}
    reference, all_rewards, _ = _play("task3", SEEDS[0], 0)
    assert sum(rewards[6:]) == pytest.approx(sim.grade()["score"] - _potential_after(reference, 6))
    assert sum(all_rewards) == pytest.approx(reference.grade()["score"])


def _potential_after(played: CodeRedSim, steps: int) -> float:
    """The potential of ``played``'s episode after its first ``steps`` actions, replayed."""
    sim = CodeRedSim(played.task.task_id, played.seed)
    for action in played.action_log[:steps]:
        sim.step(action)
    return sim.potential


def test_the_planner_rolls_out_without_rewards() -> None:
    sim = CodeRedSim("task2", 20001)
    planner = PlannerAgent(20001)
    planner.reset("task2", 20001)
    twin = planner._rollout_start(sim, 7)
    assert twin.rewards is False and sim.rewards is True and planner._sim.rewards is False
    assert twin.step({"action_type": "maintain_plan"}).reward == 0.0
