"""Gymnasium adapter for CodeRedEnv: a fixed ``Discrete`` action space with action masking and a
numeric ``Dict`` observation, on top of ``CodeRedSim`` (which itself knows nothing of gymnasium).

gymnasium is a dev dependency of this project, so it is imported only here::

    import gymnasium
    import codered_env.gym_env  # registers CodeRedEnv-task1-v1 .. CodeRedEnv-task5-v1

    env = gymnasium.make("CodeRedEnv-task3-v1")

The compact observation is built by ``FeatureBuilder`` straight from the world, reading only what
``CodeRedSim.observation()`` shows (no hidden state). The full spec is docs/GYM.md.

The package by job: ``schema`` (feature names, sizes, columns), ``actions`` (the Discrete action
space and its lazy legal index), ``rows`` (memoised row encoders), ``features`` (``FeatureBuilder``,
``observation_space``), ``env`` (``CodeRedGymEnv``) and ``registration``; every name is importable
from ``codered_env.gym_env`` and importing it registers the ids.
"""

from __future__ import annotations

# gymnasium is checked first, so a missing install gives this message and nothing else.
try:
    import gymnasium  # noqa: F401
    from gymnasium import spaces  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the dev group
    raise ImportError(
        "codered_env.gym_env needs gymnasium, which is not installed: run `pip install gymnasium` "
        "(or `uv sync --group dev`)."
    ) from exc

# Names the single-module gym_env exposed from the simulation, kept for existing imports.
from ..sim.params import PROCEDURES as PROCEDURES
from ..sim.params import SPECIALTIES as SPECIALTIES
from .actions import _BLOOD_ACTIONS as _BLOOD_ACTIONS
from .actions import _NO_SLOT_FLAGS as _NO_SLOT_FLAGS
from .actions import _SEGMENT_PLAN as _SEGMENT_PLAN
from .actions import _SEGMENT_TYPES as _SEGMENT_TYPES
from .actions import _SLOT_PARAMS as _SLOT_PARAMS
from .actions import ACTION_ORDER as ACTION_ORDER
from .actions import CANONICAL_UNITS as CANONICAL_UNITS
from .actions import MAINTAIN as MAINTAIN
from .actions import LegalIndex as LegalIndex
from .actions import LegalMemo as LegalMemo
from .actions import OptionPart as OptionPart
from .actions import Segment as Segment
from .actions import TypeParts as TypeParts
from .actions import _canonical_units as _canonical_units
from .actions import _expand as _expand
from .actions import _option_parts as _option_parts
from .actions import _param_values as _param_values
from .actions import decode_action as decode_action
from .actions import enumerate_actions as enumerate_actions
from .actions import index_legal as index_legal
from .env import CodeRedGymEnv as CodeRedGymEnv
from .features import FeatureBuilder as FeatureBuilder
from .features import _box as _box
from .features import observation_space as observation_space
from .features import sim_features as sim_features
from .registration import register_envs as register_envs
from .rows import _A_BUSY as _A_BUSY
from .rows import _A_DYNAMIC as _A_DYNAMIC
from .rows import _A_ETA as _A_ETA
from .rows import _BLOOD_INDEX as _BLOOD_INDEX
from .rows import _C_BYSTANDER as _C_BYSTANDER
from .rows import _C_DYNAMIC as _C_DYNAMIC
from .rows import _C_WAITING as _C_WAITING
from .rows import _CALL_FLAGS as _CALL_FLAGS
from .rows import _CUE_COLUMNS as _CUE_COLUMNS
from .rows import _DEAD_VITALS as _DEAD_VITALS
from .rows import _H_BLOOD_STOCK as _H_BLOOD_STOCK
from .rows import _H_CROWDED as _H_CROWDED
from .rows import _H_DIVERSION_LEFT as _H_DIVERSION_LEFT
from .rows import _H_DIVERTED as _H_DIVERTED
from .rows import _H_DYNAMIC as _H_DYNAMIC
from .rows import _H_FLAGS as _H_FLAGS
from .rows import _H_ICU as _H_ICU
from .rows import _H_LOAD as _H_LOAD
from .rows import _H_ROOMS as _H_ROOMS
from .rows import _H_SPECIALISTS as _H_SPECIALISTS
from .rows import _HOSPITAL_FLAGS as _HOSPITAL_FLAGS
from .rows import _LAST_VITALS as _LAST_VITALS
from .rows import _NO_HOSPITAL as _NO_HOSPITAL
from .rows import _NOT_WAITING as _NOT_WAITING
from .rows import _P_DYNAMIC as _P_DYNAMIC
from .rows import _P_ETA as _P_ETA
from .rows import _P_MINUTES as _P_MINUTES
from .rows import _P_VITALS as _P_VITALS
from .rows import _P_WAITING as _P_WAITING
from .rows import _PATIENT_FLAGS as _PATIENT_FLAGS
from .rows import FEATURE_MEMOS as FEATURE_MEMOS
from .rows import ROW_MEMOS as ROW_MEMOS
from .rows import _ambulance_row as _ambulance_row
from .rows import _ambulance_static as _ambulance_static
from .rows import _ambulances as _ambulances
from .rows import _blood_columns as _blood_columns
from .rows import _c as _c
from .rows import _call_row as _call_row
from .rows import _call_static as _call_static
from .rows import _calls as _calls
from .rows import _dynamic_columns as _dynamic_columns
from .rows import _frozen_row as _frozen_row
from .rows import _hospital_flag_columns as _hospital_flag_columns
from .rows import _hospitals as _hospitals
from .rows import _patient_row as _patient_row
from .rows import _patient_static as _patient_static
from .rows import _patients as _patients
from .rows import _report_row as _report_row
from .rows import _reserved_units as _reserved_units
from .rows import _roads as _roads
from .rows import _rooms_columns as _rooms_columns
from .rows import _Rows as _Rows
from .rows import _slot_patients as _slot_patients
from .rows import _span as _span
from .rows import _specialist_columns as _specialist_columns
from .rows import _vitals_columns as _vitals_columns
from .rows import _vitals_scaled as _vitals_scaled
from .rows import _waiting_columns as _waiting_columns
from .schema import _A as _A
from .schema import _A_DEST as _A_DEST
from .schema import _A_NODE as _A_NODE
from .schema import _A_STATUS as _A_STATUS
from .schema import _C as _C
from .schema import _C_NODE as _C_NODE
from .schema import _C_TRIAGED as _C_TRIAGED
from .schema import _EDGE_INDEX as _EDGE_INDEX
from .schema import _G as _G
from .schema import _H as _H
from .schema import _H_BLOOD as _H_BLOOD
from .schema import _H_OR as _H_OR
from .schema import _H_ROOM as _H_ROOM
from .schema import _H_SPECIALIST as _H_SPECIALIST
from .schema import _NODE_INDEX as _NODE_INDEX
from .schema import _P as _P
from .schema import _P_AT as _P_AT
from .schema import _P_CONDITION as _P_CONDITION
from .schema import _P_DEST as _P_DEST
from .schema import _P_NODE as _P_NODE
from .schema import _P_PRIORITY as _P_PRIORITY
from .schema import _P_STATUS as _P_STATUS
from .schema import ACTION_FEATURES as ACTION_FEATURES
from .schema import AMBULANCE_FEATURES as AMBULANCE_FEATURES
from .schema import BYSTANDER_CUE as BYSTANDER_CUE
from .schema import CALL_FEATURES as CALL_FEATURES
from .schema import CONDITION_IDS as CONDITION_IDS
from .schema import EDGE_KEYS as EDGE_KEYS
from .schema import GLOBAL_FEATURES as GLOBAL_FEATURES
from .schema import HOSPITAL_FEATURES as HOSPITAL_FEATURES
from .schema import HOSPITAL_IDS as HOSPITAL_IDS
from .schema import LARGEST_STEP_BUDGET as LARGEST_STEP_BUDGET
from .schema import LONGEST_HORIZON_MIN as LONGEST_HORIZON_MIN
from .schema import MAX_AMBULANCES as MAX_AMBULANCES
from .schema import MAX_CALLS as MAX_CALLS
from .schema import MAX_PATIENTS as MAX_PATIENTS
from .schema import N_HOSPITALS as N_HOSPITALS
from .schema import PATIENT_FEATURES as PATIENT_FEATURES
from .schema import REPORT_CUES as REPORT_CUES
from .schema import ROAD_FEATURES as ROAD_FEATURES
from .schema import _columns as _columns
from .schema import _index as _index

register_envs()
