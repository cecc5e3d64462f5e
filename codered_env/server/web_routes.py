"""``GET /web``: the interactive dispatch console, and the small JSON routes it uses.

The page plays a live episode over the OpenEnv ``/ws`` socket. The routes below are pure
functions of (task_id, seed, actions) (see ``codered_env.web.advice``), bounded by the same
action cap as ``/grader``; agent runs share the server's heavy-job pool.

* ``GET /web`` and ``GET /web/static/{console.js,console.css}``: the page.
* ``GET /web/map``: the city layout (and its static SVG) plus the task menu.
* ``POST /web/advice``: running grade after the actions, and a built-in agent's next action
  (the heuristic's with the rule behind it); autoplay asks it once per step.
* ``POST /web/frames``: replay frames of an action list (a trajectory file's actions).
* ``GET /web/episode``: replay frames of a built-in agent's episode (what ``/view`` shows).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Body, FastAPI, Query
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from codered_env.server.benchmark_routes import BODY_ERRORS, HeavyJobs
from codered_env.server.schemas import MAX_GRADER_ACTIONS, BuiltinAgent, SeedInt, TaskId
from codered_env.viewer import map_layout, record_frames, render_svg
from codered_env.web import ASSETS, asset
from codered_env.web.advice import advice, replay_frames, task_menu

TAGS = ["Web console"]
NO_STORE = {"Cache-Control": "no-cache"}


class PlayedBody(BaseModel):
    """An episode so far: (task_id, seed) and the wire actions sent since reset."""

    model_config = ConfigDict(extra="forbid")

    task_id: TaskId = Field(default="task1", description="Task of the episode.")
    seed: SeedInt = Field(default=0, description="Seed of the episode.")
    actions: list[dict[str, Any]] = Field(
        default_factory=list,
        max_length=MAX_GRADER_ACTIONS,
        description="Wire actions sent since reset, in order (refused ones included).",
    )


class AdviceBody(PlayedBody):
    agent: BuiltinAgent = Field(default="heuristic", description="Built-in agent to ask.")


def _map_payload() -> dict[str, Any]:
    layout = map_layout()
    return {"map": {**layout, "svg": render_svg(layout)}, "tasks": task_menu()}


def register_web_routes(app: FastAPI, jobs: HeavyJobs) -> None:
    map_payload = _map_payload()

    @app.get("/web", tags=TAGS, summary="Interactive dispatch console", response_class=HTMLResponse)
    async def web() -> HTMLResponse:
        """Play an episode in the browser (or replay one): the single-page console."""
        return HTMLResponse(asset("index.html"), headers=NO_STORE)

    @app.get("/web/static/{name}", tags=TAGS, summary="The console's script and style sheet")
    async def web_static(name: Literal["console.js", "console.css", "favicon.svg"]) -> Response:
        return Response(asset(name), media_type=ASSETS[name], headers=NO_STORE)

    @app.get("/web/map", tags=TAGS, summary="City layout and task menu for the console")
    async def web_map() -> dict[str, Any]:
        return map_payload

    @app.post("/web/advice", tags=TAGS, summary="Running grade and the heuristic's suggestion",
              responses=BODY_ERRORS)
    async def web_advice(body: Annotated[AdviceBody, Body()]) -> dict[str, Any]:
        """Replay the actions, return the running grade (per-patient rows only once the episode
        is over) and what ``agent`` would do now (the heuristic: with the rule behind it).
        Autoplay asks this once per step."""
        return await jobs.run(advice, body.task_id, body.seed, body.actions, body.agent)

    @app.post("/web/frames", tags=TAGS, summary="Replay frames of an action list", responses=BODY_ERRORS)
    async def web_frames(body: Annotated[PlayedBody, Body()]) -> dict[str, Any]:
        frames = await jobs.run(replay_frames, body.task_id, body.seed, body.actions)
        return {"frames": frames}

    @app.get("/web/episode", tags=TAGS, summary="Replay frames of a built-in agent's episode")
    async def web_episode(
        task_id: Annotated[TaskId, Query()] = "task5",
        seed: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
        agent: Annotated[BuiltinAgent, Query()] = "heuristic",
    ) -> dict[str, Any]:
        frames = await jobs.run(record_frames, task_id, seed, agent)
        return {"frames": frames, "agent": agent}
