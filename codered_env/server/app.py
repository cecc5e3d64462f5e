"""The CodeRedEnv OpenEnv server: ``app`` (FastAPI), ``serve(host, port)`` and ``main()``.

Routes:
* OpenEnv's own: ``/ws`` (stateful WebSocket sessions), ``/health``, ``/metadata``,
  ``/schema``, ``/mcp`` and the task API, registered by ``HTTPEnvServer``.
* Stateful HTTP episodes replacing OpenEnv's stateless ones: ``POST /reset``,
  ``POST /step``, ``GET /state`` (see ``episode_routes.py``).
* Benchmark: ``GET /tasks``, ``POST /grader``, ``POST /baseline``.

Run it with ``server --host 0.0.0.0 --port 8000``, ``codered serve`` or
``python -m codered_env.server.app``. Settings come from environment variables
(see ``ServerSettings``).
"""

from __future__ import annotations

import argparse
import logging
import os
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.types import ConcurrencyConfig, ServerMode

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
from codered_env.server.http_sessions import HttpSessionStore
from codered_env.server.limits import BodySizeLimitMiddleware
from codered_env.server.viewer_routes import register_viewer_routes
from codered_env.server.web_routes import register_web_routes

logger = logging.getLogger("codered_env.server")

ENDPOINTS = {
    "ws": "WS /ws - OpenEnv sessions: reset / step / state / close frames",
    "reset": "POST /reset - start an HTTP episode (returns episode_id)",
    "step": "POST /step - {action, episode_id?}",
    "state": "GET /state?episode_id=",
    "tasks": "GET /tasks",
    "grader": "POST /grader - {task_id, seed, actions} | {episode_id} | {}",
    "baseline": "POST /baseline - {agent, seeds, tasks}",
    "view": "GET /view?task_id=task5&seed=0&agent=heuristic - watch an episode (HTML replay)",
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
    openenv_server = HTTPEnvServer(
        CodeRedEnvironment,
        CodeRedAction,
        CodeRedObservation,
        concurrency_config=ConcurrencyConfig(
            max_concurrent_envs=settings.max_concurrent_envs,
            session_timeout=settings.ws_idle_timeout_s,
        ),
        env_name=ENV_NAME,
        state_cls=CodeRedState,
    )
    # Production mode registers everything except OpenEnv's stateless /reset, /step and
    # /state; the stateful replacements are added below (unless OPENENV_MODE=production).
    openenv_server.register_routes(app, mode=ServerMode.PRODUCTION)
    store: HttpSessionStore[CodeRedEnvironment] = HttpSessionStore(
        CodeRedEnvironment, settings.http_max_sessions, settings.http_idle_ttl_s
    )
    app.state.http_sessions = store
    if _server_mode() is ServerMode.SIMULATION:
        register_episode_routes(app, store)
    jobs = register_benchmark_routes(app, settings, store)
    register_viewer_routes(app, jobs)
    register_web_routes(app, jobs)
    _register_index(app)
    app.add_exception_handler(Exception, _unexpected_error)
    app.add_middleware(BodySizeLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.router.on_shutdown.append(store.close_all)
    return app


def _register_index(app: FastAPI) -> None:
    @app.get("/", tags=["Environment Info"], summary="What this server offers")
    async def index() -> dict[str, Any]:
        return {
            "name": ENV_NAME,
            "version": package_version(),
            "description": DESCRIPTION,
            "endpoints": ENDPOINTS,
        }


async def _unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    logger.exception("unhandled error on %s %s", request.method, request.url.path)
    return JSONResponse(
        {"detail": f"internal error ({type(exc).__name__}); the server state is unchanged"},
        status_code=500,
    )


app = create_codered_app()


def serve(host: str = "0.0.0.0", port: int = 8000, log_level: str = "info") -> None:
    """Serve ``app`` with uvicorn (one process: sessions live in memory)."""
    settings: ServerSettings = app.state.settings
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        ws_max_size=settings.max_body_bytes,
        timeout_graceful_shutdown=5,
    )


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
