"""The stateful HTTP session store: server-issued ids, leases renewed only by steps, LRU
eviction at the cap (never-stepped episodes first), and 404 vs 410 answers."""

from __future__ import annotations

import pytest

from codered_env.server.http_sessions import HttpSessionStore, SessionGone, SessionNotFound


class FakeEnv:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _store(clock: Clock, cap: int = 3) -> HttpSessionStore[FakeEnv]:
    return HttpSessionStore(FakeEnv, max_sessions=cap, ttl_s=10.0, unstepped_ttl_s=2.0, clock=clock)


def test_ids_are_issued_by_the_store_and_unguessable() -> None:
    store = _store(Clock(), cap=100)
    ids = [store.create().episode_id for _ in range(50)]
    assert len(set(ids)) == 50 and all(len(i) == 24 for i in ids)
    with pytest.raises(SessionNotFound, match="never issued") as missing:
        store.get("chosen-by-client")
    assert not isinstance(missing.value, SessionGone)


def test_unstepped_episodes_expire_fast_and_reads_never_renew() -> None:
    clock = Clock()
    store = _store(clock)
    idle, played = store.create(), store.create()
    store.get(played.episode_id, renew=True)
    clock.now = 2.5
    with pytest.raises(SessionGone, match="never stepped"):
        store.get(idle.episode_id)
    assert idle.env.closed
    for _ in range(14):  # reads (up to t = 9.5 s) do not extend the 10 s lease
        clock.now += 0.5
        store.get(played.episode_id)
    clock.now = 10.0
    with pytest.raises(SessionGone, match="without a step"):
        store.get(played.episode_id)


def test_a_step_renews_the_lease() -> None:
    clock = Clock()
    store = _store(clock)
    session = store.create()
    for _ in range(10):
        clock.now += 1.5
        store.get(session.episode_id, renew=True)
    assert store.get(session.episode_id) is session


def test_at_the_cap_new_episodes_evict_never_stepped_ones_first_then_lru() -> None:
    clock = Clock()
    store = _store(clock)
    a, b = store.create(), store.create()
    store.get(a.episode_id, renew=True)
    store.get(b.episode_id, renew=True)
    flood = [store.create() for _ in range(5)]  # only the unstepped flood evicts itself
    assert store.get(a.episode_id) is a and store.get(b.episode_id) is b
    with pytest.raises(SessionGone, match="evicted"):
        store.get(flood[0].episode_id)
    assert len(store) == 3
    store.get(flood[-1].episode_id, renew=True)  # now all three are stepped: LRU goes
    store.create()
    with pytest.raises(SessionGone, match="evicted"):
        store.get(a.episode_id)


def test_restart_resets_the_lease_and_close_all_closes() -> None:
    clock = Clock()
    store = _store(clock)
    session = store.create()
    store.get(session.episode_id, renew=True)
    clock.now = 5.0
    assert store.restarted(session.episode_id) is session
    clock.now = 7.5  # a restarted, unstepped episode has the short lease again
    assert store.purge_expired() == 1
    other = store.create()
    store.close_all()
    assert other.env.closed and len(store) == 0
