"""The feature schema of the procedural flat family (``CodeRedEnv-gen-taskN``): every group padded
to the generator's declared maxima with a ``present`` column, and no column named after a city's
own ids. Hospitals are slots (the city's hospitals in id order), places are read as travel minutes
(``unit_minutes``, ``patient_minutes``) instead of node one-hots."""

from __future__ import annotations

from ..sim.cityparams import FLEET_RANGE, HOSPITALS_RANGE, NEIGHBOURHOODS_RANGE
from ..sim.tasks import TASKS
from ..sim.types import AMBULANCE_STATES
from .actions import ACTION_ORDER
from .schema import (
    ACTION_FEATURES,
    CALL_FEATURES,
    GLOBAL_FEATURES,
    HOSPITAL_FEATURES,
    MAX_CALLS,
    MAX_PATIENTS,
    PATIENT_FEATURES,
    ROAD_FEATURES,
)

MAX_GEN_HOSPITALS = HOSPITALS_RANGE[1]


# own fleet and the most mutual-aid units
MAX_GEN_UNITS = FLEET_RANGE[1] + max(t.mutual_aid_limit for t in TASKS.values())


MAX_GEN_NODES = NEIGHBOURHOODS_RANGE[1] + HOSPITALS_RANGE[1]  # neighbourhoods, then hospitals


# Roads never cross (``citygen._fits``), so the road graph is planar: at most 3n - 6 roads.
MAX_GEN_ROADS = 3 * MAX_GEN_NODES - 6


TRAVEL_SCALE_MIN = 60  # travel minutes are divided by this and capped at 1 (1: cut off or absent)


HOSPITAL_SLOTS: tuple[str, ...] = tuple(f"h{k}" for k in range(1, MAX_GEN_HOSPITALS + 1))


GEN_GLOBAL_FEATURES: tuple[str, ...] = (
    *GLOBAL_FEATURES, "n_hospitals", "n_own_units", "n_nodes", "n_roads",
)


GEN_AMBULANCE_FEATURES: tuple[str, ...] = (
    "present",
    "als",
    "mutual_aid",
    *(f"status_{s}" for s in AMBULANCE_STATES),
    "at_station",
    *(f"at_{h}" for h in HOSPITAL_SLOTS),
    "has_destination",
    *(f"dest_{h}" for h in HOSPITAL_SLOTS),
    "eta",
    "busy",
    "has_job",
    "held",
    "can_dispatch",
)


def _without_nodes(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(n for n in names if not n.startswith("node_"))


def _slotted(names: tuple[str, ...], prefixes: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` with each run of ``{prefix}_<hospital id>`` columns replaced by hospital slots."""
    out: list[str] = []
    for name in names:
        prefix = name.split("_", 1)[0]
        if prefix in prefixes:
            if f"{prefix}_{HOSPITAL_SLOTS[0]}" not in out:
                out += [f"{prefix}_{h}" for h in HOSPITAL_SLOTS]
        else:
            out.append(name)
    return tuple(out)


GEN_PATIENT_FEATURES: tuple[str, ...] = _slotted(_without_nodes(PATIENT_FEATURES), ("dest", "at"))


GEN_CALL_FEATURES: tuple[str, ...] = _without_nodes(CALL_FEATURES)


GEN_HOSPITAL_FEATURES: tuple[str, ...] = ("present", "tier_1", "tier_2", "tier_3", *HOSPITAL_FEATURES)


GEN_ROAD_FEATURES: tuple[str, ...] = ("present", "base_minutes", "riverside", *ROAD_FEATURES)


# travel minutes now (``ObservationView.travel_minutes``) from a unit's node to each call row's
# node, then to each hospital slot; from a patient's node to each hospital slot
UNIT_MINUTES_COLUMNS: tuple[str, ...] = (
    *(f"to_call_{i}" for i in range(MAX_CALLS)), *(f"to_{h}" for h in HOSPITAL_SLOTS),
)


PATIENT_MINUTES_COLUMNS: tuple[str, ...] = tuple(f"to_{h}" for h in HOSPITAL_SLOTS)


GEN_SHAPES: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("global", (len(GEN_GLOBAL_FEATURES),)),
    ("ambulances", (MAX_GEN_UNITS, len(GEN_AMBULANCE_FEATURES))),
    ("patients", (MAX_PATIENTS, len(GEN_PATIENT_FEATURES))),
    ("calls", (MAX_CALLS, len(GEN_CALL_FEATURES))),
    ("hospitals", (MAX_GEN_HOSPITALS, len(GEN_HOSPITAL_FEATURES))),
    ("roads", (MAX_GEN_ROADS, len(GEN_ROAD_FEATURES))),
    ("unit_minutes", (MAX_GEN_UNITS, len(UNIT_MINUTES_COLUMNS))),
    ("patient_minutes", (MAX_PATIENTS, len(PATIENT_MINUTES_COLUMNS))),
    ("actions", (len(ACTION_ORDER), len(ACTION_FEATURES))),
)
