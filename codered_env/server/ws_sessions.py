"""The WebSocket sessions of one server: admission, per-client quotas, eviction and resumption.

* Every ``/ws`` connection plays one session with a server-issued ``session_id`` (sent in each
  ``reset`` reply). A connection that drops without a ``close`` message leaves its session
  resumable for ``ws_resume_ttl_s``: ``/ws?session_id=<id>`` re-attaches it, rebuilt from the
  journal by replay if it is no longer in memory (after a restart, for instance). Resuming a
  session that is still attached moves it to the new connection (the old one is closed).
* At most ``capacity`` connections at once and ``per_client`` per client address. At the cap
  a new connection takes the slot of the connection silent the longest, if it has been silent
  for ``evict_idle_s`` (it is closed with 1013 and can resume later); otherwise it is refused
  with ``CAPACITY_REACHED`` (and ``retry_after_s``) and close 1013.
* Closing a session from outside (eviction, takeover, shutdown) never interrupts a frame being
  answered: a busy session closes itself right after its reply.
"""

from __future__ import annotations

import contextlib
import math
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from fastapi import WebSocket

from codered_env.server import validation
from codered_env.server.environment import CodeRedEnvironment
from codered_env.server.journal import KindJournal
from codered_env.server.mcp_tools import ToolSession

CLOSE_NORMAL, CLOSE_GOING_AWAY, CLOSE_POLICY, CLOSE_RESTART, CLOSE_TRY_LATER = 1000, 1001, 1008, 1012, 1013


@dataclass
class WsSession:
    """One connection's session. ``session_id`` is its own id, or the id of the MCP session it
    is attached to (``mcp_attached``)."""

    env: CodeRedEnvironment
    session_id: str
    owner: str
    websocket: WebSocket | None = None
    tools: ToolSession | None = None
    mcp_attached: bool = False
    last_frame: float = field(default_factory=time.monotonic)
    busy: bool = False
    close_request: tuple[int, str] | None = None
    handed_over: bool = False
    ended_by_client: bool = False
    observation: str = "full"  # what step replies carry (ws_routes.OBSERVATION_MODES)
    validation_state: validation.SocketValidation = field(default_factory=validation.SocketValidation)

    def tool_session(self) -> ToolSession:
        if self.tools is None:
            self.tools = ToolSession(self.env)
        return self.tools

    def resume_reason(self, what: str) -> str:
        """A close reason (at most 123 bytes) that tells the client how to resume."""
        return f"{what}; resume with ?session_id={self.session_id}"[:123]


@dataclass(frozen=True)
class Refusal:
    message: str
    retry_after_s: int


class WsSessions:
    """Live WebSocket sessions (one event loop: no lock needed)."""

    def __init__(
        self,
        capacity: int,
        per_client: int,
        evict_idle_s: float,
        journal: KindJournal[ToolSession | CodeRedEnvironment] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.capacity = capacity
        self.per_client = min(per_client, capacity)
        self.evict_idle_s = evict_idle_s
        self.journal = journal
        self._clock = clock
        self.live: dict[str, WsSession] = {}

    @property
    def active(self) -> int:
        return len(self.live)

    def new_session(self, owner: str) -> WsSession:
        session_id = secrets.token_urlsafe(18)
        env = CodeRedEnvironment()
        if self.journal is not None and self.journal.journal.enabled:
            env.recorder = self.journal.recorder(session_id, owner)
        return WsSession(env, session_id, owner)

    def restore(self, session_id: str) -> WsSession | None:
        """A detached session rebuilt from the journal (None: unknown, ended or expired)."""
        if self.journal is None:
            return None
        restored = self.journal.restore(session_id)
        if restored is None:
            return None
        env = restored.env
        if isinstance(env, ToolSession):
            return WsSession(env.env, session_id, restored.owner, tools=env)
        return WsSession(env, session_id, restored.owner)

    def gone_reason(self, session_id: str) -> str | None:
        return None if self.journal is None else self.journal.gone_reason(session_id)

    # ------------------------------------------------------------------ admission

    async def admit(self, owner: str, replacing: str | None = None) -> Refusal | None:
        """Make room for one more connection of ``owner`` (evicting an idle one if needed)."""
        others = {k: s for k, s in self.live.items() if k != replacing}
        own = [s for s in others.values() if s.owner == owner]
        if len(own) >= self.per_client:
            victim = self._idlest(own)
            if victim is None:
                return Refusal(
                    f"this client already holds {len(own)} WebSocket sessions, the most one client "
                    f"may hold on this server ({self.per_client}); close one or retry later",
                    self._retry_after(own),
                )
            await self.close_session(victim, CLOSE_TRY_LATER, victim.resume_reason(
                "evicted: your client opened another session at its quota"))
            return None
        if len(others) < self.capacity:
            return None
        victim = self._idlest(list(others.values()))
        if victim is None:
            return Refusal(
                f"server at capacity ({self.capacity} WebSocket sessions, each active in the last "
                f"{self.evict_idle_s:g} s); retry later",
                self._retry_after(list(others.values())),
            )
        await self.close_session(victim, CLOSE_TRY_LATER, victim.resume_reason(
            f"evicted: server full and silent {self.evict_idle_s:g} s"))
        return None

    def _idlest(self, sessions: list[WsSession]) -> WsSession | None:
        now = self._clock()
        idle = [s for s in sessions if not s.busy and s.close_request is None
                and now - s.last_frame >= self.evict_idle_s]
        return min(idle, key=lambda s: s.last_frame, default=None)

    def _retry_after(self, sessions: list[WsSession]) -> int:
        now = self._clock()
        soonest = min((s.last_frame + self.evict_idle_s - now for s in sessions), default=1.0)
        return max(1, math.ceil(soonest))

    # ------------------------------------------------------------------ life cycle

    def register(self, session: WsSession) -> None:
        self.live[session.session_id] = session

    def unregister(self, session: WsSession) -> None:
        if self.live.get(session.session_id) is session:
            del self.live[session.session_id]

    async def close_session(self, session: WsSession, code: int, reason: str) -> None:
        """Close a session's connection now, or right after the frame it is answering."""
        if session.close_request is not None:
            return
        session.close_request = (code, reason)
        if session.busy or session.websocket is None:
            return
        with contextlib.suppress(RuntimeError):  # already closing
            await session.websocket.close(code=code, reason=reason)

    async def close_all(self, code: int, what: str) -> None:
        for session in list(self.live.values()):
            await self.close_session(session, code, session.resume_reason(what))

