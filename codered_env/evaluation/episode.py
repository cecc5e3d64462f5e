"""One episode loop shared by ``inference.py`` and the evaluation runner.

Environments are reached through a small adapter protocol so the same loop plays the in-process
simulator (:class:`LocalEnv`) or a running OpenEnv server through the typed client
(:class:`RemoteEnv`).  Every observation handed to the agent carries a ``text`` field (the compact
rendering used in LLM prompts).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from codered_env.evaluation.trajectory import StepRecord

FALLBACK_ACTION: dict[str, Any] = {"action_type": "maintain_plan"}


def clamp_score(value: Any) -> float:
    """The reported score: rounded to 4 decimals and clamped to [0.01, 0.99] (MODEL.md §5)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.01
    if not math.isfinite(number):
        return 0.01
    return min(0.99, max(0.01, round(number, 4)))


def one_line(text: str | None, limit: int = 300) -> str | None:
    """Collapse whitespace (no newline may reach a log line) and bound the length."""
    if text is None:
        return None
    flat = " ".join(str(text).split())
    return flat[:limit] if flat else None


@dataclass(frozen=True)
class StepOutcome:
    """One environment step.  ``sent`` is the action actually sent when the adapter had to
    replace the agent's (an action the wire schema cannot carry)."""

    observation: dict[str, Any]
    reward: float
    done: bool
    error: str | None
    sent: dict[str, Any] | None = None


class EpisodeEnv(Protocol):
    """What the episode loop needs from an environment."""

    def reset(self, task_id: str, seed: int) -> dict[str, Any]: ...
    def step(self, action: Mapping[str, Any]) -> StepOutcome: ...
    def grade(self, actions: list[dict[str, Any]]) -> dict[str, Any] | None: ...
    def close(self) -> None: ...


class LocalEnv:
    """The in-process simulator ``codered_env.sim.CodeRedSim``."""

    def __init__(self) -> None:
        self.sim: Any = None

    def reset(self, task_id: str, seed: int) -> dict[str, Any]:
        from codered_env.sim import CodeRedSim

        self.sim = CodeRedSim(task_id=task_id, seed=seed)
        return self._observation()

    def _observation(self) -> dict[str, Any]:
        observation = dict(self.sim.observation())
        observation.setdefault("text", self.sim.render_text())
        return observation

    def step(self, action: Mapping[str, Any]) -> StepOutcome:
        result = self.sim.step(dict(action))
        return StepOutcome(self._observation(), float(result.reward), bool(result.done),
                           result.error)

    def grade(self, actions: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The final grade; an episode cut short by the step cap is finished first (the world
        plays on without decisions), exactly as ``grade_episode`` does on replay."""
        del actions
        if self.sim is None:
            return None
        self.sim.finish()
        return dict(self.sim.grade())

    def close(self) -> None:
        self.sim = None


def _as_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dict(dump())
    return dict(getattr(value, "__dict__", {}))


class RemoteEnv:
    """A running CodeRedEnv server, through the typed OpenEnv client (WebSocket session)."""

    def __init__(self, base_url: str, client_factory: Callable[[str], Any] | None = None) -> None:
        self.base_url = base_url
        self._factory = client_factory or _typed_client
        self._client: Any = None
        self._task: tuple[str, int] | None = None

    def reset(self, task_id: str, seed: int) -> dict[str, Any]:
        self._task = (task_id, seed)
        if self._client is None:
            self._client = self._factory(self.base_url)
            self._client.connect()
        return self._observation(self._client.reset(task_id=task_id, seed=seed))

    @staticmethod
    def _observation(result: Any) -> dict[str, Any]:
        observation = _as_dict(getattr(result, "observation", result))
        observation.setdefault("done", bool(getattr(result, "done", False)))
        return observation

    def step(self, action: Mapping[str, Any]) -> StepOutcome:
        wire, problem = _wire_action(action)
        result = self._client.step(wire)
        observation = self._observation(result)
        reward = getattr(result, "reward", None)
        error = observation.get("last_action_error")
        return StepOutcome(observation=observation,
                           reward=float(reward) if reward is not None else 0.0,
                           done=bool(getattr(result, "done", observation.get("done", False))),
                           error="; ".join(e for e in (problem, error) if e) or None,
                           sent=dict(FALLBACK_ACTION) if problem else None)

    def grade(self, actions: list[dict[str, Any]]) -> dict[str, Any] | None:
        """Re-grade the played actions locally (the grade is a pure function of them)."""
        from codered_env.sim import grade_episode

        if self._task is None:
            return None
        return dict(grade_episode(self._task[0], self._task[1], actions))

    def close(self) -> None:
        if self._client is not None:
            try:
                self._client.close()
            finally:
                self._client = None


def _typed_client(base_url: str) -> Any:
    from codered_env.client import CodeRedEnv

    return CodeRedEnv(base_url=base_url).sync()


def _wire_action(action: Mapping[str, Any]) -> tuple[Any, str | None]:
    """The typed wire action, or ``maintain_plan`` and the reason when the wire schema cannot
    carry the action (the server would refuse the frame and end the session)."""
    from codered_env.models import CodeRedAction

    try:
        return CodeRedAction.model_validate(dict(action)), None
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        reason = " ".join(str(exc).split())[:200]
        return CodeRedAction(action_type="maintain_plan"), f"action not sent: {reason}"


@dataclass
class EpisodeOutcome:
    """What happened: the steps played, the final grade and whether the run was cut short."""

    task_id: str
    seed: int
    steps: list[StepRecord] = field(default_factory=list)
    grade: dict[str, Any] | None = None
    score: float = 0.01
    done: bool = False
    failure: str | None = None

    @property
    def rewards(self) -> list[float]:
        return [s.reward for s in self.steps]

    @property
    def actions(self) -> list[dict[str, Any]]:
        return [dict(s.action) for s in self.steps]

    @property
    def invalid_actions(self) -> int:
        return sum(1 for s in self.steps if s.error and not s.error.startswith("llm: "))


def _choose(agent: Any, observation: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Ask the agent; a crashing agent or a non-dict answer becomes ``maintain_plan``."""
    try:
        action = agent.act(observation)
    except Exception as exc:
        return dict(FALLBACK_ACTION), f"agent error ({type(exc).__name__}); played maintain_plan"
    if not isinstance(action, Mapping) or not isinstance(action.get("action_type"), str):
        return dict(FALLBACK_ACTION), "agent returned no action; played maintain_plan"
    return dict(action), getattr(agent, "last_error", None)


def play_episode(
    env: EpisodeEnv,
    agent: Any,
    task_id: str,
    seed: int,
    max_steps: int,
    on_step: Callable[[StepRecord], None] | None = None,
    outcome: EpisodeOutcome | None = None,
) -> EpisodeOutcome:
    """Play up to ``max_steps`` steps.  Environment exceptions propagate, but ``outcome`` (pass
    your own to keep it) holds every step completed before them."""
    outcome = outcome or EpisodeOutcome(task_id=task_id, seed=seed)
    observation = env.reset(task_id, seed)
    agent.reset(task_id, seed)
    done = bool(observation.get("done", False))
    while not done and len(outcome.steps) < max_steps:
        action, agent_error = _choose(agent, observation)
        result = env.step(action)
        action = result.sent or action
        observation, done = result.observation, result.done
        error = one_line("; ".join(e for e in (agent_error, result.error) if e)) or None
        record = StepRecord(step=len(outcome.steps) + 1, action=action, reward=result.reward,
                            done=done, error=error,
                            score_preview=_score_preview(observation))
        outcome.steps.append(record)
        if on_step is not None:
            on_step(record)
    outcome.done = done
    return outcome


def _score_preview(observation: Mapping[str, Any]) -> float | None:
    value = observation.get("score_preview")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def finish(env: EpisodeEnv | None, outcome: EpisodeOutcome) -> EpisodeOutcome:
    """Fill in the grade and the reported score; never raises."""
    grade: dict[str, Any] | None = None
    if env is not None:
        try:
            grade = env.grade(outcome.actions)
        except Exception as exc:
            outcome.failure = outcome.failure or f"grading failed ({type(exc).__name__})"
    outcome.grade = grade
    if grade is not None and "score" in grade:
        outcome.score = clamp_score(grade["score"])
    elif outcome.steps and outcome.steps[-1].score_preview is not None:
        outcome.score = clamp_score(outcome.steps[-1].score_preview)
    else:
        outcome.score = clamp_score(sum(outcome.rewards))
    return outcome
