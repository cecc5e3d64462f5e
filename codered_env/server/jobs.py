"""Bounded execution of agent runs (the CPU-heavy routes).

* Runs execute in ``slots`` worker processes, so they compete with the event loop only for a
  CPU core, never for its GIL. The workers are forked at application startup, before the
  server has any threads, and then inherit every imported module (a spawned worker would
  re-import the whole app: seconds of CPU on a busy machine).
* At most ``queue`` requests wait for a worker, each at most ``wait_s``; beyond that: 503 with
  ``Retry-After`` immediately.
* Results are cached by their arguments (all built-in agent runs are deterministic), so a
  repeated request costs nothing; a client address may start ``per_minute`` uncached runs a
  minute (429 after that). The console's replays (``/web/*``, one short call per step of play)
  count against their own, larger allowance, ``console_per_minute``.
* A refused run is answered after a one-second pause, so a client flooding a heavy route gets
  at most one answer a second per connection and costs the event loop next to nothing.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from fastapi import HTTPException
from starlette.concurrency import run_in_threadpool

from codered_env.server.heavy import warm_up, worker_init

T = TypeVar("T")
logger = logging.getLogger("codered_env.server")
_CACHE_ENTRIES = 256
_TRACKED_CLIENTS = 4096
REFUSAL_PAUSE_S = 1.0  # a refused heavy request waits this long for its 429 (design choice)


class RateLimiter:
    """Sliding one-minute window of uncached runs per client address."""

    def __init__(
        self, per_minute: int, clock: Callable[[], float] = time.monotonic, what: str = "agent runs"
    ) -> None:
        self.per_minute = per_minute
        self.what = what
        self._clock = clock
        self._starts: OrderedDict[str, deque[float]] = OrderedDict()

    def retry_after(self, client: str) -> int | None:
        """Seconds until ``client`` may start another run (None: it may now); uses nothing."""
        now = self._clock()
        starts = self._starts.get(client)
        if starts is None:
            return None
        while starts and now - starts[0] >= 60.0:
            starts.popleft()
        if len(starts) < self.per_minute:
            return None
        return max(1, int(60.0 - (now - starts[0])) + 1)

    def message(self) -> str:
        return (
            f"too many uncached {self.what} from this client ({self.per_minute} a minute); "
            "repeat requests are cached and free"
        )

    def check(self, client: str) -> None:
        retry = self.retry_after(client)
        if retry is not None:
            raise HTTPException(429, self.message(), {"Retry-After": str(retry)})
        starts = self._starts.pop(client, None) or deque()
        self._starts[client] = starts
        while len(self._starts) > _TRACKED_CLIENTS:
            self._starts.popitem(last=False)
        starts.append(self._clock())


class HeavyJobs:
    """Runs agent work in worker processes with a bounded queue, a cache and a rate limit."""

    def __init__(
        self, slots: int, queue: int, wait_s: float, per_minute: int, console_per_minute: int = 300
    ) -> None:
        self._slots = slots
        self._semaphore = asyncio.Semaphore(slots)
        self._max_waiting = queue
        self._waiting = 0
        self._wait_s = wait_s
        self.limiter = RateLimiter(per_minute)
        self.console_limiter = RateLimiter(console_per_minute, what="console replays")
        self._cache: OrderedDict[Hashable, Any] = OrderedDict()
        self._pool: ProcessPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def start(self) -> None:
        """Fork the workers now (call at startup, while the process has no other threads)."""
        pool = self._executor()
        for _ in range(self._slots):
            pool.submit(warm_up)

    def shutdown(self) -> None:
        with self._pool_lock:
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = None

    def cached(self, fn: Callable[..., Any], *args: Hashable) -> Any | None:
        key = (fn.__qualname__, args)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        return None

    async def run(self, client: str, fn: Callable[..., T], *args: Hashable) -> T:
        """``fn(*args)`` in a worker process (cached by arguments)."""
        return await self._run(self.limiter, client, fn, *args)

    async def run_free(self, fn: Callable[..., T], *args: Hashable) -> T:
        """Like :meth:`run`, not counted against any client: the reference outcomes that
        accompany every grade (one set per task and seed, cached)."""
        return await self._run(None, "", fn, *args)

    async def run_console(self, client: str, fn: Callable[..., T], *args: Hashable) -> T:
        """Like :meth:`run`, for the console's per-step replays (their own rate allowance)."""
        return await self._run(self.console_limiter, client, fn, *args)

    async def _run(
        self, limiter: RateLimiter | None, client: str, fn: Callable[..., T], *args: Hashable
    ) -> T:
        hit = self.cached(fn, *args)
        if hit is not None:
            return hit  # type: ignore[no-any-return]
        if limiter is not None:
            await _admit(limiter, client)
        async with self._slot():
            result = await self._in_worker(fn, *args)
        self._cache[(fn.__qualname__, args)] = result
        while len(self._cache) > _CACHE_ENTRIES:
            self._cache.popitem(last=False)
        return result

    async def run_in_thread(self, client: str, fn: Callable[..., T], *args: Any) -> T:
        """Network-bound work (the LLM agent): a slot, but a thread, and no cache."""
        await _admit(self.limiter, client)
        async with self._slot():
            return await run_in_threadpool(fn, *args)

    def _slot(self) -> _Slot:
        return _Slot(self)

    def _executor(self) -> ProcessPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                context = multiprocessing.get_context("fork")
                self._pool = ProcessPoolExecutor(
                    max_workers=self._slots, mp_context=context, initializer=worker_init
                )
            return self._pool

    async def _in_worker(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor(), fn, *args)
        except BrokenProcessPool as exc:
            logger.error("agent worker process died; starting a new one")
            self.shutdown()
            raise HTTPException(503, "agent worker restarted; retry shortly", {"Retry-After": "5"}) from exc


async def _admit(limiter: RateLimiter, client: str) -> None:
    """Count one run for ``client``, or refuse it (429) after :data:`REFUSAL_PAUSE_S`."""
    if limiter.retry_after(client) is not None:
        await asyncio.sleep(REFUSAL_PAUSE_S)
    limiter.check(client)


class _Slot:
    """``async with``: wait (bounded) for a free worker slot, or raise 503."""

    def __init__(self, jobs: HeavyJobs) -> None:
        self._jobs = jobs

    async def __aenter__(self) -> None:
        jobs = self._jobs
        if jobs._semaphore.locked() and jobs._waiting >= jobs._max_waiting:
            raise HTTPException(
                503, "server busy with other agent runs; retry shortly", {"Retry-After": "10"}
            )
        jobs._waiting += 1
        try:
            await asyncio.wait_for(jobs._semaphore.acquire(), jobs._wait_s)
        except asyncio.TimeoutError as exc:
            raise HTTPException(
                503, "server busy with other agent runs; retry shortly", {"Retry-After": "10"}
            ) from exc
        finally:
            jobs._waiting -= 1

    async def __aexit__(self, *exc: object) -> None:
        self._jobs._semaphore.release()

