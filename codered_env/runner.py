"""Run one episode of an agent against the in-process simulation."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .agents import Agent
from .sim import CodeRedSim


@dataclass
class EpisodeResult:
    task_id: str
    seed: int
    agent: str
    score: float
    components: dict[str, float | None]
    steps: int
    actions: list[Any] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    errors: list[str | None] = field(default_factory=list)
    grade: dict[str, Any] = field(default_factory=dict)
    wall_time_s: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "task": self.task_id,
            "seed": self.seed,
            "score": self.score,
            "components": self.components,
            "steps": self.steps,
        }


StepHook = Callable[[int, Any, float, bool, "str | None", CodeRedSim], None]


def run_episode(
    task_id: str, seed: int, agent: Agent, on_step: StepHook | None = None, max_steps: int | None = None
) -> EpisodeResult:
    """Play ``agent`` on (task, seed). ``on_step(n, action, reward, done, error, sim)`` is called
    after every step; ``max_steps`` stops deciding early (the world then plays on)."""
    start = time.perf_counter()
    sim = CodeRedSim(task_id, seed)
    agent.reset(task_id, seed)
    result = EpisodeResult(task_id, seed, agent.name, 0.0, {}, 0)
    limit = sim.max_steps if max_steps is None else min(max_steps, sim.max_steps)
    while not sim.done and sim.step_count < limit:
        action = agent.act(sim.observation())
        out = sim.step(action)
        result.actions.append(action)
        result.rewards.append(out.reward)
        result.errors.append(out.error)
        if on_step is not None:
            on_step(sim.step_count, action, out.reward, out.done, out.error, sim)
    sim.finish()
    grade = sim.grade()
    result.score, result.components, result.steps = grade["score"], grade["components"], sim.step_count
    result.grade, result.wall_time_s = grade, time.perf_counter() - start
    return result
