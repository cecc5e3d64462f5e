"""The static SVG of the city map (river, roads, nodes), with empty layers the console's script
fills every frame. Drawn from ``codered_env.citymap.map_layout()``; served by ``GET /web`` and
inlined by ``codered view``.
"""

from __future__ import annotations

import html
from typing import Any

from codered_env.citymap import LEFT, RIVER, SCALE


def _bank(x: float, ys: list[int]) -> str:
    """Quadratic segments through (x, y) for each y, bending 14 px alternately left and right."""
    segments = []
    for i in range(1, len(ys)):
        bend = 14 if (ys[i] // 120) % 2 else -14
        segments.append(f"Q {x + bend:.0f} {(ys[i - 1] + ys[i]) / 2:.0f} {x:.0f} {ys[i]}")
    return " ".join(segments)


def _svg_river(layout: dict[str, Any]) -> str:
    """A gently meandering band: each bank bends alternately left and right every 120 px."""
    x0, x1 = ((edge - LEFT) * SCALE for edge in RIVER)
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
