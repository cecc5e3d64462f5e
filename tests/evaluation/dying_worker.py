"""Job functions that kill the worker process playing them, for the worker-death tests.

They live in an importable module (not in a test file) so a process pool can unpickle them."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from codered_env.evaluation.episode import EpisodeJob, JobResult, LocalEnv, run_job

DIE_AT_STEP = 3


def die_at_step(at_step: int, before_dying: Callable[[], None]) -> Callable[..., Any]:
    """A ``LocalEnv.step`` that kills the process at step ``at_step`` of the episode."""
    original = LocalEnv.step
    count = 0

    def step(self: LocalEnv, action: Mapping[str, Any]) -> Any:
        nonlocal count
        count += 1
        if count == at_step:
            before_dying()
            os._exit(1)
        return original(self, action)

    return step


def play_and_die(job: EpisodeJob, before_dying: Callable[[], None]) -> JobResult:
    """Play ``job`` through the one episode loop, but kill this process in the middle of it."""
    original = LocalEnv.step
    LocalEnv.step = die_at_step(DIE_AT_STEP, before_dying)  # type: ignore[method-assign]
    try:
        return run_job(job)
    finally:  # only reached when the episode ended before DIE_AT_STEP
        LocalEnv.step = original  # type: ignore[method-assign]


def dies_once(job: EpisodeJob, *, seed: int, marker: str) -> JobResult:
    """Kill this worker in the middle of the first episode of ``seed`` it plays (the marker file
    records the pid of the process that died)."""
    path = Path(marker)
    if job.seed == seed and not path.exists():
        return play_and_die(job, lambda: path.write_text(str(os.getpid())))
    return run_job(job)


def always_dies(job: EpisodeJob, *, seed: int) -> JobResult:
    """Kill this worker in the middle of every episode of ``seed`` (a poisoned episode)."""
    if job.seed == seed:
        return play_and_die(job, lambda: None)
    return run_job(job)
