"""Client-side rate limiting for LLM episodes: requests per minute and tokens per minute.

One :class:`RateLimiter` is shared by every episode that runs in the same process (the threads of
``codered eval --concurrency K``).  The LLM agent calls :meth:`RateLimiter.acquire` before each
request with an estimate of that request's tokens; the call blocks until both budgets allow it.

Each budget is a token bucket refilled continuously at ``per_minute / 60`` per second.  A caller
*reserves* its share at once (the level may go below zero) and then sleeps outside the lock until
the debt is repaid, so concurrent callers are served in arrival order and nobody spins.  The bucket
holds at most ``burst_s`` seconds of budget, so an idle limiter does not release a whole minute's
worth of requests at the same instant (providers enforce their per-minute limits over shorter
windows too).  A single request larger than the bucket is allowed once the bucket is full; it
cannot wait forever.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

DEFAULT_BURST_S = 10.0


def _rate(value: float | None, name: str) -> float | None:
    if value is None or value == 0:
        return None
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a positive number or 0 for no limit, got {value!r}")
    return float(value)


class _Bucket:
    def __init__(self, per_minute: float, burst_s: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * burst_s)
        self.level = self.capacity

    def refill(self, elapsed: float) -> None:
        self.level = min(self.capacity, self.level + elapsed * self.rate)

    def take(self, amount: float) -> float:
        """Reserve ``amount`` (capped at the capacity); seconds until the reservation is covered."""
        self.level -= min(amount, self.capacity)
        return max(0.0, -self.level / self.rate)


class RateLimiter:
    """Thread-safe requests/min and tokens/min limits (``None`` or 0 means no limit)."""

    def __init__(
        self,
        requests_per_min: float | None = None,
        tokens_per_min: float | None = None,
        *,
        burst_s: float = DEFAULT_BURST_S,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        rpm = _rate(requests_per_min, "requests_per_min")
        tpm = _rate(tokens_per_min, "tokens_per_min")
        if not math.isfinite(burst_s) or burst_s <= 0:
            raise ValueError(f"burst_s must be positive, got {burst_s!r}")
        self.requests_per_min, self.tokens_per_min = rpm, tpm
        self._requests = None if rpm is None else _Bucket(rpm, burst_s)
        self._tokens = None if tpm is None else _Bucket(tpm, burst_s)
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self._last = clock()
        self.acquired = 0
        self.waited_s = 0.0

    @property
    def limited(self) -> bool:
        return self._requests is not None or self._tokens is not None

    def acquire(self, tokens: int = 0) -> None:
        """Block until one request of about ``tokens`` tokens fits both budgets."""
        with self._lock:
            now = self._clock()
            wait = 0.0
            for bucket, amount in ((self._requests, 1.0), (self._tokens, float(max(0, tokens)))):
                if bucket is not None:
                    bucket.refill(now - self._last)
                    wait = max(wait, bucket.take(amount))
            self._last = now
            self.acquired += 1
            self.waited_s += wait
        if wait > 0:
            self._sleep(wait)

    def share(self, parts: int) -> RateLimiter:
        """A new limiter with ``1/parts`` of each budget (for ``parts`` separate processes)."""
        parts = max(1, int(parts))
        return RateLimiter(None if self.requests_per_min is None else self.requests_per_min / parts,
                           None if self.tokens_per_min is None else self.tokens_per_min / parts)
