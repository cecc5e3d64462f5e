"""A self-contained HTML replay of one CodeRedEnv episode.

``record_frames(task_id, seed, agent)`` plays an episode with a built-in agent and keeps, for every
step, only what the agent saw: the observation dict of ``CodeRedSim.observation()`` (without the
bulky ``legal_actions``) together with the action taken, its reward and its error. Frame 0 is the
reset observation, with no action.

``render_html(frames, title)`` turns the frames into ONE HTML file with inline CSS, JavaScript and
SVG (no network access, works offline): the city map with road states, hospital load and
readiness, ambulances by status, patients and calls by priority, a side panel with the clock,
score, action, events and alerts, and playback controls. The frames travel inside the page as
JSON in a ``<script type="application/json" id="episode-data">`` tag.

``NODE_POSITIONS`` is the schematic layout of the city map, shared with ``docs/make_city_map.py``.

Usage::

    uv run codered view --task task4 --seed 0 --agent heuristic --out episode.html
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from .agents import BUILTIN_AGENTS, Agent, make_agent
from .sim import TASK_IDS, TASKS, CodeRedSim
from .sim.city import EDGES, NODES, RIVERSIDE_EDGES, edge_key

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
# Observation keys left out of the frames: the legal-action menu is large and not drawn.
OMITTED_KEYS: tuple[str, ...] = ("legal_actions",)

_SCALE = 78.0  # pixels per layout unit
_LEFT, _RIGHT, _TOP, _BOTTOM = -7.4, 7.2, 4.45, -4.55  # layout units shown
_RIVER = (-7.3, -6.4)  # decorative river band (layout x range), west of the flood-prone links
# Where each hospital's status card sits, relative to its node (pixels, top-left corner).
_CARD_OFFSET: dict[str, tuple[int, int]] = {"H1": (112, -62), "H2": (-226, -52), "H3": (52, -34)}


# ------------------------------------------------------------------------------------ frames
def public_view(observation: dict[str, Any]) -> dict[str, Any]:
    """The observation as stored in a frame: a JSON-only deep copy minus ``OMITTED_KEYS``."""
    kept = {k: v for k, v in observation.items() if k not in OMITTED_KEYS}
    return json.loads(json.dumps(kept, allow_nan=False))


def _frame(observation: dict[str, Any], action: Any, reward: float | None, error: str | None) -> dict:
    return {
        "observation": public_view(observation),
        "action": json.loads(json.dumps(action, default=repr)),
        "reward": reward,
        "error": error,
    }


def record_frames(task_id: str, seed: int, agent: str | Agent = "heuristic") -> list[dict[str, Any]]:
    """Play (task, seed) with ``agent`` (a built-in name or an Agent) and keep what it saw.

    Returns one frame per observation: ``{"observation", "action", "reward", "error"}``; frame 0
    is the reset observation (action, reward and error are None), frame n follows step n.
    """
    player = make_agent(agent, seed) if isinstance(agent, str) else agent
    sim = CodeRedSim(task_id, seed)
    player.reset(task_id, seed)
    observation = sim.observation()
    frames = [_frame(observation, None, None, None)]
    while not sim.done:
        action = player.act(observation)
        result = sim.step(action)
        observation = sim.observation()
        frames.append(_frame(observation, action, result.reward, result.error))
    return frames


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
def embed_json(payload: Any) -> str:
    """JSON safe inside a <script> element: '<', '>' and '&' are written as \\u escapes, so no
    '</script>' or '<!--' can end the element early; JSON.parse reads it back unchanged."""
    text = json.dumps(payload, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_html(frames: list[dict[str, Any]], title: str) -> str:
    """One self-contained HTML page replaying ``frames`` (as made by ``record_frames``)."""
    if not frames:
        raise ValueError("no frames to render")
    layout = map_layout()
    payload = {"title": title, "map": layout, "frames": frames}
    first = frames[0]["observation"]
    subtitle = f"{first['task_id']} · seed {first['seed']} · phase {first['phase']}"
    return _PAGE.format(
        title=html.escape(title),
        subtitle=html.escape(subtitle),
        css=_CSS,
        svg=render_svg(layout),
        legend=_LEGEND,
        data=embed_json(payload),
        js=_JS,
        **_ICONS,
    )


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


# ------------------------------------------------------------------------------------ assets
_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
<header>
  <h1>{title}</h1>
  <p class="subtitle">{subtitle}: replay of what the agent saw, one decision per step</p>
</header>
<main>
  <section class="map-column">
    <div class="card map-card">{svg}</div>
    <div class="card controls">
      <button id="first" title="first step (Home)" aria-label="first step">{icon_first}</button>
      <button id="prev" title="previous step (←)" aria-label="previous step">{icon_prev}</button>
      <button id="play" class="primary" title="play / pause (space)">
        {icon_play}<span id="play-text">Play</span></button>
      <button id="next" title="next step (→)" aria-label="next step">{icon_next}</button>
      <button id="last" title="last step (End)" aria-label="last step">{icon_last}</button>
      <input id="slider" type="range" min="0" max="0" value="0" aria-label="step">
      <label>speed
        <select id="speed">
          <option value="1">1 step/s</option>
          <option value="2" selected>2 steps/s</option>
          <option value="4">4 steps/s</option>
          <option value="8">8 steps/s</option>
        </select>
      </label>
    </div>
    <div class="card legend">{legend}</div>
  </section>
  <aside class="panel">
    <div class="card status">
      <div class="clock-row">
        <div><div class="label">clock</div><div id="clock" class="big">t+0 min</div></div>
        <div><div class="label">step</div><div id="step" class="big">0</div></div>
        <div><div class="label">score preview</div><div id="score" class="big">0.000</div></div>
      </div>
      <div class="bar"><div id="clock-bar"></div></div>
      <div id="status-line" class="muted"></div>
      <div id="done-banner" hidden></div>
    </div>
    <div class="card">
      <h2>Action</h2>
      <div id="action"></div>
      <div id="reward" class="muted"></div>
      <div id="error" class="error" hidden></div>
    </div>
    <div class="card"><h2>Events this step</h2><ul id="events" class="log"></ul></div>
    <div class="card"><h2>Alerts</h2><ul id="alerts" class="log alerts"></ul></div>
    <div class="card"><h2>Open calls</h2><ul id="calls" class="rows"></ul></div>
    <div class="card"><h2>Patients</h2><ul id="patients" class="rows"></ul></div>
    <div class="card"><h2>Mutual aid</h2><div id="mutual-aid" class="muted"></div></div>
  </aside>
</main>
<script type="application/json" id="episode-data">{data}</script>
<script>{js}</script>
</body>
</html>
"""


def _icon(path: str, element_id: str = "") -> str:
    ident = f' id="{element_id}"' if element_id else ""
    return f'<svg class="icon" viewBox="0 0 16 16" aria-hidden="true"><path{ident} d="{path}"/></svg>'


_ICONS = {
    "icon_first": _icon("M2 3 H4 V13 H2 Z M14 3 L5 8 L14 13 Z"),
    "icon_prev": _icon("M12 3 L4 8 L12 13 Z"),
    "icon_play": _icon("M4 2 L14 8 L4 14 Z", "play-icon"),
    "icon_next": _icon("M4 3 L12 8 L4 13 Z"),
    "icon_last": _icon("M2 3 L11 8 L2 13 Z M12 3 H14 V13 H12 Z"),
}

_LEGEND = """
<div class="legend-group"><span class="legend-title">Ambulances</span>
  <span class="chip st-available">available</span><span class="chip st-en_route">en route</span>
  <span class="chip st-on_scene">on scene</span><span class="chip st-transporting">transporting</span>
  <span class="chip st-at_hospital">at hospital</span><span class="chip st-returning">returning</span>
  <span class="chip st-available ma">mutual aid</span></div>
<div class="legend-group"><span class="legend-title">Patients ● / calls ◆</span>
  <span class="dot pr-P1"></span>P1 immediate <span class="dot pr-P2"></span>P2 urgent
  <span class="dot pr-P3"></span>P3 non-urgent <span class="dot pr-P4"></span>P4 advice
  <span class="dot pr-none"></span>call not triaged <span class="dot deceased"></span>deceased</div>
<div class="legend-group"><span class="legend-title">Roads</span>
  <span class="swatch spoke"></span>hub spoke <span class="swatch ring"></span>ring link
  <span class="swatch arterial"></span>NH-48 / Ring Road <span class="swatch riverside"></span>flood-prone
  <span class="swatch closed"></span>closed <span class="swatch congested"></span>congested
  <span class="muted">· numbers on roads: base minutes</span></div>
<div class="legend-group"><span class="legend-title">Hospitals</span>
  ED load bar · OR squares <span class="sq or-idle"></span>idle <span class="sq or-preparing"></span>preparing
  <span class="sq or-ready"></span>ready <span class="sq or-in_use"></span>in use
  <span class="sq or-out_of_service"></span>out of service · specialists
  <span class="sp sp-on_call">C</span>on call <span class="sp sp-paged">C</span>paged
  <span class="sp sp-present">C</span>present <span class="sp sp-unavailable">C</span>unavailable</div>
"""

_CSS = r"""
:root {
  --bg: #eef1f5; --card: #ffffff; --ink: #1f2937; --muted: #6b7280; --line: #e5e7eb;
  --p1: #dc2626; --p2: #f97316; --p3: #eab308; --p4: #22c55e; --pnone: #9ca3af;
  --available: #16a34a; --en_route: #ea580c; --on_scene: #dc2626; --transporting: #7c3aed;
  --at_hospital: #2563eb; --returning: #64748b;
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header { background: #1e293b; color: #f8fafc; padding: 12px 20px; }
header h1 { margin: 0; font-size: 19px; font-weight: 600; }
header .subtitle { margin: 2px 0 0; color: #cbd5e1; font-size: 13px; }
main { display: grid; grid-template-columns: minmax(0, 1fr) 390px; gap: 14px; padding: 14px; }
.card { background: var(--card); border-radius: 10px; padding: 10px 12px; margin-bottom: 12px;
  box-shadow: 0 1px 3px rgba(15, 23, 42, 0.12); }
.card h2 { margin: 0 0 6px; font-size: 12px; text-transform: uppercase; letter-spacing: 0.06em;
  color: var(--muted); }
.map-card { padding: 4px; }
#map { width: 100%; height: auto; display: block; }
.panel { max-height: calc(100vh - 100px); overflow-y: auto; position: sticky; top: 14px; }
.muted { color: var(--muted); }
.label { font-size: 11px; text-transform: uppercase; letter-spacing: 0.05em; color: var(--muted); }
.big { font-size: 24px; font-weight: 650; font-variant-numeric: tabular-nums; }
.clock-row { display: flex; justify-content: space-between; gap: 8px; }
.bar { height: 6px; background: var(--line); border-radius: 3px; margin: 8px 0 6px; overflow: hidden; }
.bar > div { height: 100%; width: 0; background: #3b82f6; transition: width 0.25s; }
#done-banner { margin-top: 8px; padding: 6px 8px; border-radius: 6px; background: #dcfce7;
  color: #14532d; font-weight: 600; }
.error { margin-top: 6px; padding: 6px 8px; border-radius: 6px; background: #fee2e2; color: #991b1b; }
.action-type { font-weight: 650; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.param { display: inline-block; margin: 3px 4px 0 0; padding: 1px 6px; border-radius: 4px;
  background: #f1f5f9; font: 12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.reward-pos { color: #15803d; } .reward-neg { color: #b91c1c; }
ul.log, ul.rows { list-style: none; margin: 0; padding: 0; }
ul.log li { padding: 3px 0; border-bottom: 1px solid var(--line); font-size: 12.5px; }
ul.log li:last-child, ul.rows li:last-child { border-bottom: 0; }
ul.alerts li { color: #9a3412; }
ul.rows li { display: flex; gap: 8px; align-items: flex-start; padding: 4px 0;
  border-bottom: 1px solid var(--line); font-size: 12.5px; }
ul.rows .id { font-weight: 650; min-width: 30px; }
ul.rows .detail { flex: 1; }
.empty { color: var(--muted); font-style: italic; font-size: 12.5px; }
.controls { display: flex; align-items: center; gap: 8px; flex-wrap: wrap; }
.controls button { border: 1px solid #cbd5e1; background: #f8fafc; border-radius: 6px; padding: 5px 10px;
  font-size: 14px; cursor: pointer; color: var(--ink); }
.controls button:hover { background: #e2e8f0; }
.controls button.primary { background: #2563eb; border-color: #2563eb; color: #fff; min-width: 92px; }
.controls button:disabled { opacity: 0.4; cursor: default; }
.icon { width: 14px; height: 14px; vertical-align: -2px; fill: currentColor; }
#play .icon { margin-right: 6px; }
.controls input[type=range] { flex: 1; min-width: 160px; }
.controls select { margin-left: 4px; }
.legend { font-size: 12.5px; }
.legend-group { margin: 3px 0; }
.legend-title { font-weight: 650; margin-right: 6px; }
.chip { display: inline-block; padding: 0 6px; margin-right: 4px; border-radius: 4px; color: #fff;
  font-size: 11.5px; font-weight: 600; }
.chip.ma { border: 1.5px dashed #0f172a; }
.dot, .sq, .swatch, .sp { display: inline-block; vertical-align: middle; margin: 0 3px 0 8px; }
.dot { width: 11px; height: 11px; border-radius: 50%; }
.dot.deceased { background: #111827; }
.sq { width: 10px; height: 10px; border-radius: 2px; }
.swatch { width: 22px; height: 4px; border-radius: 2px; }
.swatch.spoke { background: #64748b; } .swatch.ring { background: #b6bcc6; }
.swatch.arterial { background: #e07b24; }
.swatch.riverside { background: repeating-linear-gradient(90deg, #3b8fd9 0 6px, transparent 6px 9px); }
.swatch.closed { background: repeating-linear-gradient(90deg, #dc2626 0 3px, transparent 3px 7px); }
.swatch.congested { background: #f59e0b; height: 7px; }
.sp { font-size: 10px; font-weight: 700; width: 14px; height: 14px; line-height: 14px; text-align: center;
  border-radius: 3px; }
.st-available { background: var(--available); } .st-en_route { background: var(--en_route); }
.st-on_scene { background: var(--on_scene); } .st-transporting { background: var(--transporting); }
.st-at_hospital { background: var(--at_hospital); } .st-returning { background: var(--returning); }
.pr-P1 { background: var(--p1); } .pr-P2 { background: var(--p2); } .pr-P3 { background: var(--p3); }
.pr-P4 { background: var(--p4); } .pr-none { background: var(--pnone); }
.or-idle { background: #d1d5db; } .or-preparing { background: #f59e0b; } .or-ready { background: #16a34a; }
.or-in_use { background: #2563eb; } .or-out_of_service { background: #111827; }
.sp-on_call { background: #e5e7eb; color: #374151; } .sp-paged { background: #fde68a; color: #78350f; }
.sp-present { background: #16a34a; color: #fff; }
.sp-unavailable { background: #fee2e2; color: #991b1b; text-decoration: line-through; }
.vitals { display: inline-block; width: 46px; height: 6px; background: var(--line); border-radius: 3px;
  vertical-align: middle; overflow: hidden; margin-left: 4px; }
.vitals > span { display: block; height: 100%; }
.tag { display: inline-block; padding: 0 5px; border-radius: 4px; font-size: 11px; font-weight: 600;
  color: #fff; }

/* ---- the SVG map ---- */
.river { fill: #dbeafe; }
.river-label { fill: #1d4ed8; font-size: 13px; font-style: italic; text-anchor: middle; }
.road line { stroke-linecap: round; }
.road.spoke line { stroke: #64748b; stroke-width: 4.5; }
.road.ring line { stroke: #b6bcc6; stroke-width: 3.5; }
.road.arterial line { stroke: #e07b24; stroke-width: 4.5; }
.road.riverside line { stroke: #3b8fd9; stroke-width: 4; stroke-dasharray: 9 6; }
.road.congested line { stroke: #f59e0b; stroke-width: 9; stroke-dasharray: none; }
.road.closed line { stroke: #dc2626; stroke-width: 4; stroke-dasharray: 2 8; }
.road-min, .road-flag, .node-name, .card-text, .unit-label, .person-label {
  paint-order: stroke; stroke-linejoin: round; }
.road-min { font-size: 11px; fill: #475569; text-anchor: middle; stroke: #fff; stroke-width: 3px; }
.road-flag { font-size: 12px; font-weight: 700; text-anchor: middle; stroke: #fff; stroke-width: 4px; }
.road.closed .road-flag { fill: #b91c1c; } .road.congested .road-flag { fill: #b45309; }
.node circle, .node rect { stroke: #fff; stroke-width: 2.5; }
.kind-hub circle { fill: #334155; } .kind-residential circle { fill: #94a3b8; }
.kind-commercial circle { fill: #a78bfa; } .kind-industrial circle { fill: #a1887f; }
.kind-riverside circle { fill: #38bdf8; } .kind-entry circle { fill: #4ade80; }
.kind-hospital rect { fill: #dc2626; }
.node-id { font-size: 12px; font-weight: 700; fill: #fff; text-anchor: middle; }
.node-name { font-size: 11.5px; fill: #334155; text-anchor: middle; stroke: #fff; stroke-width: 3.5px; }
.hcard rect.frame { fill: #fff; stroke: #cbd5e1; stroke-width: 1; }
.hcard line.leader { stroke: #94a3b8; stroke-width: 1.2; stroke-dasharray: 3 3; }
.hcard.crowded rect.frame { stroke: #f59e0b; stroke-width: 2; }
.hcard.diverted rect.frame { stroke: #dc2626; stroke-width: 2.5; }
.hcard .card-title { font-size: 11.5px; font-weight: 700; fill: #1f2937; }
.hcard .card-text { font-size: 10.5px; fill: #475569; }
.hcard .divert { font-size: 10.5px; font-weight: 700; fill: #fff; }
.hcard rect.divert-bg { fill: #dc2626; }
.hcard rect.load-bg { fill: #e5e7eb; }
.unit { transition: transform 0.35s ease; }
.unit rect { stroke: #fff; stroke-width: 1.5; }
.unit.mutual rect { stroke: #0f172a; stroke-dasharray: 3 2; }
.unit-label { font-size: 10.5px; font-weight: 700; fill: #fff; text-anchor: middle; stroke-width: 0; }
.person circle, .person rect { stroke: #fff; stroke-width: 1.5; }
.person.dispatched rect { stroke: #0f172a; stroke-dasharray: 2 2; }
.person.in_treatment circle { stroke: #16a34a; stroke-width: 3; }
.person.faded { opacity: 0.4; }
.person-label { font-size: 9.5px; font-weight: 700; fill: #fff; text-anchor: middle; }
"""

_JS = r"""
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("episode-data").textContent);
  const FRAMES = DATA.frames;
  const MAP = DATA.map;
  const svg = document.getElementById("map");
  const NS = svg.namespaceURI;
  const $ = (id) => document.getElementById(id);
  const STATUS_FILL = { available: "#16a34a", en_route: "#ea580c", on_scene: "#dc2626",
    transporting: "#7c3aed", at_hospital: "#2563eb", returning: "#64748b" };
  const PRIORITY_FILL = { P1: "#dc2626", P2: "#f97316", P3: "#eab308", P4: "#22c55e" };
  const OR_FILL = { idle: "#d1d5db", preparing: "#f59e0b", ready: "#16a34a", in_use: "#2563eb",
    out_of_service: "#111827" };
  const SPEC_FILL = { on_call: "#e5e7eb", paged: "#fde68a", present: "#16a34a", unavailable: "#fee2e2" };
  const OFF_MAP = ["transporting", "transferring"];  // the patient rides in an ambulance
  const FADED = ["treated", "released"];
  const PLAY_PATH = "M4 2 L14 8 L4 14 Z";
  const PAUSE_PATH = "M3 2 H7 V14 H3 Z M9 2 H13 V14 H9 Z";
  let index = 0;
  let timer = null;
  const unitNodes = new Map();

  // ---------------------------------------------------------------- small helpers
  function svgEl(tag, attrs, text) {
    const el = document.createElementNS(NS, tag);
    for (const [key, value] of Object.entries(attrs || {})) el.setAttribute(key, value);
    if (text !== undefined) el.textContent = text;
    return el;
  }
  function htmlEl(tag, className, text) {
    const el = document.createElement(tag);
    if (className) el.className = className;
    if (text !== undefined) el.textContent = text;
    return el;
  }
  function tooltip(parent, text) { parent.appendChild(svgEl("title", {}, text)); }
  function edgeId(a, b) { return [a, b].sort().join("-"); }
  function fmtMin(value) { return value === null || value === undefined ? "-" : value + " min"; }
  function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); }

  // ---------------------------------------------------------------- roads
  function drawRoads(obs) {
    for (const edge of MAP.edges) {
      const group = $("road-" + edge.id);
      group.classList.remove("closed", "congested");
      group.querySelector(".road-flag").textContent = "";
    }
    const mark = (road, cls, text) => {
      const group = $("road-" + edgeId(road.edge[0], road.edge[1]));
      if (!group) return;
      group.classList.add(cls);
      group.querySelector(".road-flag").textContent = text + " until t" + road.until;
    };
    obs.roads.closed.forEach((road) => mark(road, "closed", "✕ closed"));
    obs.roads.congested.forEach((road) => mark(road, "congested", "×" + road.factor.toFixed(1)));
  }

  // ---------------------------------------------------------------- hospitals
  function hospitalCard(h) {
    const node = MAP.nodes[h.node];
    const offset = MAP.cards[h.hospital_id] || [30, -20];
    const x = node.x + offset[0];
    const y = node.y + offset[1];
    const diverted = h.diverted_until !== null;
    const cls = "hcard" + (diverted ? " diverted" : "") + (h.crowded ? " crowded" : "");
    const g = svgEl("g", { class: cls, transform: "translate(" + x + "," + y + ")" });
    const height = diverted ? 76 : 62;
    const edgeX = offset[0] > 0 ? 0 : 182;
    g.appendChild(svgEl("line", { class: "leader", x1: -offset[0], y1: -offset[1], x2: edgeX,
      y2: height / 2 }));
    g.appendChild(svgEl("rect", { class: "frame", width: 182, height: height, rx: 7 }));
    g.appendChild(svgEl("text", { class: "card-title", x: 8, y: 15 },
      h.hospital_id + " · tier " + h.tier + " · ICU free " + h.icu_free));
    drawLoad(g, h);
    drawOrsAndSpecialists(g, h);
    if (diverted) {
      g.appendChild(svgEl("rect", { class: "divert-bg", x: 0, y: 62, width: 182, height: 14, rx: 3 }));
      const text = "ON DIVERSION until t" + h.diverted_until;
      g.appendChild(svgEl("text", { class: "divert", x: 8, y: 73 }, text));
    }
    tooltip(g, h.name + ": " + h.occupancy + "/" + h.capacity + " ED beds" + (h.crowded ? ", crowded" : ""));
    return g;
  }
  function drawLoad(g, h) {
    const share = Math.min(1, h.occupancy / Math.max(1, h.capacity));
    const fill = share >= 1 ? "#dc2626" : share >= 0.75 ? "#f59e0b" : "#16a34a";
    g.appendChild(svgEl("text", { class: "card-text", x: 8, y: 32 }, "ED"));
    g.appendChild(svgEl("rect", { class: "load-bg", x: 28, y: 24, width: 100, height: 9, rx: 3 }));
    g.appendChild(svgEl("rect", { x: 28, y: 24, width: 100 * share, height: 9, rx: 3, fill: fill }));
    g.appendChild(svgEl("text", { class: "card-text", x: 134, y: 32 }, h.occupancy + "/" + h.capacity));
  }
  function drawOrsAndSpecialists(g, h) {
    g.appendChild(svgEl("text", { class: "card-text", x: 8, y: 52 }, h.ors.length ? "OR" : "no OR"));
    h.ors.forEach((room, i) => {
      const sq = svgEl("rect", { x: 28 + i * 15, y: 42, width: 12, height: 12, rx: 2,
        fill: OR_FILL[room.state] || "#d1d5db" });
      tooltip(sq, room.or_id + ": " + room.state.replace(/_/g, " ") +
        (room.procedure ? " (" + room.procedure + ")" : "") + (room.elective ? ", elective" : ""));
      g.appendChild(sq);
    });
    Object.entries(h.specialists).forEach(([specialty, info], i) => {
      const x = 100 + i * 19;
      const box = svgEl("rect", { x: x, y: 41, width: 16, height: 14, rx: 3, fill: SPEC_FILL[info.state] });
      tooltip(box, specialty.replace(/_/g, " ") + ": " + info.state.replace(/_/g, " ") +
        (info.until !== null ? " until t" + info.until : ""));
      g.appendChild(box);
      const letter = svgEl("text", { x: x + 8, y: 52, "text-anchor": "middle", "font-size": 10,
        "font-weight": 700, fill: info.state === "present" ? "#fff" : "#374151" },
        specialty[0].toUpperCase());
      letter.style.pointerEvents = "none";
      g.appendChild(letter);
    });
  }
  function drawHospitals(obs) {
    const layer = $("layer-hospitals");
    clear(layer);
    obs.hospitals.forEach((h) => layer.appendChild(hospitalCard(h)));
  }

  // ---------------------------------------------------------------- patients and calls
  function peopleByNode(obs) {
    const groups = {};
    const add = (node, item) => { (groups[node] = groups[node] || []).push(item); };
    obs.calls.forEach((c) => add(c.node, { kind: "call", data: c }));
    obs.patients.filter((p) => !OFF_MAP.includes(p.status)).forEach((p) =>
      add(p.node, { kind: "patient", data: p }));
    return groups;
  }
  function personMarker(item, x, y) {
    const d = item.data;
    if (item.kind === "call") {
      const g = svgEl("g", { class: "person call " + d.status });
      g.appendChild(svgEl("rect", { x: x - 9, y: y - 9, width: 18, height: 18,
        transform: "rotate(45 " + x + " " + y + ")", fill: PRIORITY_FILL[d.priority] || "#9ca3af" }));
      g.appendChild(svgEl("text", { class: "person-label", x: x, y: y + 3.5 }, d.call_id));
      tooltip(g, d.call_id + " (" + (d.priority || "not triaged") + ", " + d.status + ", waiting " +
        d.waiting_min + " min): " + d.report);
      return g;
    }
    const cls = "person patient " + d.status + (FADED.includes(d.status) ? " faded" : "");
    const g = svgEl("g", { class: cls });
    const fill = d.status === "deceased" ? "#111827" : PRIORITY_FILL[d.priority] || "#9ca3af";
    g.appendChild(svgEl("circle", { cx: x, cy: y, r: 11, fill: fill }));
    g.appendChild(svgEl("text", { class: "person-label", x: x, y: y + 3.5 }, d.patient_id));
    tooltip(g, d.patient_id + " " + d.label + " (" + d.priority + "): " + d.status.replace(/_/g, " "));
    return g;
  }
  function drawPeople(obs) {
    const layer = $("layer-people");
    clear(layer);
    for (const [nodeId, items] of Object.entries(peopleByNode(obs))) {
      const node = MAP.nodes[nodeId];
      const perRow = 6;
      items.forEach((item, i) => {
        const row = Math.floor(i / perRow);
        const inRow = Math.min(perRow, items.length - row * perRow);
        const x = node.x + ((i % perRow) - (inRow - 1) / 2) * 25;
        const y = node.y - 40 - row * 25;
        layer.appendChild(personMarker(item, x, y));
      });
    }
  }

  // ---------------------------------------------------------------- ambulances
  function unitPositions(obs) {
    const slots = {};
    const out = {};
    for (const a of obs.ambulances) {
      const key = a.next_node ? edgeId(a.node, a.next_node) + ">" + a.node : a.node;
      const k = (slots[key] = (slots[key] || 0) + 1) - 1;
      const from = MAP.nodes[a.node];
      if (!a.next_node) {
        out[a.ambulance_id] = { x: from.x + 48 + Math.floor(k / 2) * 48, y: from.y - 11 + (k % 2) * 22 };
        continue;
      }
      const to = MAP.nodes[a.next_node];
      const dx = to.x - from.x, dy = to.y - from.y;
      const len = Math.hypot(dx, dy) || 1;
      const shift = 13 + k * 22;
      out[a.ambulance_id] = { x: from.x + 0.42 * dx - (dy / len) * shift,
        y: from.y + 0.42 * dy + (dx / len) * shift };
    }
    return out;
  }
  function unitLabel(a) {
    let text = a.ambulance_id + " (" + a.kind + (a.mutual_aid ? ", mutual aid" : "") + "): " +
      a.status.replace(/_/g, " ") + " at " + a.node;
    if (a.next_node) text += ", heading to " + a.next_node;
    if (a.destination) text += ", destination " + a.destination + " in " + fmtMin(a.eta_min);
    if (a.patient_id) text += ", patient " + a.patient_id;
    if (a.call_id) text += ", call " + a.call_id;
    if (a.busy_min !== null) text += ", busy " + fmtMin(a.busy_min);
    if (a.held) text += ", HELD (no open route)";
    return text;
  }
  function unitGroup(a) {
    let g = unitNodes.get(a.ambulance_id);
    if (!g) {
      g = svgEl("g", { class: "unit", "data-ambulance": a.ambulance_id });
      g.appendChild(svgEl("rect", { x: -22, y: -9, width: 44, height: 18, rx: 4 }));
      g.appendChild(svgEl("text", { class: "unit-label", x: 0, y: 4 }, a.ambulance_id));
      g.appendChild(svgEl("title"));
      unitNodes.set(a.ambulance_id, g);
      $("layer-units").appendChild(g);
    }
    return g;
  }
  function drawUnits(obs) {
    const positions = unitPositions(obs);
    const seen = new Set();
    for (const a of obs.ambulances) {
      const g = unitGroup(a);
      const pos = positions[a.ambulance_id];
      g.style.transform = "translate(" + pos.x + "px," + pos.y + "px)";
      g.setAttribute("class", "unit " + a.status + (a.mutual_aid ? " mutual" : ""));
      g.querySelector("rect").setAttribute("fill", STATUS_FILL[a.status] || "#64748b");
      g.querySelector("title").textContent = unitLabel(a);
      seen.add(a.ambulance_id);
    }
    for (const [id, g] of unitNodes) {
      if (!seen.has(id)) { g.remove(); unitNodes.delete(id); }
    }
  }

  // ---------------------------------------------------------------- side panel
  function fillList(list, items, render, emptyText) {
    clear(list);
    if (!items.length) { list.appendChild(htmlEl("li", "empty", emptyText)); return; }
    items.forEach((item) => list.appendChild(render(item)));
  }
  function drawStatus(frame) {
    const obs = frame.observation;
    $("clock").textContent = "t+" + obs.clock_min + " min";
    $("step").textContent = obs.step + " / " + obs.max_steps;
    $("score").textContent = obs.score_preview.toFixed(3);
    $("clock-bar").style.width = Math.min(100, (100 * obs.clock_min) / obs.horizon_min) + "%";
    $("status-line").textContent = "horizon t+" + obs.horizon_min + " min · phase " + obs.phase +
      (obs.roads.peak_hour ? " · peak hour traffic" : "") + " · frame " + index + " of " +
      (FRAMES.length - 1);
    const banner = $("done-banner");
    banner.hidden = !obs.done;
    banner.textContent = "Episode over: final score " + obs.score_preview.toFixed(4);
  }
  function drawAction(frame) {
    const box = $("action");
    clear(box);
    if (frame.action === null) {
      box.appendChild(htmlEl("span", "muted", "Start of the episode: no action yet."));
    } else if (typeof frame.action !== "object") {
      box.appendChild(htmlEl("span", "action-type", String(frame.action)));
    } else {
      box.appendChild(htmlEl("div", "action-type", frame.action.action_type || "(no action_type)"));
      for (const [key, value] of Object.entries(frame.action)) {
        if (key !== "action_type") box.appendChild(htmlEl("span", "param", key + " = " + value));
      }
    }
    const reward = $("reward");
    reward.className = frame.reward > 1e-9 ? "reward-pos" : frame.reward < -1e-9 ? "reward-neg" : "muted";
    reward.textContent = frame.reward === null ? "" : "reward " + (frame.reward >= 0 ? "+" : "") +
      frame.reward.toFixed(4);
    $("error").hidden = !frame.error;
    $("error").textContent = frame.error ? "Error: " + frame.error : "";
  }
  function callRow(c) {
    const li = htmlEl("li");
    const tag = htmlEl("span", "tag pr-" + (c.priority || "none"), c.priority || "?");
    li.append(htmlEl("span", "id", c.call_id), tag);
    const detail = htmlEl("span", "detail", c.report);
    const unit = c.ambulance_id ? ", " + c.ambulance_id + " en route" : "";
    detail.appendChild(htmlEl("div", "muted", c.status + unit + " · waiting " + c.waiting_min + " min"));
    li.appendChild(detail);
    return li;
  }
  function patientRow(p) {
    const li = htmlEl("li");
    const tag = htmlEl("span", "tag " + (p.status === "deceased" ? "" : "pr-" + p.priority), p.priority);
    if (p.status === "deceased") tag.style.background = "#111827";
    li.append(htmlEl("span", "id", p.patient_id), tag);
    const detail = htmlEl("span", "detail", p.label);
    const bar = htmlEl("span", "vitals");
    const fill = htmlEl("span");
    const score = p.vitals.score;
    fill.style.width = 100 * score + "%";
    fill.style.background = score > 0.66 ? "#16a34a" : score > 0.33 ? "#f59e0b" : "#dc2626";
    bar.appendChild(fill);
    bar.title = "vitals score " + score;
    detail.appendChild(bar);
    let where = p.status.replace(/_/g, " ");
    if (p.ambulance_id && !FADED.includes(p.status)) where += " · " + p.ambulance_id;
    if (p.hospital) where += " · at " + p.hospital;
    else if (p.destination) where += " · to " + p.destination;
    if (p.eta_min !== null) where += " · ETA " + fmtMin(p.eta_min);
    if (p.waiting_for.length) where += " · waiting for " + p.waiting_for.join(", ");
    detail.appendChild(htmlEl("div", "muted", where));
    li.appendChild(detail);
    return li;
  }
  function drawPanel(frame) {
    const obs = frame.observation;
    drawStatus(frame);
    drawAction(frame);
    fillList($("events"), obs.events, (e) => htmlEl("li", "", e), "nothing new");
    fillList($("alerts"), obs.alerts, (a) => htmlEl("li", "", a), "no active alerts");
    fillList($("calls"), obs.calls, callRow, obs.phase === 2 ? "no open calls" : "phase 1: no call queue");
    fillList($("patients"), obs.patients, patientRow, "no patient known yet");
    const aid = obs.mutual_aid;
    const pending = aid.pending.map((r) => r.unit_id + " arrives t" + r.arrives_min).join(", ");
    $("mutual-aid").textContent = aid.used + " of " + aid.limit + " requested" +
      (pending ? " · pending: " + pending : "");
  }

  // ---------------------------------------------------------------- playback
  function show(i) {
    index = Math.max(0, Math.min(FRAMES.length - 1, i));
    const frame = FRAMES[index];
    drawRoads(frame.observation);
    drawHospitals(frame.observation);
    drawPeople(frame.observation);
    drawUnits(frame.observation);
    drawPanel(frame);
    $("slider").value = index;
    $("first").disabled = $("prev").disabled = index === 0;
    $("next").disabled = $("last").disabled = index === FRAMES.length - 1;
    if (index === FRAMES.length - 1) pause();
  }
  function play() {
    if (index >= FRAMES.length - 1) show(0);
    pause();
    timer = setInterval(() => show(index + 1), 1000 / Number($("speed").value));
    setPlayButton(true);
  }
  function pause() {
    if (timer !== null) clearInterval(timer);
    timer = null;
    setPlayButton(false);
  }
  function setPlayButton(playing) {
    $("play-icon").setAttribute("d", playing ? PAUSE_PATH : PLAY_PATH);
    $("play-text").textContent = playing ? "Pause" : "Play";
  }
  function wire() {
    $("slider").max = FRAMES.length - 1;
    $("slider").addEventListener("input", (e) => { pause(); show(Number(e.target.value)); });
    $("first").addEventListener("click", () => { pause(); show(0); });
    $("prev").addEventListener("click", () => { pause(); show(index - 1); });
    $("next").addEventListener("click", () => { pause(); show(index + 1); });
    $("last").addEventListener("click", () => { pause(); show(FRAMES.length - 1); });
    $("play").addEventListener("click", () => (timer === null ? play() : pause()));
    $("speed").addEventListener("change", () => { if (timer !== null) play(); });
    document.addEventListener("keydown", (e) => {
      if (e.target.tagName === "SELECT" || e.target.tagName === "INPUT") return;
      const keys = { ArrowRight: () => $("next").click(), ArrowLeft: () => $("prev").click(),
        " ": () => $("play").click(), Home: () => $("first").click(), End: () => $("last").click() };
      if (keys[e.key]) { e.preventDefault(); keys[e.key](); }
    });
  }
  wire();
  show(0);
})();
"""
