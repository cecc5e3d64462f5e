"""A self-contained HTML replay of one CodeRedEnv episode.

``record_frames(task_id, seed, agent)`` (``codered_env.replay``) plays an episode with a built-in
agent and keeps, for every step, only what the agent saw: the observation dict of
``CodeRedSim.observation()`` (without the bulky ``legal_actions``) together with the action taken,
its reward and its error. Frame 0 is the reset observation, with no action.

``render_html(frames, title)`` turns the frames into ONE HTML file (no network access, works
offline): the browser console of ``GET /web`` (``codered_env/web/static``) in replay mode, with
its CSS and JavaScript inlined and the frames as JSON in a non-executable
``<script type="application/json" id="episode-data">`` tag (with the task menu, for the goal
and scoring lines). The server itself never serves this
inlined form (its Content-Security-Policy forbids inline script): ``GET /view`` redirects to
``/web?mode=replay``, which loads the same frames from ``GET /web/episode``.

The map's coordinates live in ``codered_env.citymap``, its SVG in ``codered_env.web.mapsvg``, the
frames in ``codered_env.replay``; this module joins them into the page and is the ``codered view``
command.

Usage::

    uv run codered view --task task4 --seed 0 --agent heuristic --out episode.html
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from .agents import BUILTIN_AGENTS
from .city_choice import DEFAULT_CITY, city_key
from .citymap import ARTERIAL_EDGES as ARTERIAL_EDGES  # re-exported: the map's coordinates
from .citymap import NODE_POSITIONS as NODE_POSITIONS
from .citymap import map_layout
from .replay import OMITTED_KEYS as OMITTED_KEYS  # re-exported with the frame helpers
from .replay import public_view as public_view
from .replay import record_frames
from .sim import TASK_IDS, TASKS
from .sim.city import PRAKASHNAGAR, City
from .sim.citygen import resolve_city
from .web import embed_json as embed_json  # re-exported: the JSON embedding of the replay page
from .web import offline_page
from .web.briefing import task_briefs
from .web.mapsvg import render_svg


# ------------------------------------------------------------------------------------ page
def render_html(frames: list[dict[str, Any]], title: str, city: City = PRAKASHNAGAR) -> str:
    """One self-contained HTML page replaying ``frames`` (as made by ``record_frames``) on the
    map of ``city``: the browser console of ``GET /web`` in replay mode, its CSS and JavaScript
    inlined."""
    if not frames:
        raise ValueError("no frames to render")
    layout = map_layout(city)
    payload = {
        "title": title,
        "map": {**layout, "svg": render_svg(layout)},
        "tasks": list(task_briefs()),
        "frames": frames,
    }
    return offline_page(payload)


def write_replay(task_id: str, seed: int, agent: str, out: Path,
                 city: str = DEFAULT_CITY) -> list[dict[str, Any]]:
    """Record an episode in ``city`` (a canonical name) and write its replay page to ``out``;
    returns the frames."""
    chosen = resolve_city(city)
    frames = record_frames(task_id, seed, agent, city)
    where = "" if chosen is PRAKASHNAGAR else f", {chosen.name} ({city})"
    title = f"{TASKS[task_id].name}: {task_id}, seed {seed}{where}, {agent} agent"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html(frames, title, chosen), encoding="utf-8")
    return frames


def view_command(
    task: Annotated[str, typer.Option(help="task1..task5")] = "task1",
    seed: Annotated[int, typer.Option(min=0)] = 0,
    agent: Annotated[str, typer.Option(help=" or ".join(BUILTIN_AGENTS))] = "heuristic",
    out: Annotated[Path, typer.Option(help="HTML file to write")] = Path("episode.html"),
    city: Annotated[str, typer.Option(
        help="prakashnagar (the fixed city), a city seed (e.g. 100003) or gen-<seed>")] = DEFAULT_CITY,
) -> None:
    """Play one episode and write a self-contained HTML replay to open in any browser."""
    if task not in TASKS:
        raise typer.BadParameter(f"unknown task {task!r}; valid: {', '.join(TASK_IDS)}")
    if agent not in BUILTIN_AGENTS:
        raise typer.BadParameter(f"unknown agent {agent!r}; valid: {', '.join(BUILTIN_AGENTS)}")
    try:
        chosen = city_key(city)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    frames = write_replay(task, seed, agent, out, chosen)
    score = frames[-1]["observation"]["score_preview"]
    typer.echo(f"wrote {out} ({len(frames) - 1} steps, final score {score:.4f})", err=True)
