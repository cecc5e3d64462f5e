"""codered_env.trl through TRL's own machinery, without training: tool discovery as GRPOTrainer
does it, tool schemas from transformers' chat template, tool-call parsing with TRL's
``parse_response``, then the parsed call executed on the environment. Skips without the `trl` extra.

No model is downloaded: the byte-level tokenizer of ``codered_env.trl.local_models`` gets the Qwen2.5
chat template that TRL ships (one of the templates TRL knows how to parse tool calls for).
"""

from __future__ import annotations

import inspect
import json

import pytest

from codered_env.sim import CodeRedSim, grade_episode
from codered_env.sim.catalogue import ACTION_NAMES, ACTIONS, fixed_id_choices
from codered_env.trl import CodeRedToolEnv, episode_dataset, iter_episode_rows

ACTION_TOOLS = set(ACTION_NAMES)


def trl_tools(env: object) -> list:
    """The tool methods exactly as GRPOTrainer collects them from an environment instance."""
    return [getattr(env, name) for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
            if name not in ("reset", "get_reward") and not name.startswith("_")]


def test_one_tool_per_action_plus_the_full_view() -> None:
    names = {t.__name__ for t in trl_tools(CodeRedToolEnv())}
    assert names == ACTION_TOOLS | {"view_full_state"}


def catalogue_tool_schema(spec) -> dict:
    """The schema TRL should render for an action, written from the catalogue's fields directly."""
    properties = {}
    for p in spec.params:
        prop: dict = {"type": "integer" if p.kind == "int" else "string"}
        values = p.choices if p.kind == "enum" else fixed_id_choices().get(p.id_of or "", ())
        if values:
            prop["enum"] = list(values)
        prop["description"] = p.help + (f" From {p.minimum} to {p.maximum}." if p.kind == "int" else "")
        properties[p.name] = prop
    parameters: dict = {"type": "object", "properties": properties}
    required = [p.name for p in spec.params if p.required]
    if required:
        parameters["required"] = required
    return {"type": "function", "function": {
        "name": spec.name, "description": spec.help, "parameters": parameters,
        "return": {"type": "string", "description": "What changed after the decision."}}}


def test_tool_schemas_are_the_catalogue_as_transformers_reads_them() -> None:
    get_json_schema = pytest.importorskip("transformers.utils").get_json_schema
    env = CodeRedToolEnv()
    for spec in ACTIONS:
        method = getattr(env, spec.name)
        assert get_json_schema(method) == catalogue_tool_schema(spec)
        assert list(inspect.signature(method).parameters) == list(spec.param_names)
    assert catalogue_tool_schema(ACTIONS[0])["function"]["parameters"] == {"type": "object", "properties": {}}


def test_generated_tools_bind_like_real_methods() -> None:
    env = CodeRedToolEnv()
    env.reset(task_id="task1", seed=0)
    positional = env.dispatch_ambulance("ALS1", "P1")
    assert "ALS1 dispatched to P1" in positional
    with pytest.raises(TypeError, match="missing"):
        env.assign_hospital(patient_id="P1")
    with pytest.raises(TypeError, match="unexpected"):
        env.maintain_plan(minutes=5)
    assert env.sim.step_count == 1  # a call that does not bind is not a decision
    assert "REFUSED" in env.request_mutual_aid()  # optional target omitted: task1 has no mutual aid
    assert env.sim.action_log[-1] == {"action_type": "request_mutual_aid"}


def test_dataset_rows_reset_their_episode() -> None:
    rows = episode_dataset(["task1", "task4"], range(3))
    assert [(r["task_id"], r["seed"]) for r in rows] == [("task1", 0), ("task1", 1), ("task1", 2),
                                                          ("task4", 0), ("task4", 1), ("task4", 2)]
    env = CodeRedToolEnv()
    text = env.reset(**rows[4])  # the whole row, prompt included, as GRPOTrainer passes it
    assert env.sim.task.task_id == "task4" and env.sim.seed == 1
    assert text.strip() == CodeRedSim("task4", 1).render_text()
    stream = iter_episode_rows(["task2"], start_seed=5)
    assert [next(stream)["seed"] for _ in range(3)] == [5, 6, 7]
    with pytest.raises(ValueError, match="unknown task_id"):
        episode_dataset(["task9"], [0])


@pytest.mark.parametrize("bad", [{"task_id": "task9"}, {"seed": -3}, {"seed": "x"}, {"seed": 3.5},
                                 {"seed": True}, {"city": "atlantis"}])
def test_a_bad_reset_raises_and_keeps_the_episode_it_had(bad: dict) -> None:
    env = CodeRedToolEnv("task2", 4)
    env.maintain_plan()
    sim, clock = env.sim, env.sim.clock
    with pytest.raises(ValueError, match=r"task_id|seed|city"):
        env.reset(**bad)
    assert env.sim is sim and sim.clock == clock
    env.reset()  # the task and city it had, seed 0
    assert (env.sim.task.task_id, env.sim.seed) == ("task2", 0)
    env.reset(seed="7")
    assert env.sim.seed == 7


def test_replies_are_compact_and_bad_calls_are_refused_not_raised() -> None:
    env = CodeRedToolEnv()
    env.reset(task_id="task3", seed=0)
    reply = env.dispatch_ambulance(ambulance_id="ALS1", patient_id="P2")
    assert "ALS1 dispatched to P2" in reply and len(reply) < len(env.view_full_state())
    assert "HOSPITALS" not in reply  # unchanged sections are not repeated
    bad = env.assign_hospital(patient_id="P99", hospital_id="H1")
    assert "REFUSED" in bad and "P99" in bad
    assert env.sim.last_error is not None and env.sim.step_count == 2


def test_reward_is_the_final_grade_and_episode_end_is_reported() -> None:
    env = CodeRedToolEnv()
    env.reset(task_id="task1", seed=3)
    replies = [env.maintain_plan() for _ in range(40)]
    assert any("EPISODE OVER" in r for r in replies)
    assert "episode is over" in env.maintain_plan()
    assert env.get_reward() == grade_episode("task1", 3, [{"action_type": "maintain_plan"}] * 40)["score"]


@pytest.fixture(scope="module")
def tokenizer():
    """The byte-level tokenizer and tool template the GRPO example's tiny model uses."""
    pytest.importorskip("trl")
    pytest.importorskip("transformers")
    from trl.chat_template_utils import is_chat_template_prefix_preserving, supports_tool_calling

    from codered_env.trl.local_models import byte_tokenizer, with_tool_template

    tok = with_tool_template(byte_tokenizer())
    assert supports_tool_calling(tok) and is_chat_template_prefix_preserving(tok)  # what GRPOTrainer checks
    return tok


def test_unknown_local_model_is_a_clear_error() -> None:
    from codered_env.trl.local_models import load_local_model

    with pytest.raises(ValueError, match="valid: smollm2, tiny"):
        load_local_model("gpt5")


def test_tool_schemas_carry_types_descriptions_and_valid_values(tokenizer) -> None:
    env = CodeRedToolEnv()
    rendered = tokenizer.apply_chat_template([{"role": "user", "content": "go"}], tools=trl_tools(env),
                                             tokenize=False, add_generation_prompt=True)
    schemas = [json.loads(line) for line in rendered.splitlines() if line.startswith('{"type": "function"')]
    by_name = {s["function"]["name"]: s["function"] for s in schemas}
    assert set(by_name) == ACTION_TOOLS | {"view_full_state"}
    triage = by_name["triage_call"]["parameters"]["properties"]
    assert triage["priority"]["enum"] == ["P1", "P2", "P3", "P4"] and triage["call_id"]["type"] == "string"
    blood = by_name["allocate_blood"]["parameters"]
    assert blood["properties"]["units"]["type"] == "integer"
    assert "O-" in blood["properties"]["blood_type"]["enum"]
    assert set(blood["required"]) == {"patient_id", "hospital_id", "blood_type", "units"}
    assert all(f["description"] for f in by_name.values())


def test_a_generated_tool_call_is_parsed_by_trl_and_reaches_the_simulation(tokenizer) -> None:
    from trl.chat_template_utils import parse_response

    env = CodeRedToolEnv()
    env.reset(task_id="task3", seed=0)
    tools = trl_tools(env)
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "go"}], tools=tools,
                                           tokenize=True, add_generation_prompt=True)
    prompt_ids = prompt["input_ids"] if hasattr(prompt, "keys") else list(prompt)
    completion = ('<tool_call>\n{"name": "dispatch_ambulance", "arguments": {"ambulance_id": "ALS1", '
                  '"patient_id": "P2"}}\n</tool_call><|im_end|>')
    ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
    parsed = parse_response(tokenizer, ids, prefix=prompt_ids, tools=tools)
    call = parsed["tool_calls"][0]["function"]
    by_name = {t.__name__: t for t in tools}
    reply = by_name[call["name"]](**call["arguments"])  # what GRPOTrainer's tool loop does
    assert env.sim.action_log == [{"action_type": "dispatch_ambulance", "ambulance_id": "ALS1",
                                   "patient_id": "P2"}]
    assert "ALS1 dispatched to P2" in reply


def test_a_tool_subset_hides_the_other_schemas_but_not_the_actions() -> None:
    from codered_env.trl.tools import with_only_tools

    offered = ["maintain_plan", "dispatch_ambulance", "assign_hospital"]
    restricted = with_only_tools(CodeRedToolEnv, offered)
    env = restricted()
    assert sorted(t.__name__ for t in trl_tools(env)) == sorted(offered)
    assert len(trl_tools(CodeRedToolEnv())) == len(ACTION_TOOLS) + 1  # the base class is untouched
    env.reset(task_id="task1", seed=0)
    full = CodeRedToolEnv()
    full.reset(task_id="task1", seed=0)
    assert env.dispatch_ambulance("ALS1", "P1") == full.dispatch_ambulance("ALS1", "P1")
    assert env.get_reward() == full.get_reward() > 0.01
    with pytest.raises(ValueError, match=r"unknown tool.*'dispatch'.*valid: .*dispatch_ambulance"):
        with_only_tools(CodeRedToolEnv, ["dispatch"])
    with pytest.raises(ValueError, match="valid:"):
        with_only_tools(CodeRedToolEnv, [])


def test_trl_tools_enumerate_the_episodes_city_and_replies_use_keyed_lines() -> None:
    from codered_env.sim.citygen import generate_city
    from codered_env.trl import city_tool_env
    from codered_env.trl.env import keyed_lines

    city = generate_city(100000)
    env_cls = city_tool_env(100000)
    hospital = inspect.signature(env_cls.assign_hospital).parameters["hospital_id"].annotation
    assert hospital.__args__ == city.hospital_ids
    free = inspect.signature(city_tool_env(None).assign_hospital).parameters["hospital_id"].annotation
    assert free is str
    env = env_cls()
    text = env.reset(task_id="task1", seed=0)
    assert city.name in text and env.sim.city is city
    lines = keyed_lines(env.sim.observation())
    assert {"ALS1", "H1", "hospitals", "roads", "map"} <= set(lines) and lines["ALS1"].startswith("UNIT ALS1")
    reply = env.maintain_plan()
    assert reply.splitlines()[0].startswith("t=") and "GONE" not in reply
    row = next(r for r in episode_dataset(["task1"], [0], cities=[100000]))
    other = city_tool_env(None)()
    assert city.name in other.reset(**row)
