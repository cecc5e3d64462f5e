"""Run agents x tasks x seeds and store every episode in SQLite (used by ``codered eval``).

Episodes already stored for this package version *by the same agent and simulation* (their
fingerprints match, :mod:`codered_env.evaluation.provenance`) are reused, so an interrupted
evaluation resumes where it stopped.  A stored row whose fingerprints differ (a retrained
checkpoint at the same path, another planner budget, a changed simulation, a row from before
fingerprints) is *stale*: it is re-run and overwritten, unless ``reuse="stale"`` accepts it as it
is (``reuse="never"`` re-runs everything).  LLM episodes in which the model could not be reached for more than
``MAX_UNANSWERED_FRACTION`` of the steps (network, rate limits, budget, auth) are *not* stored:
they would measure the network rather than the model.  They are reported as ``invalid`` and will
be retried by the next run; an LLM episode in which the endpoint failed on every step is
counted in ``EvalSummary.endpoint_failures`` (``codered eval`` then exits non-zero).  Neither is an
episode whose agent raised at more than that share of its steps (reported with its first exception).  With
``repeats=k`` every (task, seed) of the ``llm`` agent is played k times with the model's sampling
settings, each run stored with its repeat index (the other agents are deterministic: one run).

Episodes run serially, in local worker processes/threads or on Ray (see
:mod:`codered_env.evaluation.backends`); whatever runs them, this process alone writes the store,
one result at a time as episodes finish, and every backend plays the same episode through
:func:`codered_env.evaluation.episode.run_job`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from codered_env.evaluation.backends import MIN_PARALLEL_WORK_S
from codered_env.evaluation.episode import (
    LLM_AGENT,
    EpisodeJob,
    JobResult,
    to_record,  # noqa: F401  (re-exported: callers used it from here)
)
from codered_env.evaluation.provenance import agent_fingerprint, fingerprint_text, sim_fingerprint
from codered_env.evaluation.ratelimit import RateLimiter
from codered_env.evaluation.store import DEFAULT_DB, EpisodeRecord, EpisodeStore
from codered_env.evaluation.trajectory import package_version

BACKENDS = ("local", "ray")
REUSE_POLICIES = ("match", "stale", "never")

MAX_UNANSWERED_FRACTION = 0.1


@dataclass(frozen=True)
class EvalEvent:
    """Progress of one episode: ``status`` is skipped, done, invalid or failed."""

    index: int
    total: int
    agent: str
    model: str
    task_id: str
    seed: int
    status: str
    score: float | None = None
    wall_time_s: float = 0.0
    detail: str | None = None
    components: dict[str, float | None] | None = None
    steps: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    llm_stats: dict[str, Any] | None = None
    repeat: int = 0
    outcome: dict[str, Any] | None = None
    city: str = "prakashnagar"

    def summary(self) -> dict[str, Any] | None:
        """The episode in the shape of ``runner.EpisodeResult.summary()`` (``None`` when it
        was not stored: invalid or failed)."""
        if self.status not in ("done", "skipped"):
            return None
        return {"agent": self.agent, "model": self.model, "task": self.task_id,
                "seed": self.seed, "score": self.score, "components": self.components,
                "steps": self.steps, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "repeat": self.repeat,
                "outcome": self.outcome, "city": self.city}


@dataclass
class EvalSummary:
    """Counts and events of one :func:`run_evaluation` call."""

    db_path: str
    ran: int = 0
    skipped: int = 0
    invalid: int = 0
    failed: int = 0
    stale_rerun: int = 0
    stale_reused: int = 0
    events: list[EvalEvent] = field(default_factory=list)

    @property
    def endpoint_failures(self) -> int:
        """Episodes played in this run in which the model endpoint failed on every step."""
        from codered_env.evaluation.benchmark import endpoint_failed_whole_episode

        return sum(e.status in ("done", "invalid") and endpoint_failed_whole_episode(e.outcome)
                   for e in self.events)

    def episodes(self) -> list[dict[str, Any]]:
        """Every stored episode of this run (new and skipped), as summary dicts."""
        return [e for e in (event.summary() for event in self.events) if e is not None]

    def tokens(self) -> tuple[int, int]:
        """Prompt and completion tokens of the stored episodes of this run (new and reused)."""
        stored = [e for e in self.events if e.status in ("done", "skipped")]
        return (sum(e.prompt_tokens or 0 for e in stored),
                sum(e.completion_tokens or 0 for e in stored))

    def as_dict(self) -> dict[str, Any]:
        return {"db_path": self.db_path, "ran": self.ran, "skipped": self.skipped,
                "invalid": self.invalid, "failed": self.failed, "stale_rerun": self.stale_rerun,
                "stale_reused": self.stale_reused,
                "events": [asdict(e) for e in self.events]}


def print_progress(event: EvalEvent) -> None:
    """Default progress reporter: one line per episode on stderr (two for a played LLM episode)."""
    score = "" if event.score is None else f" score={event.score:.3f}"
    detail = f" ({event.detail})" if event.detail else ""
    print(f"[{event.index}/{event.total}] {event.agent}/{event.model} {event.task_id} "
          f"seed={event.seed}: {event.status}{score} {event.wall_time_s:.1f}s{detail}",
          file=sys.stderr, flush=True)
    stats = stats_line(event)
    if stats:
        print(stats, file=sys.stderr, flush=True)


def stats_line(event: EvalEvent) -> str | None:
    """The ``llm-stats:`` line of ``inference.py`` (same formatter) for an LLM episode played in
    this run, prefixed with the episode; ``None`` for other agents and reused episodes."""
    if event.llm_stats is None or event.status not in ("done", "invalid"):
        return None
    from codered_env.runlog import format_stats

    return f"{event.task_id} seed={event.seed} {format_stats(event.llm_stats)}"


@dataclass(frozen=True)
class Execution:
    """How to run the episodes: ``workers`` processes for CPU-bound agents, ``concurrency``
    simultaneous LLM episodes under the rate limits, on the ``local`` machine or on ``ray``.
    Worker processes start only for more than ``min_parallel_s`` of estimated serial work."""

    workers: int = 1
    concurrency: int = 1
    backend: str = "local"
    address: str | None = None
    requests_per_min: float | None = None
    tokens_per_min: float | None = None
    min_parallel_s: float = MIN_PARALLEL_WORK_S

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown backend {self.backend!r}; valid: {', '.join(BACKENDS)}")
        if self.workers < 1 or self.concurrency < 1:
            raise ValueError("workers and concurrency must be at least 1")
        if self.address and self.backend != "ray":
            raise ValueError("--address is the Ray cluster to join: use it with --backend ray")
        RateLimiter(self.requests_per_min, self.tokens_per_min)  # validates the limits

    def results(self, jobs: Iterator[EpisodeJob]) -> Iterator[JobResult]:
        from codered_env.evaluation import backends

        if self.backend == "ray":
            return backends.ray_results(jobs, address=self.address, workers=self.workers,
                                        concurrency=self.concurrency)
        limiter = RateLimiter(self.requests_per_min, self.tokens_per_min)
        if self.workers == 1 and self.concurrency == 1:
            return backends.serial_results(jobs, limiter)
        return backends.local_results(jobs, workers=self.workers, concurrency=self.concurrency,
                                      limiter=limiter, min_parallel_s=self.min_parallel_s)


def run_evaluation(
    agents: Sequence[str],
    tasks: Sequence[str],
    seeds: Sequence[int],
    *,
    db_path: str | Path = DEFAULT_DB,
    llm_config: Any = None,
    progress: Callable[[EvalEvent], None] | None = print_progress,
    max_steps: int | None = None,
    execution: Execution | None = None,
    reuse: str = "match",
    repeats: int = 1,
    env_url: str | None = None,
    cities: Sequence[str] = ("prakashnagar",),
) -> EvalSummary:
    """Evaluate every (agent, task, city, seed) not stored by the same agent and simulation; store each
    episode as it finishes (see the module docstring for ``reuse``).

    ``cities`` are canonical city names (``codered_env.city_choice.city_key``).
    ``summary.events`` ends up in plan order (agent, task, city, seed) whatever order episodes
    finished in; ``progress`` sees them as they happen.  ``env_url`` plays every episode on that
    server (:func:`codered_env.evaluation.episode.job_env`); the rows are the same as local ones
    (same store, same provenance), so local and remote runs resume each other."""
    if reuse not in REUSE_POLICIES:
        raise ValueError(f"unknown reuse policy {reuse!r}; valid: {', '.join(REUSE_POLICIES)}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    execution = execution or Execution()
    summary = EvalSummary(db_path=str(db_path))
    plan = [(a, t, c, s, r) for a in agents for t in tasks for c in cities for s in seeds
            for r in range(repeats if a == LLM_AGENT else 1)]
    index_of = {key: i for i, key in enumerate(plan, start=1)}
    version = package_version()
    limits = (execution.requests_per_min, execution.tokens_per_min)

    def emit(event: EvalEvent) -> None:
        summary.events.append(event)
        counter = _COUNTER[event.status]
        setattr(summary, counter, getattr(summary, counter) + 1)
        if progress is not None:
            progress(event)

    expected = {name: expected_fingerprint(name, llm_config) for name in agents}
    simulation = sim_fingerprint()

    with EpisodeStore(db_path) as store:

        def pending() -> Iterator[EpisodeJob]:
            for agent_name, task_id, city, seed, repeat in plan:
                job = EpisodeJob(agent_name, task_id, seed, max_steps,
                                 llm_config if agent_name == "llm" else None, *limits, repeat=repeat,
                                 env_url=env_url, city=city)
                stored = None if reuse == "never" else store.get(
                    agent_name, job.model, task_id, seed, version, repeat, city)
                fresh = stored is not None and expected[agent_name] is not None and \
                    stored.matches(expected[agent_name], simulation)
                if stored is None or (not fresh and reuse == "match"):
                    summary.stale_rerun += stored is not None
                    yield job
                elif fresh:
                    emit(_event(job, index_of, len(plan), "skipped", stored))
                else:
                    summary.stale_reused += 1
                    emit(_event(job, index_of, len(plan), "skipped", stored,
                                detail=f"stale: {stale_reason(stored, expected[agent_name], simulation)}"))

        results = execution.results(pending())
        try:
            for result in results:
                emit(_store_result(store, result, index_of, len(plan)))
        finally:
            close = getattr(results, "close", None)
            if close is not None:
                close()
    summary.events.sort(key=lambda e: e.index)
    return summary


def expected_fingerprint(agent_spec: str, llm_config: Any = None) -> str | None:
    """The fingerprint an episode of this agent would be stored with now (``None`` when the agent
    cannot be built here; its episodes then run and fail or store as they will)."""
    from codered_env.evaluation.episode import build_agent

    job = EpisodeJob(agent_spec, "task1", 0, llm_config=llm_config if agent_spec == "llm" else None)
    try:
        agent, _ = build_agent(job)
    except (ValueError, RuntimeError, KeyError, TypeError, ImportError, OSError):
        return None
    return fingerprint_text(agent_fingerprint(agent))


def stale_reason(record: EpisodeRecord, agent: str | None, simulation: str) -> str:
    """Which part of a stored row's provenance differs from now."""
    if record.agent_fingerprint is None and record.sim_fingerprint is None:
        return "stored before fingerprints"
    parts = []
    if record.agent_fingerprint != agent:
        parts.append("agent changed")
    if record.sim_fingerprint != simulation:
        parts.append("simulation changed")
    return ", ".join(parts) or "fingerprints differ"


_COUNTER = {"done": "ran", "skipped": "skipped", "invalid": "invalid", "failed": "failed"}


_PlanKey = tuple[str, str, str, int, int]  # agent, task, city, seed, repeat


def _event(job: EpisodeJob, index_of: dict[_PlanKey, int], total: int, status: str,
           record: EpisodeRecord | None = None, **extra: Any) -> EvalEvent:
    key = (job.agent, job.task_id, job.city, job.seed, job.repeat)
    base: dict[str, Any] = {"index": index_of[key],
                            "total": total, "agent": job.agent, "model": job.model,
                            "task_id": job.task_id, "seed": job.seed, "status": status,
                            "repeat": job.repeat, "city": job.city}
    if record is not None:
        base.update(score=record.score, wall_time_s=record.wall_time_s,
                    components=record.components, steps=record.steps,
                    prompt_tokens=record.prompt_tokens, completion_tokens=record.completion_tokens,
                    llm_stats=record.llm_stats, outcome=record.outcome)
    base.update(extra)
    return EvalEvent(**base)


def _store_result(store: EpisodeStore, result: JobResult,
                  index_of: dict[_PlanKey, int], total: int) -> EvalEvent:
    job = result.job
    if result.record is None:
        return _event(job, index_of, total, "failed", wall_time_s=result.wall_time_s,
                      detail=result.error)
    if result.unanswered > MAX_UNANSWERED_FRACTION:
        whole = result.unanswered >= 1.0
        reason = ("model endpoint failed on every step" if whole
                  else f"model unreachable on {result.unanswered:.0%} of steps")
        return _event(job, index_of, total, "invalid", result.record, detail=f"{reason}; not stored")
    if result.crashed > MAX_UNANSWERED_FRACTION:
        detail = f"the agent crashed on {result.crashed:.0%} of steps ({result.agent_crash}); not stored"
        return _event(job, index_of, total, "invalid", result.record, detail=detail)
    store.add(result.record, replace=True)  # only missing or stale rows are ever run
    return _event(job, index_of, total, "done", result.record)
