"""Stateful HTTP episode routes: ``POST /reset``, ``POST /step``, ``GET /state``.

They keep OpenEnv's request and response shapes (``{"observation", "reward", "done"}``) and
add ``episode_id``, issued by the server on reset. ``/step`` and ``/state`` must name it: there
is no shared default episode. ``POST /reset`` with the ``episode_id`` of a live episode restarts
that episode; any other id is refused (ids are never chosen by clients).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body, FastAPI, Query
from openenv.core.env_server.serialization import serialize_observation
from starlette.concurrency import run_in_threadpool

from codered_env.models import CodeRedObservation, CodeRedState
from codered_env.server.environment import CodeRedEnvironment
from codered_env.server.http_sessions import HttpSessionStore
from codered_env.server.schemas import EpisodeResponse, ResetBody, StepBody

TAGS = ["Environment Control"]
_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "The body is not strict JSON (NaN, Infinity, lone surrogates, ...)."},
    404: {"description": "An episode_id this server never issued."},
    408: {"description": "The body did not arrive in time."},
    410: {"description": "The episode expired or was evicted (the message says which)."},
    413: {"description": "Request body over the size limit."},
    422: {"description": "The body does not match the schema."},
}


def _episode_response(observation: CodeRedObservation, episode_id: str) -> dict[str, Any]:
    payload = serialize_observation(observation)
    payload["episode_id"] = episode_id
    return payload


def register_episode_routes(app: FastAPI, store: HttpSessionStore[CodeRedEnvironment]) -> None:
    """Add the stateful /reset, /step and /state routes to ``app``."""

    @app.post(
        "/reset",
        response_model=EpisodeResponse,
        tags=TAGS,
        summary="Start an HTTP episode",
        responses=_ERRORS,
    )
    async def reset(body: Annotated[ResetBody | None, Body()] = None) -> dict[str, Any]:
        """Start an episode (an empty body plays task1 with seed 0) and return its new
        ``episode_id`` beside OpenEnv's ``{observation, reward, done}``. With the
        ``episode_id`` of one of your live episodes, restart that episode instead.

        A reset that is never stepped expires quickly; only steps renew an episode's lease.
        """
        body = body or ResetBody()
        session = store.restarted(body.episode_id) if body.episode_id else store.create()
        observation = await run_in_threadpool(
            session.env.reset, seed=body.seed, episode_id=session.episode_id, task_id=body.task_id
        )
        return _episode_response(observation, session.episode_id)

    @app.post(
        "/step",
        response_model=EpisodeResponse,
        tags=TAGS,
        summary="Take one action in an HTTP episode",
        responses=_ERRORS,
    )
    async def step(body: StepBody) -> dict[str, Any]:
        """Apply ``action`` to the episode ``episode_id``.

        A well-formed action that is illegal now (unknown id, wrong phase, ...) is answered
        with 200 and ``observation.last_action_error``; the world does not change.
        """
        session = store.get(body.episode_id, renew=True)
        observation = await run_in_threadpool(session.env.step, body.action)
        return _episode_response(observation, session.episode_id)

    @app.get(
        "/state",
        response_model=CodeRedState,
        tags=["State Management"],
        summary="State of an HTTP episode",
        responses={k: _ERRORS[k] for k in (404, 410, 422)},
    )
    async def state(
        episode_id: str = Query(
            min_length=1,
            max_length=64,
            description="The id POST /reset returned (reading does not renew it).",
        ),
    ) -> CodeRedState:
        return store.get(episode_id).env.state
