"""Episodes for ``inference.py`` and the evaluation runner, played by the one episode loop.

:func:`play_episode` plays an episode with :func:`codered_env.runner.play` (the project's only
episode loop, with its policy for an agent that crashes) and records every step as a
:class:`~codered_env.evaluation.trajectory.StepRecord`.  :func:`run_job` wraps it for
``codered eval``: it builds the agent, plays one (agent, task, seed) in-process and returns the
record to store.  The serial loop, the worker processes, the LLM threads and the Ray tasks all call
:func:`run_job`, so every backend plays exactly the same episode.

The environments (:class:`~codered_env.runner.LocalEnv` in-process, with a ``text`` field in
every observation for LLM prompts, and :class:`~codered_env.runner.RemoteEnv` through the typed
client) live in :mod:`codered_env.runner` and are re-exported here.
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
from typing import Any

from codered_env.evaluation.store import EpisodeRecord
from codered_env.evaluation.trajectory import StepRecord, Trajectory
from codered_env.runner import (  # noqa: F401  (re-exported: callers import them from here)
    AGENT_CRASHED,
    FALLBACK_ACTION,
    EpisodeEnv,
    LocalEnv,
    RemoteEnv,
    Step,
    StepOutcome,
    play,
)


def clamp_score(value: Any) -> float:
    """The reported score: rounded to 4 decimals and clamped to [0.01, 0.99]
    (docs/MODEL.md#score-clamping)."""
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
    agent_crash: str | None = None  # the first exception the agent raised, with its message

    @property
    def rewards(self) -> list[float]:
        return [s.reward for s in self.steps]

    @property
    def actions(self) -> list[dict[str, Any]]:
        return [dict(s.action) for s in self.steps]

    @property
    def ended(self) -> bool:
        """Whether the episode reached its end (task budget, step cap or resolution)."""
        return bool(self.steps) and self.steps[-1].done

    @property
    def invalid_actions(self) -> int:
        return sum(1 for s in self.steps if s.error and not s.error.startswith(("llm: ", *AGENT_CRASHED)))

    @property
    def agent_errors(self) -> int:
        """Steps at which the agent substituted ``maintain_plan``: crashes and the LLM's fallbacks."""
        return self.agent_crashes + sum(1 for s in self.steps if s.error and s.error.startswith("llm: "))

    @property
    def agent_crashes(self) -> int:
        """Steps at which the agent raised or answered no action (``maintain_plan`` was played)."""
        return sum(1 for s in self.steps if s.error and s.error.startswith(AGENT_CRASHED))


def play_episode(
    env: EpisodeEnv,
    agent: Any,
    task_id: str,
    seed: int,
    max_steps: int,
    on_step: Callable[[StepRecord], None] | None = None,
    outcome: EpisodeOutcome | None = None,
) -> EpisodeOutcome:
    """Play up to ``max_steps`` steps with :func:`codered_env.runner.play` (its policy for an
    agent that crashes applies), recording each as a :class:`StepRecord`.  Environment
    exceptions propagate, but ``outcome`` (pass your own to keep it) holds every step completed
    before them.

    A cap below the task's budget ends the episode the way the budget does: the world plays on
    without decisions and the last step's reward holds that play-out (it is marked done), so the
    rewards still add up to the reported score (:func:`_end_at_cap`)."""
    outcome = outcome or EpisodeOutcome(task_id=task_id, seed=seed)

    def record(step: Step) -> None:
        entry = StepRecord(step=step.number, action=step.action, reward=step.reward, done=step.done,
                           error=one_line(step.error), score_preview=_score_preview(step.observation))
        if not step.done and entry.step >= max_steps:
            entry = _end_at_cap(env, outcome, entry)
        outcome.steps.append(entry)
        if on_step is not None:
            on_step(entry)

    def crashed(exc: Exception) -> None:
        if outcome.agent_crash is None:
            outcome.agent_crash = one_line(f"{type(exc).__name__}: {exc}")

    episode = play(env, agent, task_id, seed, max_steps=max_steps, on_step=record, on_agent_error=crashed)
    outcome.done = episode.done or bool(outcome.steps and outcome.steps[-1].done)
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
    """Fill in the grade and the reported score; never raises.

    A run cut short by an interrupt or an error (``failure`` set before the episode ended) is
    graded as played: the world is not played on, and the score is the sum of the rewards so far
    (the running preview after the last step), clamped as every score is.  Its last step says
    ``done=false``, which is how the log tells it from a finished or capped episode."""
    if outcome.failure is not None and not outcome.ended:
        outcome.grade = None
        outcome.score = clamp_score(sum(outcome.rewards))
        return outcome
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
    handed to :func:`run_job` (the threads of one process share theirs instead).  ``env_url``
    plays the episode on that server (WebSocket) instead of in process (:func:`job_env`)."""

    agent: str
    task_id: str
    seed: int
    max_steps: int | None = None
    llm_config: Any = None
    requests_per_min: float | None = None
    tokens_per_min: float | None = None
    repeat: int = 0  # which run of this (task, seed): codered eval --repeats
    env_url: str | None = None
    city: str = "prakashnagar"  # canonical city name (codered_env.city_choice)

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
    crashed: float = 0.0  # the share of steps at which the agent crashed
    agent_crash: str | None = None  # the first crash, with its message
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
              llm_stats: dict[str, Any] | None, agent: Any = None,
              city: str = "prakashnagar") -> EpisodeRecord:
    """An :class:`EpisodeRecord` (with its trajectory and, given the ``agent`` that played it,
    its provenance) from a finished episode played in ``city``."""
    from codered_env.evaluation import provenance

    grade = outcome.grade or {}
    trajectory = Trajectory(task_id=outcome.task_id, seed=outcome.seed, agent=agent_name,
                            model=model, steps=outcome.steps, city=city,
                            end={"score": outcome.score, "components": grade.get("components"),
                                 "interrupted": outcome.failure is not None,
                                 "reason": outcome.failure})
    raw = grade.get("raw_score")
    return EpisodeRecord(
        agent=agent_name, model=model, task_id=outcome.task_id, seed=outcome.seed, city=city,
        score=outcome.score, components=dict(grade.get("components") or {}),
        steps=len(outcome.steps), wall_time_s=round(wall, 3), trajectory=trajectory.to_jsonl(),
        raw_score=float(raw) if isinstance(raw, (int, float)) else None,
        invalid_actions=outcome.invalid_actions,
        agent_errors=outcome.agent_errors,
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


def job_env(job: EpisodeJob) -> EpisodeEnv:
    """Where a job is played: in process, or on the server at ``job.env_url`` (the typed client,
    which reconnects and resumes the episode if the server restarts mid-episode).  The episode
    and its grade are the same either way: the server runs the same simulation."""
    return RemoteEnv(job.env_url, city=job.city) if job.env_url else LocalEnv(city=job.city)


def run_job(job: EpisodeJob, rate_limiter: Any = None) -> JobResult:
    """Play one job in this process.  A bad agent spec or missing key is returned as ``error``;
    other exceptions propagate (a Ray task is then retried or reported failed)."""
    started = time.monotonic()
    try:
        agent, model = build_agent(job, rate_limiter or _job_limiter(job))
        env = job_env(job)
        outcome = EpisodeOutcome(task_id=job.task_id, seed=job.seed)
        try:
            play_episode(env, agent, job.task_id, job.seed, job.max_steps or 10**6, outcome=outcome)
            sim = getattr(env, "sim", None)
            end_reason = sim.end_reason if sim is not None else None
            finish(env, outcome)
        finally:
            env.close()
    except _JOB_ERRORS as exc:
        return JobResult(job, error=" ".join(str(exc).split())[:200],
                         wall_time_s=time.monotonic() - started)
    wall = time.monotonic() - started
    stats = agent_stats(agent) if job.is_llm else None
    record = to_record(job.agent, model, outcome, wall, stats, agent, city=job.city)
    _mark_outcome(record, job, end_reason, outcome, stats)
    crashed = outcome.agent_crashes / len(outcome.steps) if outcome.steps else 0.0
    return JobResult(job, record, unanswered=_unanswered(stats, outcome), crashed=crashed,
                     agent_crash=outcome.agent_crash, wall_time_s=wall)


def _mark_outcome(record: EpisodeRecord, job: EpisodeJob, end_reason: str | None,
                  outcome: EpisodeOutcome, stats: Mapping[str, Any] | None) -> None:
    """The row's repeat index and how the episode finished (evaluation/benchmark.py)."""
    from codered_env.evaluation.benchmark import episode_finish

    kind = None
    if job.is_llm and job.llm_config is not None:
        kind = "local" if job.llm_config.is_local else "remote"
    record.repeat = job.repeat
    record.outcome = episode_finish(end_reason, len(outcome.steps), stats, outcome.invalid_actions,
                                    outcome.failure, kind)
