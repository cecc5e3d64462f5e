"""Wire models: the action schema is tight and matches the simulation; the observation
schema describes exactly what the simulation sends."""

from __future__ import annotations

import itertools
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel, ValidationError

from codered_env.models import (
    AmbulanceView,
    CallView,
    CityMap,
    CityNode,
    CityRoad,
    CodeRedAction,
    CodeRedObservation,
    CodeRedState,
    HospitalView,
    MutualAidView,
    OperatingRoomView,
    PatientView,
    RoadsView,
    Vitals,
)
from codered_env.sim import TASK_IDS, CodeRedSim, render_text
from codered_env.sim.actions import ACTION_TYPES, MODEL_BY_TYPE

REPO = Path(__file__).resolve().parents[2]


def _options_to_actions(legal: dict[str, list[dict[str, list[Any]]]]) -> list[dict[str, Any]]:
    actions = []
    for action_type, options in legal.items():
        for option in options:
            names = list(option)
            for values in itertools.islice(itertools.product(*option.values()), 3):
                actions.append({"action_type": action_type, **dict(zip(names, values, strict=True))})
    return actions


def _played_observations(seeds: range = range(2)) -> list[dict[str, Any]]:
    """Observations along random legal play on every task (deterministic), in Prakashnagar
    (seed 0) and in a generated city (seed 1)."""
    out = []
    for task_id, seed in itertools.product(TASK_IDS, seeds):
        rng = random.Random(seed)
        sim = CodeRedSim(task_id, seed, city="prakashnagar" if seed == 0 else 100000 + seed)
        out.append(sim.observation())
        while not sim.done:
            choices = _options_to_actions(sim.observation()["legal_actions"])
            sim.step(rng.choice(choices))
            out.append(sim.observation())
    return out


@pytest.fixture(scope="module")
def observations() -> list[dict[str, Any]]:
    return _played_observations()


def test_flat_action_fields_are_the_union_of_the_sim_action_parameters() -> None:
    sim_params = {f for m in MODEL_BY_TYPE.values() for f in m.model_fields} - {"action_type"}
    wire_params = set(CodeRedAction.model_fields) - {"action_type", "metadata"}
    assert wire_params == sim_params


def test_action_schema_has_one_branch_per_action_type_with_its_parameters() -> None:
    schema = CodeRedAction.model_json_schema()
    branches = {b["title"]: b for b in schema["oneOf"]}
    assert set(branches) == set(ACTION_TYPES)
    for name, model in MODEL_BY_TYPE.items():
        required = {f for f, info in model.model_fields.items() if info.is_required()}
        assert set(branches[name]["required"]) == {"action_type", *required}
        assert set(branches[name]["propertyNames"]["enum"]) == {*model.model_fields, "metadata"}
    assert schema["properties"]["action_type"]["enum"] == list(ACTION_TYPES)


def test_every_legal_action_is_accepted_and_round_trips(observations: list[dict]) -> None:
    validator = jsonschema.Draft202012Validator(CodeRedAction.model_json_schema())
    seen = set()
    # Each distinct action once: the same legal options recur across steps (about 12x), and a
    # repeat proves nothing new while costing a full schema validation.
    unique = {json.dumps(raw, sort_keys=True): raw for obs in observations[::5]
              for raw in _options_to_actions(obs["legal_actions"])}
    for raw in unique.values():
        action = CodeRedAction.model_validate(raw)
        assert action.to_wire() == raw
        assert not list(validator.iter_errors(raw)), raw
        seen.add(raw["action_type"])
    assert len(seen) >= 10


@pytest.mark.parametrize(
    "raw",
    [
        {},
        {"action_type": "teleport"},
        {"action_type": "maintain_plan", "patient_id": "P1"},
        {"action_type": "maintain_plan", "patient_id": None},
        {"action_type": "assign_hospital", "patient_id": "P1"},
        {"action_type": "triage_call", "call_id": "C1", "priority": "P9"},
        {
            "action_type": "allocate_blood",
            "patient_id": "P1",
            "hospital_id": "H1",
            "blood_type": "O-",
            "units": 0,
        },
        {
            "action_type": "allocate_blood",
            "patient_id": "P1",
            "hospital_id": "H1",
            "blood_type": "O-",
            "units": "2",
        },
        {"action_type": "request_mutual_aid", "patient_id": "P1", "call_id": "C1"},
        {"action_type": "query_blood_type", "patient_id": ""},
        {"action_type": "maintain_plan", "extra": 1},
    ],
)
def test_schema_invalid_actions_are_refused_by_model_and_schema(raw: dict) -> None:
    with pytest.raises(ValidationError):
        CodeRedAction.model_validate(raw)
    validator = jsonschema.Draft202012Validator(CodeRedAction.model_json_schema())
    assert list(validator.iter_errors(raw)), f"schema accepts {raw}"


def test_observation_schema_validates_every_played_observation(observations: list) -> None:
    schema = CodeRedObservation.model_json_schema()
    validator = jsonschema.Draft202012Validator(schema)
    for obs in observations:
        model = CodeRedObservation.from_sim(obs, render_text(obs), reward=0.0)
        wire = {**model.model_dump(exclude={"reward", "done"}), "reward": 0.0, "done": obs["done"]}
        errors = list(validator.iter_errors(wire))
        assert not errors, errors[0].message


def _keys(items: list[dict]) -> set[str]:
    return set().union(*(item.keys() for item in items)) if items else set()


def _declared(model: type[BaseModel]) -> set[str]:
    return set(model.model_fields)


def test_declared_observation_fields_match_the_simulation_exactly(observations: list) -> None:
    """Catches drift: a key added to (or removed from) the sim's observation must be typed."""
    top = _declared(CodeRedObservation) - {"text", "reward", "metadata"}
    assert _keys(observations) == top
    patients = [p for o in observations for p in o["patients"]]
    hospitals = [h for o in observations for h in o["hospitals"]]
    pairs = [
        (patients, PatientView),
        ([p["vitals"] for p in patients], Vitals),
        ([a for o in observations for a in o["ambulances"]], AmbulanceView),
        (hospitals, HospitalView),
        ([r for h in hospitals for r in h["ors"]], OperatingRoomView),
        ([c for o in observations for c in o["calls"]], CallView),
        ([o["roads"] for o in observations], RoadsView),
        ([o["mutual_aid"] for o in observations], MutualAidView),
        ([o["city"] for o in observations if "city" in o], CityMap),
        ([n for o in observations if "city" in o for n in o["city"]["nodes"]], CityNode),
        ([r for o in observations if "city" in o for r in o["city"]["roads"]], CityRoad),
    ]
    for items, model in pairs:
        assert items, model.__name__
        assert _keys(items) == _declared(model), model.__name__


def test_runtime_probe_plan_actions_are_schema_valid() -> None:
    plan = json.loads((REPO / "validation" / "runtime.json").read_text())
    assert plan["reset"]["options"]["task_id"] in TASK_IDS
    for raw in plan["actions"]:
        CodeRedAction.model_validate(raw)


def test_state_schema_publishes_the_episode_fields() -> None:
    props = CodeRedState.model_json_schema()["properties"]
    for name in ("episode_id", "step_count", "task_id", "seed", "clock_min", "score", "done"):
        assert name in props


def test_package_exports_are_lazy_so_the_sim_never_imports_openenv() -> None:
    # Only the "nothing imported yet" half needs a fresh interpreter; resolving the exports
    # imports openenv (and its UI stack, ~10 s of CPU), which this process has already paid.
    code = (
        "import sys, codered_env, codered_env.sim\n"
        "assert 'CodeRedEnv' in dir(codered_env)\n"
        "assert 'openenv' not in sys.modules, 'openenv imported eagerly'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    import codered_env
    from codered_env import client, models

    assert codered_env.CodeRedEnv is client.CodeRedEnv
    for name in ("CodeRedAction", "CodeRedObservation", "CodeRedState"):
        assert getattr(codered_env, name) is getattr(models, name)
