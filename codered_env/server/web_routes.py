"""``GET /web``: the interactive dispatch console, and the small JSON routes it uses.

The page plays a live episode over the OpenEnv ``/ws`` socket and grades it at the end with
``POST /grader {task_id, seed, actions}``. The routes below are pure functions of (task_id,
seed, actions) (see ``codered_env.web.advice``), bounded by the same action cap and body cap as
``/grader``. They run in the server's agent worker processes (``jobs.HeavyJobs``: bounded queue,
cache, per-client rate limit; advice and frames have their own per-minute allowance, one call
per step of play) and come back as JSON text.

* ``GET /web`` and ``GET /web/static/{name}``: the page (``web.ASSETS``: the console's ES modules,
  its style sheet and icon).
* ``GET /web/map?city=``: the city's layout (and its static SVG) plus the task menu (any city:
  Prakashnagar by default, a generated one drawn from its coordinates).
* ``GET /web/actions``: the action catalogue (verbs, help, parameters) the console labels from.
* ``POST /web/advice``: running grade after the actions, and a built-in agent's next action
  (the heuristic's with the rule behind it); autoplay asks it once per step.
* ``POST /web/frames``: replay frames of an action list (a trajectory file's actions).
* ``GET /web/episode``: replay frames of a built-in agent's episode (what ``/view`` shows).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Annotated, Any, Literal

from fastapi import Body, FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from codered_env.city_choice import DEFAULT_CITY, city_key
from codered_env.server.benchmark_routes import BODY_ERRORS, client_of
from codered_env.server.heavy import web_advice, web_episode, web_frames
from codered_env.server.jobs import HeavyJobs
from codered_env.server.schemas import MAX_GRADER_ACTIONS, BuiltinAgent, CityChoice, SeedInt, TaskId
from codered_env.sim.catalogue import catalogue_payload
from codered_env.sim.citygen import resolve_city
from codered_env.viewer import map_layout, render_svg
from codered_env.web import ASSETS, asset
from codered_env.web.advice import task_menu

TAGS = ["Web console"]
StaticAsset = Literal[tuple(ASSETS)]  # type: ignore[valid-type]
NO_STORE = {"Cache-Control": "no-cache"}
# Body caps (``limits.RequestGuardMiddleware``) of the POST routes: the /grader cap, so that
# MAX_GRADER_ACTIONS actions fit.
POST_ROUTES = ("/web/advice", "/web/frames")
HEAVY_ERRORS: dict[int | str, dict[str, Any]] = {
    422: {"description": "Unknown task or agent, or a seed out of range."},
    429: {"description": "Too many uncached agent runs from this client."},
    503: {"description": "Every agent worker is busy and the queue is full."},
}


class PlayedBody(BaseModel):
    """An episode so far: (task_id, seed) and the wire actions sent since reset."""

    model_config = ConfigDict(extra="forbid")

    task_id: TaskId = Field(default="task1", description="Task of the episode.")
    seed: SeedInt = Field(default=0, description="Seed of the episode.")
    city: CityChoice = DEFAULT_CITY
    actions: list[dict[str, Any]] = Field(
        default_factory=list,
        max_length=MAX_GRADER_ACTIONS,
        description="Wire actions sent since reset, in order (refused ones included).",
    )


class AdviceBody(PlayedBody):
    agent: BuiltinAgent = Field(default="heuristic", description="Built-in agent to ask.")


@lru_cache(maxsize=64)
def _map_payload(city: str = DEFAULT_CITY) -> dict[str, Any]:
    chosen = resolve_city(city)
    layout = map_layout(chosen)
    return {"map": {**layout, "svg": render_svg(layout)}, "tasks": task_menu(),
            "city": {"id": chosen.key, "name": chosen.name}}


def _actions_text(actions: list[dict[str, Any]]) -> str:
    """The action list as canonical JSON: hashable, so the job cache can key on it."""
    return json.dumps(actions, sort_keys=True, separators=(",", ":"))


def _json(text: str) -> Response:
    return Response(text, media_type="application/json")


def register_web_routes(app: FastAPI, jobs: HeavyJobs) -> None:
    actions_payload = catalogue_payload()

    @app.get("/web", tags=TAGS, summary="Interactive dispatch console", response_class=HTMLResponse)
    async def web() -> HTMLResponse:
        """Play an episode in the browser (or replay one): the single-page console."""
        return HTMLResponse(asset("index.html"), headers=NO_STORE)

    @app.get("/web/static/{name}", tags=TAGS, summary="The console's script and style sheet")
    async def web_static(name: StaticAsset) -> Response:
        return Response(asset(name), media_type=ASSETS[name], headers=NO_STORE)

    @app.get("/web/map", tags=TAGS, summary="City layout and task menu for the console",
             responses={422: {"description": "An unknown city."}})
    async def web_map(city: Annotated[str, Query(max_length=40)] = DEFAULT_CITY) -> dict[str, Any]:
        """The map of ``city`` (``prakashnagar``, a city seed or ``gen-<seed>``) and the task menu."""
        try:
            key = city_key(city)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        return _map_payload(key)

    @app.get("/web/actions", tags=TAGS, summary="The action catalogue: names, verbs, help, parameters")
    async def web_actions() -> dict[str, Any]:
        """Every action with its console verb, help text, phases and parameters (from
        ``codered_env.sim.catalogue``); the console labels its controls from it."""
        return actions_payload

    @app.post("/web/advice", tags=TAGS, summary="Running grade and the heuristic's suggestion",
              responses=BODY_ERRORS)
    async def web_advice_route(request: Request, body: Annotated[AdviceBody, Body()]) -> Response:
        """Replay the actions, return the running grade (per-patient rows only once the episode
        is over) and what ``agent`` would do now (the heuristic: with the rule behind it).
        Autoplay asks this once per step."""
        text = await jobs.run_console(
            client_of(request), web_advice, body.task_id, body.seed, _actions_text(body.actions), body.agent,
            body.city,
        )
        return _json(text)

    @app.post("/web/frames", tags=TAGS, summary="Replay frames of an action list", responses=BODY_ERRORS)
    async def web_frames_route(request: Request, body: Annotated[PlayedBody, Body()]) -> Response:
        text = await jobs.run_console(
            client_of(request), web_frames, body.task_id, body.seed, _actions_text(body.actions), body.city
        )
        return _json(text)

    @app.get("/web/episode", tags=TAGS, summary="Replay frames of a built-in agent's episode",
             responses=HEAVY_ERRORS)
    async def web_episode_route(
        request: Request,
        task_id: Annotated[TaskId, Query()] = "task5",
        seed: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
        agent: Annotated[BuiltinAgent, Query()] = "heuristic",
        city: Annotated[str, Query(max_length=40)] = DEFAULT_CITY,
    ) -> Response:
        """A whole agent episode (what ``/view`` shows) in ``city``: counts as an agent run."""
        try:
            key = city_key(city)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        return _json(await jobs.run(client_of(request), web_episode, task_id, seed, agent, key))
