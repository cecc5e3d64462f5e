"""The request guard: one ASGI middleware in front of every HTTP route.

* Body caps per route (``Content-Length`` or a streamed body over the cap: 413), and a deadline
  for the whole body (a client trickling its upload: 408, connection closed).
* Every non-empty body must be strict JSON (``safe_json``): NaN, Infinity, 1e400, lone
  surrogates, deep nesting and huge integers get a short 400 before any route or validator
  sees them, so nothing can reach a 500 or echo a large input back.
* Response headers: ``X-Content-Type-Options: nosniff`` everywhere and a Content Security
  Policy on HTML (routes may set a stricter one of their own).

:func:`client_address` is the one place a request's client address is decided (rate limits
and per-client quotas count by it).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from codered_env.server.config import Network
from codered_env.server.safe_json import JsonRejected, parse_json

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Same-origin scripts, styles and WebSocket only; no inline code, no framing by other sites.
DEFAULT_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self' ws: wss:; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'self'"
)
# FastAPI's interactive docs load their assets from a CDN with an inline bootstrap script.
_NO_DEFAULT_CSP = ("/docs", "/redoc")


async def send_json(
    send: Send, status: int, detail: str, close: bool = True, extra_headers: dict[str, str] | None = None
) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"x-content-type-options", b"nosniff"),
        *((k.lower().encode(), v.encode()) for k, v in (extra_headers or {}).items()),
    ]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _declared_length(scope: Scope) -> int | None:
    """The Content-Length header as an int; -1 when it is present but not a number."""
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() and len(text) < 19 else -1
    return None


class _BodyTooLarge(Exception):
    pass


class RequestGuardMiddleware:
    """Body caps, body deadline, strict JSON and security headers (WebSocket scopes pass)."""

    def __init__(
        self,
        app: ASGIApp,
        default_max_bytes: int,
        route_max_bytes: Mapping[str, int] | None = None,
        body_timeout_s: float = 10.0,
    ) -> None:
        self.app = app
        self.default_max_bytes = default_max_bytes
        self.route_max_bytes = dict(route_max_bytes or {})
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.route_max_bytes.get(scope.get("path", ""), self.default_max_bytes)
        declared = _declared_length(scope)
        if declared == -1:
            await send_json(send, 400, "invalid Content-Length header")
            return
        if declared is not None and declared > limit:
            await send_json(send, 413, f"request body too large: the limit of this route is {limit} bytes")
            return
        try:
            body = await asyncio.wait_for(_read_body(receive, limit), self.body_timeout_s)
        except _BodyTooLarge:
            await send_json(send, 413, f"request body too large: the limit of this route is {limit} bytes")
            return
        except asyncio.TimeoutError:
            await send_json(send, 408, f"request body not received within {self.body_timeout_s:g} s")
            return
        if body and body.strip():
            try:
                parse_json(body)
            except JsonRejected as exc:
                await send_json(send, 400, f"invalid JSON body: {exc.message}", close=False)
                return
        await self.app(scope, _replay(body, receive), _with_headers(scope, send))


async def _read_body(receive: Receive, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)  # client went away; the app sees what arrived
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _BodyTooLarge
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


def _with_headers(scope: Scope, send: Send) -> Send:
    csp_allowed = scope.get("path", "") not in _NO_DEFAULT_CSP

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            names = {name.lower() for name, _ in headers}
            if b"x-content-type-options" not in names:
                headers.append((b"x-content-type-options", b"nosniff"))
            content_type = next((v for n, v in headers if n.lower() == b"content-type"), b"")
            is_html = content_type.lower().startswith(b"text/html")
            if is_html and csp_allowed and b"content-security-policy" not in names:
                headers.append((b"content-security-policy", DEFAULT_CSP.encode()))
            message = {**message, "headers": headers}
        await send(message)

    return wrapped


def _trusted(address: str, proxies: tuple[Network, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in proxies)


def client_address(peer: str | None, forwarded_for: str | None, proxies: tuple[Network, ...]) -> str:
    """The client's address: the TCP peer, or, when the peer is one of the configured
    ``proxies`` (``CODERED_TRUSTED_PROXIES``), the nearest ``X-Forwarded-For`` hop that is not a
    trusted proxy. Without configured proxies the header is ignored, so no client can choose
    the address its rate limits and quotas are counted under."""
    if not peer:
        return "unknown"
    if not proxies or not forwarded_for or not _trusted(peer, proxies):
        return peer
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, proxies):
            try:
                return str(ipaddress.ip_address(hop))
            except ValueError:
                return peer  # a malformed hop: count the request under the proxy itself
    return peer
