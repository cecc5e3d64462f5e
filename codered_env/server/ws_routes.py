"""``WS /ws``: OpenEnv's session protocol, served by CodeRedEnv itself.

Same frames as OpenEnv (``reset``/``step``/``state``/``close`` in, ``observation``/``state``/
``error`` out) plus ``grade`` (the grade of this session's own episode). OpenEnv's handler ends
the session on a JSON value that is not an object, deep nesting, huge integers, binary frames
or surrogates; here every such frame gets an ``error`` reply and the session stays open.
The socket is closed only for:

* a frame over the size limit (uvicorn closes with 1009, a protocol violation);
* the client's ``close`` message (1000) or silence for ``ws_idle_timeout_s`` (1001);
* a full server (one ``CAPACITY_REACHED`` frame, then 1013 "try again later");
* a browser page from an origin not in the allow-list (handshake refused with 403).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from openenv.core.env_server.serialization import serialize_observation
from openenv.core.env_server.types import (
    WSErrorCode,
    WSErrorResponse,
    WSObservationResponse,
    WSStateResponse,
)
from pydantic import ValidationError

from codered_env.models import CodeRedAction
from codered_env.server.config import ServerSettings
from codered_env.server.environment import CodeRedEnvironment
from codered_env.server.errors import compact_errors
from codered_env.server.safe_json import JsonRejected, parse_json

RESET_OPTIONS = ("task_id", "seed", "episode_id")
MESSAGE_TYPES = "reset, step, state, grade, close"
CLOSE_NORMAL, CLOSE_GOING_AWAY, CLOSE_POLICY, CLOSE_TRY_LATER = 1000, 1001, 1008, 1013


def origin_allowed(headers: Mapping[str, str], allowed: tuple[str, ...]) -> bool:
    """No Origin (not a browser), ``*``, a listed origin, or the server's own origin."""
    origin = headers.get("origin")
    if origin is None or "*" in allowed:
        return True
    origin = origin.strip().rstrip("/")
    if origin.lower() in {a.lower() for a in allowed}:
        return True
    host = headers.get("host", "").strip().lower()
    return bool(host) and urlsplit(origin).netloc.lower() == host


def error_frame(code: WSErrorCode, message: str, **extra: Any) -> str:
    return WSErrorResponse(data={"message": message, "code": code, **extra}).model_dump_json()


class WsSessions:
    """Counts live sessions (one event loop: no lock needed)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.active = 0


class _Close(Exception):
    pass


async def _reset(env: CodeRedEnvironment, data: dict[str, Any]) -> str:
    extra = sorted(k for k in data if k not in RESET_OPTIONS)
    if extra:
        shown = ", ".join(repr(k[:40]) for k in extra[:5])
        return error_frame(
            WSErrorCode.EXECUTION_ERROR,
            f"unknown reset option(s): {shown}; accepted: {', '.join(RESET_OPTIONS)}",
        )
    observation = await env.reset_async(**{k: data[k] for k in RESET_OPTIONS if k in data})
    return WSObservationResponse(data=serialize_observation(observation)).model_dump_json()


async def _step(env: CodeRedEnvironment, data: dict[str, Any]) -> str:
    try:
        action = CodeRedAction.model_validate(data)
    except ValidationError as exc:
        return error_frame(
            WSErrorCode.VALIDATION_ERROR, "invalid action", errors=compact_errors(exc.errors())
        )
    observation = await env.step_async(action)
    return WSObservationResponse(data=serialize_observation(observation)).model_dump_json()


async def _dispatch(env: CodeRedEnvironment, message: dict[str, Any]) -> str:
    kind = message.get("type")
    if kind == "close":
        raise _Close
    if kind == "state":
        return WSStateResponse(data=env.state.model_dump()).model_dump_json()
    if kind == "grade":
        return json.dumps({"type": "grade", "data": env.grade()})
    if kind not in ("reset", "step"):
        shown = repr(kind)[:60] if isinstance(kind, str) else type(kind).__name__
        return error_frame(
            WSErrorCode.UNKNOWN_TYPE, f"unknown message type {shown}; expected one of: {MESSAGE_TYPES}"
        )
    data = message.get("data", {})
    if not isinstance(data, dict):
        return error_frame(WSErrorCode.VALIDATION_ERROR, f"'data' of a {kind} message must be a JSON object")
    return await (_reset(env, data) if kind == "reset" else _step(env, data))


async def handle_frame(env: CodeRedEnvironment, frame: Mapping[str, Any]) -> str:
    """The reply to one received frame (raises ``_Close`` for a close message)."""
    text = frame.get("text")
    if text is None:
        return error_frame(WSErrorCode.INVALID_JSON, "binary frames are not accepted: send JSON text frames")
    try:
        message = parse_json(text)
    except JsonRejected as exc:
        return error_frame(WSErrorCode.INVALID_JSON, f"invalid JSON: {exc.message}")
    if not isinstance(message, dict):
        return error_frame(
            WSErrorCode.INVALID_JSON,
            'a message must be a JSON object such as {"type": "step", "data": {...}}',
        )
    try:
        return await _dispatch(env, message)
    except _Close:
        raise
    except Exception as exc:  # bad reset arguments, step before reset, closed session, ...
        return error_frame(WSErrorCode.EXECUTION_ERROR, str(exc)[:400])


def register_ws_route(app: FastAPI, settings: ServerSettings) -> WsSessions:
    sessions = WsSessions(settings.max_concurrent_envs)

    @app.websocket("/ws")
    async def websocket_endpoint(websocket: WebSocket) -> None:
        if not origin_allowed(websocket.headers, settings.allowed_origins):
            await websocket.close(code=CLOSE_POLICY)  # before accept: the handshake gets 403
            return
        await websocket.accept()
        if sessions.active >= sessions.capacity:
            await websocket.send_text(
                error_frame(
                    WSErrorCode.CAPACITY_REACHED,
                    f"server at capacity ({sessions.capacity} sessions); retry later",
                    active_sessions=sessions.active,
                    max_sessions=sessions.capacity,
                )
            )
            await websocket.close(code=CLOSE_TRY_LATER)
            return
        sessions.active += 1
        env = CodeRedEnvironment()
        try:
            await _serve(websocket, env, settings.ws_idle_timeout_s)
        finally:
            sessions.active -= 1
            env.close()

    return sessions


async def _serve(websocket: WebSocket, env: CodeRedEnvironment, idle_timeout_s: float) -> None:
    try:
        while True:
            try:
                frame = await asyncio.wait_for(websocket.receive(), idle_timeout_s)
            except asyncio.TimeoutError:
                await websocket.close(code=CLOSE_GOING_AWAY, reason=f"idle for {idle_timeout_s:g} s")
                return
            if frame["type"] == "websocket.disconnect":
                return
            try:
                reply = await handle_frame(env, frame)
            except _Close:
                await websocket.close(code=CLOSE_NORMAL)
                return
            await websocket.send_text(reply)
    except (WebSocketDisconnect, RuntimeError):
        return  # the client went away mid-send
