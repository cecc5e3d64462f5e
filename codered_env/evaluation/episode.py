"""One episode loop shared by ``inference.py`` and the evaluation runner.

:func:`play_episode` is the only place an episode is played.  :func:`run_job` wraps it for
``codered eval``: it builds the agent, plays one (agent, task, seed) in-process and returns the
record to store.  The serial loop, the worker processes, the LLM threads and the Ray tasks all call
:func:`run_job`, so every backend plays exactly the same episode.

Environments are reached through a small adapter protocol so the same loop plays the in-process
simulator (:class:`LocalEnv`) or a running OpenEnv server through the typed client
(:class:`RemoteEnv`).  Every observation handed to the agent carries a ``text`` field (the compact
rendering used in LLM prompts).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from codered_env.evaluation.store import EpisodeRecord
from codered_env.evaluation.trajectory import StepRecord, Trajectory

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
    your own to keep it) holds every step completed before them.

    A cap below the task's budget ends the episode the way the budget does: the world plays on
    without decisions and the last step's reward holds that play-out (it is marked done), so the
    rewards still add up to the reported score (:func:`_end_at_cap`)."""
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
        if not done and record.step >= max_steps:
            record = _end_at_cap(env, outcome, record)
            done = record.done
        outcome.steps.append(record)
        if on_step is not None:
            on_step(record)
    outcome.done = done
    return outcome


def _end_at_cap(env: EpisodeEnv, outcome: EpisodeOutcome, record: StepRecord) -> StepRecord:
    """The last step of a run cut by the step cap, carrying the world's play-out: its reward is
    the final score minus the rewards so far (as the last reward at the task's own budget is).
    Unchanged when the environment cannot grade (the run then ends as it stood)."""
    actions = [*outcome.actions, dict(record.action)]
    try:
        grade = env.grade(actions)
    except Exception:
        return record
    if not grade or "score" not in grade:
        return record
    score = clamp_score(grade["score"])
    outcome.grade = dict(grade)
    played_out = round(score - sum(outcome.rewards), 6)
    return dataclasses.replace(record, reward=played_out, done=True, score_preview=score)


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


# --------------------------------------------------------------------------- evaluation jobs

LLM_AGENT = "llm"
PROMPT_OVERHEAD_TOKENS = 1500  # rough size of the system prompt and tool schemas, for pacing only
_JOB_ERRORS = (ValueError, RuntimeError, KeyError, TypeError, ImportError, OSError)


@dataclass(frozen=True)
class EpisodeJob:
    """One (agent, task, seed) to evaluate; picklable, so it can go to a process or a Ray task.

    ``agent`` is an agent spec passed to :func:`codered_env.agents.make_agent` (``heuristic``,
    ``ppo:PATH`` ...) or ``llm``.  An ``llm_config`` whose ``api_key`` is empty reads the key from
    the environment of the process that plays the episode (how a Ray worker gets it).
    ``requests_per_min``/``tokens_per_min`` build a rate limiter inside that process when none is
    handed to :func:`run_job` (the threads of one process share theirs instead)."""

    agent: str
    task_id: str
    seed: int
    max_steps: int | None = None
    llm_config: Any = None
    requests_per_min: float | None = None
    tokens_per_min: float | None = None

    @property
    def is_llm(self) -> bool:
        return self.agent == LLM_AGENT

    @property
    def model(self) -> str:
        """The model label stored with the episode: the model name for ``llm``, else the spec."""
        if self.is_llm and self.llm_config is not None:
            return str(self.llm_config.model)
        return self.agent


@dataclass
class JobResult:
    """What :func:`run_job` returns: the record to store, or why there is none."""

    job: EpisodeJob
    record: EpisodeRecord | None = None
    unanswered: float = 0.0
    error: str | None = None
    wall_time_s: float = 0.0
    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)


class PacedAgent:
    """Paces an agent that cannot take a ``rate_limiter`` itself: one ``acquire`` per decision."""

    def __init__(self, agent: Any, limiter: Any, max_tokens: int) -> None:
        self._agent, self._limiter, self._max_tokens = agent, limiter, max_tokens

    def __getattr__(self, name: str) -> Any:
        return getattr(self._agent, name)

    def reset(self, task_id: str, seed: int) -> None:
        self._agent.reset(task_id, seed)

    def act(self, observation: Mapping[str, Any]) -> Any:
        text = str(observation.get("text") or "")
        self._limiter.acquire(len(text) // 4 + PROMPT_OVERHEAD_TOKENS + self._max_tokens)
        return self._agent.act(observation)


def _llm_config_with_key(config: Any) -> Any:
    if config is None or config.api_key:
        return config
    from codered_env.agents.llm import api_key_from_env

    key = api_key_from_env()
    return None if key is None else dataclasses.replace(config, api_key=key)


def _takes_rate_limiter() -> bool:
    from codered_env.agents.llm import LLMAgent

    return "rate_limiter" in inspect.signature(LLMAgent).parameters


def build_agent(job: EpisodeJob, rate_limiter: Any = None) -> tuple[Any, str]:
    """The agent of a job and its model label."""
    from codered_env.agents import make_agent

    if not job.is_llm:
        return make_agent(job.agent, seed=job.seed), job.agent
    config = _llm_config_with_key(job.llm_config)
    if config is None:
        raise ValueError("agent 'llm' needs an API key (HF_TOKEN, API_KEY or OPENAI_API_KEY)")
    from codered_env.agents.llm import LLMClient

    http = shared_http_client(config)
    if rate_limiter is None or not getattr(rate_limiter, "limited", True):
        client = LLMClient(config, client=http)
        return make_agent(LLM_AGENT, seed=job.seed, config=config, client=client), config.model
    if _takes_rate_limiter():
        client = LLMClient(config, client=http, rate_limiter=rate_limiter)
        return make_agent(LLM_AGENT, seed=job.seed, config=config, client=client), config.model
    agent = make_agent(LLM_AGENT, seed=job.seed, config=config, client=LLMClient(config, client=http))
    return PacedAgent(agent, rate_limiter, int(config.max_tokens)), config.model


_HTTP_CLIENTS: dict[tuple[int, str, str, float], Any] = {}
_HTTP_LOCK = threading.Lock()


def shared_http_client(config: Any) -> Any:
    """One ``openai.OpenAI`` client per (endpoint, key, timeout) in this process, shared by the
    episodes played here.  Building one loads the TLS certificate store (about 0.1 s of CPU);
    with ``--concurrency K`` the K threads paid that for every episode, one after another under
    the GIL.  The client (an HTTP connection pool) is thread-safe, and sharing it also keeps
    connections alive from one episode to the next.  Each episode still has its own
    :class:`~codered_env.agents.llm.LLMClient` (budget, retries, statistics)."""
    import openai

    # the pid: a forked child must not share its parent's sockets
    key = (os.getpid(), str(config.base_url), str(config.api_key), float(config.timeout_s))
    with _HTTP_LOCK:
        client = _HTTP_CLIENTS.get(key)
        if client is None:
            client = openai.OpenAI(api_key=config.api_key, base_url=config.base_url,
                                   timeout=config.timeout_s, max_retries=0)
            _HTTP_CLIENTS[key] = client
    return client


def agent_stats(agent: Any) -> dict[str, Any] | None:
    """``agent.stats`` as a plain dict (a mapping or an object with ``as_dict``), else ``None``."""
    stats = getattr(agent, "stats", None)
    if isinstance(stats, Mapping):
        return dict(stats)
    as_dict = getattr(stats, "as_dict", None)
    return dict(as_dict()) if callable(as_dict) else None


def to_record(agent_name: str, model: str, outcome: EpisodeOutcome, wall: float,
              llm_stats: dict[str, Any] | None, agent: Any = None) -> EpisodeRecord:
    """An :class:`EpisodeRecord` (with its trajectory and, given the ``agent`` that played it,
    its provenance) from a finished episode."""
    from codered_env.evaluation import provenance

    grade = outcome.grade or {}
    trajectory = Trajectory(task_id=outcome.task_id, seed=outcome.seed, agent=agent_name,
                            model=model, steps=outcome.steps,
                            end={"score": outcome.score, "components": grade.get("components"),
                                 "interrupted": outcome.failure is not None,
                                 "reason": outcome.failure})
    raw = grade.get("raw_score")
    return EpisodeRecord(
        agent=agent_name, model=model, task_id=outcome.task_id, seed=outcome.seed,
        score=outcome.score, components=dict(grade.get("components") or {}),
        steps=len(outcome.steps), wall_time_s=round(wall, 3), trajectory=trajectory.to_jsonl(),
        raw_score=float(raw) if isinstance(raw, (int, float)) else None,
        invalid_actions=outcome.invalid_actions,
        agent_errors=sum(1 for s in outcome.steps if s.error and s.error.startswith("llm: ")),
        llm_stats=llm_stats,
        agent_fingerprint=None if agent is None else provenance.fingerprint_text(
            provenance.agent_fingerprint(agent)),
        sim_fingerprint=provenance.sim_fingerprint(), git_commit=provenance.git_commit())


def _unanswered(stats: Mapping[str, Any] | None, outcome: EpisodeOutcome) -> float:
    if not stats or not outcome.steps:
        return 0.0
    return float(stats.get("unanswered", 0) or 0) / len(outcome.steps)


def _job_limiter(job: EpisodeJob) -> Any:
    if not job.is_llm or (not job.requests_per_min and not job.tokens_per_min):
        return None
    from codered_env.evaluation.ratelimit import RateLimiter

    return RateLimiter(job.requests_per_min, job.tokens_per_min)


def run_job(job: EpisodeJob, rate_limiter: Any = None) -> JobResult:
    """Play one job in this process.  A bad agent spec or missing key is returned as ``error``;
    other exceptions propagate (a Ray task is then retried or reported failed)."""
    started = time.monotonic()
    try:
        agent, model = build_agent(job, rate_limiter or _job_limiter(job))
        env = LocalEnv()
        outcome = EpisodeOutcome(task_id=job.task_id, seed=job.seed)
        play_episode(env, agent, job.task_id, job.seed, job.max_steps or 10**6, outcome=outcome)
        finish(env, outcome)
    except _JOB_ERRORS as exc:
        return JobResult(job, error=" ".join(str(exc).split())[:200],
                         wall_time_s=time.monotonic() - started)
    wall = time.monotonic() - started
    stats = agent_stats(agent) if job.is_llm else None
    return JobResult(job, to_record(job.agent, model, outcome, wall, stats, agent),
                     unanswered=_unanswered(stats, outcome), wall_time_s=wall)
