"""``WS /ws``: OpenEnv's session protocol, served by CodeRedEnv itself.

Same frames as OpenEnv (``reset``/``step``/``state``/``close`` in, ``observation``/``state``/
``error`` out) plus ``grade`` (the grade of this session's own episode). MCP on the socket, as in
OpenEnv: a ``step`` whose data is ``{"type": "call_tool", "tool_name", "arguments"}`` or
``{"type": "list_tools"}``, and ``mcp`` frames carrying JSON-RPC (``tools/list``, ``tools/call``);
the tool machinery is built only when a session first uses it. ``/ws?session_id=`` attaches the
socket to an MCP session opened on ``/mcp`` (mcp_routes.py), so a reset here and a ``tools/call``
there act on the same episode. OpenEnv's handler ends
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
from dataclasses import dataclass, field
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
from codered_env.server import validation
from codered_env.server.config import ServerSettings
from codered_env.server.environment import CodeRedEnvironment
from codered_env.server.errors import compact_errors
from codered_env.server.http_sessions import SessionNotFound
from codered_env.server.mcp_routes import McpService
from codered_env.server.mcp_tools import ToolSession, tool_list
from codered_env.server.safe_json import JsonRejected, parse_json

RESET_OPTIONS = ("task_id", "seed", "episode_id", "split", "index")
MESSAGE_TYPES = "reset, step, state, grade, mcp, close"
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


@dataclass
class WsSession:
    """One connection's episode; ``session_id`` is set when it is attached to an MCP session."""

    env: CodeRedEnvironment
    tools: ToolSession | None = None
    session_id: str | None = None
    mcp: McpService | None = None
    validation_state: validation.SocketValidation = field(default_factory=validation.SocketValidation)

    def tool_session(self) -> ToolSession:
        if self.tools is None:
            self.tools = ToolSession(self.env)
        return self.tools


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


def _observation_frame(observation: dict[str, Any], reward: float | None, done: bool) -> str:
    data = {"observation": observation, "reward": reward, "done": done}
    return json.dumps({"type": "observation", "data": data})


def _tool_step(session: WsSession, data: dict[str, Any]) -> str:
    """A ``step`` carrying OpenEnv's ``call_tool``/``list_tools`` action."""
    kind = data.get("type")
    if kind == "list_tools":
        return _observation_frame({"tools": list(tool_list()), "metadata": {}}, None, False)
    if kind != "call_tool":
        shown = repr(kind)[:60] if isinstance(kind, str) else type(kind).__name__
        return error_frame(
            WSErrorCode.VALIDATION_ERROR,
            f"unknown step type {shown}; expected call_tool, list_tools, or an action without 'type'",
        )
    tool_name = data.get("tool_name")
    outcome = session.tool_session().call(tool_name, data.get("arguments"))
    error = None
    if outcome.error_type is not None:
        error = {"error_type": outcome.error_type, "message": outcome.structured["error"]}
    observation = {
        "tool_name": tool_name if isinstance(tool_name, str) else "",
        "result": {**outcome.call_result(), "data": outcome.structured},
        "error": error,
        "metadata": {},
    }
    return _observation_frame(observation, outcome.structured["reward"], outcome.structured["done"])


def _mcp_frame(session: WsSession, message: dict[str, Any]) -> str:
    if session.mcp is None:
        return error_frame(WSErrorCode.UNKNOWN_TYPE, "this server has no MCP service")
    answer = session.mcp.rpc_over_ws(message.get("data"), session.tool_session(), session.session_id)
    return json.dumps({"type": "mcp", "data": answer})


async def _dispatch(session: WsSession, message: dict[str, Any]) -> str:
    env = session.env
    kind = message.get("type")
    if kind == "close":
        raise _Close
    if kind == "state":
        return WSStateResponse(data=env.state.model_dump()).model_dump_json()
    if kind == "grade":
        return json.dumps({"type": "grade", "data": env.grade()})
    if kind == "mcp":
        return _mcp_frame(session, message)
    if kind not in ("reset", "step"):
        shown = repr(kind)[:60] if isinstance(kind, str) else type(kind).__name__
        return error_frame(
            WSErrorCode.UNKNOWN_TYPE, f"unknown message type {shown}; expected one of: {MESSAGE_TYPES}"
        )
    data = message.get("data", {})
    if not isinstance(data, dict):
        return error_frame(WSErrorCode.VALIDATION_ERROR, f"'data' of a {kind} message must be a JSON object")
    if kind == "step":
        return _tool_step(session, data) if "type" in data else await _step(env, data)
    if session.tools is not None and not session.tools.resettable:
        return error_frame(
            WSErrorCode.EXECUTION_ERROR,
            "this MCP session is one episode (opened by initialize) and cannot be reset: "
            "open a new session for a new episode",
        )
    return await _reset(env, data)


async def handle_frame(session: WsSession, frame: Mapping[str, Any]) -> str:
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
        if validation.handles(message):  # OpenEnv's runtime-validation telemetry (validation.py)
            return validation.answer(session.validation_state, message, session.session_id is not None)
        reply = await _dispatch(session, message)
        validation.observe(session.validation_state, message, reply, session.env)
        return reply
    except _Close:
        raise
    except Exception as exc:  # bad reset arguments, step before reset, closed session, ...
        return error_frame(WSErrorCode.EXECUTION_ERROR, str(exc)[:400])


def register_ws_route(app: FastAPI, settings: ServerSettings, mcp: McpService | None = None) -> WsSessions:
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
        session = await _open_session(websocket, mcp)
        if session is None:
            return
        sessions.active += 1
        try:
            await _serve(websocket, session, settings.ws_idle_timeout_s)
        finally:
            sessions.active -= 1
            if session.session_id is None:
                session.env.close()
            elif session.tools is not None:
                session.tools.attached = False

    return sessions


async def _open_session(websocket: WebSocket, mcp: McpService | None) -> WsSession | None:
    """A fresh episode, or the MCP session named by ``?session_id=`` (None: refused and closed)."""
    session_id = websocket.query_params.get("session_id")
    if session_id is None:
        return WsSession(CodeRedEnvironment(), mcp=mcp)
    try:
        if mcp is None:
            raise SessionNotFound("this server has no MCP sessions")
        tools = mcp.attach(session_id)
    except SessionNotFound as exc:
        await websocket.send_text(error_frame(WSErrorCode.SESSION_ERROR, exc.message))
        await websocket.close(code=CLOSE_POLICY)
        return None
    return WsSession(tools.env, tools, session_id, mcp)


def _renewed(session: WsSession) -> str | None:
    """Renew an attached MCP session's lease; the reason when it is gone."""
    if session.session_id is None or session.mcp is None:
        return None
    try:
        session.mcp.lookup(session.session_id, renew=True)
    except SessionNotFound as exc:
        return exc.message
    return None


async def _serve(websocket: WebSocket, session: WsSession, idle_timeout_s: float) -> None:
    try:
        while True:
            try:
                frame = await asyncio.wait_for(websocket.receive(), idle_timeout_s)
            except asyncio.TimeoutError:
                await websocket.close(code=CLOSE_GOING_AWAY, reason=f"idle for {idle_timeout_s:g} s")
                return
            if frame["type"] == "websocket.disconnect":
                return
            gone = _renewed(session)
            if gone is not None:
                await websocket.send_text(error_frame(WSErrorCode.SESSION_ERROR, gone))
                await websocket.close(code=CLOSE_GOING_AWAY)
                return
            try:
                reply = await handle_frame(session, frame)
            except _Close:
                await websocket.close(code=CLOSE_NORMAL)
                return
            await websocket.send_text(reply)
    except (WebSocketDisconnect, RuntimeError):
        return  # the client went away mid-send
