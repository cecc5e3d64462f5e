"""Stateful HTTP episode routes: ``POST /reset``, ``POST /step``, ``GET /state``.

They keep OpenEnv's request and response shapes (``{"observation", "reward", "done"}``) and
add ``episode_id``, issued by the server on reset. ``/step`` and ``/state`` must name it: there
is no shared default episode. ``POST /reset`` with the ``episode_id`` of a live episode restarts
that episode; any other id is refused (ids are never chosen by clients). Every reset and step is
journaled before it is answered (``journal.py``), so an id keeps working after a restart; a step
may carry ``expect_step`` (the step count the client last saw) so that a retry of a step whose
answer was lost is answered again, not applied twice.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body, FastAPI, HTTPException, Query, Request
from openenv.core.env_server.serialization import serialize_observation
from starlette.concurrency import run_in_threadpool

from codered_env.models import CodeRedObservation, CodeRedState
from codered_env.server.benchmark_routes import client_of
from codered_env.server.environment import CodeRedEnvironment
from codered_env.server.http_sessions import HttpSessionStore
from codered_env.server.journal import Journal, KindJournal
from codered_env.server.schemas import EpisodeResponse, ResetBody, StepBody

TAGS = ["Environment Control"]
_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "The body is not strict JSON (NaN, Infinity, lone surrogates, ...)."},
    404: {"description": "An episode_id this server never issued."},
    408: {"description": "The body did not arrive in time."},
    409: {"description": "expect_step does not match the episode's step count (nothing applied)."},
    410: {"description": "The episode expired or was evicted (the message says which)."},
    413: {"description": "Request body over the size limit."},
    422: {"description": "The body does not match the schema."},
    429: {"description": "This client holds its quota of new, unstepped episodes (Retry-After)."},
    503: {"description": "Every slot holds a new episode within its grace period (Retry-After)."},
}


def rebuild_episode(
    journal: KindJournal[CodeRedEnvironment], session_id: str, owner: str, options: dict[str, Any],
    events: list[dict[str, Any]],
) -> tuple[CodeRedEnvironment, bool]:
    """An HTTP episode re-built from its journal."""
    env = CodeRedEnvironment()
    env.replay(events)
    env.recorder = journal.recorder(session_id, owner, options)
    return env, env.step_count > 0


def _episode_response(observation: CodeRedObservation, episode_id: str) -> dict[str, Any]:
    payload = serialize_observation(observation)
    payload["episode_id"] = episode_id
    return payload


def _step_now(env: CodeRedEnvironment, body: StepBody) -> CodeRedObservation:
    """Apply the step, or answer a retried one again (``expect_step``)."""
    wire = body.action.to_wire()
    if body.expect_step is not None and env.step_count != body.expect_step:
        if env.step_count == body.expect_step + 1 and env.last_step_matches(wire):
            return env.last_step_observation()
        raise HTTPException(
            409,
            f"step count mismatch: the episode is at step {env.step_count}, the request expected "
            f"{body.expect_step}; nothing was applied (GET /state to resynchronise)",
        )
    # the action was validated once, with the body: the simulation gets its parsed form
    return env.step_wire(body.action.sim_action or wire, logged=wire)


def register_episode_routes(
    app: FastAPI,
    store: HttpSessionStore[CodeRedEnvironment],
    journal: KindJournal[CodeRedEnvironment],
) -> None:
    """Add the stateful /reset, /step and /state routes to ``app``."""
    log: Journal = journal.journal

    @app.post(
        "/reset",
        response_model=EpisodeResponse,
        tags=TAGS,
        summary="Start an HTTP episode",
        responses=_ERRORS,
    )
    async def reset(request: Request, body: Annotated[ResetBody | None, Body()] = None) -> dict[str, Any]:
        """Start an episode (an empty body plays task1 with seed 0 in Prakashnagar) and return its new
        ``episode_id`` beside OpenEnv's ``{observation, reward, done}``. With the
        ``episode_id`` of one of your live episodes, restart that episode instead.

        A reset that is never stepped expires quickly; only steps renew an episode's lease.
        """
        body = body or ResetBody()
        if body.episode_id:
            session = store.restarted(body.episode_id)
        else:
            session = store.create(owner=client_of(request))
            if log.enabled:
                session.env.recorder = journal.recorder(session.episode_id, session.owner)
        observation = await run_in_threadpool(
            session.env.reset, seed=body.seed, episode_id=session.episode_id, task_id=body.task_id,
            city=body.city,
        )
        await log.barrier()
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
        observation = await run_in_threadpool(_step_now, session.env, body)
        await log.barrier()
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
