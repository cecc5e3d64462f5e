"""Where the city's nodes sit on the schematic map: the map's coordinates, kept with the map data.

``NODE_POSITIONS`` lays out the nodes of ``codered_env.sim.city`` (the simulation's own map, which
knows only travel minutes) for drawing; ``map_layout()`` turns them into the pixel positions of
nodes, roads and hospital cards that the browser console, the offline replay page
(``codered_env.viewer``) and ``docs/make_city_map.py`` draw with. Pure data, no I/O.
"""

from __future__ import annotations

from typing import Any

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

SCALE = 78.0  # pixels per layout unit
LEFT, RIGHT, TOP, BOTTOM = -7.4, 7.2, 4.45, -4.55  # layout units shown
RIVER = (-7.3, -6.4)  # decorative river band (layout x range), west of the flood-prone links
# Where each hospital's status card sits, relative to its node (pixels, top-left corner).
CARD_OFFSET: dict[str, tuple[int, int]] = {"H1": (112, -62), "H2": (-226, -52), "H3": (52, -34)}


def _px(node_id: str) -> tuple[float, float]:
    x, y = NODE_POSITIONS[node_id]
    return round((x - LEFT) * SCALE, 1), round((TOP - y) * SCALE, 1)


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
    cards = {h: list(offset) for h, offset in CARD_OFFSET.items()}
    width = round((RIGHT - LEFT) * SCALE)
    height = round((TOP - BOTTOM) * SCALE)
    return {"width": width, "height": height, "nodes": nodes, "edges": edges, "cards": cards}
