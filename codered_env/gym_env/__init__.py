"""Gymnasium adapters for CodeRedEnv, on top of ``CodeRedSim`` (which knows nothing of gymnasium).

Two interfaces (docs/GYM.md is the reference)::

    import gymnasium
    import codered_env.gym_env  # registers the ids

    env = gymnasium.make("CodeRedEnv-task3-v16")       # flat: Discrete index into the legal list
    env = gymnasium.make("CodeRedFactored-task3-v14")  # factored: stable slots, MultiDiscrete
    env = gymnasium.make("CodeRedEnv-gen-task3-v16")   # flat, a generated city per episode
    vec = gymnasium.make_vec("CodeRedFactored-task3-v14", num_envs=8)  # native vector env

Modules: ``schema``, ``actions``, ``rows``, ``features``, ``focus`` and ``env`` (the flat
interface); ``slots``, ``factored_actions``, ``factored_features``, ``factored_env`` and
``factored_vector`` (the factored one); ``gen_schema``, ``gen_features`` and ``gen_env`` (the flat
one on generated cities); ``registration``. Importing the package registers the ids.
"""

from __future__ import annotations

# gymnasium is checked first, so a missing install gives this message and nothing else.
try:
    import gymnasium  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the dev group
    raise ImportError(
        "codered_env.gym_env needs gymnasium, which is not installed: run `pip install gymnasium` "
        "(or `uv sync --group dev`)."
    ) from exc

from .actions import ACTION_ORDER, enumerate_actions
from .env import CodeRedGymEnv
from .factored_actions import COMPONENTS, NVEC, PARAMETER_TABLE
from .factored_env import CodeRedFactoredEnv
from .factored_features import CASE_COLUMNS, GLOBAL_COLUMNS, HOSPITAL_COLUMNS, UNIT_COLUMNS
from .factored_vector import CodeRedFactoredVectorEnv
from .features import FeatureBuilder, sim_features
from .gen_env import CodeRedGenGymEnv
from .registration import register_envs
from .schema import (
    ACTION_FEATURES,
    AMBULANCE_FEATURES,
    CALL_FEATURES,
    GLOBAL_FEATURES,
    HOSPITAL_FEATURES,
    PATIENT_FEATURES,
    ROAD_FEATURES,
)
from .slots import GENERATED_MAXIMA, MAX_CASES, PRAKASHNAGAR_LAYOUT, PRAKASHNAGAR_MAXIMA, SlotMaxima

__all__ = [
    "ACTION_FEATURES",
    "ACTION_ORDER",
    "AMBULANCE_FEATURES",
    "CALL_FEATURES",
    "CASE_COLUMNS",
    "COMPONENTS",
    "GENERATED_MAXIMA",
    "GLOBAL_COLUMNS",
    "GLOBAL_FEATURES",
    "HOSPITAL_COLUMNS",
    "HOSPITAL_FEATURES",
    "MAX_CASES",
    "NVEC",
    "PARAMETER_TABLE",
    "PATIENT_FEATURES",
    "PRAKASHNAGAR_LAYOUT",
    "PRAKASHNAGAR_MAXIMA",
    "ROAD_FEATURES",
    "UNIT_COLUMNS",
    "CodeRedFactoredEnv",
    "CodeRedFactoredVectorEnv",
    "CodeRedGenGymEnv",
    "CodeRedGymEnv",
    "FeatureBuilder",
    "SlotMaxima",
    "enumerate_actions",
    "register_envs",
    "sim_features",
]

register_envs()
