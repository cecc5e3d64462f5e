"""Cities: the ``City`` record every episode plays in, the fixed city of Prakashnagar, and the
road network (travel times over a city's roads).

A ``City`` is immutable: nodes, roads, hospitals, fleet and the roles the tasks read (hub,
mutual-aid entry, flood-prone roads...). ``citygen.generate_city(seed)`` builds others.

Prakashnagar: a 12-node hub-and-spoke road graph. Nodes ``N0``..``N8`` are neighbourhoods and
junctions, ``H1``..``H3`` are the hospitals. ``N0`` (Rajiv Chowk) is the hub; ``N3`` (Nadi Ghat)
is the flood-prone riverside; ``N7`` (NH-48 toll) is where mutual-aid units from the neighbouring
district enter; ``N4``-``N7``-``H1`` is the fast Ring Road bypass. Base minutes assume 25-35 km/h
urban speeds (Hindustan Times 2022).

A ``RoadNetwork`` holds the current state of every edge of a city's ``RoadGraph`` (open/closed,
congestion factor) and answers shortest-path queries from an all-pairs table per graph and road
state, computed once per process for each one met (``_TABLES``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

from .facilities import FLEET, HOSPITAL_SPECS, HospitalSpec
from .params import MEMO_ENTRIES, PEAK_HOUR_FACTOR


@dataclass(frozen=True)
class Node:
    node_id: str
    name: str
    kind: str  # "hub" | "residential" | "commercial" | "industrial" | "riverside" | "entry" | "hospital"


_INF = float("inf")


def edge_key(a: str, b: str) -> tuple[str, str]:
    """Canonical (sorted) key of an undirected edge."""
    return (a, b) if a < b else (b, a)


Edge = tuple[str, str, float, str]  # (a, b, base minutes, label), undirected


class RoadGraph:
    """The fixed road graph of a city (nodes and base minutes), shared by every network on it.

    Immutable; compared and hashed by identity (``RoadNetwork``'s tables are cached per graph,
    and the same city always hands out the same graph object)."""

    __slots__ = ("city_key", "edge_base", "edges", "node_ids", "node_index")

    def __init__(
        self, node_ids: tuple[str, ...], edges: tuple[Edge, ...], city_key: str | None = None
    ) -> None:
        self.city_key = city_key  # the city whose graph this is (pickled by that name)
        self.node_ids = node_ids
        self.node_index = {n: i for i, n in enumerate(node_ids)}
        self.edges = edges
        self.edge_base = {edge_key(a, b): m for a, b, m, _ in edges}
        unknown = {n for a, b, _, _ in edges for n in (a, b)} - set(node_ids)
        if unknown:
            raise ValueError(f"roads name unknown nodes: {sorted(unknown)}")

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        city = city_by_key(self.city_key) if self.city_key is not None else None
        if city is not None and city.roads is self:
            return _roads_of_city, (self.city_key,)
        return RoadGraph, (self.node_ids, self.edges)


def _roads_of_city(key: str) -> RoadGraph:
    city = city_by_key(key)
    if city is None:
        raise ValueError(f"unknown city {key!r}")
    return city.roads


@dataclass(frozen=True)
class Unit:
    """One ambulance of a city's own fleet and its home station."""

    unit_id: str
    kind: str  # "ALS" | "BLS"
    station: str


@dataclass(frozen=True, eq=False)
class City:
    """Everything fixed about one city: the map, its hospitals and its fleet (immutable).

    ``key`` names the city (``"prakashnagar"`` or ``"gen-<seed>"``, see ``citygen``); the tasks
    read the roles below instead of naming nodes: where patients can be (``patient_nodes``),
    where a crash or a mass-casualty incident can happen (``incident_nodes``), the hub, the
    mutual-aid entry, the flood-prone riverside roads, the stations whose routes a road
    disruption is drawn on, the tertiary centre's cath lab and trauma theatre (equipment
    failures) and the two hospitals a diversion may hit. ``positions`` are layout coordinates
    for drawing (x east, y north), unused by the simulation. Pickled by name when it has one
    (``city_by_key`` rebuilds it): a fork or a copy carries a few bytes, never the whole city."""

    key: str
    name: str
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    riverside_edges: tuple[tuple[str, str], ...]
    arterial_edges: tuple[tuple[str, str], ...]
    hospitals: tuple[HospitalSpec, ...]
    fleet: tuple[Unit, ...]
    hub: str
    entry_node: str
    patient_nodes: tuple[str, ...]
    incident_nodes: tuple[str, ...]
    route_stations: tuple[str, ...]  # road disruptions fall on routes from these to patients
    cath_room: tuple[str, str]  # (hospital id, OR id) of the tertiary centre's cath lab
    trauma_room: tuple[str, str]  # (hospital id, OR id) of its first trauma theatre
    diversion_hospitals: tuple[str, str]  # a diversion hits one of these (tertiary, a district hospital)
    positions: tuple[tuple[str, float, float], ...]
    seed: int | None = None  # the generator's seed (None: a fixed city)
    roads: RoadGraph = field(init=False, repr=False)
    node_names: dict[str, str] = field(init=False, repr=False)
    edge_labels: dict[tuple[str, str], str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        init = object.__setattr__
        init(self, "roads", RoadGraph(tuple(n.node_id for n in self.nodes), self.edges, self.key))
        init(self, "node_names", {n.node_id: n.name for n in self.nodes})
        init(self, "edge_labels", {edge_key(a, b): lbl for a, b, _, lbl in self.edges})

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        if city_by_key(self.key) is self:
            return city_by_key, (self.key,)
        return _rebuilt_city, tuple(getattr(self, f.name) for f in fields(self) if f.init)

    @property
    def node_ids(self) -> tuple[str, ...]:
        return self.roads.node_ids

    @property
    def hospital_ids(self) -> tuple[str, ...]:
        return tuple(h.hospital_id for h in self.hospitals)

    @property
    def unit_ids(self) -> tuple[str, ...]:
        return tuple(u.unit_id for u in self.fleet)

    @property
    def tertiary(self) -> str:
        """The tertiary centre (cath lab, every specialist): the target of road disruptions."""
        return self.cath_room[0]

    def edge_label(self, a: str, b: str) -> str:
        return self.edge_labels[edge_key(a, b)]

    @cached_property
    def public_map(self) -> dict[str, Any]:
        """What any dispatcher of this city knows of it (JSON-ready; shown in the observation
        of every city but Prakashnagar, whose map is documented): nodes, roads with their base
        minutes, the flood-prone roads, the hub, the mutual-aid entry and unit stations. Built
        once and shared: never change it."""
        riverside = {edge_key(a, b) for a, b in self.riverside_edges}
        return {
            "id": self.key,
            "name": self.name,
            "hub": self.hub,
            "entry_node": self.entry_node,
            "nodes": [{"node_id": n.node_id, "name": n.name, "kind": n.kind} for n in self.nodes],
            "roads": [
                {"edge": [a, b], "minutes": m, "label": lbl, "riverside": edge_key(a, b) in riverside}
                for a, b, m, lbl in self.edges
            ],
            "stations": {u.unit_id: u.station for u in self.fleet},
        }


def _rebuilt_city(*values: Any) -> City:
    return City(*values)


def city_by_key(key: str) -> City | None:
    """The city of that name: Prakashnagar, or one a registered namer knows (``citygen``: the
    generated ``"gen-<seed>"``); None for any other name."""
    if key == PRAKASHNAGAR.key:
        return PRAKASHNAGAR
    for namer in _NAMERS:
        city = namer(key)
        if city is not None:
            return city
    return None


def register_city_names(namer: Callable[[str], City | None]) -> None:
    """Let ``city_by_key`` (and so unpickling) find the cities ``namer`` names. ``citygen``
    registers its generated cities when the package loads (``codered_env.sim`` imports it)."""
    if namer not in _NAMERS:
        _NAMERS.append(namer)


_NAMERS: list[Callable[[str], City | None]] = []


# (a, b, base minutes, label). Undirected.
_PRAKASHNAGAR_EDGES: tuple[Edge, ...] = (
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

# Schematic positions (x east, y north). Clockwise around the hub N0 from the north-west:
# H2, H1, N6, N5, N4, N2, N1, N8 -- an order in which no two roads cross.
_PRAKASHNAGAR_POSITIONS: tuple[tuple[str, float, float], ...] = (
    ("N0", 0.0, 0.0),
    ("H1", 0.3, 3.3),
    ("N6", 2.5, 1.7),
    ("N5", 2.9, -0.1),
    ("N7", 6.0, 1.9),
    ("N4", 1.9, -2.9),
    ("N2", -1.5, -2.7),
    ("N3", -4.5, -2.0),
    ("H3", -5.4, -3.5),
    ("N1", -2.8, -0.5),
    ("N8", -2.2, 1.1),
    ("H2", -2.7, 3.2),
)

PRAKASHNAGAR = City(
    key="prakashnagar",
    name="Prakashnagar",
    nodes=(
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
    ),
    edges=_PRAKASHNAGAR_EDGES,
    riverside_edges=(("N1", "N3"), ("N2", "N3"), ("N3", "H2")),
    # The NH-48 / Ring Road arterials through the toll plaza N7.
    arterial_edges=(("N4", "N7"), ("N7", "H1"), ("N5", "N7")),
    hospitals=HOSPITAL_SPECS,
    fleet=tuple(Unit(unit_id, kind, home) for unit_id, kind, home in FLEET),
    hub="N0",
    entry_node="N7",
    patient_nodes=("N0", "N1", "N2", "N3", "N4", "N5", "N6", "N8"),
    incident_nodes=("N0", "N2", "N4", "N5", "N8"),
    route_stations=("N0", "N6", "N2"),
    cath_room=("H1", "OR1"),
    trauma_room=("H1", "OR2"),
    diversion_hospitals=("H1", "H2"),
    positions=_PRAKASHNAGAR_POSITIONS,
)

# Prakashnagar's map under its historical names, for the adapters that draw or encode only the
# fixed city (the simulation itself reads the episode's ``City``).
NODES: tuple[Node, ...] = PRAKASHNAGAR.nodes
NODE_IDS: tuple[str, ...] = PRAKASHNAGAR.node_ids
NODE_NAMES: dict[str, str] = PRAKASHNAGAR.node_names
EDGES: tuple[Edge, ...] = PRAKASHNAGAR.edges
RIVERSIDE_EDGES: tuple[tuple[str, str], ...] = PRAKASHNAGAR.riverside_edges


def city_key_of(observation: Mapping[str, Any]) -> str:
    """The name of the city an observation is of (its ``city`` map's id; Prakashnagar without one)."""
    public = observation.get("city")
    return PRAKASHNAGAR.key if public is None else public["id"]


def road_graph_of(observation: Mapping[str, Any]) -> RoadGraph:
    """The road graph an observation's city has (its ``city`` map; Prakashnagar's without one):
    what an agent routes on. The same graph object for the same map (the city's own when the
    map is a known city's), so route tables are shared; cheap when the map object recurs."""
    public = observation.get("city")
    if public is None:
        return PRAKASHNAGAR.roads
    if _LAST_MAP[0] is public:
        return _LAST_MAP[1]
    node_ids = tuple(n["node_id"] for n in public["nodes"])
    edges = tuple((r["edge"][0], r["edge"][1], r["minutes"], r["label"]) for r in public["roads"])
    graph = _GRAPH_OF_MAP.get((node_ids, edges))
    if graph is None:
        city = city_by_key(public["id"])
        known = city is not None and (city.node_ids, city.edges) == (node_ids, edges)
        graph = city.roads if known and city is not None else RoadGraph(node_ids, edges)
        if len(_GRAPH_OF_MAP) >= MEMO_ENTRIES:
            _GRAPH_OF_MAP.clear()
        _GRAPH_OF_MAP[node_ids, edges] = graph
    _LAST_MAP[:] = [public, graph]
    return graph


# The graph of each map seen (by content), and the last map object asked about with its graph.
_GRAPH_OF_MAP: dict[tuple[tuple[str, ...], tuple[Edge, ...]], RoadGraph] = {}
_LAST_MAP: list[Any] = [None, PRAKASHNAGAR.roads]


class RoadNetwork:
    """Current road state and shortest paths over it.

    Edge cost = base minutes x time-of-day factor x congestion factor; closed edges are absent.
    The all-pairs table (Floyd-Warshall over the city's nodes) is rebuilt lazily after any change.
    ``roads`` is the city's fixed graph (Prakashnagar's unless given).
    """

    def __init__(self, peak_hour: bool, roads: RoadGraph | None = None) -> None:
        self.time_factor = PEAK_HOUR_FACTOR if peak_hour else 1.0
        self.closed: set[tuple[str, str]] = set()
        self.congestion: dict[tuple[str, str], float] = {}
        self.roads = roads if roads is not None else PRAKASHNAGAR.roads
        self._index = self.roads.node_index
        self._dist: list[list[float]] = []
        self._next: list[list[int]] = []
        self._edges: dict[tuple[str, str], float] = {}
        self._dirty = True

    def __getstate__(self) -> dict[str, object]:
        """A copy (pickle: forks) carries the road state only; its tables come from the shared
        per-state cache when first asked."""
        return {"time_factor": self.time_factor, "closed": self.closed, "congestion": self.congestion,
                "roads": self.roads}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._index, self._dist, self._next = self.roads.node_index, [], []
        self._edges, self._dirty = {}, True

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
        base = self.roads.edge_base
        if key in self.closed or key not in base:
            return _INF
        return base[key] * self.time_factor * self.congestion.get(key, 1.0)

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
        node_ids = self.roads.node_ids
        route = [a]
        while i != j:
            i = self._next[i][j]
            route.append(node_ids[i])
        return route

    def is_connected_without(self, edges: list[tuple[str, str]]) -> bool:
        """Would the graph stay connected if these edges closed (in addition to current ones)?"""
        blocked = self.closed | {edge_key(a, b) for a, b in edges}
        node_ids = self.roads.node_ids
        seen = {node_ids[0]}
        frontier = [node_ids[0]]
        while frontier:
            node = frontier.pop()
            for key in self.roads.edge_base:
                if key in blocked or node not in key:
                    continue
                other = key[1] if key[0] == node else key[0]
                if other not in seen:
                    seen.add(other)
                    frontier.append(other)
        return len(seen) == len(node_ids)

    def _refresh(self) -> None:
        if not self._dirty:
            return
        key = (self.roads, self.time_factor, frozenset(self.closed), frozenset(self.congestion.items()))
        tables = _TABLES.get(key)
        if tables is None:
            if len(_TABLES) >= _TABLES_MAX:
                _TABLES.clear()
            tables = _TABLES[key] = _shortest_paths(self)
        self._dist, self._next, self._edges = tables
        self._dirty = False


# All-pairs tables per road graph and state, shared by every network in the process (episodes,
# forks, the agents' own views of the roads): a road state recurs constantly (most of the time
# no road is closed), and the tables are never mutated, only read.
_Tables = tuple[list[list[float]], list[list[int]], dict[tuple[str, str], float]]
_TABLES: dict[tuple[RoadGraph, float, frozenset, frozenset], _Tables] = {}
_TABLES_MAX = 4096


def _shortest_paths(net: RoadNetwork) -> _Tables:
    """Floyd-Warshall over the current edge costs: (minutes, next hop) for every pair, and the
    minutes of every open edge in both directions."""
    n = len(net.roads.node_ids)
    index = net._index
    dist = [[0.0 if i == j else _INF for j in range(n)] for i in range(n)]
    nxt = [[j for j in range(n)] for _ in range(n)]
    edges = {}
    for a, b, _, _ in net.roads.edges:
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
