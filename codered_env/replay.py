"""Episode frames: what an agent saw, step by step, for the replay page and the browser console.

A frame is ``{"observation", "action", "reward", "error"}``: the observation dict of
``CodeRedSim.observation()`` without the bulky ``legal_actions`` (``OMITTED_KEYS``), JSON-only,
and the action that led to it with its reward and error. Frame 0 is the reset observation, with
no action. Every episode here is played by the one episode loop (:func:`codered_env.runner.play`):
:func:`record_frames` with an agent, :func:`replay_frames` and :func:`replay_sim` with a list of
actions (:class:`~codered_env.runner.ScriptedAgent`).

This module sits below both :mod:`codered_env.viewer` (the offline HTML file) and
:mod:`codered_env.web` (the console's server-side help), which use it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .agents import Agent, make_agent
from .runner import LocalEnv, ScriptedAgent, Step, play
from .sim import CodeRedSim

# Observation keys left out of the frames: the legal-action menu is large and not drawn.
OMITTED_KEYS: tuple[str, ...] = ("legal_actions",)


def public_view(observation: dict[str, Any]) -> dict[str, Any]:
    """The observation as stored in a frame: a JSON-only deep copy minus ``OMITTED_KEYS``."""
    kept = {k: v for k, v in observation.items() if k not in OMITTED_KEYS}
    return json.loads(json.dumps(kept, allow_nan=False))


def frame(observation: dict[str, Any], action: Any, reward: float | None,
          error: str | None) -> dict[str, Any]:
    """One frame: the observation after ``action`` (None for the reset frame)."""
    return {
        "observation": public_view(observation),
        "action": json.loads(json.dumps(action, default=repr)),
        "reward": reward,
        "error": error,
    }


class FrameRecorder:
    """``on_reset``/``on_step`` hooks of :func:`codered_env.runner.play` that keep the frames."""

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []

    def on_reset(self, observation: dict[str, Any]) -> None:
        self.frames.append(frame(observation, None, None, None))

    def on_step(self, step: Step) -> None:
        self.frames.append(frame(step.observation, step.action, step.reward, step.error))


def record_frames(task_id: str, seed: int, agent: str | Agent = "heuristic",
                  city: str = "prakashnagar") -> list[dict[str, Any]]:
    """Play (task, seed) in ``city`` with ``agent`` (a built-in name or an Agent) and keep what
    it saw.

    Returns one frame per observation; frame 0 is the reset observation (action, reward and
    error are None), frame n follows step n.
    """
    player = make_agent(agent, seed) if isinstance(agent, str) else agent
    recorder = FrameRecorder()
    play(LocalEnv(text=False, city=city), player, task_id, seed, on_reset=recorder.on_reset,
         on_step=recorder.on_step)
    return recorder.frames


def replay_frames(task_id: str, seed: int, actions: Sequence[Any],
                  city: str = "prakashnagar") -> list[dict[str, Any]]:
    """The frames of ``actions`` replayed on (task, seed) in ``city`` (actions past the end are
    ignored)."""
    recorder = FrameRecorder()
    play(LocalEnv(text=False, city=city), ScriptedAgent(actions), task_id, seed, max_steps=len(actions),
         on_reset=recorder.on_reset, on_step=recorder.on_step)
    return recorder.frames


def replay_sim(task_id: str, seed: int, actions: Sequence[Any], city: str = "prakashnagar") -> CodeRedSim:
    """The simulation after ``actions`` in ``city`` (actions past the end of the episode are
    ignored)."""
    env = LocalEnv(text=False, observe=False, city=city)
    play(env, ScriptedAgent(actions), task_id, seed, max_steps=len(actions))
    return env.sim
