"""A scripted stand-in for an OpenAI-compatible chat-completions endpoint (tests only).

The server runs uvicorn in a background thread bound to 127.0.0.1 on a free port.  Each request
to ``POST /v1/chat/completions`` consumes the next *behaviour* of the script (or the default when
the script is empty, or the ``responder`` callable when one is set):

* ``{"kind": "tool", "name": ..., "arguments": {...} | "raw string"}`` - a tool call
* ``{"kind": "text", "content": "..."}`` - a plain assistant message
* ``{"kind": "status", "code": 429, "headers": {...}}`` - an HTTP error
* ``{"kind": "sleep", "seconds": 2.0, "then": {...}}`` - answer late
* ``{"kind": "raw", "body": "...", "code": 200}`` - a body that is not a completion

``tool`` and ``text`` take an optional ``finish`` (e.g. ``"length"``) and ``usage`` (a dict);
``status`` takes an optional ``error_code`` (e.g. ``"context_length_exceeded"``) and ``message``.

With ``reject_tools`` set, any request carrying ``tools`` is answered 400 (script untouched).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

Behaviour = dict[str, Any]


DEFAULT_USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


def completion_body(message: dict[str, Any], model: str, finish: str,
                    usage: dict[str, int] | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage or DEFAULT_USAGE,
    }


def tool_message(name: str, arguments: Any) -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    call = {"id": "call_0", "type": "function", "function": {"name": name, "arguments": raw}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


class FakeOpenAI:
    """Scripted fake endpoint; inspect ``requests`` and ``auth_headers`` after a run."""

    def __init__(self) -> None:
        self.url = ""
        self.script: deque[Behaviour] = deque()
        self.default: Behaviour = {"kind": "text", "content": '{"action_type": "maintain_plan"}'}
        self.responder: Callable[[dict[str, Any]], Behaviour] | None = None
        self.reject_tools = False
        self.requests: list[dict[str, Any]] = []
        self.auth_headers: list[str] = []
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None

    # -- control -----------------------------------------------------------------------------
    def reset(self) -> None:
        with self._lock:
            self.script.clear()
            self.default = {"kind": "text", "content": '{"action_type": "maintain_plan"}'}
            self.responder = None
            self.reject_tools = False
            self.requests.clear()
            self.auth_headers.clear()

    def set_script(self, *behaviours: Behaviour, default: Behaviour | None = None) -> None:
        with self._lock:
            self.script = deque(behaviours)
            if default is not None:
                self.default = default

    def _next(self, body: dict[str, Any]) -> Behaviour:
        with self._lock:
            if self.reject_tools and body.get("tools"):
                return {"kind": "status", "code": 400, "message": "tools are not supported"}
            if self.script:
                return self.script.popleft()
            if self.responder is not None:
                return self.responder(body)
            return self.default

    # -- HTTP --------------------------------------------------------------------------------
    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> Response:
            body = await request.json()
            with self._lock:
                self.requests.append(body)
                self.auth_headers.append(request.headers.get("authorization", ""))
            return await self._respond(self._next(body), str(body.get("model", "")))

        return app

    async def _respond(self, behaviour: Behaviour, model: str) -> Response:
        kind = behaviour.get("kind")
        if kind == "sleep":
            await asyncio.sleep(float(behaviour["seconds"]))
            return await self._respond(behaviour.get("then", self.default), model)
        if kind == "tool":
            message = tool_message(behaviour["name"], behaviour.get("arguments", {}))
            return JSONResponse(completion_body(message, model, behaviour.get("finish", "tool_calls"),
                                                behaviour.get("usage")))
        if kind == "text":
            message = {"role": "assistant", "content": behaviour["content"]}
            return JSONResponse(completion_body(message, model, behaviour.get("finish", "stop"),
                                                behaviour.get("usage")))
        if kind == "status":
            error = {"error": {"message": behaviour.get("message", "scripted error"),
                               "type": "fake",
                               "code": behaviour.get("error_code", behaviour["code"])}}
            return JSONResponse(error, status_code=int(behaviour["code"]),
                                headers=behaviour.get("headers", {}))
        if kind == "raw":
            return PlainTextResponse(behaviour["body"], status_code=int(behaviour.get("code", 200)))
        raise ValueError(f"unknown behaviour {behaviour!r}")

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        port = self._sock.getsockname()[1]
        config = uvicorn.Config(self.app(), log_level="error", lifespan="off",
                                timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run,
                                        kwargs={"sockets": [self._sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("fake OpenAI server did not start")
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{port}/v1"

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._sock is not None:
            self._sock.close()
