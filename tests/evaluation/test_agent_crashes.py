"""An agent that crashes in evaluation: counted per episode, and an episode in which it crashed on
most steps is invalid (not stored), its first exception shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from codered_env.agents import HeuristicAgent
from codered_env.evaluation import episode
from codered_env.evaluation.episode import EpisodeJob, run_job
from codered_env.evaluation.evaluate import run_evaluation
from codered_env.evaluation.store import EpisodeStore


class CrashesEvery(HeuristicAgent):
    """The heuristic, raising at every ``every``-th decision."""

    def __init__(self, every: int) -> None:
        super().__init__(0)
        self.every, self.calls = every, 0

    def act(self, observation):
        self.calls += 1
        if self.calls % self.every == 0:
            raise ValueError("the city does not fit the declared slots")
        return super().act(observation)


def _with_agent(monkeypatch: pytest.MonkeyPatch, every: int) -> None:
    monkeypatch.setattr(episode, "build_agent", lambda job, limiter=None: (CrashesEvery(every), job.agent))


def test_crashes_are_agent_errors_not_invalid_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    _with_agent(monkeypatch, 5)
    result = run_job(EpisodeJob("heuristic", "task1", 0))
    steps = result.record.steps
    assert result.record.agent_errors == steps // 5 > 0
    assert result.record.invalid_actions == 0
    assert result.crashed == pytest.approx((steps // 5) / steps)
    assert result.agent_crash == "ValueError: the city does not fit the declared slots"


def test_an_episode_the_agent_crashed_through_is_invalid_and_not_stored(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _with_agent(monkeypatch, 1)
    db = tmp_path / "e.db"
    events = []
    summary = run_evaluation(["heuristic"], ["task1"], [0], db_path=db, progress=events.append)
    assert summary.invalid == 1 and summary.ran == 0
    assert "the agent crashed on 100% of steps (ValueError: the city does not fit" in events[-1].detail
    assert EpisodeStore(db).records() == []
