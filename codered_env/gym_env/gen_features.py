"""``GenFeatureBuilder``: the observation of the procedural flat family (``gen_schema``) on any
city: per-slot rows padded to the declared maxima, hospitals as slots and places as travel
minutes. Built afresh each step from the observation view and the city's public map (no
incremental buffer, unlike ``FeatureBuilder``; the pure row-part memos of ``rows`` and
``hospital_rows`` are shared)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from gymnasium import spaces

from ..sim.city import City, edge_key
from ..sim.conditions import CONDITIONS
from ..sim.view import ObservationView
from .actions import LegalIndex
from .features import FeatureBuilder
from .gen_schema import (
    GEN_AMBULANCE_FEATURES,
    GEN_CALL_FEATURES,
    GEN_HOSPITAL_FEATURES,
    GEN_PATIENT_FEATURES,
    GEN_ROAD_FEATURES,
    GEN_SHAPES,
    HOSPITAL_SLOTS,
    MAX_GEN_HOSPITALS,
    MAX_GEN_NODES,
    MAX_GEN_ROADS,
    MAX_GEN_UNITS,
    TRAVEL_SCALE_MIN,
)
from .hospital_rows import (
    _H_BLOOD_STOCK,
    _H_FLAGS,
    _H_ROOMS,
    _H_SPECIALISTS,
    _HOSPITAL_FLAGS,
    _blood_columns,
    _rooms_columns,
    _specialist_columns,
)
from .row_parts import _c
from .rows import _CALL_FLAGS, _PATIENT_FLAGS, _report_row, _slot_patients, _vitals_scaled, _waiting_flags
from .schema import CALL_FEATURES, MAX_CALLS, PATIENT_FEATURES

_A = {n: i for i, n in enumerate(GEN_AMBULANCE_FEATURES)}
_P = {n: i for i, n in enumerate(GEN_PATIENT_FEATURES)}
_C = {n: i for i, n in enumerate(GEN_CALL_FEATURES)}
_H = {n: i for i, n in enumerate(GEN_HOSPITAL_FEATURES)}
_H_BASE = _H["load"]  # the flat family's hospital columns follow the four slot columns
_R = {n: i for i, n in enumerate(GEN_ROAD_FEATURES)}

# (column, (action type, parameter)) of each row's action flags, by the flat family's names
_P_FLAGS = tuple((_P[PATIENT_FEATURES[col]], key) for col, key in _PATIENT_FLAGS)
_C_FLAGS = tuple((_C[CALL_FEATURES[col]], key) for col, key in _CALL_FLAGS)
_H_FLAG_KEYS = tuple(key for _, key in _HOSPITAL_FLAGS)
_DISPATCH_KEYS = (("dispatch_ambulance", "ambulance_id"), ("dispatch_als", "ambulance_id"),
                  ("dispatch_bls", "ambulance_id"))
# the call columns the report model fills (``rows._report_row``), old layout -> this one
_C_REPORT = tuple((CALL_FEATURES.index(n), i) for i, n in enumerate(GEN_CALL_FEATURES) if n in CALL_FEATURES)


Slots = dict[tuple[str, str], set]  # (action type, parameter) -> the ids it accepts now


class _Places(NamedTuple):
    """Where things are in one build: travel minutes now, node rows, hospital slots."""

    table: list[list[float]]  # ``ObservationView.travel_minutes``
    node_index: dict[str, int]
    hospital_slot: dict[str, int]  # hospital id -> slot
    call_nodes: list[int]  # node row of each shown call
    hospital_nodes: list[int]  # node row of each hospital slot


def check_city_fits(city: City) -> None:
    """Raise a ValueError when ``city`` is larger than the family's declared maxima."""
    sizes = (("hospitals", len(city.hospital_ids), MAX_GEN_HOSPITALS),
             ("own units", len(city.unit_ids), MAX_GEN_UNITS),
             ("nodes", len(city.node_ids), MAX_GEN_NODES), ("roads", len(city.edges), MAX_GEN_ROADS))
    over = [f"{n} {name} (at most {most})" for name, n, most in sizes if n > most]
    if over:
        raise ValueError(f"city {city.key!r} does not fit the CodeRedEnv-gen schema: {', '.join(over)}")


class GenFeatureBuilder:
    """Numeric features of the observation view on a given city (``use_city``)."""

    def __init__(self, max_actions: int) -> None:
        self.max_actions = max_actions
        self._global = FeatureBuilder(max_actions)._global
        self._city: City | None = None

    def use_city(self, city: City) -> None:
        check_city_fits(city)
        self._city = city

    def build(self, view: ObservationView, index: LegalIndex, n_legal: int) -> dict[str, np.ndarray]:
        city = self._city
        if city is None:
            raise RuntimeError("GenFeatureBuilder.use_city(city) must be called before build")
        out = {name: np.zeros(shape, np.float32) for name, shape in GEN_SHAPES}
        slots, clock = index.slots, view["clock_min"]
        node_index = city.roads.node_index
        hospital_slot = {h: k for k, h in enumerate(city.hospital_ids)}
        hospital_nodes = [node_index[h["node"]] for h in sorted(
            view["hospitals"], key=lambda h: hospital_slot[h["hospital_id"]])]
        patients = _slot_patients(view["patients"])
        calls = view["calls"][:MAX_CALLS]
        places = _Places(view.travel_minutes(), node_index, hospital_slot,
                         [node_index[c["node"]] for c in calls], hospital_nodes)
        self._ambulances(out, view, city, slots, places)
        self._patients(out, patients, slots, places)
        self._calls(out["calls"], calls, slots, clock)
        self._hospitals(out["hospitals"], view, hospital_slot, slots, clock)
        self._roads(out["roads"], view, city, clock)
        g = self._global(view, len(patients), len(view["calls"]), n_legal)
        g += [len(city.hospital_ids) / MAX_GEN_HOSPITALS, len(city.unit_ids) / MAX_GEN_UNITS,
              len(city.node_ids) / MAX_GEN_NODES, len(city.edges) / MAX_GEN_ROADS]
        out["global"][:] = g
        m = self.max_actions
        out["actions"].reshape(-1)[:] = [v / m if v < m else 1.0 for v in index.table]
        return out

    @staticmethod
    def _ambulances(out: dict[str, np.ndarray], view: ObservationView, city: City, slots: Slots,
                    places: _Places) -> None:
        rows, minutes = out["ambulances"], out["unit_minutes"]
        hospital_slot = places.hospital_slot
        dispatchable = set().union(*(slots.get(key, ()) for key in _DISPATCH_KEYS))
        stations = city.public_map["stations"]
        for i, amb in enumerate(view["ambulances"][:MAX_GEN_UNITS]):
            row = rows[i]
            row[_A["present"]] = 1
            row[_A["als"]] = amb["kind"] == "ALS"
            row[_A["mutual_aid"]] = amb["mutual_aid"]
            row[_A[f"status_{amb['status']}"]] = 1
            node, dest = amb["node"], amb["destination"]
            row[_A["at_station"]] = stations.get(amb["ambulance_id"]) == node
            if node in hospital_slot:
                row[_A[f"at_{HOSPITAL_SLOTS[hospital_slot[node]]}"]] = 1
            if dest is not None:
                row[_A["has_destination"]] = 1
                if dest in hospital_slot:
                    row[_A[f"dest_{HOSPITAL_SLOTS[hospital_slot[dest]]}"]] = 1
            eta, busy = amb["eta_min"], amb["busy_min"]
            row[_A["eta"]] = 0.0 if eta is None else _c(eta / 30)
            row[_A["busy"]] = 0.0 if busy is None else _c(busy / 30)
            row[_A["has_job"]] = amb["patient_id"] is not None or amb["call_id"] is not None
            row[_A["held"]] = amb["held"]
            row[_A["can_dispatch"]] = amb["ambulance_id"] in dispatchable
            here = places.table[places.node_index[node]]
            minutes[i, :] = 1.0
            for j, target in enumerate(places.call_nodes):
                minutes[i, j] = _travel(here[target])
            for k, target in enumerate(places.hospital_nodes):
                minutes[i, MAX_CALLS + k] = _travel(here[target])

    @staticmethod
    def _patients(out: dict[str, np.ndarray], patients: list[dict[str, Any]], slots: Slots,
                  places: _Places) -> None:
        rows, minutes = out["patients"], out["patient_minutes"]
        hospital_slot = places.hospital_slot
        flags = [(column, slots.get(key, ())) for column, key in _P_FLAGS]
        for i, p in enumerate(patients):
            row = rows[i]
            row[_P["present"]] = 1
            row[_P[f"priority_{CONDITIONS[p['condition']].true_priority}"]] = 1
            row[_P[f"condition_{p['condition']}"]] = 1
            row[_P[f"status_{p['status']}"]] = 1
            v = p["vitals"]
            start = _P["hr"]
            row[start:start + 6] = _vitals_scaled(v["hr"], v["sbp"], v["spo2"], v["rr"], v["gcs"], v["score"])
            row[_P["minutes_since_call"]] = _c(p["minutes_since_call"] / 180)
            eta = p["eta_min"]
            row[_P["eta"]] = 0.0 if eta is None else _c(eta / 30)
            row[_P["has_unit"]] = p["ambulance_id"] is not None
            if p["destination"] is not None:
                row[_P["has_destination"]] = 1
                row[_P[f"dest_{HOSPITAL_SLOTS[hospital_slot[p['destination']]]}"]] = 1
            if p["hospital"] is not None:
                row[_P[f"at_{HOSPITAL_SLOTS[hospital_slot[p['hospital']]]}"]] = 1
            waiting = p["waiting_for"]
            start = _P["waiting_or"]
            row[start:start + 4] = _waiting_flags(tuple(waiting)) if waiting else (0.0, 0.0, 0.0, 0.0)
            reserved = p["blood_reserved"]
            row[_P["blood_type_known"]] = p["blood_type"] is not None
            row[_P["blood_reserved"]] = _c(sum(reserved.values()) / 6) if reserved else 0.0
            row[_P["secondary"]] = p["secondary"]
            for column, ids in flags:
                row[column] = p["patient_id"] in ids
            here = places.table[places.node_index[p["node"]]]
            minutes[i, :] = 1.0
            for k, target in enumerate(places.hospital_nodes):
                minutes[i, k] = _travel(here[target])

    @staticmethod
    def _calls(rows: np.ndarray, calls: list[dict[str, Any]], slots: Slots, clock: int) -> None:
        flags = [(column, slots.get(key, ())) for column, key in _C_FLAGS]
        for i, call in enumerate(calls):
            row, report = rows[i], _report_row(call["report"])
            for old, new in _C_REPORT:
                row[new] = report[old]
            row[_C["present"]] = 1
            row[_C["waiting"]] = _c((clock - call["received_min"]) / 60)
            priority = call["priority"]
            row[_C["untriaged" if priority is None else f"triaged_{priority}"]] = 1
            row[_C["pending"]] = call["status"] == "pending"
            row[_C["dispatched"]] = call["status"] == "dispatched"
            row[_C["has_unit"]] = call["ambulance_id"] is not None
            for column, ids in flags:
                row[column] = call["call_id"] in ids

    @staticmethod
    def _hospitals(rows: np.ndarray, view: ObservationView, hospital_slot: dict[str, int],
                   slots: Slots, clock: int) -> None:
        flag_sets = [slots.get(key, ()) for key in _H_FLAG_KEYS]
        for h in view["hospitals"]:
            row = rows[hospital_slot[h["hospital_id"]]]
            row[_H["present"]] = 1
            row[_H[f"tier_{h['tier']}"]] = 1
            body = row[_H_BASE:]
            body[_H_ROOMS] = _rooms_columns(tuple((r["state"], r["procedure"]) for r in h["ors"]))
            body[_H_SPECIALISTS] = _specialist_columns(
                tuple((specialty, s["state"]) for specialty, s in h["specialists"].items()))
            body[_H_BLOOD_STOCK] = _blood_columns(tuple(h["blood"].items()))
            body[_H_FLAGS] = [h["hospital_id"] in ids for ids in flag_sets]
            until = h["diverted_until"]
            row[_H["load"]] = _c(h["occupancy"] / (2 * h["capacity"]))
            row[_H["crowded"]] = h["crowded"]
            row[_H["diverted"]] = until is not None
            row[_H["diversion_left"]] = 0.0 if until is None else _c((until - clock) / 60)
            row[_H["icu_free"]] = _c(h["icu_free"] / 4)

    @staticmethod
    def _roads(rows: np.ndarray, view: ObservationView, city: City, clock: int) -> None:
        index = {}
        for i, road in enumerate(city.public_map["roads"]):
            index[edge_key(*road["edge"])] = i
            rows[i, _R["present"]] = 1
            rows[i, _R["base_minutes"]] = _c(road["minutes"] / 10)
            rows[i, _R["riverside"]] = road["riverside"]
        roads = view["roads"]
        for closed in roads["closed"]:
            row = rows[index[edge_key(*closed["edge"])]]
            row[_R["closed"]] = 1
            row[_R["minutes_left"]] = _c((closed["until"] - clock) / 60)
        for congested in roads["congested"]:
            row = rows[index[edge_key(*congested["edge"])]]
            row[_R["congested"]] = 1
            row[_R["congestion_factor"]] = _c((congested["factor"] - 1.0) / 2)
            row[_R["minutes_left"]] = _c((congested["until"] - clock) / 60)


def _travel(minutes: float) -> float:
    """Travel minutes scaled into [0, 1]; 1 when cut off (inf) or at least ``TRAVEL_SCALE_MIN``."""
    return 1.0 if minutes >= TRAVEL_SCALE_MIN else minutes / TRAVEL_SCALE_MIN


def gen_observation_space() -> spaces.Dict:
    """The procedural family's observation space (the same for every city, task and ``max_actions``)."""
    return spaces.Dict({name: spaces.Box(0.0, 1.0, shape, np.float32) for name, shape in GEN_SHAPES})
