"""The client-side rate limiter: requests/min and tokens/min buckets, thread-safe, no busy wait."""

from __future__ import annotations

import threading
import time

import pytest

from codered_env.evaluation.ratelimit import RateLimiter


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def limiter(t: FakeTime, rpm: float | None = None, tpm: float | None = None,
            burst_s: float = 1.0) -> RateLimiter:
    return RateLimiter(rpm, tpm, burst_s=burst_s, clock=t.clock, sleep=t.sleep)


def test_requests_per_minute_allow_a_burst_then_pace() -> None:
    t = FakeTime()
    rl = limiter(t, rpm=120, burst_s=1.0)  # 2/s, burst of 2
    for _ in range(2):
        rl.acquire()
    assert t.sleeps == []
    rl.acquire()
    assert t.sleeps == [pytest.approx(0.5)]
    for _ in range(4):
        rl.acquire()
    assert t.now == pytest.approx(2.5)  # 7 requests: 2 free, then one every 0.5 s
    t.now += 10  # idle: the bucket refills only up to its burst
    start = t.now
    for _ in range(3):
        rl.acquire()
    assert t.now - start == pytest.approx(0.5)


def test_tokens_per_minute_pace_by_size_and_a_huge_request_still_passes() -> None:
    t = FakeTime()
    rl = limiter(t, tpm=6000, burst_s=1.0)  # 100 tokens/s, bucket of 100
    rl.acquire(100)
    rl.acquire(50)
    assert t.now == pytest.approx(0.5)
    rl.acquire(10_000)  # larger than the bucket: waits for a full bucket, not forever
    assert t.now == pytest.approx(1.5)


def test_both_limits_the_stricter_one_wins() -> None:
    t = FakeTime()
    rl = limiter(t, rpm=600, tpm=600, burst_s=1.0)  # 10 req/s but only 10 tokens/s
    for _ in range(5):
        rl.acquire(10)
    assert t.now == pytest.approx(4.0)


def test_no_limit_never_waits_and_bad_limits_are_refused() -> None:
    t = FakeTime()
    rl = limiter(t)
    assert not rl.limited
    for _ in range(1000):
        rl.acquire(10**6)
    assert t.sleeps == []
    for bad in (-1, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            RateLimiter(requests_per_min=bad)
    with pytest.raises(ValueError):
        RateLimiter(tokens_per_min=10, burst_s=0)


def test_threads_share_one_budget() -> None:
    rl = RateLimiter(requests_per_min=1200, burst_s=0.05)  # 20/s, burst of 1
    stamps: list[float] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(3):
            rl.acquire()
            with lock:
                stamps.append(time.monotonic())

    threads = [threading.Thread(target=worker) for _ in range(4)]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(stamps) == 12 and rl.acquired == 12
    assert max(stamps) - start >= 11 / 20 - 0.02  # 1 free, then 11 paced at 20/s


def test_share_splits_each_budget() -> None:
    part = RateLimiter(requests_per_min=600, tokens_per_min=90_000).share(8)
    assert (part.requests_per_min, part.tokens_per_min) == (75, 11_250)
