"""Request-size guard for the HTTP routes (an ASGI middleware, no framework magic).

Bodies larger than ``max_bytes`` are refused with 413 before any route sees them, whether
the client announces the size (``Content-Length``) or streams a chunked body. Bodies within
the limit are buffered once and replayed to the application unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

ONE_MIB = 1024 * 1024


async def _send_json(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _declared_length(scope: Scope) -> int | None:
    """The Content-Length header as an int; -1 when it is present but not a number."""
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else -1
    return None


class BodySizeLimitMiddleware:
    """Refuse HTTP request bodies over ``max_bytes`` with 413 (WebSocket scopes pass through)."""

    def __init__(self, app: ASGIApp, max_bytes: int = ONE_MIB) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _too_large(self) -> str:
        return f"request body too large: the limit is {self.max_bytes} bytes"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _declared_length(scope)
        if declared == -1:
            await _send_json(send, 400, "invalid Content-Length header")
            return
        if declared is not None and declared > self.max_bytes:
            await _send_json(send, 413, self._too_large())
            return
        body = await self._read_body(receive)
        if body is None:
            await _send_json(send, 413, self._too_large())
            return
        await self.app(scope, _replay(body, receive), send)

    async def _read_body(self, receive: Receive) -> bytes | None:
        """The whole request body, or None once it grows past the limit."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"".join(chunks)  # client went away; let the app see an empty body
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
