"""Stateful HTTP episodes: a capped store of environments keyed by server-issued episode ids.

OpenEnv's own HTTP ``/reset``/``/step``/``/state`` build a fresh environment per request.
CodeRedEnv replaces them with routes backed by this store (the MCP sessions use one too). The
rules give every client a fair chance at a slot:

* Ids are issued by the server (``secrets.token_urlsafe``, 144 random bits), so an episode can
  only be used by whoever received its id. There is no default episode.
* Only a step renews an episode's lease. A reset that is never stepped expires after
  ``unstepped_ttl_s``; a stepped episode after ``ttl_s`` without steps. Reads never renew.
* A new episode is *fresh* until its first step, and a fresh episode is never evicted within
  ``fresh_grace_s`` of its reset: it always gets a fair chance to act.
* At the cap a new reset evicts the episode idle the longest (since its last step, or since
  its reset for a fresh one past its grace: 64 used, idle episodes go before any new one);
  when every slot holds a fresh episode in its grace the reset is refused
  (:class:`AdmissionRefused`, HTTP 503 with ``Retry-After``: the moment the first grace ends).
* One client address holds at most ``per_client`` entries: past that, its own longest-idle
  entry (not in its grace) makes room, else the reset is refused (429), so a reset flood from
  one address can never take the slots of the others.
* A request for an expired or evicted id raises :class:`SessionGone` (HTTP 410) saying exactly
  what happened (the last 4096 dropped ids are remembered); an id never issued raises
  :class:`SessionNotFound` (HTTP 404).
* With a journal (``journal.py``) every entry is restored on first use after a restart, by
  replaying its action log (``restore``), and the reasons of dropped ids survive restarts.
"""

from __future__ import annotations

import math
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

_REMEMBERED_GONE = 4096
_SHOWN_ID_CHARS = 48


class SessionEnv(Protocol):
    """What the store needs from an environment."""

    def close(self, reason: str | None = None) -> None: ...


EnvT = TypeVar("EnvT", bound=SessionEnv)


def shown_id(session_id: str) -> str:
    return repr(session_id if len(session_id) <= _SHOWN_ID_CHARS else session_id[:_SHOWN_ID_CHARS] + "...")


class SessionNotFound(LookupError):
    """No HTTP episode was ever issued with this id."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SessionGone(SessionNotFound):
    """The episode existed but expired or was evicted."""


class AdmissionRefused(Exception):
    """No slot for a new entry now: ``status`` 503 (server full) or 429 (this client's quota)."""

    def __init__(self, status: int, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.status, self.message = status, message
        self.retry_after_s = max(1, math.ceil(retry_after_s))


@dataclass(frozen=True)
class StoreWording:
    """How error messages name the store's entries (HTTP episodes or MCP sessions)."""

    id_name: str = "episode_id"
    entries: str = "HTTP episodes"
    issued_by: str = "POST /reset"
    how_to_start: str = "POST /reset starts a new episode"
    used: str = "stepped"


@dataclass(frozen=True)
class StoreLimits:
    """The store's capacity rules (see the module docstring)."""

    max_sessions: int
    ttl_s: float
    unstepped_ttl_s: float | None = None
    fresh_grace_s: float = 10.0
    per_client: int | None = None

    def __post_init__(self) -> None:
        if self.max_sessions < 1:
            raise ValueError("max_sessions must be >= 1")
        if self.ttl_s <= 0:
            raise ValueError("ttl_s must be > 0")
        if self.per_client is not None and self.per_client < 1:
            raise ValueError("per_client must be >= 1")


@dataclass
class HttpSession(Generic[EnvT]):
    episode_id: str
    env: EnvT
    created: float
    owner: str = "unknown"
    last_step: float | None = None

    def expires_at(self, ttl_s: float, unstepped_ttl_s: float) -> float:
        if self.last_step is None:
            return self.created + unstepped_ttl_s
        return self.last_step + ttl_s


@dataclass(frozen=True)
class Restored(Generic[EnvT]):
    """An entry re-built from its journal after a restart."""

    env: EnvT
    owner: str
    stepped: bool


class StoreJournal(Protocol[EnvT]):  # type: ignore[misc]
    """What the store asks of a journal (``journal.py``); all optional behaviour."""

    def restore(self, key: str) -> Restored[EnvT] | None: ...

    def forget(self, key: str, reason: str) -> None: ...

    def gone_reason(self, key: str) -> str | None: ...


class HttpSessionStore(Generic[EnvT]):
    """Thread-safe map ``episode_id -> environment`` with a cap, leases and fair eviction."""

    def __init__(
        self,
        factory: Callable[[], EnvT],
        max_sessions: int,
        ttl_s: float,
        unstepped_ttl_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        wording: StoreWording | None = None,
        fresh_grace_s: float = 10.0,
        per_client: int | None = None,
        journal: StoreJournal[EnvT] | None = None,
    ) -> None:
        limits = StoreLimits(max_sessions, ttl_s, unstepped_ttl_s, fresh_grace_s, per_client)
        self._factory = factory
        self.max_sessions = limits.max_sessions
        self.ttl_s = limits.ttl_s
        self.unstepped_ttl_s = min(ttl_s, unstepped_ttl_s or ttl_s)
        self.fresh_grace_s = min(limits.fresh_grace_s, self.unstepped_ttl_s)
        self.per_client = min(limits.per_client or max_sessions, max_sessions)
        self._clock = clock
        self.wording = wording or StoreWording()
        self._journal = journal
        self._lock = threading.Lock()
        # Ordered by last use (creation or step), least recent first.
        self._sessions: OrderedDict[str, HttpSession[EnvT]] = OrderedDict()
        self._gone: OrderedDict[str, str] = OrderedDict()  # episode_id -> why it is gone

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def ids(self) -> set[str]:
        """The ids of the entries in memory now."""
        with self._lock:
            return set(self._sessions)

    def create(self, env: EnvT | None = None, owner: str = "unknown") -> HttpSession[EnvT]:
        """A new slot with a fresh server-issued id for ``env`` (default: a new one from the
        factory) owned by the client address ``owner``; raises :class:`AdmissionRefused` when
        no slot can be given fairly (``env`` is then closed)."""
        closing: list[tuple[EnvT, str]] = []
        try:
            with self._lock:
                closing.extend(self._drop_expired_locked())
                closing.extend(self._make_room_locked(owner))
                episode_id = secrets.token_urlsafe(18)
                session = HttpSession(episode_id, env or self._factory(), self._clock(), owner)
                self._sessions[episode_id] = session
                return session
        except AdmissionRefused:
            if env is not None:
                env.close("was refused: the server had no slot for it")
            raise
        finally:
            _close_all(closing)

    def get(self, episode_id: str, *, renew: bool = False) -> HttpSession[EnvT]:
        """The live entry for ``episode_id`` (restored from the journal after a restart);
        ``renew`` (a step) extends its lease."""
        closing: list[tuple[EnvT, str]] = []
        try:
            with self._lock:
                closing.extend(self._drop_expired_locked())
                session = self._sessions.get(episode_id) or self._restore_locked(episode_id)
                if session is None:
                    raise self._missing_locked(episode_id)
                if renew:
                    session.last_step = self._clock()
                    self._sessions.move_to_end(episode_id)
                return session
        finally:
            _close_all(closing)

    def restarted(self, episode_id: str) -> HttpSession[EnvT]:
        """The entry for ``episode_id`` after a reset: its lease starts over as unstepped."""
        with self._lock:
            session = self._sessions.get(episode_id) or self._restore_locked(episode_id)
            if session is None:
                raise self._missing_locked(episode_id)
            session.created, session.last_step = self._clock(), None
            self._sessions.move_to_end(episode_id)
            return session

    def purge_expired(self) -> int:
        """Drop expired entries now; returns how many were dropped."""
        with self._lock:
            dropped = self._drop_expired_locked()
        _close_all(dropped)
        return len(dropped)

    def close_all(self) -> None:
        """Release every entry's memory at shutdown (their journals stay: they resume on restart)."""
        with self._lock:
            envs = [(s.env, "was closed: the server is shutting down") for s in self._sessions.values()]
            self._sessions.clear()
        _close_all(envs)

    def close(self, episode_id: str) -> None:
        """End an entry now (its id then answers :class:`SessionGone`)."""
        with self._lock:
            if episode_id not in self._sessions and self._restore_locked(episode_id) is None:
                raise self._missing_locked(episode_id)
            closing = self._forget_locked(episode_id, "was closed by its owner")
        _close_all([closing])

    # ------------------------------------------------------------------ internals

    def _restore_locked(self, episode_id: str) -> HttpSession[EnvT] | None:
        if self._journal is None or episode_id in self._gone:
            return None
        restored = self._journal.restore(episode_id)
        if restored is None:
            return None
        now = self._clock()
        last_step = now if restored.stepped else None
        session = HttpSession(episode_id, restored.env, now, restored.owner, last_step)
        self._sessions[episode_id] = session
        # A restored entry may push the store over its cap: make room among the others.
        while len(self._sessions) > self.max_sessions:
            victim = self._victim_locked(self._sessions, exclude=episode_id)
            if victim is None:
                break
            env, reason = self._forget_locked(victim, self._eviction_reason(self._sessions[victim]))
            env.close(reason)
        return session

    def _missing_locked(self, episode_id: str) -> SessionNotFound:
        words = self.wording
        reason = self._gone.get(episode_id)
        if reason is None and self._journal is not None:
            reason = self._journal.gone_reason(episode_id)
        if reason is not None:
            return SessionGone(f"{words.id_name} {shown_id(episode_id)} {reason}; {words.how_to_start}")
        return SessionNotFound(
            f"unknown {words.id_name} {shown_id(episode_id)}: this server never issued it "
            f"(ids come from {words.issued_by})"
        )

    def _drop_expired_locked(self) -> list[tuple[EnvT, str]]:
        now = self._clock()
        stale = [
            k for k, s in self._sessions.items() if now >= s.expires_at(self.ttl_s, self.unstepped_ttl_s)
        ]
        return [self._forget_locked(k, self._expiry_reason(self._sessions[k])) for k in stale]

    def _expiry_reason(self, session: HttpSession[EnvT]) -> str:
        used = self.wording.used
        if session.last_step is None:
            return f"expired: it was never {used} within {self.unstepped_ttl_s:g} s of its start"
        return f"expired after {self.ttl_s:g} s without being {used}"

    def _victim_locked(
        self, candidates: Mapping[str, HttpSession[EnvT]], exclude: str | None = None
    ) -> str | None:
        """The least recently used entry (last step, or start for a fresh one) that is not a
        fresh entry within its grace; None when there is none."""
        now = self._clock()
        for key, session in candidates.items():  # ordered by last use, least recent first
            if key == exclude:
                continue
            if session.last_step is not None or now - session.created >= self.fresh_grace_s:
                return key
        return None

    def _make_room_locked(self, owner: str) -> list[tuple[EnvT, str]]:
        words = self.wording
        own = {k: s for k, s in self._sessions.items() if s.owner == owner}
        if self.per_client < self.max_sessions and len(own) >= self.per_client:
            victim = self._victim_locked(own)
            if victim is None:
                raise AdmissionRefused(
                    429,
                    f"this client already holds {len(own)} {words.entries} (the most one client "
                    f"may hold on this server), each started less than {self.fresh_grace_s:g} s ago "
                    f"and not yet {words.used}: use them or wait",
                    self._grace_left(own),
                )
            return [self._forget_locked(victim, self._eviction_reason(own[victim], by_owner=True))]
        if len(self._sessions) < self.max_sessions:
            return []
        victim = self._victim_locked(self._sessions)
        if victim is None:
            raise AdmissionRefused(
                503,
                f"server full: all {self.max_sessions} {words.entries} started less than "
                f"{self.fresh_grace_s:g} s ago and have not been {words.used} yet, and a new one "
                "never evicts them before they had a chance to act; retry after Retry-After seconds",
                self._grace_left(self._sessions),
            )
        return [self._forget_locked(victim, self._eviction_reason(self._sessions[victim]))]

    def _grace_left(self, sessions: Mapping[str, HttpSession[EnvT]]) -> float:
        now = self._clock()
        return min((s.created + self.fresh_grace_s - now for s in sessions.values()), default=1.0)

    def _eviction_reason(self, session: HttpSession[EnvT], by_owner: bool = False) -> str:
        words = self.wording
        now = self._clock()
        if session.last_step is None:
            state = f"was never {words.used} in the {now - session.created:.0f} s since it started"
        else:
            state = f"had not been {words.used} for {now - session.last_step:.0f} s"
        if by_owner:
            return (
                f"was evicted: its client reached the {self.per_client} {words.entries} one client may "
                f"hold, started another, and this one {state} (the longest idle of that client's)"
            )
        return (
            f"was evicted: the server keeps {self.max_sessions} {words.entries}, a new one "
            f"started when all were in use, and this one {state} (the longest idle)"
        )

    def _forget_locked(self, key: str, reason: str) -> tuple[EnvT, str]:
        session = self._sessions.pop(key)
        self._gone[key] = reason
        while len(self._gone) > _REMEMBERED_GONE:
            self._gone.popitem(last=False)
        if self._journal is not None:
            self._journal.forget(key, reason)
        return session.env, reason


class LeaseClock:
    """Monotonic time that stands still while the server's event loop is frozen (a paused
    process, a swapped-out machine): leases count only time the server could have answered, so
    an episode whose step was already queued when the server stalled does not expire.

    :meth:`run` ticks every ``tick_s`` on the event loop; a gap between ticks longer than
    ``stall_s`` is a stall, and its excess is not counted."""

    def __init__(self, tick_s: float = 0.5, stall_s: float = 2.0,
                 source: Callable[[], float] = time.monotonic) -> None:
        self.tick_s, self.stall_s = tick_s, stall_s
        self._source = source
        self._stalled = 0.0
        self._last_tick = source()

    def __call__(self) -> float:
        now = self._source()
        ongoing = max(0.0, now - self._last_tick - self.stall_s)  # a stall not yet ticked
        return now - self._stalled - ongoing

    def tick(self) -> None:
        now = self._source()
        self._stalled += max(0.0, now - self._last_tick - self.stall_s)
        self._last_tick = now

    async def run(self) -> None:
        import asyncio

        while True:
            self.tick()
            await asyncio.sleep(self.tick_s)


def _close_all(envs: list[tuple[EnvT, str]]) -> None:
    for env, reason in envs:
        env.close(reason)
