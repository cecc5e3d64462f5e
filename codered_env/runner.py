"""The one episode loop: every episode an agent plays in this project goes through :func:`play`.

Who calls it
    ``codered play`` and the baselines (``/baseline``, ``codered train``'s reference lines, the
    server's agent jobs) through :func:`run_episode`; ``codered eval`` and ``inference.py``
    through :func:`codered_env.evaluation.episode.play_episode`; the HTML replay and the console's
    frames through :mod:`codered_env.replay`; the console's advice through
    :func:`codered_env.replay.replay_sim`; ``codered train``'s greedy evaluation through
    :func:`run_episode` with the in-memory policy as a :class:`~codered_env.agents.ppo.PPOAgent`.

Environments
    The loop talks to an :class:`EpisodeEnv`: :class:`LocalEnv` (the in-process ``CodeRedSim``)
    or :class:`RemoteEnv` (a running server through the typed OpenEnv client).

Hooks
    ``on_reset(observation)`` once, then ``on_step(step)`` after every step with a :class:`Step`
    (the action the environment received, reward, done, error, the next observation). Recording
    frames (:class:`codered_env.replay.FrameRecorder`), storing results (the evaluation's step
    records), baselines (:class:`StepLog` behind :func:`run_episode`) and replays
    (:class:`ScriptedAgent`) are hooks or agents around this loop, never loops of their own.

An agent that crashes (the policy, the same for every caller)
    When ``agent.act`` raises, or answers something that is not a mapping, the step plays
    ``maintain_plan`` instead and the step's ``error`` says so: ``"agent error (ValueError);
    played maintain_plan"`` or ``"agent returned no action; played maintain_plan"``. The episode
    goes on: one bad decision never loses the episode, and the grade counts the lost decision
    like any other ``maintain_plan``. A mapping is always sent unchanged; the environment judges
    it (an invalid action is answered with ``last_action_error`` and costs its minute, exactly as
    for a client of the server). ``on_agent_error(exc)`` is told about every crash first; a hook
    that re-raises stops the episode instead (tests that want a crash to surface do that).
    Agent-side problems the agent reports itself (``agent.last_error``, the LLM agent's
    fallbacks) are added to the step's ``error`` as well.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .agents.base import MAINTAIN, Agent
from .sim import CodeRedSim

FALLBACK_ACTION: dict[str, Any] = MAINTAIN
# how a step's error starts when the agent crashed or answered no action (the module's policy)
AGENT_CRASHED = ("agent error (", "agent returned no action")


# ------------------------------------------------------------------------------ environments
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
    """The in-process simulator ``codered_env.sim.CodeRedSim``.

    ``text=True`` adds the compact rendering (``render_text``) to every observation as ``text``,
    the field LLM prompts are built from; the built-in agents never read it, so the baselines
    leave it out (it is most of the cost of an observation).  ``observe=False`` hands out empty
    observations, for a :class:`ScriptedAgent` replay that reads none (building an observation
    costs more than the step itself). ``city``: the city every episode plays in (``CodeRedSim``'s
    ``city``: ``"prakashnagar"``, a city seed or a ``City``)."""

    def __init__(self, text: bool = True, observe: bool = True, city: Any = "prakashnagar") -> None:
        self.sim: Any = None
        self.text = text
        self.observe = observe
        self.city = city

    def reset(self, task_id: str, seed: int) -> dict[str, Any]:
        self.sim = CodeRedSim(task_id=task_id, seed=seed, city=self.city)
        return self._observation()

    def _observation(self) -> dict[str, Any]:
        if not self.observe:
            return {}
        observation = dict(self.sim.observation())
        if self.text:
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
    """A running CodeRedEnv server, through the typed OpenEnv client (WebSocket session);
    ``city`` is the city every episode plays in (a canonical name, as ``reset(city=)`` takes)."""

    def __init__(self, base_url: str, client_factory: Callable[[str], Any] | None = None,
                 city: str = "prakashnagar") -> None:
        self.base_url = base_url
        self.city = city
        self._factory = client_factory or _typed_client
        self._client: Any = None
        self._task: tuple[str, int] | None = None

    def reset(self, task_id: str, seed: int) -> dict[str, Any]:
        self._task = (task_id, seed)
        if self._client is None:
            self._client = self._factory(self.base_url)
            self._client.connect()
        options: dict[str, Any] = {"task_id": task_id, "seed": seed}
        if self.city != "prakashnagar":
            options["city"] = self.city
        return self._observation(self._client.reset(**options))

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
        if self._task is None:
            return None
        sim = CodeRedSim(task_id=self._task[0], seed=self._task[1], city=self.city)
        for action in actions:
            if sim.done:
                break
            sim.step(action)
        sim.finish()
        return dict(sim.grade())

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


# ------------------------------------------------------------------------------ the loop
@dataclass(frozen=True)
class Step:
    """One played step as the hooks see it: ``action`` is what the environment received."""

    number: int
    action: dict[str, Any]
    reward: float
    done: bool
    error: str | None
    observation: dict[str, Any]


@dataclass
class Episode:
    """What :func:`play` returns: the steps played and whether the episode ended."""

    task_id: str
    seed: int
    steps: list[Step] = field(default_factory=list)
    done: bool = False
    agent_crashes: int = 0


StepHook = Callable[[Step], None]
ResetHook = Callable[[dict[str, Any]], None]
AgentErrorHook = Callable[[Exception], None]


def choose_action(agent: Any, observation: dict[str, Any],
                  on_agent_error: AgentErrorHook | None = None) -> tuple[dict[str, Any], str | None, bool]:
    """The agent's action, the agent-side error and whether it crashed (the module's policy)."""
    try:
        action = agent.act(observation)
    except Exception as exc:
        if on_agent_error is not None:
            on_agent_error(exc)
        return dict(FALLBACK_ACTION), f"{AGENT_CRASHED[0]}{type(exc).__name__}); played maintain_plan", True
    if not isinstance(action, Mapping):
        return dict(FALLBACK_ACTION), f"{AGENT_CRASHED[1]}; played maintain_plan", True
    return dict(action), getattr(agent, "last_error", None), False


def play(
    env: EpisodeEnv,
    agent: Any,
    task_id: str,
    seed: int,
    *,
    max_steps: int | None = None,
    on_reset: ResetHook | None = None,
    on_step: StepHook | None = None,
    on_agent_error: AgentErrorHook | None = None,
) -> Episode:
    """Reset ``env`` and ``agent`` on (task, seed) and play until the episode ends or
    ``max_steps`` decisions were made.  Environment exceptions propagate (the hooks have seen
    every step completed before them); agent crashes follow the module's policy."""
    episode = Episode(task_id=task_id, seed=seed)
    observation = env.reset(task_id, seed)
    agent.reset(task_id, seed)
    if on_reset is not None:
        on_reset(observation)
    done = bool(observation.get("done", False))
    limit = float("inf") if max_steps is None else max_steps
    while not done and len(episode.steps) < limit:
        action, agent_error, crashed = choose_action(agent, observation, on_agent_error)
        result = env.step(action)
        observation, done = result.observation, result.done
        error = "; ".join(e for e in (agent_error, result.error) if e) or None
        step = Step(len(episode.steps) + 1, result.sent or action, result.reward, done, error, observation)
        episode.steps.append(step)
        episode.agent_crashes += crashed
        if on_step is not None:
            on_step(step)
    episode.done = done
    return episode


def raise_agent_errors(exc: Exception) -> None:
    """An ``on_agent_error`` hook that lets a crash stop the episode (for debugging and tests)."""
    raise exc


class ScriptedAgent:
    """Plays a fixed list of actions (a replay); past the end of the list, ``maintain_plan``.

    Every action is sent as given (a refused one is refused again), so a replay reproduces the
    episode the actions were recorded from."""

    name = "replay"

    def __init__(self, actions: Sequence[Any]) -> None:
        self.actions = list(actions)
        self._next = 0

    def reset(self, task_id: str, seed: int) -> None:
        self._next = 0

    def act(self, observation: dict[str, Any]) -> Any:
        del observation
        if self._next >= len(self.actions):
            return dict(FALLBACK_ACTION)
        self._next += 1
        return self.actions[self._next - 1]


# ------------------------------------------------------------------------------ run_episode
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


LegacyStepHook = Callable[[int, Any, float, bool, "str | None", CodeRedSim], None]


def run_episode(
    task_id: str, seed: int, agent: Agent, on_step: LegacyStepHook | None = None,
    max_steps: int | None = None, city: Any = "prakashnagar",
) -> EpisodeResult:
    """Play ``agent`` on (task, seed) in-process and grade it (the raw final score, as the
    baselines report it).  ``on_step(n, action, reward, done, error, sim)`` is called after every
    step; ``max_steps`` stops deciding early (the world then plays on); ``city`` as ``LocalEnv``'s."""
    start = time.perf_counter()
    env = LocalEnv(text=False, city=city)

    def hook(step: Step) -> None:
        if on_step is not None:
            on_step(step.number, step.action, step.reward, step.done, step.error, env.sim)

    episode = play(env, agent, task_id, seed, max_steps=max_steps, on_step=hook)
    grade = env.grade([]) or {}
    return EpisodeResult(
        task_id, seed, agent.name, grade["score"], grade["components"], env.sim.step_count,
        actions=[s.action for s in episode.steps], rewards=[s.reward for s in episode.steps],
        errors=[s.error for s in episode.steps], grade=grade,
        wall_time_s=time.perf_counter() - start)
