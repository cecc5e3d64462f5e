"""The stateful HTTP session store (cap, idle expiry, latest-episode default)."""

from __future__ import annotations

import pytest

from codered_env.server.http_sessions import (
    HttpSessionStore,
    SessionCapacityError,
    SessionNotFound,
)


class FakeEnv:
    def __init__(self) -> None:
        self.finished = False
        self.closed = False

    def close(self) -> None:
        self.closed = True


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make_store(max_sessions: int = 2, ttl: float = 10.0) -> tuple[HttpSessionStore, Clock]:
    clock = Clock()
    return HttpSessionStore(FakeEnv, max_sessions, ttl, clock=clock), clock


def test_acquire_then_get_by_id_and_by_latest() -> None:
    store, _ = make_store()
    a = store.acquire("a")
    b = store.acquire("b")
    assert store.get("a") is a
    assert store.get(None) is b
    assert store.acquire("a") is a  # re-acquiring an id re-uses its environment
    assert store.get(None) is a


def test_nothing_reset_yet_and_unknown_ids_are_not_found() -> None:
    store, _ = make_store()
    with pytest.raises(SessionNotFound, match="POST /reset first"):
        store.get(None)
    store.acquire("a")
    with pytest.raises(SessionNotFound, match="unknown episode_id 'zzz'"):
        store.get("zzz")


def test_idle_sessions_expire_and_say_so() -> None:
    store, clock = make_store(ttl=10.0)
    env = store.acquire("a").env
    clock.now = 9.0
    store.get("a")  # activity refreshes the idle timer
    clock.now = 18.0
    assert store.get("a").env is env
    clock.now = 28.5
    with pytest.raises(SessionNotFound, match="expired after 10 s"):
        store.get("a")
    with pytest.raises(SessionNotFound, match="expired"):
        store.get(None)  # the latest episode expired too
    assert env.closed and len(store) == 0


def test_capacity_drops_finished_episodes_first_and_refuses_when_all_are_live() -> None:
    store, _ = make_store(max_sessions=2)
    first = store.acquire("a").env
    store.acquire("b")
    with pytest.raises(SessionCapacityError, match="capacity reached"):
        store.acquire("c")
    first.finished = True
    store.acquire("c")
    assert first.closed
    with pytest.raises(SessionNotFound, match="dropped to make room"):
        store.get("a")
    assert len(store) == 2


def test_capacity_reuses_slots_of_expired_sessions() -> None:
    store, clock = make_store(max_sessions=1, ttl=5.0)
    store.acquire("a")
    clock.now = 6.0
    store.acquire("b")
    assert store.purge_expired() == 0 and len(store) == 1


def test_bad_configuration_is_refused() -> None:
    with pytest.raises(ValueError):
        HttpSessionStore(FakeEnv, 0, 1.0)
    with pytest.raises(ValueError):
        HttpSessionStore(FakeEnv, 1, 0.0)
