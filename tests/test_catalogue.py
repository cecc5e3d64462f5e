"""The action catalogue (issue 20): one table, every surface derived from it.

Each surface is compared with ``codered_env.sim.catalogue``, never with another hand list."""

from __future__ import annotations

import jsonschema
import pytest

from codered_env.sim import catalogue as cat
from codered_env.sim.handlers import HANDLERS
from codered_env.sim.params import (
    BLOOD_TYPES,
    FLEET,
    HOSPITAL_SPECS,
    MAX_BLOOD_UNITS_PER_ACTION,
    PROCEDURE_DURATION_MIN,
    PROCEDURES,
    SPECIALTIES,
)
from codered_env.sim.tasks import TASKS
from codered_env.sim.triage import PRIORITIES


# ------------------------------------------------------------------------------ the table itself
def test_names_are_unique_and_the_wait_comes_first() -> None:
    assert len(set(cat.ACTION_NAMES)) == len(cat.ACTIONS) == len(cat.ACTION_NAMES)
    assert cat.ACTION_NAMES[0] == cat.NOOP and cat.action_spec(cat.NOOP).params == ()
    assert sorted(cat.WIRE_ORDER) == sorted(cat.ACTION_NAMES) and cat.WIRE_ORDER[-1] == cat.NOOP


def test_handler_registry_covers_exactly_the_catalogue() -> None:
    assert set(HANDLERS) == set(cat.ACTION_NAMES)


def test_every_action_is_well_formed() -> None:
    for spec in cat.ACTIONS:
        assert spec.phases and spec.phases <= cat.BOTH_PHASES, spec.name
        assert spec.help.strip() and spec.verb.strip(), spec.name
        assert len(set(p.name for p in spec.wire_params)) == len(spec.wire_params), spec.name
        for p in spec.wire_params:
            assert p.help.endswith("."), (spec.name, p.name)
            assert (p.kind == "enum") == bool(p.choices), (spec.name, p.name)
            assert (p.kind == "int") == (p.minimum is not None and p.maximum is not None), (spec.name, p.name)
            assert (p.kind == "id") == (p.id_of is not None), (spec.name, p.name)
        for alias in spec.aliases:
            assert alias.alias_of in spec.param_names and not alias.required, (spec.name, alias.name)


def test_enumerations_come_from_the_data_modules() -> None:
    by_name = {p.name: p for spec in cat.ACTIONS for p in spec.params}
    assert by_name["priority"].choices == PRIORITIES
    assert by_name["procedure"].choices == PROCEDURES
    assert by_name["specialty"].choices == SPECIALTIES
    assert by_name["blood_type"].choices == BLOOD_TYPES
    assert (by_name["units"].minimum, by_name["units"].maximum) == (1, MAX_BLOOD_UNITS_PER_ACTION)
    # the canonical procedure and specialty lists cover exactly what the hospitals offer
    assert set(PROCEDURES) == set(PROCEDURE_DURATION_MIN) == {
        proc for h in HOSPITAL_SPECS for _, procs in h.ors for proc in procs
    }
    assert set(SPECIALTIES) == {s for h in HOSPITAL_SPECS for s in h.specialists}


def test_fixed_ids_are_every_id_an_episode_can_have() -> None:
    fixed = cat.fixed_id_choices()
    assert fixed["hospital"] == tuple(h.hospital_id for h in HOSPITAL_SPECS)
    assert set(fixed["or"]) == {or_id for h in HOSPITAL_SPECS for or_id, _ in h.ors}
    most_aid = max(t.mutual_aid_limit for t in TASKS.values())
    assert fixed["ambulance"][: len(FLEET)] == tuple(unit for unit, _, _ in FLEET)
    assert len(fixed["ambulance"]) == len(FLEET) + most_aid
    assert "patient" not in fixed and "call" not in fixed  # numbered per episode


def test_fixed_ids_match_real_episodes() -> None:
    """Every id a real episode (mutual aid used up) produces is in the fixed lists."""
    from codered_env.sim import CodeRedSim

    fixed = cat.fixed_id_choices()
    for task_id, task in TASKS.items():
        sim = CodeRedSim(task_id, 3)
        for _ in range(task.mutual_aid_limit):
            assert sim.step({"action_type": "request_mutual_aid"}).error is None
        for _ in range(30):
            sim.step({"action_type": cat.NOOP})
        world = sim.world
        assert set(world.hospitals) == set(fixed["hospital"])
        assert {r.or_id for h in world.hospitals.values() for r in h.ors} <= set(fixed["or"])
        units = set(world.ambulances) | {r.unit_id for r in world.mutual_aid}
        assert units <= set(fixed["ambulance"]), task_id


def test_action_spec_names_the_valid_actions_when_unknown() -> None:
    assert cat.action_spec("triage_call").phases == frozenset({2})
    for bad in ("warp_drive", "", "MAINTAIN_PLAN", None, 3):
        with pytest.raises(ValueError) as info:
            cat.action_spec(bad)  # type: ignore[arg-type]
        assert "valid action types: " + ", ".join(cat.WIRE_ORDER) in str(info.value)


@pytest.mark.parametrize("spec", cat.ACTIONS, ids=lambda s: s.name)
def test_input_schema_is_valid_and_tight(spec: cat.ActionSpec) -> None:
    schema = cat.input_schema(spec)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert list(schema["properties"]) == list(spec.param_names)
    assert schema["additionalProperties"] is False
    assert all(prop["description"] for prop in schema["properties"].values())
    good = {p.name: _valid_value(p) for p in spec.params if p.required}
    assert validator.is_valid(good)
    assert not validator.is_valid({**good, "bogus": "x"})
    for p in spec.params:
        if p.required:
            assert not validator.is_valid({k: v for k, v in good.items() if k != p.name}), p.name
        if p.kind == "enum" or (p.kind == "id" and p.id_of in cat.fixed_id_choices()):
            assert not validator.is_valid({**good, p.name: "nope"}), p.name
        if p.kind == "int":
            assert not validator.is_valid({**good, p.name: (p.maximum or 0) + 1}), p.name
            assert not validator.is_valid({**good, p.name: (p.minimum or 0) - 1}), p.name


def _valid_value(p: cat.ParamSpec) -> object:
    if p.kind == "enum":
        return p.choices[-1]
    if p.kind == "int":
        return p.maximum
    return cat.fixed_id_choices().get(p.id_of or "", ("X1",))[-1]
