"""``FeatureBuilder``: the numeric observation straight from the ``World`` (reading only what
``CodeRedSim.observation()`` shows), and the observation space."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from ..sim.env import CodeRedSim
from ..sim.observation import alert_count, legal_actions, visible_calls
from .actions import ACTION_ORDER, LegalIndex, index_legal
from .rows import _ambulances, _c, _calls, _hospitals, _patients, _roads, _Rows, _slot_patients
from .schema import (
    ACTION_FEATURES,
    AMBULANCE_FEATURES,
    CALL_FEATURES,
    EDGE_KEYS,
    GLOBAL_FEATURES,
    HOSPITAL_FEATURES,
    LARGEST_STEP_BUDGET,
    LONGEST_HORIZON_MIN,
    MAX_AMBULANCES,
    MAX_CALLS,
    MAX_PATIENTS,
    N_HOSPITALS,
    PATIENT_FEATURES,
    ROAD_FEATURES,
)


class FeatureBuilder:
    """Numeric features straight from the ``World``, mirroring ``sim.observation`` field by field.

    Only what ``build_observation`` shows is read: visible patients (a phase-2 caller stays a
    call with its report until a crew is on scene), displayed vitals, agent triage, OR/specialist
    states, blood stock, active disruptions. Future calls, hidden conditions, reserves, unknown
    blood types and OR timers are never touched (tests perturb them and compare).

    Incremental: the builder keeps the rows of the previous build. A row's discrete part (one-hots
    and action flags, a pure function of a small key) is copied in from a memo only when the key
    at that slot changed; the per-minute columns (vitals, minutes, ETAs, waiting, load ...) of
    every present row are rewritten each build in one block per group. Each build returns fresh
    arrays, and a new builder produces the same bytes (tests compare them over many episodes).
    """

    def __init__(self, max_actions: int) -> None:
        self.max_actions = max_actions
        self._ambulances = _Rows(MAX_AMBULANCES, len(AMBULANCE_FEATURES))
        self._patients = _Rows(MAX_PATIENTS, len(PATIENT_FEATURES))
        self._calls = _Rows(MAX_CALLS, len(CALL_FEATURES))
        self._hospitals = _Rows(N_HOSPITALS, len(HOSPITAL_FEATURES), parts=4)

    def build(self, sim: CodeRedSim, index: LegalIndex, n_legal: int) -> dict[str, np.ndarray]:
        """The observation of ``sim`` given its legal actions (``index_legal``) and their count."""
        world, slots = sim.world, index.slots
        patients = _slot_patients([p for p in world.patients.values() if p.visible])
        calls = visible_calls(world)
        return {
            "global": self._global(sim, len(patients), len(calls), n_legal),
            "ambulances": _ambulances(self._ambulances, world, slots),
            "patients": _patients(self._patients, world, patients, slots),
            "calls": _calls(self._calls, world, calls, slots),
            "hospitals": _hospitals(self._hospitals, world, slots),
            "roads": _roads(world),
            "actions": self._actions(index.table),
        }

    def _global(self, sim: CodeRedSim, n_patients: int, n_calls: int, n_legal: int) -> np.ndarray:
        world, task = sim.world, sim.world.task
        pending = sum(1 for r in world.mutual_aid if not r.arrived)
        values = (
            world.clock / task.horizon_min,
            sim.step_count / sim.max_steps,
            task.phase == 2,
            sim.score_preview,
            (task.mutual_aid_limit - len(world.mutual_aid)) / 2,
            task.mutual_aid_limit / 2,
            pending / 2,
            world.peak_hour,
            n_patients / MAX_PATIENTS,
            n_calls / MAX_CALLS,
            alert_count(world) / 5,
            sim.last_error is not None,
            world.query_result is not None,
            n_legal / self.max_actions,
            task.horizon_min / LONGEST_HORIZON_MIN,
            sim.max_steps / LARGEST_STEP_BUDGET,
        )
        return np.array([_c(float(v)) for v in values], np.float32)

    def _actions(self, table: list[int]) -> np.ndarray:
        """Per action type: how many legal indices it has and where they start (/max_actions)."""
        # the counts and starts are never negative: ``_c(v / max_actions)`` is this float64 minimum
        scaled = np.minimum(np.array(table, np.float64) / self.max_actions, 1.0)
        return scaled.astype(np.float32).reshape(len(ACTION_ORDER), 2)


def sim_features(sim: CodeRedSim, max_actions: int = 256) -> dict[str, np.ndarray]:
    """The Gymnasium observation of ``sim`` as it stands (what ``CodeRedGymEnv`` returns)."""
    legal = {} if sim.done else legal_actions(sim.world)
    index = index_legal(legal)
    return FeatureBuilder(max_actions).build(sim, index, min(index.total, max_actions))


def _box(*shape: int) -> spaces.Box:
    return spaces.Box(low=0.0, high=1.0, shape=shape, dtype=np.float32)


def observation_space() -> spaces.Dict:
    """The compact observation space (the same for every task and ``max_actions``)."""
    return spaces.Dict(
        {
            "global": _box(len(GLOBAL_FEATURES)),
            "ambulances": _box(MAX_AMBULANCES, len(AMBULANCE_FEATURES)),
            "patients": _box(MAX_PATIENTS, len(PATIENT_FEATURES)),
            "calls": _box(MAX_CALLS, len(CALL_FEATURES)),
            "hospitals": _box(N_HOSPITALS, len(HOSPITAL_FEATURES)),
            "roads": _box(len(EDGE_KEYS), len(ROAD_FEATURES)),
            "actions": _box(len(ACTION_ORDER), len(ACTION_FEATURES)),
        }
    )
