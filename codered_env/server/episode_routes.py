"""Stateful HTTP episode routes: ``POST /reset``, ``POST /step``, ``GET /state``.

They keep OpenEnv's request and response shapes (``{"observation", "reward", "done"}``) and
add ``episode_id``: the reset response carries it at the top level, and ``/step`` and
``/state`` continue the episode it names (or the episode most recently reset over HTTP).
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import Body, FastAPI, Query, Request
from fastapi.responses import JSONResponse
from openenv.core.env_server.serialization import serialize_observation
from starlette.concurrency import run_in_threadpool

from codered_env.models import CodeRedObservation, CodeRedState
from codered_env.server.environment import CodeRedEnvironment, SessionClosedError
from codered_env.server.http_sessions import (
    HttpSessionStore,
    SessionCapacityError,
    SessionNotFound,
)
from codered_env.server.schemas import EpisodeResponse, ResetBody, StepBody

TAGS = ["Environment Control"]
_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "The body could not be read (not UTF-8 JSON)."},
    404: {"description": "Unknown or expired episode_id (the message says which)."},
    413: {"description": "Request body over the size limit."},
    422: {"description": "Malformed JSON or a body that does not match the schema."},
}


def _episode_response(observation: CodeRedObservation, episode_id: str) -> dict[str, Any]:
    payload = serialize_observation(observation)
    payload["episode_id"] = episode_id
    return payload


def register_episode_routes(app: FastAPI, store: HttpSessionStore[CodeRedEnvironment]) -> None:
    """Add the stateful /reset, /step and /state routes and their error handlers to ``app``."""
    _register_error_handlers(app)

    @app.post(
        "/reset",
        response_model=EpisodeResponse,
        tags=TAGS,
        summary="Start an HTTP episode",
        responses={**_ERRORS, 503: {"description": "Every HTTP session slot is in use."}},
    )
    async def reset(body: Annotated[ResetBody | None, Body()] = None) -> dict[str, Any]:
        """Start (or restart) an episode; an empty body plays task1 with seed 0.

        The response is OpenEnv's ``{observation, reward, done}`` plus ``episode_id``.
        """
        body = body or ResetBody()
        episode_id = body.episode_id or str(uuid.uuid4())
        session = store.acquire(episode_id)
        observation = await run_in_threadpool(
            session.env.reset, seed=body.seed, episode_id=episode_id, task_id=body.task_id
        )
        return _episode_response(observation, episode_id)

    @app.post(
        "/step",
        response_model=EpisodeResponse,
        tags=TAGS,
        summary="Take one action in an HTTP episode",
        responses=_ERRORS,
    )
    async def step(body: StepBody) -> dict[str, Any]:
        """Apply ``action`` to the episode ``episode_id`` (default: the latest HTTP reset).

        A well-formed action that is illegal now (unknown id, wrong phase, ...) is answered
        with 200 and ``observation.last_action_error``; the world does not change.
        """
        session = store.get(body.episode_id)
        observation = await run_in_threadpool(session.env.step, body.action)
        return _episode_response(observation, session.episode_id)

    @app.get(
        "/state",
        response_model=CodeRedState,
        tags=["State Management"],
        summary="State of an HTTP episode",
        responses={404: _ERRORS[404], 422: _ERRORS[422]},
    )
    async def state(
        episode_id: str | None = Query(
            default=None,
            min_length=1,
            max_length=255,
            description="Episode to inspect (default: the latest HTTP reset).",
        ),
    ) -> CodeRedState:
        session = store.get(episode_id)
        return session.env.state


def _register_error_handlers(app: FastAPI) -> None:
    async def not_found(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=404)

    async def capacity(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=503, headers={"Retry-After": "5"})

    app.add_exception_handler(SessionNotFound, not_found)
    app.add_exception_handler(SessionClosedError, not_found)
    app.add_exception_handler(SessionCapacityError, capacity)
