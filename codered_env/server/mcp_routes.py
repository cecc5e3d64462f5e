"""``/mcp``: CodeRedEnv's actions as MCP tools, for OpenEnv's clients and for standard MCP clients.

One URL speaks both protocols (docs/SERVER.md, "MCP"):

* **Standard MCP, streamable HTTP** (Claude Desktop, Cursor, the MCP SDK): ``initialize`` opens a
  session whose id comes back in the ``Mcp-Session-Id`` header, and that session is one episode,
  chosen by the URL (``/mcp?task_id=task2&seed=5&city=100000``; default task1, seed 0,
  Prakashnagar; the tools' id enumerations are that city's). No tool resets it;
  a new session is a new episode. Answers are JSON (never an SSE stream); ``GET /mcp`` is 405 (no
  server-initiated messages); ``DELETE /mcp`` ends the session.
* **OpenEnv's protocol** (``MCPToolClient``): ``openenv/session/create`` returns a ``session_id``;
  ``/ws?session_id=...`` attaches a WebSocket to the same episode (reset, state, grade there);
  ``tools/list`` / ``tools/call`` carry ``session_id`` in their params;
  ``openenv/session/close`` ends it.

Sessions of both kinds live in one :class:`HttpSessionStore` (server-issued ids, a cap with fair
eviction and per-client quotas, leases renewed by tool calls and attached WebSocket frames), are
journaled (a restarted server resumes them: same ``Mcp-Session-Id``, same episode), and a client
address may open ``mcp_sessions_per_minute`` of them a minute. Every failure is a JSON-RPC error
or an ``isError`` tool result, never a 500; a request with an ``id`` that is not a string or an
integer is refused unexecuted (-32600); a request not answered within ``mcp_call_timeout_s`` gets
a JSON-RPC error; only an unknown ``Mcp-Session-Id`` answers HTTP 404, which tells a standard
client to initialize again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, HTTPException, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from codered_env.city_choice import DEFAULT_CITY, city_key
from codered_env.server.benchmark_routes import client_of
from codered_env.server.config import ServerSettings
from codered_env.server.environment import (
    DEFAULT_SEED,
    DEFAULT_TASK_ID,
    ENV_NAME,
    CodeRedEnvironment,
    package_version,
)
from codered_env.server.http_sessions import (
    AdmissionRefused,
    HttpSessionStore,
    SessionNotFound,
    StoreWording,
)
from codered_env.server.jobs import RateLimiter
from codered_env.server.journal import Journal, KindJournal
from codered_env.server.mcp_tools import ToolSession, tool_list
from codered_env.server.safe_json import JsonRejected, parse_json

SESSION_HEADER = "Mcp-Session-Id"
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")  # newest first
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
SERVER_ERROR, SESSION_NOT_FOUND, TIMED_OUT = -32000, -32001, -32002
METHODS = "initialize, ping, tools/list, tools/call, openenv/session/create, openenv/session/close"
WORDING = StoreWording(
    id_name="MCP session",
    entries="MCP sessions",
    issued_by="initialize or openenv/session/create on /mcp",
    how_to_start="open a new session (initialize or openenv/session/create)",
    used="used for a tool call",
)
INSTRUCTIONS = (
    "This MCP session is one CodeRedEnv episode ({task_id}, seed {seed}, city {city}): you are the "
    "dispatcher and hospital coordinator of an emergency medical system. Each action tool is one "
    "decision and costs one simulated minute (maintain_plan waits for the next event); view_full_state shows "
    "everything (patients, calls, units, hospitals, roads, legal actions) and costs nothing. Every "
    "result carries reward, done, score and error. No tool resets the episode: open a new session "
    "for a new one (choose it with /mcp?task_id=task2&seed=5&city=100000; default task1, seed 0, "
    "city prakashnagar)."
)


class RpcError(Exception):
    def __init__(self, code: int, message: str, status: int = 200, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.status, self.data = code, message, status, data


def rpc_result(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def rpc_error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _request_id(message: dict[str, Any]) -> str | int | None:
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
        return None
    return request_id


def _bad_id(message: dict[str, Any]) -> dict[str, Any] | None:
    """The error for a request whose ``id`` is not a string or an integer (MCP: never null)."""
    request_id = message.get("id")
    if isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool)):
        return None
    kind = "null" if request_id is None else type(request_id).__name__
    return rpc_error(None, INVALID_REQUEST, f"invalid request id ({kind}): an id must be a string or an "
                     "integer; the request was not executed")


def _rebuild(journal: KindJournal[ToolSession], session_id: str, owner: str, options: dict[str, Any],
             events: list[dict[str, Any]]) -> tuple[ToolSession, bool]:
    tools = ToolSession(CodeRedEnvironment(), resettable=bool(options.get("resettable", True)))
    tools.replay(events)
    tools.env.recorder = journal.recorder(session_id, owner, options)
    used = any(event["op"] in ("step", "shown") for event in events)
    return tools, used


def _episode_choice(source: Any) -> tuple[str, int, str]:
    """task_id, seed and city from query parameters or params (defaults task1, seed 0,
    Prakashnagar)."""
    task_id = source.get("task_id", DEFAULT_TASK_ID)
    seed = source.get("seed", DEFAULT_SEED)
    if isinstance(seed, str):
        if not seed.strip().isdigit() or len(seed.strip()) > 10:
            raise RpcError(INVALID_PARAMS, f"seed must be a non-negative integer, got {seed[:20]!r}")
        seed = int(seed)
    try:
        city = city_key(source.get("city", DEFAULT_CITY))
    except ValueError as exc:
        raise RpcError(INVALID_PARAMS, str(exc)[:300]) from None
    return task_id, seed, city


class McpService:
    """The MCP sessions of one app and the JSON-RPC methods over them."""

    def __init__(
        self, settings: ServerSettings, journal: Journal | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.journal = journal or Journal()
        self.kind_journal: KindJournal[ToolSession] = KindJournal(
            self.journal, "mcp", lambda *args: _rebuild(self.kind_journal, *args)
        )
        self.store: HttpSessionStore[ToolSession] = HttpSessionStore(
            lambda: ToolSession(CodeRedEnvironment()),
            settings.mcp_max_sessions,
            settings.mcp_ttl_s,
            settings.mcp_unused_ttl_s,
            wording=WORDING,
            fresh_grace_s=settings.mcp_fresh_grace_s,
            per_client=settings.mcp_per_client,
            journal=self.kind_journal,
            clock=clock,
        )
        self.limiter = RateLimiter(settings.mcp_sessions_per_minute, what="MCP sessions")
        self.call_timeout_s = settings.mcp_call_timeout_s

    # ------------------------------------------------------------------ sessions

    def open(
        self, client: str, task_id: Any, seed: Any, resettable: bool, city: str = DEFAULT_CITY
    ) -> tuple[str, ToolSession]:
        """A new session playing ``task_id``/``seed`` in ``city`` (validated before anything is stored)."""
        try:
            self.limiter.check(client)
        except HTTPException as exc:
            retry = int((exc.headers or {}).get("Retry-After", "60"))
            raise RpcError(SERVER_ERROR, str(exc.detail), data={"retry_after_s": retry}) from None
        env = CodeRedEnvironment()
        try:
            env.reset(seed=seed, task_id=task_id, city=city)
        except ValueError as exc:
            raise RpcError(INVALID_PARAMS, str(exc)[:300]) from None
        try:
            session = self.store.create(ToolSession(env, resettable=resettable), owner=client)
        except AdmissionRefused as exc:
            raise RpcError(SERVER_ERROR, exc.message, data={"retry_after_s": exc.retry_after_s}) from None
        if self.journal.enabled:  # journal the episode from its reset on
            options = {"resettable": resettable}
            env.recorder = self.kind_journal.recorder(session.episode_id, client, options)
            event = {"op": "reset", "task_id": task_id, "seed": seed, "episode_id": env.episode_id}
            env.recorder(event if city == DEFAULT_CITY else {**event, "city": city})
        return session.episode_id, session.env

    def lookup(self, session_id: str, renew: bool = False) -> ToolSession:
        return self.store.get(session_id, renew=renew).env

    def attach(self, session_id: str) -> ToolSession:
        """The session a ``/ws?session_id=`` connection drives (one connection at a time)."""
        tools = self.lookup(session_id, renew=True)
        if tools.attached:
            raise SessionNotFound(f"MCP session {session_id[:48]!r} already has an attached WebSocket")
        tools.attached = True
        return tools

    # ------------------------------------------------------------------ JSON-RPC

    def handle(
        self, message: Any, client: str, query: Any, header_id: str | None
    ) -> tuple[int, dict[str, Any] | None, dict[str, str]]:
        """``(HTTP status, JSON-RPC answer or None for 202, extra headers)`` for one POST body."""
        if isinstance(message, list):
            batch = "batches are not supported: send one message a request"
            return 200, rpc_error(None, INVALID_REQUEST, batch), {}
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return 200, rpc_error(None, INVALID_REQUEST, "invalid JSON-RPC 2.0 message"), {}
        method = message.get("method")
        if method is None and ("result" in message or "error" in message):
            return 202, None, {}  # a client's answer to a server request: nothing to do
        if not isinstance(method, str):
            return 200, rpc_error(None, INVALID_REQUEST, "'method' must be a string"), {}
        if "id" not in message:
            return 202, None, {}  # notifications (initialized, cancelled, ...) need no answer
        bad_id = _bad_id(message)
        if bad_id is not None:
            return 200, bad_id, {}
        request_id = _request_id(message)
        headers: dict[str, str] = {}
        try:
            params = message.get("params") or {}
            if not isinstance(params, dict):
                raise RpcError(INVALID_PARAMS, "'params' must be an object")
            result = self._method(method, params, client, query, header_id, headers)
        except RpcError as exc:
            return exc.status, rpc_error(request_id, exc.code, exc.message, exc.data), {}
        return 200, rpc_result(request_id, result), headers

    def _method(
        self,
        method: str,
        params: dict[str, Any],
        client: str,
        query: Any,
        header_id: str | None,
        headers: dict[str, str],
    ) -> Any:
        if method == "initialize":
            return self._initialize(params, client, query, headers)
        if method == "openenv/session/create":
            chosen = params if {"task_id", "seed", "city"} & set(params) else query
            task_id, seed, city = _episode_choice(chosen)
            session_id, _ = self.open(client, task_id, seed, resettable=True, city=city)
            return {"session_id": session_id}
        if method == "openenv/session/close":
            return self._close(params)
        if method == "ping":
            return {}
        if method == "tools/list":
            tools, _ = self._session(params, header_id, renew=False, required=False)
            return {"tools": tools.tool_definitions() if tools is not None else list(tool_list())}
        if method == "tools/call":
            return self._call(params, header_id)
        raise RpcError(METHOD_NOT_FOUND, f"unknown method {method[:60]!r}; methods: {METHODS}")

    def _initialize(self, params: dict[str, Any], client: str, query: Any, headers: dict[str, str]) -> Any:
        task_id, seed, city = _episode_choice(query)
        session_id, _ = self.open(client, task_id, seed, resettable=False, city=city)
        headers[SESSION_HEADER] = session_id
        asked = params.get("protocolVersion")
        version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": ENV_NAME, "title": "CodeRedEnv", "version": package_version()},
            "instructions": INSTRUCTIONS.format(task_id=task_id, seed=seed, city=city),
        }

    def _close(self, params: dict[str, Any]) -> Any:
        session_id = params.get("session_id")
        if not isinstance(session_id, str) or not session_id:
            raise RpcError(INVALID_PARAMS, "openenv/session/close needs params.session_id")
        try:
            self.store.close(session_id)
        except SessionNotFound as exc:
            raise RpcError(INVALID_PARAMS, exc.message) from None
        return {"session_id": session_id, "closed": True}

    def _session(
        self, params: dict[str, Any], header_id: str | None, renew: bool, required: bool
    ) -> tuple[ToolSession | None, bool]:
        """The session named by the ``Mcp-Session-Id`` header or ``params.session_id``; the flag
        says whether it was named the OpenEnv way."""
        if header_id is not None:
            try:
                return self.lookup(header_id, renew=renew), False
            except SessionNotFound as exc:  # HTTP 404 tells an MCP client to initialize again
                raise RpcError(SESSION_NOT_FOUND, exc.message, status=404) from None
        session_id = params.get("session_id")
        if session_id is not None:
            if not isinstance(session_id, str):
                raise RpcError(INVALID_PARAMS, "params.session_id must be a string")
            try:
                return self.lookup(session_id, renew=renew), True
            except SessionNotFound as exc:
                raise RpcError(INVALID_PARAMS, exc.message) from None
        if required:
            raise RpcError(
                INVALID_PARAMS,
                "tools/call needs a session: send initialize (then the Mcp-Session-Id header) or "
                "openenv/session/create (then params.session_id)",
            )
        return None, False

    def _call(self, params: dict[str, Any], header_id: str | None) -> Any:
        name = params.get("name")
        if not isinstance(name, str):
            raise RpcError(INVALID_PARAMS, "tools/call needs params.name, the tool's name")
        tools, openenv_style = self._session(params, header_id, renew=True, required=True)
        assert tools is not None
        outcome = tools.call(name, params.get("arguments"))
        result = outcome.call_result()
        if openenv_style:  # MCPToolClient.call_tool returns result["data"]
            result["data"] = outcome.structured
        return result

    def rpc_over_ws(self, message: Any, tools: ToolSession, session_id: str | None) -> dict[str, Any]:
        """A JSON-RPC message of an ``mcp`` frame on ``/ws``: acts on that connection's episode."""
        request_id = _request_id(message) if isinstance(message, dict) else None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return rpc_error(None, INVALID_REQUEST, "'data' of an mcp frame must be a JSON-RPC 2.0 request")
        bad_id = _bad_id(message)
        if bad_id is not None:
            return bad_id
        method, params = message.get("method"), message.get("params") or {}
        if not isinstance(params, dict):
            return rpc_error(request_id, INVALID_PARAMS, "'params' must be an object")
        if method == "tools/list":
            return rpc_result(request_id, {"tools": tools.tool_definitions()})
        if method == "ping":
            return rpc_result(request_id, {})
        if method == "openenv/session/create" and session_id is not None:
            return rpc_result(request_id, {"session_id": session_id})
        if method == "tools/call":
            name = params.get("name")
            if not isinstance(name, str):
                return rpc_error(request_id, INVALID_PARAMS, "tools/call needs params.name, the tool's name")
            return rpc_result(request_id, tools.call(name, params.get("arguments")).call_result())
        shown = repr(method)[:60] if isinstance(method, str) else type(method).__name__
        return rpc_error(request_id, METHOD_NOT_FOUND, f"unknown method {shown} on /ws; methods: tools/list, "
                         "tools/call, ping")


def _timed_out(message: Any, timeout_s: float) -> dict[str, Any]:
    request_id = _request_id(message) if isinstance(message, dict) else None
    return rpc_error(
        request_id, TIMED_OUT,
        f"the server could not answer within {timeout_s:g} s (overloaded); a tools/call may still "
        "take effect: look with view_full_state before repeating it",
        data={"retry_after_s": 5},
    )


def register_mcp_routes(
    app: FastAPI, settings: ServerSettings, journal: Journal | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> McpService:
    service = McpService(settings, journal, clock)

    @app.post("/mcp", tags=["MCP"], summary="MCP JSON-RPC: standard streamable HTTP and OpenEnv sessions")
    async def mcp_post(request: Request) -> Response:
        body = await request.body()
        try:
            message = parse_json(body) if body.strip() else None
        except JsonRejected as exc:
            return JSONResponse(rpc_error(None, PARSE_ERROR, exc.message))
        work = run_in_threadpool(
            service.handle, message, client_of(request), request.query_params,
            request.headers.get(SESSION_HEADER),
        )
        try:
            status, answer, headers = await asyncio.wait_for(work, service.call_timeout_s)
        except asyncio.TimeoutError:
            return JSONResponse(_timed_out(message, service.call_timeout_s), headers={"Retry-After": "5"})
        await service.journal.barrier()
        if answer is None:
            return Response(status_code=status)
        return JSONResponse(answer, status_code=status, headers=headers)

    @app.get("/mcp", tags=["MCP"], summary="No server-initiated stream (405)")
    async def mcp_get() -> Response:
        return JSONResponse(
            {"detail": "this server sends no server-initiated messages: POST JSON-RPC to /mcp"},
            status_code=405,
            headers={"Allow": "POST, DELETE"},
        )

    @app.delete("/mcp", tags=["MCP"], summary="End the MCP session named by Mcp-Session-Id")
    async def mcp_delete(request: Request) -> Response:
        session_id = request.headers.get(SESSION_HEADER)
        if not session_id:
            return JSONResponse({"detail": f"DELETE /mcp needs the {SESSION_HEADER} header"}, status_code=400)
        try:
            service.store.close(session_id)
        except SessionNotFound as exc:
            return JSONResponse({"detail": exc.message}, status_code=404)
        return JSONResponse({"session_id": session_id, "closed": True})

    return service
