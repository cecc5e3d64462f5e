"""Clean shutdown: on SIGTERM stop admitting, drain what is in flight, answer the rest 503.

* :class:`Drain` is the server's shutdown state. :class:`DrainMiddleware` counts the HTTP
  requests in flight and, once draining, answers new ones (on kept-alive connections) with a
  JSON 503 and ``Retry-After``.
* :class:`DrainingServer` (a ``uvicorn.Server``) runs the drain when a shutdown signal arrives,
  before uvicorn's own shutdown: it closes the listening sockets, asks every WebSocket session
  to close with 1012 and a reason that says how to resume (a session answering a frame closes
  right after its reply), and waits up to ``grace_s`` for in-flight requests. Requests still
  running then are cancelled and answered with a JSON 503 (never a plain-text 500): their
  clients retry, and a step applied before the cancel is recognised by ``expect_step``.
* :func:`exit_with_wrapper` makes the server exit when a ``uv run`` wrapper that started it is
  killed (a SIGKILL cannot be forwarded, and the server would keep the port).
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import uvicorn

from codered_env.server.limits import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger("codered_env.server")
RETRY_AFTER_RESTART_S = 5  # a restart takes about this long (docs/SERVER.md, "Restarts")
_PR_SET_PDEATHSIG = 1


class Drain:
    """Shutdown state shared by the middleware, the WebSocket route and the server."""

    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self.draining = False
        self.in_flight: set[asyncio.Task[Any]] = set()
        self._answered_503: set[asyncio.Task[Any]] = set()
        self.close_websockets: Callable[[], Awaitable[None]] | None = None
        self.websockets_open: Callable[[], int] = lambda: 0

    async def run(self) -> None:
        """Stop admitting, close WebSocket sessions resumably, wait for in-flight requests,
        then cancel what is left (each answered 503 by the middleware)."""
        self.draining = True
        if self.close_websockets is not None:
            await self.close_websockets()
        deadline = time.monotonic() + self.grace_s
        while (self.in_flight or self.websockets_open()) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        left = list(self.in_flight)
        if left:
            logger.warning("shutdown: %d request(s) did not finish within %g s; answering 503",
                           len(left), self.grace_s)
        for task in left:
            self._answered_503.add(task)
            task.cancel()
        while self.in_flight and time.monotonic() < deadline + 5.0:
            await asyncio.sleep(0.05)

    def cancelled_by_drain(self, task: asyncio.Task[Any] | None) -> bool:
        return task is not None and task in self._answered_503


async def _send_503(send: Send, message: str) -> None:
    body = (f'{{"detail": "{message}"}}').encode()
    await send({
        "type": "http.response.start",
        "status": 503,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"retry-after", str(RETRY_AFTER_RESTART_S).encode()),
            (b"connection", b"close"),
        ],
    })
    await send({"type": "http.response.body", "body": body})


class DrainMiddleware:
    """Outermost middleware: in-flight accounting and 503 answers while shutting down."""

    def __init__(self, app: ASGIApp, drain: Drain) -> None:
        self.app = app
        self.drain = drain

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        drain = self.drain
        if drain.draining:
            await _send_503(send, "the server is shutting down; retry after Retry-After seconds")
            return
        task = asyncio.current_task()
        started = False

        async def tracked_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        if task is not None:
            drain.in_flight.add(task)
        try:
            await self.app(scope, receive, tracked_send)
        except asyncio.CancelledError:
            if not drain.cancelled_by_drain(task):
                raise
            if task is not None:
                task.uncancel()
            if not started:
                await _send_503(send, "the server shut down before this request finished; nothing "
                                      "was lost: retry after Retry-After seconds")
        finally:
            if task is not None:
                drain.in_flight.discard(task)


class DrainingServer(uvicorn.Server):
    """uvicorn's server with the drain (see the module docstring) before its own shutdown."""

    def __init__(self, config: uvicorn.Config, drain: Drain) -> None:
        super().__init__(config)
        self.drain = drain

    async def shutdown(self, sockets: list[Any] | None = None) -> None:
        for server in self.servers:
            server.close()  # stop accepting connections first
        await self.drain.run()
        await super().shutdown(sockets)


def exit_with_wrapper() -> None:
    """When the parent is a ``uv run`` wrapper, ask Linux to send SIGTERM to this process if
    the wrapper dies (uv forwards SIGTERM/SIGINT itself, but nothing can forward SIGKILL)."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    try:
        with open(f"/proc/{parent}/comm", encoding="utf-8") as handle:
            name = handle.read().strip()
    except OSError:
        return
    if name != "uv" and os.environ.get("CODERED_EXIT_WITH_PARENT") != "1":
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the wrapper died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)
