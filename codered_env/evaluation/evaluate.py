"""Run agents x tasks x seeds and store every episode in SQLite (used by ``codered eval``).

Episodes already stored for this package version are skipped, so an interrupted evaluation
resumes where it stopped.  LLM episodes in which the model could not be reached for more than
``MAX_UNANSWERED_FRACTION`` of the steps (network, rate limits, budget, auth) are *not* stored:
they would measure the network rather than the model.  They are reported as ``invalid`` and will
be retried by the next run.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from codered_env.agents.llm import LLMAgent, LLMConfig
from codered_env.evaluation.episode import EpisodeOutcome, LocalEnv, finish, play_episode
from codered_env.evaluation.store import DEFAULT_DB, EpisodeRecord, EpisodeStore
from codered_env.evaluation.trajectory import Trajectory, package_version

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

    def summary(self) -> dict[str, Any] | None:
        """The episode in the shape of ``runner.EpisodeResult.summary()`` (``None`` when it
        was not stored: invalid or failed)."""
        if self.status not in ("done", "skipped"):
            return None
        return {"agent": self.agent, "model": self.model, "task": self.task_id,
                "seed": self.seed, "score": self.score, "components": self.components,
                "steps": self.steps}


@dataclass
class EvalSummary:
    """Counts and events of one :func:`run_evaluation` call."""

    db_path: str
    ran: int = 0
    skipped: int = 0
    invalid: int = 0
    failed: int = 0
    events: list[EvalEvent] = field(default_factory=list)

    def episodes(self) -> list[dict[str, Any]]:
        """Every stored episode of this run (new and skipped), as summary dicts."""
        return [e for e in (event.summary() for event in self.events) if e is not None]

    def as_dict(self) -> dict[str, Any]:
        return {"db_path": self.db_path, "ran": self.ran, "skipped": self.skipped,
                "invalid": self.invalid, "failed": self.failed,
                "events": [asdict(e) for e in self.events]}


def print_progress(event: EvalEvent) -> None:
    """Default progress reporter: one line per episode on stderr."""
    score = "" if event.score is None else f" score={event.score:.3f}"
    detail = f" ({event.detail})" if event.detail else ""
    print(f"[{event.index}/{event.total}] {event.agent}/{event.model} {event.task_id} "
          f"seed={event.seed}: {event.status}{score} {event.wall_time_s:.1f}s{detail}",
          file=sys.stderr, flush=True)


def make_eval_agent(name: str, seed: int, llm_config: LLMConfig | None) -> tuple[Any, str]:
    """The agent and its model label (the model name for ``llm``, else the agent name)."""
    if name == "llm":
        if llm_config is None:
            raise ValueError("agent 'llm' needs an API key (HF_TOKEN, API_KEY or OPENAI_API_KEY)")
        return LLMAgent(llm_config), llm_config.model
    from codered_env.agents import make_agent

    return make_agent(name, seed=seed), name


def _unanswered_fraction(agent: Any, outcome: EpisodeOutcome) -> float:
    if not isinstance(agent, LLMAgent) or not outcome.steps:
        return 0.0
    return agent.stats.unanswered / len(outcome.steps)


def to_record(agent_name: str, model: str, outcome: EpisodeOutcome, wall: float,
              llm_stats: dict[str, Any] | None) -> EpisodeRecord:
    """An :class:`EpisodeRecord` (with its trajectory) from a finished episode."""
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
        llm_stats=llm_stats)


def run_one(agent_name: str, task_id: str, seed: int, llm_config: LLMConfig | None,
            max_steps: int | None = None) -> tuple[EpisodeRecord, float]:
    """Play one in-process episode; returns the record and the unanswered-call fraction."""
    agent, model = make_eval_agent(agent_name, seed, llm_config)
    env = LocalEnv()
    started = time.monotonic()
    outcome = EpisodeOutcome(task_id=task_id, seed=seed)
    play_episode(env, agent, task_id, seed, max_steps or 10**6, outcome=outcome)
    finish(env, outcome)
    wall = time.monotonic() - started
    stats = agent.stats.as_dict() if isinstance(agent, LLMAgent) else None
    return to_record(agent_name, model, outcome, wall, stats), _unanswered_fraction(agent, outcome)


def run_evaluation(
    agents: Sequence[str],
    tasks: Sequence[str],
    seeds: Sequence[int],
    *,
    db_path: str | Path = DEFAULT_DB,
    llm_config: LLMConfig | None = None,
    progress: Callable[[EvalEvent], None] | None = print_progress,
    max_steps: int | None = None,
) -> EvalSummary:
    """Evaluate every (agent, task, seed) not yet stored; store each finished episode."""
    summary = EvalSummary(db_path=str(db_path))
    plan = [(a, t, s) for a in agents for t in tasks for s in seeds]
    version = package_version()
    with EpisodeStore(db_path) as store:
        for index, (agent_name, task_id, seed) in enumerate(plan, start=1):
            event = _evaluate_one(store, version, agent_name, task_id, seed, llm_config,
                                  max_steps, index, len(plan))
            summary.events.append(event)
            setattr(summary, _COUNTER[event.status], getattr(summary, _COUNTER[event.status]) + 1)
            if progress is not None:
                progress(event)
    return summary


_COUNTER = {"done": "ran", "skipped": "skipped", "invalid": "invalid", "failed": "failed"}


def _evaluate_one(store: EpisodeStore, version: str, agent_name: str, task_id: str, seed: int,
                  llm_config: LLMConfig | None, max_steps: int | None, index: int,
                  total: int) -> EvalEvent:
    model = llm_config.model if agent_name == "llm" and llm_config else agent_name
    base = {"index": index, "total": total, "agent": agent_name, "model": model,
            "task_id": task_id, "seed": seed}
    stored = store.get(agent_name, model, task_id, seed, version)
    if stored is not None:
        return EvalEvent(**base, status="skipped", score=stored.score,
                         wall_time_s=stored.wall_time_s, components=stored.components,
                         steps=stored.steps)
    started = time.monotonic()
    try:
        record, unanswered = run_one(agent_name, task_id, seed, llm_config, max_steps)
    except (ValueError, RuntimeError, KeyError, TypeError) as exc:
        return EvalEvent(**base, status="failed", wall_time_s=time.monotonic() - started,
                         detail=" ".join(str(exc).split())[:200])
    if unanswered > MAX_UNANSWERED_FRACTION:
        return EvalEvent(**base, status="invalid", score=record.score,
                         wall_time_s=record.wall_time_s,
                         detail=f"model unreachable on {unanswered:.0%} of steps; not stored")
    store.add(record)
    return EvalEvent(**base, status="done", score=record.score, wall_time_s=record.wall_time_s,
                     components=record.components, steps=record.steps)
