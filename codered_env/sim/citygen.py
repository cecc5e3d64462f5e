"""The city generator: ``generate_city(seed)`` builds a ``City`` from one seed (ranges in
``cityparams.py``), and ``resolve_city`` turns what a caller names into a ``City``.

A drawn city, step by step (one ``random.Random`` seeded from the city seed, so the same seed
always gives the same city, in any process):

1. sizes: neighbourhoods (hub and highway entry included), hospitals and their tiers;
2. layout: the hub at the centre, an inner and an outer ring of places at evenly spaced,
   jittered bearings; the riverside places on the outer ring around the river's bearing, the
   CHCs next to them, the tertiary centre on the inner ring, the toll plaza beyond the outer
   ring on the far side from the river;
3. roads, added greedily and only where they cross no road already there (a plane graph):
   spokes from the hub to the inner ring, the inner ring road, each outer place to its nearest
   inner neighbours (and sometimes straight to the hub), outer arterials, the highway links;
   base minutes from the length (``MINUTES_PER_UNIT``, winding, faster arterials);
4. hospitals (rooms, specialists, ICU, blood stock) from their tier's ranges; the fleet sized
   from the population, stationed by farthest-point spread from the hub;
5. validity: connected, some flood-prone road can close without cutting the city, every place
   within ``RESPONSE_TARGET_MIN`` of a station; otherwise the same stream draws again.
"""

from __future__ import annotations

import functools
import itertools
import math
import weakref
from random import Random

from .city import PRAKASHNAGAR, City, Edge, Node, RoadGraph, RoadNetwork, Unit, edge_key, register_city_names
from .cityparams import (
    ALS_SHARE_RANGE,
    ANGLE_JITTER,
    ARTERIAL_SPEED_FACTOR,
    CHC_PROBABILITY,
    CITY_NAMES,
    DISTRICT_NAMES,
    ENTRY_LINKS_RANGE,
    ENTRY_OPPOSITE_SPREAD_DEG,
    ENTRY_RADIUS_RANGE,
    FLEET_PER_LAKH_RANGE,
    FLEET_RANGE,
    FREE_TROLLEYS_RANGE,
    HIGHWAY_NUMBERS,
    HOSPITALS_RANGE,
    HUB_LINK_PROBABILITY,
    HUB_NAMES,
    ICU_FIRST_BUSY_DIVISOR,
    INNER_RADIUS_RANGE,
    INNER_SHARE,
    MAX_DRAWS,
    MAX_ROAD_UNITS,
    MIN_INNER_PLACES,
    MIN_ROAD_MIN,
    MINUTES_PER_UNIT,
    NEIGHBOURHOODS_RANGE,
    NODE_CLEARANCE,
    OUTER_ARTERIAL_MAX_DEG,
    OUTER_ARTERIAL_PROBABILITY,
    OUTER_RADIUS_RANGE,
    PLACE_NAMES,
    POPULATION_LAKH_PER_NEIGHBOURHOOD,
    RESPONSE_TARGET_MIN,
    RING_LINK_PROBABILITY,
    RIVER_SPREAD_DEG,
    ROAD_NAMES,
    ROAD_WINDING_RANGE,
    SECOND_LINK_PROBABILITY,
    TERTIARY_NAMES,
    TEST_CITY_SEEDS,
    TIER_BLOOD_UNITS_RANGE,
    TIER_CAPACITY_RANGE,
    TIER_ICU_BEDS_RANGE,
    TIER_O_NEG_FLOOR,
    TIER_TRAUMA_THEATRES_RANGE,
    TRAIN_CITY_SEEDS,
)
from .facilities import HospitalSpec, blood_stock
from .params import SPECIALTIES, TIER_CHC, TIER_DISTRICT, TIER_TERTIARY

GENERATED_PREFIX = "gen-"
_PLAYABLE: weakref.WeakSet[City] = weakref.WeakSet()  # cities given as values, checked once
CITY_SPLITS: dict[str, range] = {"train": TRAIN_CITY_SEEDS, "test": TEST_CITY_SEEDS}
_FULL_CIRCLE = 2 * math.pi
_CATH_ROOM = ("cath_lab", "stroke_intervention")
_TRAUMA_ROOM = ("trauma_surgery", "general")
_DISTRICT_SPECIALISTS = ("trauma_surgery", "obstetrics")

Point = tuple[float, float]


class _Place:
    """A node being laid out: id, name, kind, ring ("inner" / "outer" / "hub" / "entry"), bearing."""

    def __init__(self, node_id: str, name: str, kind: str, ring: str, tier: int = 0) -> None:
        self.node_id, self.name, self.kind, self.ring, self.tier = node_id, name, kind, ring, tier
        self.angle = 0.0
        self.xy: Point = (0.0, 0.0)


# ------------------------------------------------------------------------------ public API
def resolve_city(city: object) -> City:
    """The ``City`` a caller names: ``"prakashnagar"`` (the default city), a city seed (a
    non-negative int, or ``"gen-<seed>"``), or a ``City``. A ValueError says what is valid."""
    if isinstance(city, City):
        if city not in _PLAYABLE:
            problems = structure_problems(city)
            if problems:
                raise ValueError(f"unknown city {city.key!r}: not playable: {'; '.join(problems)}")
            _PLAYABLE.add(city)
        return city
    if city == PRAKASHNAGAR.key:
        return PRAKASHNAGAR
    if isinstance(city, int) and not isinstance(city, bool) and city >= 0:
        return generate_city(city)
    if isinstance(city, str):
        found = city_for_key(city)
        if found is not None:
            return found
    raise ValueError(
        f"unknown city {city!r}; valid: {PRAKASHNAGAR.key!r}, a city seed (a non-negative integer "
        f"or '{GENERATED_PREFIX}<seed>'), or a City"
    )


def city_for_key(key: str) -> City | None:
    """The generated city named ``"gen-<seed>"``, or None for any other name."""
    digits = key[len(GENERATED_PREFIX):] if key.startswith(GENERATED_PREFIX) else ""
    if not digits.isdigit() or digits != str(int(digits)):
        return None
    return generate_city(int(digits))


def list_city_splits() -> dict[str, dict[str, object]]:
    """The city-seed splits for generalisation: ``train`` to learn on, ``test`` held out."""
    return {
        name: {"first_seed": seeds.start, "num_cities": len(seeds), "stop": seeds.stop}
        for name, seeds in CITY_SPLITS.items()
    }


def split_seeds(split: str) -> range:
    """The city seeds of one split; a ValueError naming the valid splits otherwise."""
    if split not in CITY_SPLITS:
        raise ValueError(f"unknown city split {split!r}; valid: {', '.join(CITY_SPLITS)}")
    return CITY_SPLITS[split]


# kept per process: forks and copies name a city by its key and find the same object here
@functools.lru_cache(maxsize=4096)
def generate_city(seed: int) -> City:
    """The city of this seed (the same object for the same seed within a process)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"city seed must be a non-negative integer, got {seed!r}")
    rng = Random(f"codered:city:{seed}")
    for _ in range(MAX_DRAWS):
        city = _draw_city(rng, seed)
        if city_problems(city) == []:
            return city
    raise RuntimeError(f"no valid city drawn for seed {seed} in {MAX_DRAWS} draws")


def city_problems(city: City) -> list[str]:
    """What makes a city unfit for the tasks (empty when it is fit)."""
    problems = []
    net = RoadNetwork(False, city.roads)
    if not net.is_connected_without([]):
        problems.append("the road graph is not connected")
    if not any(net.is_connected_without([edge]) for edge in city.riverside_edges):
        problems.append("no flood-prone road can close without cutting the city off")
    stations = {u.station for u in city.fleet}
    for node in city.patient_nodes:
        if min(net.minutes(s, node) for s in stations) > RESPONSE_TARGET_MIN:
            problems.append(f"{node} is over {RESPONSE_TARGET_MIN} min from every station")
    return problems


def structure_problems(city: City) -> list[str]:
    """What makes a hand-built city unplayable: roles naming unknown nodes, hospitals or rooms,
    too few places for the tasks, or roads that do not connect it (empty when playable)."""
    nodes, hospitals = set(city.node_ids), {h.hospital_id: h for h in city.hospitals}
    named = {"hub": [city.hub], "entry_node": [city.entry_node], "patient_nodes": city.patient_nodes,
             "incident_nodes": city.incident_nodes, "route_stations": city.route_stations,
             "stations": [u.station for u in city.fleet], "hospitals": list(hospitals)}
    problems = [f"{role} name unknown nodes" for role, ids in named.items() if not set(ids) <= nodes]
    if len(city.patient_nodes) < 2 or not city.incident_nodes or not city.route_stations or not city.fleet:
        problems.append("too few patient places, incident places, stations or units")
    rooms = {"cath_room": (city.cath_room, "cath_lab"), "trauma_room": (city.trauma_room, "trauma_surgery")}
    for role, ((hid, or_id), procedure) in rooms.items():
        spec = hospitals.get(hid)
        if spec is None or procedure not in dict(spec.ors).get(or_id, ()):
            problems.append(f"{role} {hid} {or_id} is not a {procedure} room")
    if not set(city.diversion_hospitals) <= set(hospitals):
        problems.append("diversion_hospitals name unknown hospitals")
    if not {edge_key(*e) for e in city.riverside_edges} <= set(city.roads.edge_base):
        problems.append("riverside_edges name unknown roads")
    if not problems:
        problems = [p for p in city_problems(city) if "from every station" not in p]
    return problems


# ------------------------------------------------------------------------------ the draw
def _draw_city(rng: Random, seed: int) -> City:
    city_name = rng.choice(CITY_NAMES)
    places = _places(rng, city_name)
    hub, entry = places[0], next(p for p in places if p.kind == "entry")
    _lay_out(rng, places)
    edges, arterial = _roads(rng, places)
    riverside = tuple(
        edge_key(a, b) for a, b, _, _ in edges
        if any(p.kind == "riverside" and p.node_id in (a, b) for p in places)
    )
    hospitals = tuple(_hospital(rng, p, city_name) for p in places if p.kind == "hospital")
    tertiary = next(h for h in hospitals if h.tier == TIER_TERTIARY)
    district = next(h for h in hospitals if h.tier == TIER_DISTRICT)
    neighbourhoods = [p for p in places if p.kind != "hospital"]
    population = sum(rng.uniform(*POPULATION_LAKH_PER_NEIGHBOURHOOD) for _ in neighbourhoods)
    roads = RoadNetwork(False, RoadGraph(tuple(p.node_id for p in places), edges))
    fleet = _fleet(rng, population, [p.node_id for p in neighbourhoods if p is not entry], roads, hub.node_id)
    patient_nodes = tuple(p.node_id for p in neighbourhoods if p is not entry)
    by_kind = {kind: [p.node_id for p in neighbourhoods if p.kind == kind] for kind in PLACE_NAMES}
    incident = (hub.node_id, *by_kind["commercial"], *by_kind["industrial"], *by_kind["residential"][:1])
    return City(
        key=f"{GENERATED_PREFIX}{seed}",
        name=city_name,
        nodes=places_nodes(places),
        edges=edges,
        riverside_edges=riverside,
        arterial_edges=arterial,
        hospitals=hospitals,
        fleet=fleet,
        hub=hub.node_id,
        entry_node=entry.node_id,
        patient_nodes=patient_nodes,
        incident_nodes=incident,
        route_stations=tuple(dict.fromkeys(u.station for u in fleet[:3])),
        cath_room=_room_for(tertiary, "cath_lab"),
        trauma_room=_room_for(tertiary, "trauma_surgery"),
        diversion_hospitals=(tertiary.hospital_id, district.hospital_id),
        positions=tuple((p.node_id, *p.xy) for p in places),
        seed=seed,
    )


def _room_for(hospital: HospitalSpec, procedure: str) -> tuple[str, str]:
    """(hospital id, id of its first OR that can host ``procedure``)."""
    return hospital.hospital_id, next(or_id for or_id, procs in hospital.ors if procedure in procs)


def places_nodes(places: list[_Place]) -> tuple[Node, ...]:
    """The city's nodes in id order: neighbourhoods N0.. (hub first, entry last), then H1.."""
    return tuple(Node(p.node_id, p.name, p.kind) for p in places)


def _places(rng: Random, city_name: str) -> list[_Place]:
    """Hub, the other neighbourhoods, the entry, then the hospitals (tiers drawn), unplaced."""
    n_neighbourhoods = rng.randint(*NEIGHBOURHOODS_RANGE)
    kinds = _neighbourhood_kinds(rng, n_neighbourhoods - 2)
    names = {kind: rng.sample(pool, len(pool)) for kind, pool in PLACE_NAMES.items()}
    places = [_Place("N0", rng.choice(HUB_NAMES), "hub", "hub")]
    for i, kind in enumerate(kinds, start=1):
        places.append(_Place(f"N{i}", names[kind].pop(), kind, ""))
    highway = rng.choice(HIGHWAY_NUMBERS)
    places.append(_Place(f"N{len(kinds) + 1}", f"NH-{highway} Toll Plaza", "entry", "entry"))
    n_hospitals = rng.randint(*HOSPITALS_RANGE)
    tiers = [TIER_TERTIARY, TIER_DISTRICT]
    tiers += [TIER_CHC if rng.random() < CHC_PROBABILITY else TIER_DISTRICT for _ in range(n_hospitals - 2)]
    rng.shuffle(tiers)  # no id is always the tertiary centre: a memorised action list must look
    district_names = rng.sample(DISTRICT_NAMES, len(DISTRICT_NAMES))
    # a CHC is named after the place it serves: the riverside first, as Prakashnagar's CHC Nadi Ghat
    served = [p.name for kind in ("riverside", "residential") for p in places if p.kind == kind]
    for i, tier in enumerate(tiers, start=1):
        if tier == TIER_TERTIARY:
            name = rng.choice(TERTIARY_NAMES).format(city=city_name)
        elif tier == TIER_DISTRICT:
            name = district_names.pop()
        else:
            name = f"CHC {served.pop(0)}"
        places.append(_Place(f"H{i}", name, "hospital", "", tier))
    return places


def _neighbourhood_kinds(rng: Random, n: int) -> list[str]:
    """Kinds of the ``n`` neighbourhoods besides hub and entry: 1-2 riverside, 1-2 industrial,
    1-2 commercial, the rest (at least two) residential, in a shuffled order."""
    riverside, industrial, commercial = rng.randint(1, 2), rng.randint(1, 2), rng.randint(1, 2)
    while riverside + industrial + commercial > n - 2:
        if commercial > 1:
            commercial -= 1
        elif industrial > 1:
            industrial -= 1
        else:
            riverside -= 1
    kinds = ["riverside"] * riverside + ["industrial"] * industrial + ["commercial"] * commercial
    kinds += ["residential"] * (n - len(kinds))
    rng.shuffle(kinds)
    return kinds


# ------------------------------------------------------------------------------ layout
def _lay_out(rng: Random, places: list[_Place]) -> None:
    """Bearings and positions: rings around the hub, the river on one side, the entry opposite."""
    river = rng.uniform(0, _FULL_CIRCLE)
    others = [p for p in places if p.ring == ""]
    for p in others:
        p.ring = "outer" if p.kind == "riverside" or p.tier == TIER_CHC else ""
    free = [p for p in others if p.ring == "" and p.tier != TIER_TERTIARY]
    rng.shuffle(free)
    wanted = max(MIN_INNER_PLACES, round(INNER_SHARE * len(free)))
    for i, p in enumerate(free):
        p.ring = "inner" if i < wanted - 1 else "outer"
    for p in others:
        if p.tier == TIER_TERTIARY:
            p.ring = "inner"
    for ring, radius in (("inner", INNER_RADIUS_RANGE), ("outer", OUTER_RADIUS_RANGE)):
        members = [p for p in others if p.ring == ring]
        _place_ring(rng, members, river, radius)
    entry = next(p for p in places if p.kind == "entry")
    spread = math.radians(ENTRY_OPPOSITE_SPREAD_DEG)
    entry.angle = (river + math.pi + rng.uniform(-spread, spread)) % _FULL_CIRCLE
    entry.xy = _polar(rng.uniform(*ENTRY_RADIUS_RANGE), entry.angle)


def _place_ring(rng: Random, members: list[_Place], river: float, radius: tuple[float, float]) -> None:
    """Evenly spaced, jittered slots; riverside places take the slots nearest the river, CHCs the
    next ones, the rest are shuffled over what is left."""
    if not members:
        return
    step = _FULL_CIRCLE / len(members)
    offset = rng.uniform(0, step)
    slots = [(offset + i * step + rng.uniform(-ANGLE_JITTER, ANGLE_JITTER) * step) % _FULL_CIRCLE
             for i in range(len(members))]
    slots.sort(key=lambda a: _angle_between(a, river))
    spread = math.radians(RIVER_SPREAD_DEG)
    first = [p for p in members if p.kind == "riverside"] + [p for p in members if p.tier == TIER_CHC]
    rest = [p for p in members if p not in first]
    rng.shuffle(rest)
    for p, angle in zip(first + rest, slots, strict=True):
        p.angle = angle
        if p.kind == "riverside" and _angle_between(angle, river) > spread:
            p.angle = (river + math.copysign(spread, math.sin(angle - river))) % _FULL_CIRCLE
        p.xy = _polar(rng.uniform(*radius), p.angle)


def _polar(r: float, angle: float) -> Point:
    """A position, rounded as the city keeps it (so roads are checked on the drawn geometry)."""
    return round(r * math.cos(angle), 2), round(r * math.sin(angle), 2)


def _angle_between(a: float, b: float) -> float:
    d = abs(a - b) % _FULL_CIRCLE
    return min(d, _FULL_CIRCLE - d)


# ------------------------------------------------------------------------------ roads
def _roads(rng: Random, places: list[_Place]) -> tuple[tuple[Edge, ...], tuple[tuple[str, str], ...]]:
    """Roads added in order of importance wherever they cross none already there."""
    hub = places[0]
    entry = next(p for p in places if p.kind == "entry")
    inner = sorted((p for p in places if p.ring == "inner"), key=lambda p: p.angle)
    outer = sorted((p for p in places if p.ring == "outer"), key=lambda p: p.angle)
    planned: list[tuple[_Place, _Place, bool]] = [(hub, p, False) for p in inner]
    for a, b in _ring_pairs(inner):
        if rng.random() < RING_LINK_PROBABILITY:
            planned.append((a, b, False))
    for p in outer:
        near = sorted(inner, key=lambda q: _distance(p.xy, q.xy))
        planned.append((p, near[0], False))
        if len(near) > 1 and rng.random() < SECOND_LINK_PROBABILITY:
            planned.append((p, near[1], False))
        if rng.random() < HUB_LINK_PROBABILITY:
            planned.append((p, hub, False))
    for a, b in _ring_pairs(outer):
        if _angle_between(a.angle, b.angle) <= math.radians(OUTER_ARTERIAL_MAX_DEG) and (
            rng.random() < OUTER_ARTERIAL_PROBABILITY
        ):
            planned.append((a, b, True))
    near_entry = sorted((p for p in places if p not in (entry, hub)), key=lambda q: _distance(entry.xy, q.xy))
    planned += [(entry, p, True) for p in near_entry[: rng.randint(*ENTRY_LINKS_RANGE)]]
    built: list[tuple[_Place, _Place, bool]] = []
    for a, b, fast in planned:
        short = _distance(a.xy, b.xy) <= MAX_ROAD_UNITS
        if short and a is not b and not _joined(built, a, b) and _fits(places, built, a, b):
            built.append((a, b, fast))
    _link_loose_ends(places, built)
    labels = rng.sample(ROAD_NAMES, len(ROAD_NAMES))
    edges = tuple(
        (a.node_id, b.node_id, _minutes(rng, a, b, fast), _label(labels, a, b, fast, entry))
        for a, b, fast in built
    )
    arterial = tuple(edge_key(a.node_id, b.node_id) for a, b, fast in built if fast)
    return edges, arterial


def _ring_pairs(ring: list[_Place]) -> list[tuple[_Place, _Place]]:
    if len(ring) < 2:
        return []
    pairs = list(itertools.pairwise(ring))
    return [*pairs, (ring[-1], ring[0])] if len(ring) > 2 else pairs


def _link_loose_ends(places: list[_Place], built: list[tuple[_Place, _Place, bool]]) -> None:
    """Give every neighbourhood a second road and every node a first one, nearest first, still
    without crossings (a hospital may keep a single lane, as Prakashnagar's CHC)."""
    for p in places:
        wanted = 1 if p.kind == "hospital" else 2
        for q in sorted((q for q in places if q is not p), key=lambda q: _distance(p.xy, q.xy)):
            degree = sum(p in (a, b) for a, b, _ in built)
            if degree >= wanted or (degree and _distance(p.xy, q.xy) > MAX_ROAD_UNITS):
                break
            if not _joined(built, p, q) and _fits(places, built, p, q):
                built.append((p, q, False))


def _joined(built: list[tuple[_Place, _Place, bool]], a: _Place, b: _Place) -> bool:
    return any({a, b} == {x, y} for x, y, _ in built)


def _fits(places: list[_Place], built: list[tuple[_Place, _Place, bool]], a: _Place, b: _Place) -> bool:
    """A road a-b crosses no road already built and passes no other place closer than
    ``NODE_CLEARANCE`` (it would look as if it ran through it)."""
    if any(not ({a, b} & {x, y}) and _segments_cross(a.xy, b.xy, x.xy, y.xy) for x, y, _ in built):
        return False
    return all(_distance_to_segment(p.xy, a.xy, b.xy) >= NODE_CLEARANCE for p in places if p not in (a, b))


def _distance_to_segment(p: Point, a: Point, b: Point) -> float:
    dx, dy = b[0] - a[0], b[1] - a[1]
    length2 = dx * dx + dy * dy
    t = 0.0 if length2 == 0 else max(0.0, min(1.0, ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / length2))
    return _distance(p, (a[0] + t * dx, a[1] + t * dy))


def _segments_cross(p1: Point, p2: Point, q1: Point, q2: Point) -> bool:
    def orient(a: Point, b: Point, c: Point) -> float:
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])

    d1, d2 = orient(q1, q2, p1), orient(q1, q2, p2)
    d3, d4 = orient(p1, p2, q1), orient(p1, p2, q2)
    return d1 * d2 < 0 and d3 * d4 < 0


def _distance(a: Point, b: Point) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])


def _minutes(rng: Random, a: _Place, b: _Place, fast: bool) -> float:
    minutes = _distance(a.xy, b.xy) * MINUTES_PER_UNIT * rng.uniform(*ROAD_WINDING_RANGE)
    return max(MIN_ROAD_MIN, round(minutes * (ARTERIAL_SPEED_FACTOR if fast else 1.0)))


def _label(labels: list[str], a: _Place, b: _Place, fast: bool, entry: _Place) -> str:
    if entry in (a, b):
        other = b if a is entry else a
        return f"{entry.name.split(' ')[0]} Link to {other.name}"
    if fast:
        return f"Outer Ring Road ({a.name} - {b.name})"
    return labels.pop() if labels else f"{a.name} - {b.name} Road"


# ------------------------------------------------------------------------------ hospitals, fleet
def _hospital(rng: Random, place: _Place, city_name: str) -> HospitalSpec:
    tier = place.tier
    capacity = rng.randint(*TIER_CAPACITY_RANGE[tier])
    free = rng.randint(*FREE_TROLLEYS_RANGE)
    icu_beds = rng.randint(*TIER_ICU_BEDS_RANGE[tier])
    theatres = rng.randint(*TIER_TRAUMA_THEATRES_RANGE[tier])
    rooms = [_CATH_ROOM] if tier == TIER_TERTIARY else []
    rooms += [_TRAUMA_ROOM] * theatres
    rng.shuffle(rooms)  # the cath lab is not always OR1
    specialists = {TIER_TERTIARY: SPECIALTIES, TIER_DISTRICT: _DISTRICT_SPECIALISTS}.get(tier, ())
    lo, hi = max(0, capacity - free - 1), capacity - free
    return HospitalSpec(
        place.node_id,
        place.name,
        tier,
        capacity=capacity,
        base_load=(lo, hi),
        icu_beds=icu_beds,
        icu_used=(icu_beds // ICU_FIRST_BUSY_DIVISOR, icu_beds - 1) if icu_beds else None,
        ors=tuple((f"OR{i}", procs) for i, procs in enumerate(rooms, start=1)),
        specialists=tuple(s for s in SPECIALTIES if s in specialists),
        blood=blood_stock(rng.randint(*TIER_BLOOD_UNITS_RANGE[tier]), TIER_O_NEG_FLOOR[tier],
                          group_o_only=tier == TIER_CHC),
    )


def _fleet(rng: Random, population: float, sites: list[str], net: RoadNetwork, hub: str) -> tuple[Unit, ...]:
    """Units from the population; stations spread by farthest point from the hub, handed out to
    the units in a shuffled order (no unit id is always at the hub)."""
    units = min(max(round(population * rng.uniform(*FLEET_PER_LAKH_RANGE)), FLEET_RANGE[0]), FLEET_RANGE[1])
    als = min(max(round(units * rng.uniform(*ALS_SHARE_RANGE)), 1), units - 1)
    stations = [hub]
    while len(stations) < min(units, len(sites)):
        far = max((s for s in sites if s not in stations),
                  key=lambda s: (min(net.minutes(s, t) for t in stations), rng.random()))
        stations.append(far)
    order = [stations[i % len(stations)] for i in range(units)]
    rng.shuffle(order)
    fleet = [Unit(f"ALS{i + 1}", "ALS", order[i]) for i in range(als)]
    fleet += [Unit(f"BLS{i + 1}", "BLS", order[als + i]) for i in range(units - als)]
    return tuple(fleet)


register_city_names(city_for_key)
