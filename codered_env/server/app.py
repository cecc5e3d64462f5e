"""The CodeRedEnv OpenEnv server: ``app`` (FastAPI), ``serve(host, port)`` and ``main()``.

Routes:
* OpenEnv's wire contract, served by CodeRedEnv's own hardened handlers: ``/ws`` (stateful
  WebSocket sessions), ``/health``, ``/metadata``, ``/schema``.
* Stateful HTTP episodes replacing OpenEnv's stateless ones: ``POST /reset``,
  ``POST /step``, ``GET /state`` (see ``episode_routes.py``).
* Benchmark: ``GET /tasks``, ``POST /grader``, ``POST /baseline``; ``GET /view``.

* MCP: ``POST /mcp`` serves the actions as MCP tools to standard MCP clients (streamable HTTP)
  and to OpenEnv's ``MCPToolClient`` (``openenv/session/create``, ``/ws?session_id=``); see
  ``mcp_routes.py``.

* OpenEnv's Task API: ``/list_environments``, ``/codered_env/splits`` ... (``task_api.py``).
Limits (docs/SERVER.md, "Limits") come from environment variables (see ``ServerSettings``).
Live sessions are journaled (``journal.py``) and resumed after a restart; SIGTERM drains
(``shutdown.py``).

Run it with ``server --port 8000``, ``codered serve`` (the same entry point, :func:`serve`; both
bind 127.0.0.1 unless ``--host`` or ``HOST`` says otherwise) or ``python -m codered_env.server.app``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import os
from pathlib import Path
from typing import Annotated, Any

import uvicorn
from fastapi import FastAPI, Header
from fastapi.responses import RedirectResponse
from openenv.core.env_server.types import (
    EnvironmentMetadata,
    HealthResponse,
    HealthStatus,
    SchemaResponse,
    ServerMode,
)

from codered_env.models import CodeRedAction, CodeRedObservation, CodeRedState
from codered_env.server.agent_routes import register_agent_routes
from codered_env.server.benchmark_routes import register_benchmark_routes
from codered_env.server.config import ServerSettings, default_host, default_port
from codered_env.server.environment import (
    DESCRIPTION,
    ENV_NAME,
    CodeRedEnvironment,
    package_version,
)
from codered_env.server.episode_routes import rebuild_episode, register_episode_routes
from codered_env.server.errors import register_error_handlers
from codered_env.server.http_sessions import HttpSessionStore, LeaseClock
from codered_env.server.journal import Journal, KindJournal
from codered_env.server.limits import RequestGuardMiddleware
from codered_env.server.mcp_routes import register_mcp_routes
from codered_env.server.mcp_tools import ToolSession
from codered_env.server.protocol import effective_max_connections, make_protocol, raise_fd_limit
from codered_env.server.shutdown import Drain, DrainingServer, DrainMiddleware, exit_with_wrapper
from codered_env.server.task_api import register_task_routes
from codered_env.server.viewer_routes import register_viewer_routes
from codered_env.server.web_routes import POST_ROUTES as WEB_POST_ROUTES
from codered_env.server.web_routes import register_web_routes
from codered_env.server.ws_routes import CLOSE_RESTART, register_ws_route
from codered_env.server.ws_sessions import WsSessions

logger = logging.getLogger("codered_env.server")
SWEEP_EVERY_S = 60.0  # how often ended sessions' journals are pruned (design choice)

ENDPOINTS = {
    "ws": "WS /ws - OpenEnv sessions: reset / step / state / grade / mcp / close frames",
    "mcp": "POST /mcp - MCP tools (streamable HTTP; /mcp?task_id=task2&seed=5 picks the episode)",
    "reset": "POST /reset - start an HTTP episode (returns episode_id)",
    "step": "POST /step - {action, episode_id}",
    "state": "GET /state?episode_id=",
    "tasks": "GET /tasks",
    "agents": "GET /agents - every agent, and which ones this server runs",
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
    journal = Journal()
    drain = Drain(settings.shutdown_grace_s)
    clock = LeaseClock()
    app.state.lease_clock = clock
    app.state.journal, app.state.drain = journal, drain
    app.state.mcp = register_mcp_routes(app, settings, journal, clock)
    ws_sessions = _ws_sessions(settings, journal)
    app.state.ws_sessions = ws_sessions
    register_ws_route(app, settings, ws_sessions, journal, drain, app.state.mcp)
    drain.close_websockets = lambda: ws_sessions.close_all(CLOSE_RESTART, "server restarting")
    drain.websockets_open = lambda: ws_sessions.active
    _register_openenv_info(app)
    http_journal: KindJournal[CodeRedEnvironment] = KindJournal(
        journal, "http", lambda *args: rebuild_episode(http_journal, *args)
    )
    store: HttpSessionStore[CodeRedEnvironment] = HttpSessionStore(
        CodeRedEnvironment,
        settings.http_max_sessions,
        settings.http_idle_ttl_s,
        settings.http_unstepped_ttl_s,
        fresh_grace_s=settings.http_fresh_grace_s,
        per_client=settings.http_per_client,
        journal=http_journal,
        clock=clock,
    )
    app.state.http_sessions = store
    if _server_mode() is ServerMode.SIMULATION:
        register_episode_routes(app, store, http_journal)
    jobs = register_benchmark_routes(app, settings, store)
    app.state.jobs = jobs
    register_viewer_routes(app)
    register_agent_routes(app)
    register_task_routes(app, ENV_NAME)
    register_web_routes(app, jobs)
    _register_index(app)
    register_error_handlers(app)
    app.add_middleware(
        RequestGuardMiddleware,
        default_max_bytes=settings.max_body_bytes,
        route_max_bytes=dict.fromkeys(("/grader", *WEB_POST_ROUTES), settings.grader_max_body_bytes),
        body_timeout_s=settings.body_timeout_s,
    )
    app.add_middleware(DrainMiddleware, drain=drain)
    app.router.on_startup.append(jobs.start)
    app.router.on_startup.append(functools.partial(_open_journal, app))
    app.router.on_startup.append(functools.partial(_start_lease_clock, app))
    app.router.on_shutdown.append(store.close_all)
    app.router.on_shutdown.append(app.state.mcp.store.close_all)
    app.router.on_shutdown.append(journal.close)
    app.router.on_shutdown.append(jobs.shutdown)
    return app


def _ws_sessions(settings: ServerSettings, journal: Journal) -> WsSessions:
    ws_journal: KindJournal[ToolSession | CodeRedEnvironment] = KindJournal(
        journal, "ws", lambda *args: _rebuild_ws(ws_journal, *args)
    )
    return WsSessions(
        settings.max_concurrent_envs, settings.ws_per_client, settings.ws_evict_idle_s, ws_journal
    )


def _rebuild_ws(
    journal: KindJournal[ToolSession | CodeRedEnvironment], session_id: str, owner: str,
    options: dict[str, Any], events: list[dict[str, Any]],
) -> tuple[ToolSession | CodeRedEnvironment, bool]:
    """A WebSocket session re-built from its journal (with its tool view if it used tools)."""
    env = CodeRedEnvironment()
    restored: ToolSession | CodeRedEnvironment = env
    if any(event["op"] == "shown" for event in events):
        restored = ToolSession(env)
        restored.replay(events)
    else:
        env.replay(events)
    env.recorder = journal.recorder(session_id, owner, options)
    return restored, True


async def _start_lease_clock(app: FastAPI) -> None:
    app.state.lease_ticker = asyncio.get_running_loop().create_task(app.state.lease_clock.run())


def journal_path(settings: ServerSettings, name: str) -> Path | None:
    return None if settings.state_dir is None else settings.state_dir / f"{name}.db"


async def _open_journal(app: FastAPI) -> None:
    """Open the journal (its file is per port: two servers never share one) and start the
    periodic sweep of ended sessions."""
    settings: ServerSettings = app.state.settings
    path = journal_path(settings, getattr(app.state, "journal_name", "server"))
    if path is None:
        return
    lifetimes = {"http": settings.http_idle_ttl_s, "mcp": settings.mcp_ttl_s, "ws": settings.ws_resume_ttl_s}
    if app.state.journal.open(path, lifetimes):
        logger.info("session journal: %s", path)
        app.state.sweeper = asyncio.get_running_loop().create_task(_sweep(app, lifetimes))


async def _sweep(app: FastAPI, lifetimes: dict[str, float]) -> None:
    journal: Journal = app.state.journal
    while True:
        await asyncio.sleep(SWEEP_EVERY_S)
        app.state.http_sessions.purge_expired()
        app.state.mcp.store.purge_expired()
        live = {
            "ws": set(app.state.ws_sessions.live),
            "http": app.state.http_sessions.ids(),
            "mcp": app.state.mcp.store.ids(),
        }
        for kind, ids in live.items():  # in memory: no scan of the log
            journal.expire_detached(kind, lifetimes[kind], ids)
        journal.collect()


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


def serve(host: str | None = None, port: int | None = None, log_level: str = "info") -> None:
    """Serve ``app`` with uvicorn (one process: sessions live in memory and in the journal), with
    the socket cap, header deadline and WebSocket frame limit of ``ServerSettings``; SIGTERM
    drains (``shutdown.py``). ``host`` defaults to ``HOST`` or 127.0.0.1, ``port`` to ``PORT``
    or 8000."""
    host = host or default_host()
    port = port or default_port()
    exit_with_wrapper()
    settings: ServerSettings = app.state.settings
    app.state.journal_name = f"server-{port}"
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
        timeout_graceful_shutdown=5,  # after the drain (Drain.run) has had its own grace
        proxy_headers=False,  # X-Forwarded-For is trusted only from CODERED_TRUSTED_PROXIES
    )
    DrainingServer(config, app.state.drain).run()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="server", description="Serve CodeRedEnv (OpenEnv) over HTTP and WebSocket."
    )
    parser.add_argument("--host", default=None, help="interface to bind (default: HOST or 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="port (default: PORT or 8000)")
    parser.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )
    args = parser.parse_args(argv)
    serve(args.host, args.port, log_level=args.log_level)


if __name__ == "__main__":
    main()
