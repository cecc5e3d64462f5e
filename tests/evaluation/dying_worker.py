"""Job functions that kill the worker process playing them, for the worker-death tests.

They live in an importable module (not in a test file) so a process pool can unpickle them."""

from __future__ import annotations

import os
from pathlib import Path

from codered_env.evaluation.episode import EpisodeJob, JobResult, run_job


def dies_once(job: EpisodeJob, *, seed: int, marker: str) -> JobResult:
    """Kill this worker the first time ``seed`` is played (the marker file records the pid)."""
    path = Path(marker)
    if job.seed == seed and not path.exists():
        path.write_text(str(os.getpid()))
        os._exit(1)
    return run_job(job)


def always_dies(job: EpisodeJob, *, seed: int) -> JobResult:
    """Kill this worker every time ``seed`` is played (a poisoned episode)."""
    if job.seed == seed:
        os._exit(1)
    return run_job(job)
