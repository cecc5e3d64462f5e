"""Stateful HTTP episodes: a capped, idle-expiring store of environments keyed by episode_id.

OpenEnv's own HTTP ``/reset``/``/step``/``/state`` build a fresh environment per request.
CodeRedEnv replaces them with routes backed by this store so that simple HTTP clients can
play an episode: ``POST /reset`` creates (or re-uses) the entry for an ``episode_id``, later
requests name that id, and a request without an id uses the episode most recently reset
over HTTP.

Rules:
* An entry untouched for ``ttl_s`` seconds expires; a later request for it gets a
  :class:`SessionNotFound` that says it expired (the last 1024 dropped ids are remembered).
* At most ``max_sessions`` entries live at once. A new reset at the cap first drops expired
  entries, then the least recently used *finished* episode; if every entry is a live,
  unfinished episode the reset is refused with :class:`SessionCapacityError`.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

_REMEMBERED_GONE = 1024


class SessionEnv(Protocol):
    """What the store needs from an environment."""

    @property
    def finished(self) -> bool: ...

    def close(self) -> None: ...


EnvT = TypeVar("EnvT", bound=SessionEnv)


class SessionNotFound(LookupError):
    """No live HTTP episode for the requested id (unknown, expired, or none reset yet)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SessionCapacityError(RuntimeError):
    """Every HTTP session slot holds a live, unfinished episode."""

    def __init__(self, max_sessions: int, ttl_s: float) -> None:
        self.message = (
            f"HTTP session capacity reached ({max_sessions} unfinished episodes); "
            f"finish an episode, wait for idle ones to expire ({ttl_s:g} s), "
            "or use the WebSocket endpoint /ws"
        )
        super().__init__(self.message)


@dataclass
class HttpSession(Generic[EnvT]):
    episode_id: str
    env: EnvT
    last_used: float = field(default_factory=time.monotonic)


class HttpSessionStore(Generic[EnvT]):
    """Thread-safe map ``episode_id -> environment`` with a cap and an idle TTL."""

    def __init__(
        self,
        factory: Callable[[], EnvT],
        max_sessions: int,
        ttl_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_sessions < 1:
            raise ValueError("max_sessions must be >= 1")
        if ttl_s <= 0:
            raise ValueError("ttl_s must be > 0")
        self._factory = factory
        self.max_sessions = max_sessions
        self.ttl_s = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, HttpSession[EnvT]] = OrderedDict()
        self._gone: OrderedDict[str, str] = OrderedDict()  # episode_id -> why it is gone
        self._latest: str | None = None

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def acquire(self, episode_id: str) -> HttpSession[EnvT]:
        """The entry for ``episode_id``, created if needed, marked as the latest reset."""
        closing: list[EnvT] = []
        try:
            with self._lock:
                closing.extend(self._drop_expired_locked())
                session = self._sessions.get(episode_id)
                if session is None:
                    closing.extend(self._make_room_locked())
                    session = HttpSession(episode_id, self._factory(), self._clock())
                    self._sessions[episode_id] = session
                    self._gone.pop(episode_id, None)
                self._touch_locked(session)
                self._latest = episode_id
                return session
        finally:
            _close_all(closing)

    def get(self, episode_id: str | None) -> HttpSession[EnvT]:
        """The live entry for ``episode_id`` (or the latest reset when None)."""
        closing: list[EnvT] = []
        try:
            with self._lock:
                closing.extend(self._drop_expired_locked())
                key = self._resolve_locked(episode_id)
                session = self._sessions.get(key)
                if session is None:
                    raise SessionNotFound(self._missing_message(key))
                self._touch_locked(session)
                return session
        finally:
            _close_all(closing)

    def purge_expired(self) -> int:
        """Drop idle entries now; returns how many were dropped."""
        with self._lock:
            dropped = self._drop_expired_locked()
        _close_all(dropped)
        return len(dropped)

    def close_all(self) -> None:
        with self._lock:
            envs = [s.env for s in self._sessions.values()]
            self._sessions.clear()
        _close_all(envs)

    def _resolve_locked(self, episode_id: str | None) -> str:
        if episode_id is not None:
            return episode_id
        if self._latest is None:
            raise SessionNotFound("no HTTP episode yet: POST /reset first, or pass episode_id")
        return self._latest

    def _missing_message(self, episode_id: str) -> str:
        reason = self._gone.get(episode_id)
        if reason is not None:
            return f"episode_id {episode_id!r} {reason}; POST /reset to start a new episode"
        return f"unknown episode_id {episode_id!r}: no live HTTP episode has this id (POST /reset starts one)"

    def _touch_locked(self, session: HttpSession[EnvT]) -> None:
        session.last_used = self._clock()
        self._sessions.move_to_end(session.episode_id)

    def _drop_expired_locked(self) -> list[EnvT]:
        now = self._clock()
        stale = [k for k, s in self._sessions.items() if now - s.last_used > self.ttl_s]
        reason = f"expired after {self.ttl_s:g} s without requests"
        return [self._forget_locked(k, reason) for k in stale]

    def _make_room_locked(self) -> list[EnvT]:
        if len(self._sessions) < self.max_sessions:
            return []
        for key, session in self._sessions.items():  # least recently used first
            if session.env.finished:
                reason = "was finished and dropped to make room for newer episodes"
                return [self._forget_locked(key, reason)]
        raise SessionCapacityError(self.max_sessions, self.ttl_s)

    def _forget_locked(self, key: str, reason: str) -> EnvT:
        session = self._sessions.pop(key)
        self._gone[key] = reason
        while len(self._gone) > _REMEMBERED_GONE:
            self._gone.popitem(last=False)
        return session.env


def _close_all(envs: list[EnvT]) -> None:
    for env in envs:
        env.close()
