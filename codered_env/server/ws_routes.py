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
Every session has a server-issued ``session_id`` (in each ``reset`` reply); ``/ws?session_id=``
re-attaches a dropped session, after a restart too (``ws_sessions.py``), and a ``step`` frame
may carry ``expect_step`` (the step count the client last saw), so a step retried after its
reply was lost is answered again instead of being applied twice. The socket is closed only for:

* a frame over the size limit (uvicorn closes with 1009, a protocol violation);
* the client's ``close`` message (1000; the session ends) or silence for ``ws_idle_timeout_s``
  (1001; resumable);
* a full server (one ``CAPACITY_REACHED`` frame, then 1013 "try again later"), or, at the cap,
  eviction of a connection silent for ``ws_evict_idle_s`` (1013; resumable);
* server shutdown (1012, "service restart"; resumable; the reason says how);
* a browser page from an origin not in the allow-list (handshake refused with 403).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from openenv.core.env_server.serialization import serialize_observation
from openenv.core.env_server.types import WSErrorCode, WSErrorResponse, WSStateResponse
from pydantic_core import to_json

from codered_env.server import validation
from codered_env.server.config import ServerSettings
from codered_env.server.environment import CodeRedEnvironment, validate_action, wire_form
from codered_env.server.http_sessions import SessionNotFound, shown_id
from codered_env.server.journal import Journal
from codered_env.server.limits import client_address
from codered_env.server.mcp_routes import McpService
from codered_env.server.mcp_tools import tool_list
from codered_env.server.safe_json import JsonRejected, parse_json
from codered_env.server.shutdown import Drain
from codered_env.server.ws_sessions import (
    CLOSE_GOING_AWAY,
    CLOSE_NORMAL,
    CLOSE_POLICY,
    CLOSE_RESTART,
    CLOSE_TRY_LATER,
    WsSession,
    WsSessions,
)

RESET_OPTIONS = ("task_id", "seed", "city", "episode_id", "split", "index")
MESSAGE_TYPES = "reset, step, state, observe, grade, mcp, close"
# ``/ws?observation=``: what a step reply carries (docs/SERVER.md, "WebSocket").
OBSERVATION_MODES = ("full", "without_text", "none")
__all__ = ["CLOSE_RESTART", "handle_frame", "register_ws_route"]


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


def error_frame(code: WSErrorCode | str, message: str, **extra: Any) -> str:
    return WSErrorResponse(data={"message": message, "code": code, **extra}).model_dump_json()


class _Close(Exception):
    pass


def _dumps(value: Any) -> str:
    """Compact JSON text (pydantic-core's encoder: a third of ``json.dumps``' cost per step)."""
    return to_json(value).decode()


def _observation_reply(observation: Any, **extra: Any) -> str:
    data = serialize_observation(observation)
    data.update(extra)
    return _dumps({"type": "observation", "data": data})


# ---------------------------------------------------------------------------- frames


async def _reset(session: WsSession, data: dict[str, Any]) -> str:
    extra = sorted(k for k in data if k not in RESET_OPTIONS)
    if extra:
        shown = ", ".join(repr(k[:40]) for k in extra[:5])
        return error_frame(
            WSErrorCode.EXECUTION_ERROR,
            f"unknown reset option(s): {shown}; accepted: {', '.join(RESET_OPTIONS)}",
        )
    observation = await session.env.reset_async(**{k: data[k] for k in RESET_OPTIONS if k in data})
    if session.validation_state.telemetry is not None:
        # a validator compares its replays field for field: no per-connection id in them (such a
        # socket cannot be resumed, which a validator never asks for)
        return _observation_reply(observation, step_count=0)
    return _observation_reply(observation, session_id=session.session_id, step_count=0)


def _step(session: WsSession, data: dict[str, Any], expect_step: Any) -> str:
    env = session.env
    data = wire_form(data)
    parsed, problem = validate_action(data)
    if parsed is None:
        return error_frame(
            WSErrorCode.VALIDATION_ERROR,
            "invalid action",
            errors=[{"loc": [], "msg": str(problem)[:400], "type": "invalid_action"}],
        )
    if expect_step is not None:
        retried = _retried_step(env, data, expect_step)
        if retried is not None:
            return retried
    # The simulation gets the parsed action (checked once, above); the logs keep the wire dict.
    if session.observation == "none":
        reply = env.step_summary(parsed, data)
        reply["step_count"] = env.step_count
        return _dumps({"type": "observation", "data": reply})
    reply = env.step_reply(parsed, data, text=session.observation == "full")
    reply["step_count"] = env.step_count
    return _dumps({"type": "observation", "data": reply})


def _retried_step(env: CodeRedEnvironment, data: dict[str, Any], expect_step: Any) -> str | None:
    """The reply to a step sent with ``expect_step`` when it must not be applied now: a retry of
    the step just applied (answered again) or a step count that does not match (an error)."""
    if isinstance(expect_step, bool) or not isinstance(expect_step, int):
        return error_frame(WSErrorCode.VALIDATION_ERROR, "'expect_step' must be an integer (the step count)")
    count = env.step_count
    if count == expect_step:
        return None
    if count == expect_step + 1 and env.last_step_matches(data):
        return _observation_reply(env.last_step_observation(), step_count=count, repeated=True)
    return error_frame(
        WSErrorCode.EXECUTION_ERROR,
        f"step count mismatch: the episode is at step {count}, the client expected {expect_step}; "
        "nothing was applied (send state to resynchronise)",
        step_count=count,
    )


def _observation_frame(observation: dict[str, Any], reward: float | None, done: bool) -> str:
    data = {"observation": observation, "reward": reward, "done": done}
    return json.dumps({"type": "observation", "data": data})


def _tool_step(session: WsSession, data: dict[str, Any]) -> str:
    """A ``step`` carrying OpenEnv's ``call_tool``/``list_tools`` action."""
    kind = data.get("type")
    if kind == "list_tools":
        tools = list(tool_list(session.env.city))
        return _observation_frame({"tools": tools, "metadata": {}}, None, False)
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


def _mcp_frame(session: WsSession, mcp: McpService | None, message: dict[str, Any]) -> str:
    if mcp is None:
        return error_frame(WSErrorCode.UNKNOWN_TYPE, "this server has no MCP service")
    attached = session.session_id if session.mcp_attached else None
    answer = mcp.rpc_over_ws(message.get("data"), session.tool_session(), attached)
    return json.dumps({"type": "mcp", "data": answer})


async def _dispatch(session: WsSession, mcp: McpService | None, message: dict[str, Any]) -> str:
    env = session.env
    kind = message.get("type")
    if kind == "close":
        raise _Close
    if kind == "state":
        return WSStateResponse(data=env.state.model_dump()).model_dump_json()
    if kind == "grade":
        return json.dumps({"type": "grade", "data": env.grade()})
    if kind == "observe":
        return _observation_reply(env.current_observation(), step_count=env.step_count)
    if kind == "mcp":
        return _mcp_frame(session, mcp, message)
    if kind not in ("reset", "step"):
        shown = repr(kind)[:60] if isinstance(kind, str) else type(kind).__name__
        return error_frame(
            WSErrorCode.UNKNOWN_TYPE, f"unknown message type {shown}; expected one of: {MESSAGE_TYPES}"
        )
    data = message.get("data", {})
    if not isinstance(data, dict):
        return error_frame(WSErrorCode.VALIDATION_ERROR, f"'data' of a {kind} message must be a JSON object")
    if kind == "step":
        if "type" in data:
            return _tool_step(session, data)
        return _step(session, data, message.get("expect_step"))
    if session.tools is not None and not session.tools.resettable:
        return error_frame(
            WSErrorCode.EXECUTION_ERROR,
            "this MCP session is one episode (opened by initialize) and cannot be reset: "
            "open a new session for a new episode",
        )
    return await _reset(session, data)


async def handle_frame(session: WsSession, frame: Mapping[str, Any], mcp: McpService | None = None) -> str:
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
            return validation.answer(session.validation_state, message, session.mcp_attached)
        reply = await _dispatch(session, mcp, message)
        validation.observe(session.validation_state, message, reply, session.env)
        return reply
    except _Close:
        raise
    except Exception as exc:  # bad reset arguments, step before reset, closed session, ...
        return error_frame(WSErrorCode.EXECUTION_ERROR, str(exc)[:400])


# ---------------------------------------------------------------------------- connections


@dataclass
class _Route:
    """What the /ws handler needs: settings, sessions, the MCP service, journal and drain."""

    settings: ServerSettings
    sessions: WsSessions
    mcp: McpService | None
    journal: Journal
    drain: Drain


def register_ws_route(
    app: FastAPI,
    settings: ServerSettings,
    sessions: WsSessions,
    journal: Journal,
    drain: Drain,
    mcp: McpService | None = None,
) -> None:
    route = _Route(settings, sessions, mcp, journal, drain)

    @app.websocket("/ws")
    async def websocket_endpoint(websocket: WebSocket) -> None:
        if not origin_allowed(websocket.headers, settings.allowed_origins):
            await websocket.close(code=CLOSE_POLICY)  # before accept: the handshake gets 403
            return
        await websocket.accept()
        await _run_connection(route, websocket)


async def _refuse(
    websocket: WebSocket, code: WSErrorCode | str, message: str, close: int, **extra: Any
) -> None:
    try:
        await websocket.send_text(error_frame(code, message, **extra))
        await websocket.close(code=close)
    except (WebSocketDisconnect, RuntimeError):
        pass


async def _run_connection(route: _Route, websocket: WebSocket) -> None:
    settings, sessions = route.settings, route.sessions
    if route.drain.draining:
        await _refuse(websocket, WSErrorCode.CAPACITY_REACHED, "the server is restarting; retry shortly",
                      CLOSE_RESTART, retry_after_s=5)
        return
    owner = client_address(
        websocket.client.host if websocket.client else None,
        websocket.headers.get("x-forwarded-for"),
        settings.trusted_proxies,
    )
    wanted = websocket.query_params.get("session_id")
    observation = websocket.query_params.get("observation", "full")
    if observation not in OBSERVATION_MODES:
        await _refuse(websocket, WSErrorCode.VALIDATION_ERROR,
                      f"unknown observation mode {observation[:40]!r}; valid: {', '.join(OBSERVATION_MODES)}",
                      CLOSE_POLICY)
        return
    refusal = await sessions.admit(owner, replacing=wanted)
    if refusal is not None:
        await _refuse(websocket, WSErrorCode.CAPACITY_REACHED, refusal.message, CLOSE_TRY_LATER,
                      active_sessions=sessions.active, max_sessions=sessions.capacity,
                      retry_after_s=refusal.retry_after_s)
        return
    session = await _open_session(route, websocket, owner, wanted)
    if session is None:
        return
    session.websocket = websocket
    session.observation = observation
    sessions.register(session)
    try:
        await _serve(route, websocket, session)
    finally:
        sessions.unregister(session)
        _release(route, session)


def _release(route: _Route, session: WsSession) -> None:
    """After the connection: end the session (client's close), or keep it resumable."""
    if session.handed_over:
        return
    if session.mcp_attached:
        if session.tools is not None:
            session.tools.attached = False
        return
    journal = route.sessions.journal
    if journal is not None and session.ended_by_client:
        journal.forget(session.session_id, "was closed by its owner")
    session.env.close("was detached: its connection closed (resume it with ?session_id=)")


async def _open_session(
    route: _Route, websocket: WebSocket, owner: str, wanted: str | None
) -> WsSession | None:
    """A new session, or the one named by ``?session_id=`` (None: refused and closed)."""
    sessions = route.sessions
    if wanted is None:
        return sessions.new_session(owner)
    live = sessions.live.get(wanted)
    if live is not None and not live.mcp_attached:
        return await _take_over(sessions, live)
    if route.mcp is not None:
        try:
            tools = route.mcp.attach(wanted)
        except SessionNotFound as exc:
            if not exc.message.startswith("unknown"):
                await _refuse(websocket, WSErrorCode.SESSION_ERROR, exc.message, CLOSE_POLICY)
                return None
        else:
            return WsSession(tools.env, wanted, owner, tools=tools, mcp_attached=True)
    restored = sessions.restore(wanted)
    if restored is not None:
        return restored
    gone = sessions.gone_reason(wanted)
    message = (
        f"session {shown_id(wanted)} {gone}; connect without session_id to start a new one"
        if gone else
        f"unknown session_id {shown_id(wanted)}: this server never issued it, or it expired "
        f"(WebSocket sessions stay resumable for {route.settings.ws_resume_ttl_s:g} s)"
    )
    await _refuse(websocket, WSErrorCode.SESSION_ERROR, message, CLOSE_POLICY)
    return None


async def _take_over(sessions: WsSessions, live: WsSession) -> WsSession:
    """Move a still-attached session to the connection that resumed it."""
    live.handed_over = True
    await sessions.close_session(live, CLOSE_POLICY, "resumed on another connection")
    sessions.unregister(live)
    return WsSession(live.env, live.session_id, live.owner, tools=live.tools)


def _renewed(route: _Route, session: WsSession) -> str | None:
    """Renew an attached MCP session's lease; the reason when it is gone."""
    if not session.mcp_attached or route.mcp is None:
        return None
    try:
        route.mcp.lookup(session.session_id, renew=True)
    except SessionNotFound as exc:
        return exc.message
    return None


async def _serve(route: _Route, websocket: WebSocket, session: WsSession) -> None:
    idle_timeout_s = route.settings.ws_idle_timeout_s
    journal = route.journal
    try:
        while session.close_request is None:
            try:
                frame = await asyncio.wait_for(websocket.receive(), idle_timeout_s)
            except asyncio.TimeoutError:
                await websocket.close(code=CLOSE_GOING_AWAY,
                                      reason=session.resume_reason(f"idle for {idle_timeout_s:g} s"))
                return
            if frame["type"] == "websocket.disconnect":
                return
            session.busy = True
            session.last_frame = time.monotonic()
            gone = _renewed(route, session)
            if gone is not None:
                await websocket.send_text(error_frame(WSErrorCode.SESSION_ERROR, gone))
                await websocket.close(code=CLOSE_GOING_AWAY)
                return
            try:
                reply = await handle_frame(session, frame, route.mcp)
            except _Close:
                session.ended_by_client = True
                await websocket.close(code=CLOSE_NORMAL)
                return
            await journal.barrier()  # the step is on disk before the client hears of it
            await websocket.send_text(reply)
            session.busy = False
        code, reason = session.close_request
        await websocket.close(code=code, reason=reason)
    except (WebSocketDisconnect, RuntimeError):
        return  # the client went away mid-send
