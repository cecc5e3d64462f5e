"""The CodeRedEnv OpenEnv server: ``app`` (FastAPI), ``serve(host, port)`` and ``main()``.

Routes:
* OpenEnv's wire contract, served by CodeRedEnv's own hardened handlers: ``/ws`` (stateful
  WebSocket sessions), ``/health``, ``/metadata``, ``/schema``.
* Stateful HTTP episodes replacing OpenEnv's stateless ones: ``POST /reset``,
  ``POST /step``, ``GET /state`` (see ``episode_routes.py``).
* Benchmark: ``GET /tasks``, ``POST /grader``, ``POST /baseline``; ``GET /view``.

OpenEnv's task API (``/{env}/splits`` ...) is not registered (CodeRedEnv has no task splits),
and ``POST /mcp`` is a stateless JSON-RPC stub: CodeRedEnv has no MCP tools, and OpenEnv's
handler let any client hold session slots for minutes (``openenv validate`` requires ``/mcp``
to answer JSON-RPC, so it answers, but holds nothing).
Limits (docs/SERVER.md, "Limits") come from environment variables (see ``ServerSettings``).

Run it with ``server --host 0.0.0.0 --port 8000``, ``codered serve`` or
``python -m codered_env.server.app``.
"""

from __future__ import annotations

import argparse
import logging
import os
from typing import Annotated, Any

import uvicorn
from fastapi import Body, FastAPI, Header
from fastapi.responses import RedirectResponse
from openenv.core.env_server.types import (
    EnvironmentMetadata,
    HealthResponse,
    HealthStatus,
    SchemaResponse,
    ServerMode,
)

from codered_env.models import CodeRedAction, CodeRedObservation, CodeRedState
from codered_env.server.benchmark_routes import register_benchmark_routes
from codered_env.server.config import ServerSettings
from codered_env.server.environment import (
    DESCRIPTION,
    ENV_NAME,
    CodeRedEnvironment,
    package_version,
)
from codered_env.server.episode_routes import register_episode_routes
from codered_env.server.errors import register_error_handlers
from codered_env.server.http_sessions import HttpSessionStore
from codered_env.server.limits import RequestGuardMiddleware
from codered_env.server.protocol import effective_max_connections, make_protocol, raise_fd_limit
from codered_env.server.viewer_routes import register_viewer_routes
from codered_env.server.web_routes import POST_ROUTES as WEB_POST_ROUTES
from codered_env.server.web_routes import register_web_routes
from codered_env.server.ws_routes import register_ws_route

logger = logging.getLogger("codered_env.server")

ENDPOINTS = {
    "ws": "WS /ws - OpenEnv sessions: reset / step / state / grade / close frames",
    "reset": "POST /reset - start an HTTP episode (returns episode_id)",
    "step": "POST /step - {action, episode_id}",
    "state": "GET /state?episode_id=",
    "tasks": "GET /tasks",
    "grader": "POST /grader - {task_id, seed, actions} | {episode_id} (HTTP episode) | {}",
    "baseline": "POST /baseline - {agent, seeds, tasks}",
    "view": "GET /view?task_id=task5&seed=0&agent=heuristic - replay (redirects to /web)",
    "web": "GET /web - play an episode in the browser (dispatch console; replay mode too)",
    "schema": "GET /schema",
    "metadata": "GET /metadata",
    "health": "GET /health",
    "docs": "GET /docs",
}


def _server_mode() -> ServerMode:
    raw = os.environ.get("OPENENV_MODE", ServerMode.SIMULATION.value).strip().lower()
    return ServerMode.PRODUCTION if raw == ServerMode.PRODUCTION.value else ServerMode.SIMULATION


def create_codered_app(settings: ServerSettings | None = None) -> FastAPI:
    """Build the FastAPI app (one call = one independent server state)."""
    settings = settings or ServerSettings.from_env()
    app = FastAPI(title="CodeRedEnv", version=package_version(), description=DESCRIPTION)
    app.state.settings = settings
    app.state.ws_sessions = register_ws_route(app, settings)
    _register_openenv_info(app)
    _register_mcp_stub(app)
    store: HttpSessionStore[CodeRedEnvironment] = HttpSessionStore(
        CodeRedEnvironment,
        settings.http_max_sessions,
        settings.http_idle_ttl_s,
        settings.http_unstepped_ttl_s,
    )
    app.state.http_sessions = store
    if _server_mode() is ServerMode.SIMULATION:
        register_episode_routes(app, store)
    jobs = register_benchmark_routes(app, settings, store)
    app.state.jobs = jobs
    register_viewer_routes(app)
    register_web_routes(app, jobs)
    _register_index(app)
    register_error_handlers(app)
    app.add_middleware(
        RequestGuardMiddleware,
        default_max_bytes=settings.max_body_bytes,
        route_max_bytes=dict.fromkeys(("/grader", *WEB_POST_ROUTES), settings.grader_max_body_bytes),
        body_timeout_s=settings.body_timeout_s,
    )
    app.router.on_startup.append(jobs.start)
    app.router.on_shutdown.append(store.close_all)
    app.router.on_shutdown.append(jobs.shutdown)
    return app


MCP_NO_TOOLS = (
    "CodeRedEnv serves no MCP tools and no MCP sessions; play episodes over the WebSocket /ws "
    "(or the HTTP /reset and /step)"
)


def _rpc_error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _register_mcp_stub(app: FastAPI) -> None:
    """``POST /mcp``: JSON-RPC answers without state (``tools/list`` is empty)."""

    @app.post("/mcp", tags=["Environment Info"], summary="MCP JSON-RPC (no tools; stateless)")
    async def mcp(body: Annotated[Any, Body()] = None) -> dict[str, Any]:
        if (
            not isinstance(body, dict)
            or body.get("jsonrpc") != "2.0"
            or not isinstance(body.get("method"), str)
        ):
            return _rpc_error(None, -32600, "invalid JSON-RPC 2.0 request")
        request_id = body.get("id")
        if not isinstance(request_id, (str, int)) or isinstance(request_id, bool):
            request_id = None
        if body["method"] == "tools/list":
            return {"jsonrpc": "2.0", "id": request_id, "result": {"tools": []}}
        return _rpc_error(request_id, -32601, MCP_NO_TOOLS)


def _register_openenv_info(app: FastAPI) -> None:
    """OpenEnv's /health, /metadata and /schema, same paths and shapes."""
    metadata = CodeRedEnvironment().get_metadata()
    schemas = SchemaResponse(
        action=CodeRedAction.model_json_schema(),
        observation=CodeRedObservation.model_json_schema(),
        reset_observation=CodeRedObservation.model_json_schema(),
        state=CodeRedState.model_json_schema(),
    )

    @app.get("/health", response_model=HealthResponse, tags=["Health"], summary="Health check")
    async def health() -> HealthResponse:
        return HealthResponse(status=HealthStatus.HEALTHY)

    @app.get(
        "/metadata",
        response_model=EnvironmentMetadata,
        tags=["Environment Info"],
        summary="Environment metadata",
    )
    async def get_metadata() -> EnvironmentMetadata:
        return metadata

    @app.get(
        "/schema",
        response_model=SchemaResponse,
        tags=["Schema"],
        summary="Action, observation and state JSON schemas",
    )
    async def get_schemas() -> SchemaResponse:
        return schemas


def wants_html(accept: str | None) -> bool:
    """A browser navigation (``Accept: text/html,...``), not an API client (JSON or ``*/*``)."""
    return "text/html" in (accept or "").lower()


def _register_index(app: FastAPI) -> None:
    @app.get("/", tags=["Environment Info"], summary="What this server offers",
             response_model=None)
    async def index(accept: Annotated[str | None, Header()] = None) -> dict[str, Any] | RedirectResponse:
        if wants_html(accept):  # a Space visitor: open the console, not the endpoint list
            return RedirectResponse("/web", status_code=307)
        return {
            "name": ENV_NAME,
            "version": package_version(),
            "description": DESCRIPTION,
            "endpoints": ENDPOINTS,
        }


app = create_codered_app()


def serve(host: str = "0.0.0.0", port: int = 8000, log_level: str = "info") -> None:
    """Serve ``app`` with uvicorn (one process: sessions live in memory), with the socket cap,
    header deadline and WebSocket frame limit of ``ServerSettings``."""
    settings: ServerSettings = app.state.settings
    fd_limit = raise_fd_limit()
    max_connections = effective_max_connections(settings.max_connections, fd_limit)
    logging.getLogger("uvicorn.error").info(
        "open-file limit %d: at most %d sockets at once", fd_limit, max_connections
    )
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        http=make_protocol(settings.header_timeout_s, max_connections),
        ws_max_size=settings.ws_max_frame_bytes,
        limit_concurrency=max_connections + 1,  # uvicorn answers 503 at >= this
        timeout_keep_alive=5,
        timeout_graceful_shutdown=5,
    )
    uvicorn.Server(config).run()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="server", description="Serve CodeRedEnv (OpenEnv) over HTTP and WebSocket."
    )
    parser.add_argument("--host", default=os.environ.get("HOST", "0.0.0.0"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )
    args = parser.parse_args(argv)
    serve(args.host, args.port, log_level=args.log_level)


if __name__ == "__main__":
    main()
