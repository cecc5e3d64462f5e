"""uvicorn's h11 HTTP protocol with two defences uvicorn lacks.

* A header deadline: a connection whose first request headers are not complete within
  ``header_timeout_s`` is closed (slow-header clients can no longer hold sockets forever;
  between requests uvicorn's keep-alive timeout already applies).
* A socket cap: beyond ``max_connections`` open sockets a new one is closed at once, so idle
  sockets cannot exhaust the process's file handles (which made the server unreachable and
  flooded the log with ``accept()`` errors).

``make_protocol`` returns the class handed to ``uvicorn.Config(http=...)``.
"""

from __future__ import annotations

import asyncio
import resource
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

# File handles kept free beyond the socket cap: log files, worker pipes, sessions' threads.
FD_RESERVE = 64


def raise_fd_limit() -> int:
    """Raise the soft open-file limit to the hard limit; returns the resulting soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return int(soft) if soft != resource.RLIM_INFINITY else 1 << 20


def effective_max_connections(requested: int, fd_limit: int) -> int:
    """The socket cap actually used: never above the file-handle limit minus a reserve."""
    return max(8, min(requested, fd_limit - FD_RESERVE))


def make_protocol(header_timeout_s: float, max_connections: int) -> type[H11Protocol]:
    class GuardedH11Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                transport.abort()
                return
            self._header_timer = self.loop.call_later(header_timeout_s, self._header_deadline)

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_header_timer()
            super().connection_lost(exc)

        def handle_websocket_upgrade(self, event: Any) -> None:
            self._cancel_header_timer()
            super().handle_websocket_upgrade(event)

        def _cancel_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _header_deadline(self) -> None:
            self._header_timer = None
            waiting_for_headers = self.cycle is None and self.conn.their_state is h11.IDLE
            if waiting_for_headers and not self.transport.is_closing():
                self.transport.abort()

    return GuardedH11Protocol
