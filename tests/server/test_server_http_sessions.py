"""The stateful HTTP session store: server-issued ids, leases renewed only by steps, fair
eviction at the cap (the longest-idle stepped episode first, fresh ones protected for their
grace), per-client quotas, and 404 vs 410 answers."""

from __future__ import annotations

import pytest

from codered_env.server.http_sessions import (
    AdmissionRefused,
    HttpSessionStore,
    LeaseClock,
    Restored,
    SessionGone,
    SessionNotFound,
)


class FakeEnv:
    def __init__(self) -> None:
        self.closed = False
        self.reason: str | None = None

    def close(self, reason: str | None = None) -> None:
        self.closed, self.reason = True, reason


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _store(clock: Clock, cap: int = 3, per_client: int | None = None) -> HttpSessionStore[FakeEnv]:
    return HttpSessionStore(FakeEnv, max_sessions=cap, ttl_s=10.0, unstepped_ttl_s=2.0, clock=clock,
                            fresh_grace_s=1.0, per_client=per_client)


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
    with pytest.raises(SessionGone, match="without being stepped"):
        store.get(played.episode_id)


def test_a_step_renews_the_lease() -> None:
    clock = Clock()
    store = _store(clock)
    session = store.create()
    for _ in range(10):
        clock.now += 1.5
        store.get(session.episode_id, renew=True)
    assert store.get(session.episode_id) is session


def test_at_the_cap_the_longest_idle_stepped_episode_goes_first() -> None:
    clock = Clock()
    store = _store(clock)
    a, b = store.create(), store.create()
    store.get(a.episode_id, renew=True)
    clock.now = 0.5
    store.get(b.episode_id, renew=True)
    fresh = store.create()
    newer = store.create()  # a is the longest-idle stepped one
    with pytest.raises(SessionGone, match="evicted") as gone:
        store.get(a.episode_id)
    assert "had not been stepped" in str(gone.value) and a.env.reason and "evicted" in a.env.reason
    assert store.get(fresh.episode_id) is fresh and store.get(newer.episode_id) is newer
    assert store.get(b.episode_id) is b


def test_a_fresh_episode_is_never_evicted_within_its_grace() -> None:
    clock = Clock()
    store = _store(clock)
    first = [store.create() for _ in range(3)]
    with pytest.raises(AdmissionRefused) as refused:
        store.create()
    assert refused.value.status == 503 and refused.value.retry_after_s == 1
    assert "server full" in refused.value.message and "had a chance to act" in refused.value.message
    assert all(store.get(s.episode_id) is s for s in first)
    clock.now = 1.0  # the grace is over: the oldest fresh one makes room
    newcomer = store.create()
    with pytest.raises(SessionGone, match="never stepped in the 1 s since it started"):
        store.get(first[0].episode_id)
    assert store.get(newcomer.episode_id) is newcomer


def test_per_client_quota_recycles_the_clients_own_episodes_only() -> None:
    clock = Clock()
    store = _store(clock, cap=4, per_client=2)
    other = store.create(owner="10.0.0.2")
    mine = [store.create(owner="10.0.0.1") for _ in range(2)]
    with pytest.raises(AdmissionRefused) as refused:
        store.create(owner="10.0.0.1")
    assert refused.value.status == 429 and "already holds 2" in refused.value.message
    store.get(mine[0].episode_id, renew=True)
    third = store.create(owner="10.0.0.1")  # its own stepped episode makes room, not the other's
    with pytest.raises(SessionGone, match="its client reached the 2"):
        store.get(mine[0].episode_id)
    assert store.get(other.episode_id) is other and store.get(third.episode_id) is third


def test_honest_clients_at_the_cap_reach_their_first_step() -> None:
    """64 used, idle episodes fill the store; 8 clients loop reset -> think -> step."""
    clock = Clock()
    store: HttpSessionStore[FakeEnv] = HttpSessionStore(
        FakeEnv, max_sessions=64, ttl_s=600.0, unstepped_ttl_s=30.0, clock=clock, fresh_grace_s=10.0)
    for _ in range(64):
        store.get(store.create().episode_id, renew=True)
    stepped = started = 0
    for think in (0.0, 0.5, 2.0):
        for _ in range(50):
            batch = [store.create() for _ in range(8)]
            started += len(batch)
            clock.now += think
            for session in batch:
                store.get(session.episode_id, renew=True)
                stepped += 1
    assert stepped == started == 1200


class FakeJournal:
    def __init__(self) -> None:
        self.logs = {"kept": Restored(FakeEnv(), "10.0.0.9", stepped=True)}
        self.ended: dict[str, str] = {"old": "was evicted: before the restart"}

    def restore(self, key: str) -> Restored[FakeEnv] | None:
        return self.logs.pop(key, None)

    def forget(self, key: str, reason: str) -> None:
        self.ended[key] = reason

    def gone_reason(self, key: str) -> str | None:
        return self.ended.get(key)


def test_entries_come_back_from_the_journal_and_tombstones_survive() -> None:
    journal = FakeJournal()
    store: HttpSessionStore[FakeEnv] = HttpSessionStore(
        FakeEnv, max_sessions=2, ttl_s=10.0, clock=Clock(), journal=journal)
    restored = store.get("kept")
    assert restored.owner == "10.0.0.9" and restored.last_step is not None
    with pytest.raises(SessionGone, match="before the restart"):
        store.get("old")
    with pytest.raises(SessionNotFound, match="never issued"):
        store.get("unknown")
    store.close("kept")
    assert journal.ended["kept"] == "was closed by its owner"


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


def test_the_lease_clock_does_not_count_a_stall() -> None:
    source = Clock()
    clock = LeaseClock(tick_s=0.5, stall_s=2.0, source=source)
    source.now = 1.0
    clock.tick()
    assert clock() == 1.0
    source.now = 81.0  # the process was frozen for 80 s: only the first 2 s count
    assert clock() == 3.0
    clock.tick()
    assert clock() == 3.0
    source.now = 81.4
    assert clock() == pytest.approx(3.4)
    store: HttpSessionStore[FakeEnv] = HttpSessionStore(
        FakeEnv, max_sessions=2, ttl_s=10.0, unstepped_ttl_s=30.0, clock=clock)
    queued = store.create()
    source.now = 200.0  # another stall: the reset's lease (30 s) is not used up by it
    assert store.get(queued.episode_id, renew=True) is queued
