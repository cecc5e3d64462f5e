"""Draw the Prakashnagar road graph to ``docs/city_map.png``.

Nodes, edges, base minutes, road names, the flood-prone riverside links, the mutual-aid entry
node and the ambulance home stations are all read from the simulation package
(``codered_env.sim.city`` and ``codered_env.sim.generator``), so the picture cannot drift from
the code. The node *positions* (a schematic hub-and-spoke layout, not to scale) come from
``codered_env.viewer.NODE_POSITIONS``, which the HTML episode viewer draws with too. The script
refuses to draw if the map gains or loses a node it has no position for.

Usage::

    uv run python docs/make_city_map.py                # writes docs/city_map.png
    uv run python docs/make_city_map.py --out /tmp/map.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D

from codered_env.sim.city import EDGES, NODE_IDS, NODES, RIVERSIDE_EDGES, edge_key
from codered_env.sim.facilities import FLEET
from codered_env.sim.generator import ENTRY_NODE
from codered_env.viewer import NODE_POSITIONS as POSITIONS  # the schematic layout, shared with the viewer

# Where each node's name goes (default: above the node; home stations are listed below it).
NAME_SIDE: dict[str, str] = {"N8": "left", "N1": "left", "N6": "right", "N5": "below", "H3": "below"}
# Where to put each edge label along the edge (0 = first node, 1 = second), to dodge nodes.
LABEL_AT: dict[tuple[str, str], float] = {edge_key("N7", "H1"): 0.45, edge_key("N3", "H2"): 0.45}

KIND_STYLE: dict[str, dict[str, object]] = {
    "hub": {"color": "#444444", "marker": "o", "size": 1500},
    "residential": {"color": "#9e9e9e", "marker": "o", "size": 900},
    "commercial": {"color": "#b39ddb", "marker": "o", "size": 900},
    "industrial": {"color": "#a1887f", "marker": "o", "size": 900},
    "riverside": {"color": "#4fc3f7", "marker": "o", "size": 1000},
    "entry": {"color": "#66bb6a", "marker": "D", "size": 1000},
    "hospital": {"color": "#e53935", "marker": "s", "size": 1200},
}
TIER_OF = {"H1": 1, "H2": 2, "H3": 3}


def draw(out: Path) -> None:
    missing = set(NODE_IDS) ^ set(POSITIONS)
    if missing:
        raise SystemExit(f"city.py and viewer.NODE_POSITIONS disagree on nodes: {sorted(missing)}")
    riverside = {edge_key(a, b) for a, b in RIVERSIDE_EDGES}
    bypass = {edge_key("N4", "N7"), edge_key("N7", "H1"), edge_key("N5", "N7")}

    fig, ax = plt.subplots(figsize=(13, 9.5), dpi=110)
    ax.set_facecolor("#fbfbf7")

    # the river along the west side (decoration: where the flood-prone links are)
    ax.fill_between([-7.8, -6.3], -4.3, 4.3, color="#bbdefb", alpha=0.6, zorder=0, linewidth=0)
    ax.text(-7.05, 1.2, "river", rotation=90, color="#1565c0", fontsize=11, ha="center", style="italic")

    for a, b, minutes, label in EDGES:
        (x1, y1), (x2, y2) = POSITIONS[a], POSITIONS[b]
        key = edge_key(a, b)
        if key in riverside:
            style = {"color": "#0288d1", "linestyle": (0, (5, 3)), "linewidth": 3.0}
        elif key in bypass:
            style = {"color": "#ef6c00", "linestyle": "-", "linewidth": 3.0}
        elif a == "N0" or b == "N0":
            style = {"color": "#616161", "linestyle": "-", "linewidth": 3.2}
        else:
            style = {"color": "#9e9e9e", "linestyle": "-", "linewidth": 2.2}
        ax.plot([x1, x2], [y1, y2], zorder=1, solid_capstyle="round", **style)
        t = LABEL_AT.get(key, 0.5)
        mx, my = x1 + t * (x2 - x1), y1 + t * (y2 - y1)
        ax.text(
            mx,
            my,
            f"{minutes:g} min\n{label}",
            fontsize=8,
            ha="center",
            va="center",
            zorder=3,
            bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "#cccccc", "lw": 0.6, "alpha": 0.92},
        )

    for node in NODES:
        x, y = POSITIONS[node.node_id]
        style = KIND_STYLE[node.kind]
        ax.scatter(
            [x],
            [y],
            s=style["size"],
            c=style["color"],
            marker=style["marker"],
            edgecolors="black",
            linewidths=1.2,
            zorder=4,
        )
        ax.text(
            x,
            y,
            node.node_id,
            ha="center",
            va="center",
            fontsize=10,
            fontweight="bold",
            color="white",
            zorder=5,
        )
        name = node.name
        if node.kind == "hospital":
            name += f"\n(tier {TIER_OF.get(node.node_id, '?')})"
        if node.node_id == ENTRY_NODE:
            name += "\n(mutual-aid entry)"
        dx, dy, ha, va = {
            "above": (0.0, 0.42, "center", "bottom"),
            "below": (0.0, -0.42, "center", "top"),
            "left": (-0.42, 0.0, "right", "center"),
            "right": (0.42, 0.0, "left", "center"),
        }[NAME_SIDE.get(node.node_id, "above")]
        ax.text(
            x + dx,
            y + dy,
            name,
            ha=ha,
            va=va,
            fontsize=9.5,
            zorder=5,
            bbox={"boxstyle": "round,pad=0.15", "fc": "#fffde7", "ec": "none", "alpha": 0.85},
        )

    homes: dict[str, list[str]] = {}
    for unit, kind, home in FLEET:
        homes.setdefault(home, []).append(f"{unit} ({kind})")
    for home, units in homes.items():
        x, y = POSITIONS[home]
        ax.text(
            x,
            y - 0.42,
            "\n".join(units),
            ha="center",
            va="top",
            fontsize=8.5,
            zorder=5,
            color="#0d47a1",
            fontweight="bold",
            bbox={"boxstyle": "round,pad=0.2", "fc": "#e3f2fd", "ec": "#1565c0", "lw": 0.8},
        )

    legend = [
        Line2D([0], [0], color="#616161", lw=3.2, label="hub spoke (to N0 Rajiv Chowk)"),
        Line2D([0], [0], color="#9e9e9e", lw=2.2, label="ring link between spokes"),
        Line2D([0], [0], color="#ef6c00", lw=3.0, label="NH-48 / Ring Road arterials via N7"),
        Line2D([0], [0], color="#0288d1", lw=3.0, ls=(0, (5, 3)), label="flood-prone riverside link"),
        Line2D(
            [0],
            [0],
            marker="s",
            color="w",
            markerfacecolor="#e53935",
            markeredgecolor="k",
            markersize=12,
            label="hospital",
        ),
        Line2D(
            [0],
            [0],
            marker="D",
            color="w",
            markerfacecolor="#66bb6a",
            markeredgecolor="k",
            markersize=11,
            label="entry node (mutual aid arrives here)",
        ),
        Line2D(
            [0],
            [0],
            marker="o",
            color="w",
            markerfacecolor="#4fc3f7",
            markeredgecolor="k",
            markersize=12,
            label="riverside node",
        ),
        Line2D(
            [0],
            [0],
            marker="s",
            color="w",
            markerfacecolor="#e3f2fd",
            markeredgecolor="#1565c0",
            markersize=11,
            label="ambulance home station",
        ),
    ]
    ax.legend(handles=legend, loc="lower right", fontsize=9, framealpha=0.95)
    ax.set_title(
        "Prakashnagar road graph (schematic, not to scale): base travel minutes before time-of-day,\n"
        "congestion, lights-and-sirens and noise factors",
        fontsize=12,
    )
    ax.set_xlim(-7.8, 7.4)
    ax.set_ylim(-4.3, 4.6)
    ax.set_aspect("equal")
    ax.axis("off")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description="Draw docs/city_map.png from codered_env.sim.city")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "city_map.png")
    args = parser.parse_args()
    draw(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
