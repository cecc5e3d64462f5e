"""A self-contained HTML replay of one CodeRedEnv episode.

``record_frames(task_id, seed, agent)`` (``codered_env.replay``) plays an episode with a built-in
agent and keeps, for every step, only what the agent saw: the observation dict of
``CodeRedSim.observation()`` (without the bulky ``legal_actions``) together with the action taken,
its reward and its error. Frame 0 is the reset observation, with no action.

``render_html(frames, title)`` turns the frames into ONE HTML file (no network access, works
offline): the browser console of ``GET /web`` (``codered_env/web/static``) in replay mode, with
its CSS and JavaScript inlined and the frames as JSON in a non-executable
``<script type="application/json" id="episode-data">`` tag. The server itself never serves this
inlined form (its Content-Security-Policy forbids inline script): ``GET /view`` redirects to
``/web?mode=replay``, which loads the same frames from ``GET /web/episode``.

``NODE_POSITIONS`` is the schematic layout of the city map, shared with ``docs/make_city_map.py``.

Usage::

    uv run codered view --task task4 --seed 0 --agent heuristic --out episode.html
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Annotated, Any

import typer

from .agents import BUILTIN_AGENTS
from .replay import OMITTED_KEYS as OMITTED_KEYS  # re-exported with the frame helpers
from .replay import public_view as public_view
from .replay import record_frames
from .sim import TASK_IDS, TASKS
from .sim.city import EDGES, NODES, RIVERSIDE_EDGES, edge_key
from .web import embed_json as embed_json  # re-exported: the JSON embedding of the replay page
from .web import offline_page

# Schematic positions (x east, y north). Clockwise around the hub N0 from the north-west:
# H2, H1, N6, N5, N4, N2, N1, N8 -- an order in which no two roads cross.
NODE_POSITIONS: dict[str, tuple[float, float]] = {
    "N0": (0.0, 0.0),
    "H1": (0.3, 3.3),
    "N6": (2.5, 1.7),
    "N5": (2.9, -0.1),
    "N7": (6.0, 1.9),
    "N4": (1.9, -2.9),
    "N2": (-1.5, -2.7),
    "N3": (-4.5, -2.0),
    "H3": (-5.4, -3.5),
    "N1": (-2.8, -0.5),
    "N8": (-2.2, 1.1),
    "H2": (-2.7, 3.2),
}
# The NH-48 / Ring Road arterials through the toll plaza N7.
ARTERIAL_EDGES: tuple[tuple[str, str], ...] = (("N4", "N7"), ("N7", "H1"), ("N5", "N7"))

_SCALE = 78.0  # pixels per layout unit
_LEFT, _RIGHT, _TOP, _BOTTOM = -7.4, 7.2, 4.45, -4.55  # layout units shown
_RIVER = (-7.3, -6.4)  # decorative river band (layout x range), west of the flood-prone links
# Where each hospital's status card sits, relative to its node (pixels, top-left corner).
_CARD_OFFSET: dict[str, tuple[int, int]] = {"H1": (112, -62), "H2": (-226, -52), "H3": (52, -34)}


# ------------------------------------------------------------------------------------ map data
def _px(node_id: str) -> tuple[float, float]:
    x, y = NODE_POSITIONS[node_id]
    return round((x - _LEFT) * _SCALE, 1), round((_TOP - y) * _SCALE, 1)


def _road_class(a: str, b: str) -> str:
    key = edge_key(a, b)
    if key in {edge_key(*e) for e in RIVERSIDE_EDGES}:
        return "riverside"
    if key in {edge_key(*e) for e in ARTERIAL_EDGES}:
        return "arterial"
    return "spoke" if "N0" in key else "ring"


def map_layout() -> dict[str, Any]:
    """Pixel positions of nodes, roads and hospital cards, as the page's script uses them."""
    missing = {n.node_id for n in NODES} ^ set(NODE_POSITIONS)
    if missing:
        raise ValueError(f"city.py and NODE_POSITIONS disagree on nodes: {sorted(missing)}")
    nodes = {
        n.node_id: {"x": _px(n.node_id)[0], "y": _px(n.node_id)[1], "name": n.name, "kind": n.kind}
        for n in NODES
    }
    edges = [
        {
            "id": "-".join(edge_key(a, b)),
            "a": a,
            "b": b,
            "minutes": m,
            "label": label,
            "kind": _road_class(a, b),
        }
        for a, b, m, label in EDGES
    ]
    cards = {h: list(offset) for h, offset in _CARD_OFFSET.items()}
    width = round((_RIGHT - _LEFT) * _SCALE)
    height = round((_TOP - _BOTTOM) * _SCALE)
    return {"width": width, "height": height, "nodes": nodes, "edges": edges, "cards": cards}


# ------------------------------------------------------------------------------------ static SVG
def _bank(x: float, ys: list[int]) -> str:
    """Quadratic segments through (x, y) for each y, bending 14 px alternately left and right."""
    segments = []
    for i in range(1, len(ys)):
        bend = 14 if (ys[i] // 120) % 2 else -14
        segments.append(f"Q {x + bend:.0f} {(ys[i - 1] + ys[i]) / 2:.0f} {x:.0f} {ys[i]}")
    return " ".join(segments)


def _svg_river(layout: dict[str, Any]) -> str:
    """A gently meandering band: each bank bends alternately left and right every 120 px."""
    x0, x1 = ((edge - _LEFT) * _SCALE for edge in _RIVER)
    mid, h = (x0 + x1) / 2, layout["height"]
    ys = list(range(0, h + 120, 120))
    path = f"M {x0:.0f} 0 {_bank(x0, ys)} L {x1:.0f} {ys[-1]} {_bank(x1, ys[::-1])} Z"
    return (
        f'<path class="river" d="{path}"/>'
        f'<text class="river-label" x="{mid:.0f}" y="{h / 2:.0f}" '
        f'transform="rotate(-90 {mid:.0f} {h / 2:.0f})">river</text>'
    )


def _svg_road(edge: dict[str, Any], nodes: dict[str, Any]) -> str:
    a, b = nodes[edge["a"]], nodes[edge["b"]]
    mx, my = (a["x"] + b["x"]) / 2, (a["y"] + b["y"]) / 2
    tip = html.escape(f"{edge['label']} ({edge['a']}-{edge['b']}), {edge['minutes']:g} min base")
    return (
        f'<g class="road {edge["kind"]}" id="road-{edge["id"]}">'
        f"<title>{tip}</title>"
        f'<line x1="{a["x"]}" y1="{a["y"]}" x2="{b["x"]}" y2="{b["y"]}"/>'
        f'<text class="road-min" x="{mx:.1f}" y="{my + 4:.1f}">{edge["minutes"]:g}′</text>'
        f'<text class="road-flag" x="{mx:.1f}" y="{my - 10:.1f}"></text>'
        "</g>"
    )


def _svg_node(node_id: str, node: dict[str, Any]) -> str:
    x, y, kind = node["x"], node["y"], node["kind"]
    if kind == "hospital":
        shape = f'<rect x="{x - 19}" y="{y - 19}" width="38" height="38" rx="7"/>'
    else:
        shape = f'<circle cx="{x}" cy="{y}" r="{22 if kind == "hub" else 18}"/>'
    name = html.escape(node["name"])
    return (
        f'<g class="node kind-{kind}" id="node-{node_id}"><title>{node_id} {name} ({kind})</title>'
        f'{shape}<text class="node-id" x="{x}" y="{y + 4}">{node_id}</text>'
        f'<text class="node-name" x="{x}" y="{y + 36}">{name}</text></g>'
    )


def render_svg(layout: dict[str, Any]) -> str:
    """The static map (river, roads, nodes) with empty layers the script fills every frame."""
    nodes = layout["nodes"]
    parts = [
        f'<svg id="map" viewBox="0 0 {layout["width"]} {layout["height"]}" role="img" '
        'aria-label="City map of Prakashnagar">',
        _svg_river(layout),
        '<g id="layer-roads">',
        *(_svg_road(edge, nodes) for edge in layout["edges"]),
        '</g><g id="layer-nodes">',
        *(_svg_node(node_id, node) for node_id, node in nodes.items()),
        '</g><g id="layer-hospitals"></g><g id="layer-people"></g><g id="layer-units"></g></svg>',
    ]
    return "".join(parts)


# ------------------------------------------------------------------------------------ page
def render_html(frames: list[dict[str, Any]], title: str) -> str:
    """One self-contained HTML page replaying ``frames`` (as made by ``record_frames``): the
    browser console of ``GET /web`` in replay mode, its CSS and JavaScript inlined."""
    if not frames:
        raise ValueError("no frames to render")
    layout = map_layout()
    payload = {"title": title, "map": {**layout, "svg": render_svg(layout)}, "frames": frames}
    return offline_page(payload)


def write_replay(task_id: str, seed: int, agent: str, out: Path) -> list[dict[str, Any]]:
    """Record an episode and write its replay page to ``out``; returns the frames."""
    frames = record_frames(task_id, seed, agent)
    title = f"{TASKS[task_id].name}: {task_id}, seed {seed}, {agent} agent"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html(frames, title), encoding="utf-8")
    return frames


def view_command(
    task: Annotated[str, typer.Option(help="task1..task5")] = "task1",
    seed: Annotated[int, typer.Option(min=0)] = 0,
    agent: Annotated[str, typer.Option(help="noop, random or heuristic")] = "heuristic",
    out: Annotated[Path, typer.Option(help="HTML file to write")] = Path("episode.html"),
) -> None:
    """Play one episode and write a self-contained HTML replay to open in any browser."""
    if task not in TASKS:
        raise typer.BadParameter(f"unknown task {task!r}; valid: {', '.join(TASK_IDS)}")
    if agent not in BUILTIN_AGENTS:
        raise typer.BadParameter(f"unknown agent {agent!r}; valid: {', '.join(BUILTIN_AGENTS)}")
    frames = write_replay(task, seed, agent, out)
    score = frames[-1]["observation"]["score_preview"]
    typer.echo(f"wrote {out} ({len(frames) - 1} steps, final score {score:.4f})", err=True)
