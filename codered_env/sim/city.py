"""The city of Prakashnagar: a 12-node hub-and-spoke road graph and its travel times.

Nodes ``N0``..``N8`` are neighbourhoods and junctions, ``H1``..``H3`` are the hospitals. ``N0``
(Rajiv Chowk) is the hub; ``N3`` (Nadi Ghat) is the flood-prone riverside; ``N7`` (NH-48 toll) is
where mutual-aid units from the neighbouring district enter; ``N4``-``N7``-``H1`` is the fast
Ring Road bypass. Base minutes assume 25-35 km/h urban speeds (Hindustan Times 2022).

A ``RoadNetwork`` holds the current state of every edge (open/closed, congestion factor) and
answers shortest-path queries from an all-pairs table per road state, computed once per
process for each road state met (``_TABLES``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .params import PEAK_HOUR_FACTOR


@dataclass(frozen=True)
class Node:
    node_id: str
    name: str
    kind: str  # "hub" | "residential" | "commercial" | "industrial" | "riverside" | "entry" | "hospital"


NODES: tuple[Node, ...] = (
    Node("N0", "Rajiv Chowk", "hub"),
    Node("N1", "Old City", "residential"),
    Node("N2", "Railway Colony", "residential"),
    Node("N3", "Nadi Ghat", "riverside"),
    Node("N4", "MIDC Industrial Area", "industrial"),
    Node("N5", "Hitech City", "commercial"),
    Node("N6", "University Road", "residential"),
    Node("N7", "NH-48 Toll Plaza", "entry"),
    Node("N8", "Sadar Bazaar", "commercial"),
    Node("H1", "AIIMS Prakashnagar", "hospital"),
    Node("H2", "District Hospital", "hospital"),
    Node("H3", "CHC Nadi Ghat", "hospital"),
)
NODE_IDS: tuple[str, ...] = tuple(n.node_id for n in NODES)
NODE_NAMES: dict[str, str] = {n.node_id: n.name for n in NODES}
NODE_INDEX: dict[str, int] = {n: i for i, n in enumerate(NODE_IDS)}

# (a, b, base minutes, label). Undirected.
EDGES: tuple[tuple[str, str, float, str], ...] = (
    ("N0", "N1", 4, "Old City Road"),
    ("N0", "N2", 5, "Station Road"),
    ("N0", "N4", 6, "MIDC Road"),
    ("N0", "N5", 5, "Hitech Flyover"),
    ("N0", "N6", 6, "College Road"),
    ("N0", "N8", 3, "Bazaar Lane"),
    ("N0", "H1", 4, "AIIMS Marg"),
    ("N0", "H2", 6, "Civil Lines"),
    ("N1", "N8", 3, "Chandni Gali"),
    ("N1", "N3", 6, "Ghat Road"),
    ("N2", "N3", 5, "Riverside Drive"),
    ("N2", "N4", 6, "Goods Yard Road"),
    ("N3", "H3", 2, "CHC Lane"),
    ("N3", "H2", 7, "Embankment Road"),
    ("N4", "N7", 7, "NH-48 Link"),
    ("N5", "N6", 4, "Tech Park Avenue"),
    ("N6", "H1", 5, "Medical College Road"),
    ("N8", "H2", 4, "Court Road"),
    ("N7", "H1", 9, "Ring Road Bypass"),
    ("N5", "N7", 8, "Outer Ring Road"),
)
RIVERSIDE_EDGES: tuple[tuple[str, str], ...] = (("N1", "N3"), ("N2", "N3"), ("N3", "H2"))

_INF = float("inf")


def edge_key(a: str, b: str) -> tuple[str, str]:
    """Canonical (sorted) key of an undirected edge."""
    return (a, b) if a < b else (b, a)


EDGE_BASE: dict[tuple[str, str], float] = {edge_key(a, b): m for a, b, m, _ in EDGES}
EDGE_LABEL: dict[tuple[str, str], str] = {edge_key(a, b): lbl for a, b, _, lbl in EDGES}


class RoadNetwork:
    """Current road state and shortest paths over it.

    Edge cost = base minutes x time-of-day factor x congestion factor; closed edges are absent.
    The all-pairs table (Floyd-Warshall over 12 nodes) is rebuilt lazily after any change.
    """

    def __init__(self, peak_hour: bool) -> None:
        self.time_factor = PEAK_HOUR_FACTOR if peak_hour else 1.0
        self.closed: set[tuple[str, str]] = set()
        self.congestion: dict[tuple[str, str], float] = {}
        self._index = NODE_INDEX
        self._dist: list[list[float]] = []
        self._next: list[list[int]] = []
        self._edges: dict[tuple[str, str], float] = {}
        self._dirty = True

    def __getstate__(self) -> dict[str, object]:
        """A copy (pickle: forks) carries the road state only; its tables come from the shared
        per-state cache when first asked."""
        return {"time_factor": self.time_factor, "closed": self.closed, "congestion": self.congestion}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._index, self._dist, self._next, self._edges, self._dirty = NODE_INDEX, [], [], {}, True

    # -- state changes -------------------------------------------------------------------
    def close(self, a: str, b: str) -> None:
        self.closed.add(edge_key(a, b))
        self._dirty = True

    def reopen(self, a: str, b: str) -> None:
        self.closed.discard(edge_key(a, b))
        self._dirty = True

    def set_congestion(self, a: str, b: str, factor: float) -> None:
        key = edge_key(a, b)
        if factor == 1.0:
            self.congestion.pop(key, None)
        else:
            self.congestion[key] = factor
        self._dirty = True

    # -- queries ---------------------------------------------------------------------------
    def edge_minutes(self, a: str, b: str) -> float:
        """Expected minutes on edge a-b now (inf when closed or absent)."""
        self._refresh()
        return self._edges.get((a, b), _INF)

    def _edge_cost(self, a: str, b: str) -> float:
        key = edge_key(a, b)
        if key in self.closed or key not in EDGE_BASE:
            return _INF
        return EDGE_BASE[key] * self.time_factor * self.congestion.get(key, 1.0)

    def minutes(self, a: str, b: str) -> float:
        """Expected shortest travel minutes from a to b (inf if no open route)."""
        self._refresh()
        return self._dist[self._index[a]][self._index[b]]

    def minutes_table(self) -> list[list[float]]:
        """Shortest travel minutes between every pair of nodes, in ``NODE_IDS`` order (inf: no
        open route). Shared and read only: a new road state gives a new table."""
        self._refresh()
        return self._dist

    def reachable(self, a: str, b: str) -> bool:
        """Some open route leads from a to b (``path`` is not None)."""
        self._refresh()
        return self._dist[self._index[a]][self._index[b]] != _INF

    def path(self, a: str, b: str) -> list[str] | None:
        """Node sequence of the current shortest route, or None when cut off."""
        self._refresh()
        i, j = self._index[a], self._index[b]
        if self._dist[i][j] == _INF:
            return None
        route = [a]
        while i != j:
            i = self._next[i][j]
            route.append(NODE_IDS[i])
        return route

    def is_connected_without(self, edges: list[tuple[str, str]]) -> bool:
        """Would the graph stay connected if these edges closed (in addition to current ones)?"""
        blocked = self.closed | {edge_key(a, b) for a, b in edges}
        seen = {NODE_IDS[0]}
        frontier = [NODE_IDS[0]]
        while frontier:
            node = frontier.pop()
            for key in EDGE_BASE:
                if key in blocked or node not in key:
                    continue
                other = key[1] if key[0] == node else key[0]
                if other not in seen:
                    seen.add(other)
                    frontier.append(other)
        return len(seen) == len(NODE_IDS)

    def _refresh(self) -> None:
        if not self._dirty:
            return
        key = (self.time_factor, frozenset(self.closed), frozenset(self.congestion.items()))
        tables = _TABLES.get(key)
        if tables is None:
            if len(_TABLES) >= _TABLES_MAX:
                _TABLES.clear()
            tables = _TABLES[key] = _shortest_paths(self)
        self._dist, self._next, self._edges = tables
        self._dirty = False


# All-pairs tables per road state, shared by every network in the process (episodes, forks, the
# agents' own views of the roads): a road state recurs constantly (most of the time no road is
# closed), and the tables are never mutated, only read.
_Tables = tuple[list[list[float]], list[list[int]], dict[tuple[str, str], float]]
_TABLES: dict[tuple[float, frozenset, frozenset], _Tables] = {}
_TABLES_MAX = 4096


def _shortest_paths(net: RoadNetwork) -> _Tables:
    """Floyd-Warshall over the current edge costs: (minutes, next hop) for every pair, and the
    minutes of every open edge in both directions."""
    n = len(NODE_IDS)
    index = net._index
    dist = [[0.0 if i == j else _INF for j in range(n)] for i in range(n)]
    nxt = [[j for j in range(n)] for _ in range(n)]
    edges = {}
    for a, b, _, _ in EDGES:
        i, j = index[a], index[b]
        cost = net._edge_cost(a, b)
        if cost < _INF:
            edges[a, b] = edges[b, a] = cost
        if cost < dist[i][j]:
            dist[i][j] = dist[j][i] = cost
    for k in range(n):
        dk = dist[k]
        for i in range(n):
            dik = dist[i][k]
            if dik == _INF:
                continue
            di, ni = dist[i], nxt[i]
            nik = ni[k]
            for j in range(n):
                cand = dik + dk[j]
                if cand < di[j] - 1e-12:
                    di[j] = cand
                    ni[j] = nik
    return dist, nxt, edges
