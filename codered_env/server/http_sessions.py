"""Stateful HTTP episodes: a capped store of environments keyed by server-issued episode ids.

OpenEnv's own HTTP ``/reset``/``/step``/``/state`` build a fresh environment per request.
CodeRedEnv replaces them with routes backed by this store. The rules keep any one client from
taking capacity from the others:

* Ids are issued by the server (``secrets.token_urlsafe``, 144 random bits), so an episode can
  only be used by whoever received its id. There is no default episode.
* Only a step renews an episode's lease. A reset that is never stepped expires after
  ``unstepped_ttl_s``; a stepped episode after ``ttl_s`` without steps. Reads never renew.
* At the cap a new reset is never refused: the least recently used idle episode is evicted,
  never-stepped ones first.
* A request for an expired or evicted id raises :class:`SessionGone` (HTTP 410) saying so
  (the last 4096 dropped ids are remembered); an id never issued raises
  :class:`SessionNotFound` (HTTP 404).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

_REMEMBERED_GONE = 4096
_SHOWN_ID_CHARS = 48


class SessionEnv(Protocol):
    """What the store needs from an environment."""

    def close(self) -> None: ...


EnvT = TypeVar("EnvT", bound=SessionEnv)


def _shown(episode_id: str) -> str:
    return repr(episode_id if len(episode_id) <= _SHOWN_ID_CHARS else episode_id[:_SHOWN_ID_CHARS] + "...")


class SessionNotFound(LookupError):
    """No HTTP episode was ever issued with this id."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SessionGone(SessionNotFound):
    """The episode existed but expired or was evicted."""


@dataclass(frozen=True)
class StoreWording:
    """How error messages name the store's entries (HTTP episodes or MCP sessions)."""

    id_name: str = "episode_id"
    entries: str = "HTTP episodes"
    issued_by: str = "POST /reset"
    how_to_start: str = "POST /reset starts a new episode"


@dataclass
class HttpSession(Generic[EnvT]):
    episode_id: str
    env: EnvT
    created: float
    last_step: float | None = None

    def expires_at(self, ttl_s: float, unstepped_ttl_s: float) -> float:
        if self.last_step is None:
            return self.created + unstepped_ttl_s
        return self.last_step + ttl_s


class HttpSessionStore(Generic[EnvT]):
    """Thread-safe map ``episode_id -> environment`` with a cap, leases and LRU eviction."""

    def __init__(
        self,
        factory: Callable[[], EnvT],
        max_sessions: int,
        ttl_s: float,
        unstepped_ttl_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        wording: StoreWording | None = None,
    ) -> None:
        if max_sessions < 1:
            raise ValueError("max_sessions must be >= 1")
        if ttl_s <= 0:
            raise ValueError("ttl_s must be > 0")
        self._factory = factory
        self.max_sessions = max_sessions
        self.ttl_s = ttl_s
        self.unstepped_ttl_s = min(ttl_s, unstepped_ttl_s or ttl_s)
        self._clock = clock
        self.wording = wording or StoreWording()
        self._lock = threading.Lock()
        # Ordered by last use (creation or step), least recent first.
        self._sessions: OrderedDict[str, HttpSession[EnvT]] = OrderedDict()
        self._gone: OrderedDict[str, str] = OrderedDict()  # episode_id -> why it is gone

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def create(self, env: EnvT | None = None) -> HttpSession[EnvT]:
        """A new slot with a fresh server-issued id for ``env`` (default: a new one from the
        factory), evicting one at the cap."""
        closing: list[EnvT] = []
        try:
            with self._lock:
                closing.extend(self._drop_expired_locked())
                closing.extend(self._make_room_locked())
                episode_id = secrets.token_urlsafe(18)
                session = HttpSession(episode_id, env or self._factory(), self._clock())
                self._sessions[episode_id] = session
                return session
        finally:
            _close_all(closing)

    def get(self, episode_id: str, *, renew: bool = False) -> HttpSession[EnvT]:
        """The live entry for ``episode_id``; ``renew`` (a step) extends its lease."""
        closing: list[EnvT] = []
        try:
            with self._lock:
                closing.extend(self._drop_expired_locked())
                session = self._sessions.get(episode_id)
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
            session = self._sessions.get(episode_id)
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
        with self._lock:
            envs = [s.env for s in self._sessions.values()]
            self._sessions.clear()
        _close_all(envs)

    def close(self, episode_id: str) -> None:
        """End an entry now (its id then answers :class:`SessionGone`)."""
        with self._lock:
            if episode_id not in self._sessions:
                raise self._missing_locked(episode_id)
            env = self._forget_locked(episode_id, "was closed by its owner")
        env.close()

    def _missing_locked(self, episode_id: str) -> SessionNotFound:
        words = self.wording
        reason = self._gone.get(episode_id)
        if reason is not None:
            return SessionGone(f"{words.id_name} {_shown(episode_id)} {reason}; {words.how_to_start}")
        return SessionNotFound(
            f"unknown {words.id_name} {_shown(episode_id)}: this server never issued it "
            f"(ids come from {words.issued_by})"
        )

    def _drop_expired_locked(self) -> list[EnvT]:
        now = self._clock()
        stale = [
            k for k, s in self._sessions.items() if now >= s.expires_at(self.ttl_s, self.unstepped_ttl_s)
        ]
        return [self._forget_locked(k, self._expiry_reason(self._sessions[k])) for k in stale]

    def _expiry_reason(self, session: HttpSession[EnvT]) -> str:
        if session.last_step is None:
            return f"expired: it was never stepped within {self.unstepped_ttl_s:g} s of its reset"
        return f"expired after {self.ttl_s:g} s without a step"

    def _make_room_locked(self) -> list[EnvT]:
        if len(self._sessions) < self.max_sessions:
            return []
        victim = next((k for k, s in self._sessions.items() if s.last_step is None), None)
        victim = victim or next(iter(self._sessions))
        reason = (
            f"was evicted: the server keeps {self.max_sessions} {self.wording.entries} and this was "
            "the least recently used one when a new episode started"
        )
        return [self._forget_locked(victim, reason)]

    def _forget_locked(self, key: str, reason: str) -> EnvT:
        session = self._sessions.pop(key)
        self._gone[key] = reason
        while len(self._gone) > _REMEMBERED_GONE:
            self._gone.popitem(last=False)
        return session.env


def _close_all(envs: list[EnvT]) -> None:
    for env in envs:
        env.close()
