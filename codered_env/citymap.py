"""Where a city's nodes sit on the schematic map: the map's coordinates, in pixels for drawing.

Every ``City`` carries layout coordinates (``City.positions``, x east, y north; the simulation
itself knows only travel minutes); ``map_layout(city)`` turns them into the pixel positions of
nodes, roads and hospital cards that the browser console, the offline replay page
(``codered_env.viewer``) and ``docs/make_city_map.py`` draw with. ``NODE_POSITIONS`` and the
frame constants are Prakashnagar's (the default city). Pure data, no I/O.
"""

from __future__ import annotations

from typing import Any

from .sim.city import PRAKASHNAGAR, City, edge_key

# Prakashnagar's schematic positions (kept with its map in ``codered_env.sim.city``).
NODE_POSITIONS: dict[str, tuple[float, float]] = {n: (x, y) for n, x, y in PRAKASHNAGAR.positions}
# The NH-48 / Ring Road arterials through the toll plaza N7.
ARTERIAL_EDGES: tuple[tuple[str, str], ...] = PRAKASHNAGAR.arterial_edges

SCALE = 78.0  # pixels per layout unit
LEFT, RIGHT, TOP, BOTTOM = -7.4, 7.2, 4.45, -4.55  # layout units shown (Prakashnagar)
RIVER = (-7.3, -6.4)  # decorative river band (layout x range), west of the flood-prone links
# Where each hospital's status card sits, relative to its node (pixels, top-left corner).
CARD_OFFSET: dict[str, tuple[int, int]] = {"H1": (112, -62), "H2": (-226, -52), "H3": (52, -34)}
# Any other city: the frame is its nodes' extent plus this margin (layout units), and a card
# sits east of its hospital, or west of one west of the hub [design choice: clear of the hub].
FRAME_MARGIN = 1.4
CARD_EAST, CARD_WEST = (52, -34), (-226, -34)


def _frame(city: City) -> tuple[float, float, float, float]:
    if city is PRAKASHNAGAR:
        return LEFT, RIGHT, TOP, BOTTOM
    xs = [x for _, x, _ in city.positions]
    ys = [y for _, _, y in city.positions]
    return min(xs) - FRAME_MARGIN, max(xs) + FRAME_MARGIN, max(ys) + FRAME_MARGIN, min(ys) - FRAME_MARGIN


def _cards(city: City) -> dict[str, tuple[int, int]]:
    if city is PRAKASHNAGAR:
        return CARD_OFFSET
    x_of = {n: x for n, x, _ in city.positions}
    return {h: CARD_WEST if x_of[h] < x_of[city.hub] else CARD_EAST for h in city.hospital_ids}


def _road_class(city: City, a: str, b: str) -> str:
    key = edge_key(a, b)
    if key in {edge_key(*e) for e in city.riverside_edges}:
        return "riverside"
    if key in {edge_key(*e) for e in city.arterial_edges}:
        return "arterial"
    return "spoke" if city.hub in key else "ring"


def map_layout(city: City = PRAKASHNAGAR) -> dict[str, Any]:
    """Pixel positions of nodes, roads and hospital cards, as the page's script uses them."""
    positions = {n: (x, y) for n, x, y in city.positions}
    missing = set(city.node_ids) ^ set(positions)
    if missing:
        raise ValueError(f"the city's nodes and positions disagree: {sorted(missing)}")
    left, right, top, bottom = _frame(city)

    def px(node_id: str) -> tuple[float, float]:
        x, y = positions[node_id]
        return round((x - left) * SCALE, 1), round((top - y) * SCALE, 1)

    nodes = {n.node_id: {"x": px(n.node_id)[0], "y": px(n.node_id)[1], "name": n.name, "kind": n.kind}
             for n in city.nodes}
    edges = [
        {
            "id": "-".join(edge_key(a, b)),
            "a": a,
            "b": b,
            "minutes": m,
            "label": label,
            "kind": _road_class(city, a, b),
        }
        for a, b, m, label in city.edges
    ]
    cards = {h: list(offset) for h, offset in _cards(city).items()}
    width = round((right - left) * SCALE)
    height = round((top - bottom) * SCALE)
    return {"width": width, "height": height, "nodes": nodes, "edges": edges, "cards": cards}
