"""Where ``codered eval`` plays its episodes: this process, local workers, or a Ray cluster.

Every backend takes :class:`~codered_env.evaluation.episode.EpisodeJob` s and yields
:class:`~codered_env.evaluation.episode.JobResult` s as episodes finish; each episode is played by
:func:`~codered_env.evaluation.episode.run_job`.  The caller stores the results, so the SQLite
database keeps a single writer whatever runs the episodes.  No scheduling of our own: the standard
library's executors on one machine, Ray beyond it.

* :func:`serial_results` - one episode after another in this process (takes jobs lazily).
* :func:`local_results` - CPU-bound episodes in ``workers`` processes
  (:class:`~concurrent.futures.ProcessPoolExecutor`), LLM episodes in ``concurrency`` threads of
  this process sharing one :class:`~codered_env.evaluation.ratelimit.RateLimiter`.
* :func:`ray_results` - one Ray task per episode with declared resources, retried when its worker
  dies; at most ``concurrency`` LLM episodes in flight, each with ``1/concurrency`` of the rate
  limits, so the limits hold across the cluster without a shared limiter.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import (
    FIRST_COMPLETED,
    Executor,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    wait,
)
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from codered_env.evaluation.episode import EpisodeJob, JobResult, run_job
from codered_env.evaluation.ratelimit import RateLimiter

MAX_POOL_RESTARTS = 2  # a local pool whose worker process died is rebuilt at most this often
MIN_PARALLEL_WORK_S = 5.0  # below this much serial work, worker start-up costs more than it saves
PARENT_POLL_S = 1.0  # how often a worker checks that the evaluation process is alive
RAY_CPU_TASK = {"num_cpus": 1.0}
RAY_LLM_TASK = {"num_cpus": 0.25}  # an LLM episode mostly waits on the endpoint
# A task is re-run when its worker process or node dies.  Exceptions raised *inside* an episode
# are not retried: the episode is deterministic, so it would fail the same way again (and
# run_job already returns agent/config errors as results).
RAY_MAX_RETRIES = 3
RAY_UV_HOOK_VAR = "RAY_ENABLE_UV_RUN_RUNTIME_ENV"  # read once, when ray is first imported
RAY_KEY_VAR = "HF_TOKEN"  # checked first by the LLM agent, so it wins over a node's own setting


def _failure(job: EpisodeJob, exc: BaseException) -> JobResult:
    if isinstance(exc, BrokenProcessPool):
        return JobResult(job, error="a worker process died; re-run the same command to resume")
    return JobResult(job, error=f"{type(exc).__name__}: {' '.join(str(exc).split())[:180]}")


def serial_results(jobs: Iterable[EpisodeJob],
                   limiter: RateLimiter | None = None) -> Iterator[JobResult]:
    """Play each job in this process, in order."""
    for job in jobs:
        yield run_job(job, limiter if job.is_llm else None)


def _process_context() -> Any:
    """``forkserver`` where available: forking a parent that runs threads (the progress bar,
    LLM threads) is unsafe, and a fork server pays the package import once, not per worker."""
    if sys.platform.startswith("linux") and "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(
            ["codered_env.evaluation.episode", "codered_env.sim", "codered_env.agents"])
        return context
    return multiprocessing.get_context("spawn")


def local_results(jobs: Iterable[EpisodeJob], *, workers: int, concurrency: int = 1,
                  limiter: RateLimiter | None = None,
                  min_parallel_s: float = MIN_PARALLEL_WORK_S,
                  max_restarts: int = MAX_POOL_RESTARTS,
                  job_fn: Callable[[EpisodeJob], JobResult] = run_job) -> Iterator[JobResult]:
    """CPU-bound jobs in worker processes and LLM jobs in threads, yielded as they finish.

    The first CPU-bound episode is played here and timed: when the rest would take less than
    ``min_parallel_s`` one after another, starting worker processes (a fresh interpreter that
    imports the package) would cost more than it saves, so they run in one thread instead.

    A worker process that dies breaks the whole pool: the episodes it had not finished are played
    again in a new pool, at most ``max_restarts`` times per run, then reported as failed.
    ``job_fn`` (picklable) plays one job; tests pass one that kills its worker."""
    jobs = list(jobs)
    cpu = [j for j in jobs if not j.is_llm]
    llm = [j for j in jobs if j.is_llm]
    executors: list[Executor] = []
    pending: dict[Future[JobResult], EpisodeJob] = {}
    finished = False
    try:
        if llm:
            threads = ThreadPoolExecutor(max(1, concurrency), thread_name_prefix="codered-llm")
            executors.append(threads)
            pending.update({threads.submit(run_job, job, limiter): job for job in llm})
        if cpu and workers > 1 and len(cpu) > 1 and min_parallel_s > 0:
            started = time.monotonic()
            try:
                first = job_fn(cpu[0])
            except Exception as exc:
                first = _failure(cpu[0], exc)
            yield first
            if (time.monotonic() - started) * (len(cpu) - 1) < min_parallel_s:
                workers = 1
            cpu = cpu[1:]
        n = max(1, min(workers, len(cpu)))
        pool = _CpuPool(n, job_fn, executors, pending)
        pool.submit(cpu)
        restarts = 0
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            if any(_broke(f) for f in done):
                results, lost = pool.collect_broken()
                yield from results
                if restarts < max_restarts:
                    restarts += 1
                    pool = _CpuPool(n, job_fn, executors, pending)
                    pool.submit(lost)
                else:
                    yield from (_died(job, restarts) for job in lost)
                continue
            for future in done:
                yield _result(future, pending.pop(future))
        finished = True
    finally:
        for executor in executors:
            executor.shutdown(wait=finished, cancel_futures=True)


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(PARENT_POLL_S)
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            os._exit(1)
        except PermissionError:  # the pid was reused by another user's process: parent is gone
            os._exit(1)


def exit_with_parent(parent: int) -> None:
    """Worker initializer: exit as soon as the evaluation process ``parent`` is gone.  Workers
    are children of the fork server, not of the evaluation, so a SIGKILLed ``codered eval``
    would otherwise leave them running; once they exit, the fork server and the resource
    tracker see their pipes close and exit too."""
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True,
                     name="codered-exit-with-parent").start()


def _broke(future: Future[JobResult]) -> bool:
    return isinstance(future.exception(), BrokenProcessPool)


def _result(future: Future[JobResult], job: EpisodeJob) -> JobResult:
    try:
        return future.result()
    except Exception as exc:
        return _failure(job, exc)


def _died(job: EpisodeJob, restarts: int) -> JobResult:
    return JobResult(job, error=f"a worker process died {restarts + 1} times in this run (out of "
                                f"memory, or a crash in native code); re-run the same command to "
                                f"resume")


class _CpuPool:
    """One pool of CPU-bound episodes: processes (``workers`` > 1) or one thread."""

    def __init__(self, workers: int, job_fn: Callable[[EpisodeJob], JobResult],
                 executors: list[Executor], pending: dict[Future[JobResult], EpisodeJob]) -> None:
        self._workers, self._job_fn, self._executors = workers, job_fn, executors
        self._pending = pending
        self._executor: Executor | None = None
        self._futures: set[Future[JobResult]] = set()

    def submit(self, jobs: list[EpisodeJob]) -> None:
        if not jobs:
            return
        if self._executor is None:
            self._executor = (
                ProcessPoolExecutor(self._workers, mp_context=_process_context(),
                                    initializer=exit_with_parent, initargs=(os.getpid(),))
                if self._workers > 1 else
                ThreadPoolExecutor(1, thread_name_prefix="codered-episode"))
            self._executors.append(self._executor)
        for job in jobs:
            future = self._executor.submit(self._job_fn, job)
            self._futures.add(future)
            self._pending[future] = job

    def collect_broken(self) -> tuple[list[JobResult], list[EpisodeJob]]:
        """After the pool broke: the results it finished and the jobs it lost.  Every future of
        a broken pool completes at once (with ``BrokenProcessPool`` if it was not finished)."""
        mine = [f for f in self._futures if f in self._pending]
        wait(mine)
        results, lost = [], []
        for future in mine:
            job = self._pending.pop(future)
            if _broke(future):
                lost.append(job)
            else:
                results.append(_result(future, job))
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
        return results, lost


# --------------------------------------------------------------------------- Ray


def _import_ray() -> Any:
    # Under `uv run`, Ray's uv hook makes every worker re-run `uv run` in a copy of the current
    # directory, which builds a fresh project environment there (without the driver's extras, so
    # without Ray itself): workers then never start.  Workers must run the installed package,
    # like the driver.  Set RAY_ENABLE_UV_RUN_RUNTIME_ENV=1 to opt back in.
    os.environ.setdefault(RAY_UV_HOOK_VAR, "0")
    try:
        import ray
    except ImportError:
        from .._optional import install_hint

        raise RuntimeError(f"the ray backend needs Ray: {install_hint('ray')}") from None
    return ray


def _keyless(job: EpisodeJob, concurrency: int) -> tuple[EpisodeJob, str | None]:
    """The job as sent to Ray (no API key in task arguments; rate limits shared out) and the key."""
    if not job.is_llm or job.llm_config is None:
        return job, None
    key = job.llm_config.api_key or None
    share = max(1, concurrency)
    return dataclasses.replace(
        job, llm_config=dataclasses.replace(job.llm_config, api_key=""),
        requests_per_min=job.requests_per_min / share if job.requests_per_min else None,
        tokens_per_min=job.tokens_per_min / share if job.tokens_per_min else None), key


def ray_results(jobs: Iterable[EpisodeJob], *, address: str | None = None, workers: int = 1,
                concurrency: int = 1, max_retries: int = RAY_MAX_RETRIES,
                job_fn: Callable[[EpisodeJob], JobResult] = run_job) -> Iterator[JobResult]:
    """One Ray task per job, results streamed back as tasks finish.

    Connects to ``address`` (``auto``, ``ray://host:10001``) or, without one, starts a local Ray
    with ``workers`` CPUs; a Ray already initialised by the caller is used as it is.  The LLM key
    reaches the workers in the task's ``runtime_env`` environment variables, never in arguments.
    """
    ray = _import_ray()
    prepared = [_keyless(job, concurrency) for job in jobs]
    llm_queue = deque(item for item in prepared if item[0].is_llm)
    started = False
    if not ray.is_initialized():
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address:
            options["address"] = address
        else:
            options["num_cpus"] = max(1, workers)
        try:
            ray.init(**options)
        except Exception as exc:  # Ray raises bare Exception / ConnectionError on start-up failures
            where = f"the Ray cluster at {address}" if address else "a local Ray"
            reason = " ".join(str(exc).split())[:300]
            raise RuntimeError(f"could not start or join {where}: {reason}") from exc
        started = True
    remote = ray.remote(job_fn)
    pending: dict[Any, EpisodeJob] = {}

    def submit(job: EpisodeJob, key: str | None) -> None:
        options = {**(RAY_LLM_TASK if job.is_llm else RAY_CPU_TASK),
                   "max_retries": max_retries, "retry_exceptions": False}
        if key:
            options["runtime_env"] = {"env_vars": {RAY_KEY_VAR: key}}
        pending[remote.options(**options).remote(job)] = job

    try:
        for job, key in prepared:
            if not job.is_llm:
                submit(job, key)
        while llm_queue or pending:
            while llm_queue and sum(j.is_llm for j in pending.values()) < max(1, concurrency):
                submit(*llm_queue.popleft())
            (ref,), _ = ray.wait(list(pending), num_returns=1)
            job = pending.pop(ref)
            try:
                yield ray.get(ref)
            except Exception as exc:
                yield _failure(job, exc)
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
        if started:
            ray.shutdown()
