"""The action catalogue: one table, every surface derived from it.

Each surface is compared with ``codered_env.sim.catalogue``, never with another hand list."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import jsonschema
import pytest

from codered_env.sim import catalogue as cat
from codered_env.sim.facilities import FLEET, HOSPITAL_SPECS
from codered_env.sim.handlers import HANDLERS
from codered_env.sim.params import (
    BLOOD_TYPES,
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


# ------------------------------------------------------------------------------ wire models
def test_sim_models_are_the_catalogue() -> None:
    from codered_env.sim.actions import ACTION_TYPES, MODEL_BY_TYPE, PHASE_OF

    assert ACTION_TYPES == cat.WIRE_ORDER and tuple(MODEL_BY_TYPE) == cat.WIRE_ORDER
    for spec in cat.ACTIONS:
        fields = MODEL_BY_TYPE[spec.name].model_fields
        assert list(fields) == ["action_type", *(p.name for p in spec.wire_params)], spec.name
        for p in spec.wire_params:
            assert fields[p.name].is_required() == p.required, (spec.name, p.name)
        assert MODEL_BY_TYPE[spec.name].__doc__ == spec.help
        assert PHASE_OF[spec.name] == (min(spec.phases) if len(spec.phases) == 1 else None)


def test_sim_models_enforce_the_catalogue_bounds() -> None:
    from codered_env.sim import parse_action

    for spec in cat.ACTIONS:
        good = {p.name: _valid_value(p) for p in spec.params if p.required}
        assert parse_action({"action_type": spec.name, **good})[1] is None, spec.name
        for p in spec.params:
            if p.kind == "enum":
                _, error = parse_action({"action_type": spec.name, **good, p.name: "nope"})
                assert error and p.name in error and all(c in error for c in p.choices)
            if p.kind == "int":
                for bad in ((p.minimum or 0) - 1, (p.maximum or 0) + 1):
                    assert parse_action({"action_type": spec.name, **good, p.name: bad})[1], p.name
        for group in spec.alias_groups():
            both = {**good, **{name: "P1" for name in group[:2]}}
            _, error = parse_action({"action_type": spec.name, **both})
            assert "at most one of " + ", ".join(group) in str(error)


def test_flat_wire_action_is_the_catalogue() -> None:
    from codered_env.models import CodeRedAction

    schema = CodeRedAction.model_json_schema()
    assert schema["properties"]["action_type"]["enum"] == list(cat.WIRE_ORDER)
    params = {p.name: p for spec in cat.ACTIONS for p in spec.wire_params}
    assert set(CodeRedAction.model_fields) - {"action_type", "metadata"} == set(params)
    branches = {b["title"]: b for b in schema["oneOf"]}
    assert list(branches) == list(cat.WIRE_ORDER)
    for spec in cat.ACTIONS:
        branch = branches[spec.name]
        assert branch["description"] == spec.help
        assert branch["required"] == ["action_type", *(p.name for p in spec.params if p.required)]
        assert ("not" in branch) == bool(spec.aliases)
        for p in spec.params:
            if p.kind == "enum":
                assert p.choices == tuple(params[p.name].choices)
                assert branch["properties"][p.name]["enum"] == list(p.choices)


# ------------------------------------------------------------------------------ gymnasium
def test_gym_action_order_and_enums_are_the_catalogue() -> None:
    gym_env = pytest.importorskip("codered_env.gym_env")
    from codered_env.gym_env import actions as gym_actions
    from codered_env.gym_env import schema as gym_schema
    from codered_env.sim.params import PROCEDURES, SPECIALTIES

    assert gym_env.ACTION_ORDER == cat.ACTION_NAMES
    assert gym_actions.MAINTAIN == {"action_type": cat.NOOP}
    assert gym_env.enumerate_actions({})[0] == {"action_type": cat.NOOP}
    assert cat.fixed_id_choices()["hospital"] == gym_schema.HOSPITAL_IDS
    assert len(cat.fixed_id_choices()["ambulance"]) == gym_schema.MAX_AMBULANCES
    by_name = {p.name: p for spec in cat.ACTIONS for p in spec.params}
    assert by_name["procedure"].choices == PROCEDURES
    assert by_name["specialty"].choices == SPECIALTIES


# ------------------------------------------------------------------------------ LLM agent
def test_llm_tools_are_the_catalogue() -> None:
    from codered_env.agents.llm import _default_schemas, build_tools, legal_tools

    tools = [t["function"] for t in build_tools(_default_schemas())]
    assert [t["name"] for t in tools] == list(cat.WIRE_ORDER)
    for tool in tools:
        spec = cat.action_spec(tool["name"])
        assert tool["description"] == spec.help
        assert list(tool["parameters"]["properties"]) == [p.name for p in spec.wire_params]
        assert tool["parameters"]["required"] == [p.name for p in spec.params if p.required]
    legal = {
        "allocate_blood": [
            {"units": [1, 2], "blood_type": ["O-"], "hospital_id": ["H1"], "patient_id": ["P1"]}
        ],
        cat.NOOP: [{}],
    }
    for tool in legal_tools(legal, cat.ACTION_NAMES):
        spec = cat.action_spec(tool["function"]["name"])
        assert tool["function"]["description"] == spec.help
        assert list(tool["function"]["parameters"]["properties"]) == list(spec.param_names)


def test_prompt_catalogue_is_the_catalogue() -> None:
    from codered_env.agents.prompts import build_system_prompt, call_syntax

    prompt = build_system_prompt(cat.WIRE_ORDER, use_tools=False)
    listed = prompt.split("Actions:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    specs = [cat.action_spec(n) for n in cat.WIRE_ORDER]
    assert listed == [f"- {cat.call_signature(spec)} {spec.help}" for spec in specs]
    for spec in cat.ACTIONS:
        values = {p.name: _valid_value(p) for p in spec.params}
        shown = ", ".join(str(values[p]) for p in spec.param_names)
        assert call_syntax({"action_type": spec.name, **values}) == f"{spec.name}({shown})"


# ------------------------------------------------------------------------------ console and docs
def test_advice_explains_with_the_catalogue_help() -> None:
    from codered_env.web.advice import action_help, advice

    for spec in cat.ACTIONS:
        assert action_help({"action_type": spec.name}) == spec.help
    assert action_help({"action_type": "warp_drive"}) == ""
    suggestion = advice("task4", 0, [], "random")["suggestion"]
    assert cat.action_spec(suggestion["action"]["action_type"]).help in suggestion["reason"]


def test_console_verbs_are_served_from_the_catalogue(server: object) -> None:
    import httpx

    answer = httpx.get(server.base_url + "/web/actions", timeout=30)  # type: ignore[attr-defined]
    assert answer.status_code == 200
    body = answer.json()
    assert body == cat.catalogue_payload()
    assert body["noop"] == cat.NOOP
    assert [(a["name"], a["verb"]) for a in body["actions"]] == [(s.name, s.verb) for s in cat.ACTIONS]


def test_readme_action_table_is_generated_from_the_catalogue() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = cat.markdown_table()
    assert table in readme, "README's action table is stale; replace it with:\n" + table


# ------------------------------------------------------------------------------ no hand lists
REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "codered_env"
# The only places allowed to list the actions: the catalogue, and the handler registry (one
# handler function per action, registered by name).
ALLOWED = {"codered_env/sim/catalogue.py", "codered_env/sim/handlers.py"}
HAND_LIST = 4  # this many action names side by side is a list of the actions


def hand_lists(root: Path) -> dict[str, int]:
    """Files of the package that enumerate actions, with the longest such enumeration: a tuple,
    list, set, dict (keys) or ``Literal[...]`` of >= HAND_LIST action-name strings, a class or
    module defining >= HAND_LIST functions named after actions, or a non-Python asset quoting
    >= HAND_LIST action names."""
    names = set(cat.ACTION_NAMES)
    found: dict[str, int] = {}
    for path in sorted((root / "codered_env").rglob("*")):
        if not path.is_file() or path.suffix in (".pyc", ".svg"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".py":
            longest = _longest_python_list(ast.parse(text), names)
        else:
            longest = len({n for n in names if re.search(rf"\b{n}\b", text)})
        if longest >= HAND_LIST:
            found[path.relative_to(root).as_posix()] = longest
    return found


def _longest_python_list(tree: ast.AST, names: set[str]) -> int:
    def name_of(node: ast.expr | None) -> object:
        if isinstance(node, ast.Call):  # Spec("name", ...) or Spec(name="name", ...)
            keywords = (k.value for k in node.keywords if k.arg == "name")
            node = node.args[0] if node.args else next(keywords, None)
        return node.value if isinstance(node, ast.Constant) else None

    def strings(nodes: list[ast.expr | None]) -> int:
        return len({name_of(n) for n in nodes} & names)

    longest = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            longest = max(longest, strings(list(node.elts)))
        elif isinstance(node, ast.Dict):
            longest = max(longest, strings(list(node.keys)))
        elif isinstance(node, (ast.Module, ast.ClassDef)):
            defs = {d.name for d in node.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))}
            longest = max(longest, len(defs & names))
    return longest


def test_only_the_catalogue_and_the_handler_registry_list_the_actions() -> None:
    found = hand_lists(REPO)
    extra = sorted(set(found) - ALLOWED)
    assert not extra, f"hand-written action lists (derive them from codered_env/sim/catalogue.py): {extra}"
    assert set(found) >= ALLOWED, "the detector no longer sees the catalogue or the registry"


def test_the_hand_list_detector_catches_a_new_copy(tmp_path: Path) -> None:
    pkg = tmp_path / "codered_env"
    pkg.mkdir()
    four = cat.ACTION_NAMES[:HAND_LIST]
    (pkg / "tuple.py").write_text(f"ORDER = {four!r}\n")
    (pkg / "literal.py").write_text(f"from typing import Literal\nT = Literal{list(four)!r}\n")
    (pkg / "dict.py").write_text("HELP = {" + ", ".join(f"{n!r}: 'x'" for n in four) + "}\n")
    (pkg / "methods.py").write_text("class Tools:\n" + "".join(f"    def {n}(self): ...\n" for n in four))
    (pkg / "verbs.js").write_text("const VERB = {" + ", ".join(f"{n}: 'x'" for n in four) + "};\n")
    (pkg / "specs.py").write_text("S = (" + "".join(f"Spec({n!r}, 1), " for n in four) + ")\n")
    (pkg / "fine.py").write_text(f"A = {four[:HAND_LIST - 1]!r}\nB = {four[HAND_LIST - 1]!r}\n")
    assert set(hand_lists(tmp_path)) == {
        "codered_env/tuple.py", "codered_env/literal.py", "codered_env/dict.py",
        "codered_env/methods.py", "codered_env/verbs.js", "codered_env/specs.py",
    }


def test_generated_models_pickle_and_keep_their_names() -> None:
    """Worker processes receive parsed actions: the generated classes must be importable."""
    import pickle

    from codered_env.models import CodeRedAction
    from codered_env.sim import actions, parse_action

    for spec in cat.ACTIONS:
        good = {p.name: _valid_value(p) for p in spec.params if p.required}
        parsed, error = parse_action({"action_type": spec.name, **good})
        assert error is None and pickle.loads(pickle.dumps(parsed)) == parsed
        assert getattr(actions, type(parsed).__name__) is type(parsed)
        wire = CodeRedAction(action_type=spec.name, **good)
        assert pickle.loads(pickle.dumps(wire)) == wire
