"""Issue 14: legal-action tools, cache-friendly prompts, lenient parsing, error handling, budget,
log integrity and statistics - each failure mode reproduced against the stand-in server."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import pytest
from fake_openai import FakeOpenAI
from runlog_check import STEP

from codered_env.agents import make_agent as make_builtin
from codered_env.agents.llm import (
    LLMAgent,
    LLMClient,
    LLMConfig,
    extract_action,
    is_loopback_url,
    legal_tools,
    parse_call,
    scrub,
)
from codered_env.runlog import format_stats, format_step
from codered_env.sim import ACTION_TYPES, TASKS, CodeRedSim


def observation(task: str = "task1", seed: int = 3000, waits: int = 0) -> dict[str, Any]:
    sim = CodeRedSim(task_id=task, seed=seed)
    for _ in range(waits):
        sim.step({"action_type": "maintain_plan"})
    obs = dict(sim.observation())
    obs["text"] = sim.render_text()
    return obs


def agent_for(fake: FakeOpenAI, task: str = "task1", **overrides: Any) -> LLMAgent:
    settings: dict[str, Any] = {
        "api_key": "sk-test-secret-123", "base_url": fake.url, "model": "fake-model",
        "timeout_s": 2.0, "max_retries": 2, "backoff_s": 0.01, "backoff_max_s": 0.05,
    }
    settings.update(overrides)
    agent = LLMAgent(LLMConfig(**settings))
    agent.reset(task, 3000)
    return agent


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]


# --------------------------------------------------------------------------- 1. tools


def test_tools_offer_only_legal_actions_with_enums_and_bounds() -> None:
    obs = observation("task1")
    tools = {t["function"]["name"]: t["function"]["parameters"]
             for t in legal_tools(obs["legal_actions"], ACTION_TYPES)}
    assert set(tools) == set(obs["legal_actions"])
    assert "triage_call" not in tools and "dispatch_als" not in tools  # phase-2 actions
    dispatch = tools["dispatch_ambulance"]
    assert dispatch["properties"]["ambulance_id"]["enum"] == \
        obs["legal_actions"]["dispatch_ambulance"][0]["ambulance_id"]
    assert dispatch["required"] == ["ambulance_id", "patient_id"]
    units = tools["allocate_blood"]["properties"]["units"]
    assert units["type"] == "integer" and units["minimum"] == 1 and units["maximum"] >= 1
    assert tools["maintain_plan"]["properties"] == {}


def test_optional_parameter_is_not_required() -> None:
    legal = {"request_mutual_aid": [{}, {"target_id": ["C1", "C2"]}]}
    (tool,) = legal_tools(legal, ACTION_TYPES)
    params = tool["function"]["parameters"]
    assert params["properties"]["target_id"]["enum"] == ["C1", "C2"] and params["required"] == []


def test_per_step_tools_are_sent_and_static_flag_sends_all(fake_llm: FakeOpenAI) -> None:
    obs = observation("task5")
    fake_llm.set_script(default={"kind": "tool", "name": "maintain_plan"})
    agent_for(fake_llm, "task5").act(obs)
    assert tool_names(fake_llm.requests[-1]) == list(obs["legal_actions"])
    agent_for(fake_llm, "task5", static_tools=True).act(obs)
    assert tool_names(fake_llm.requests[-1]) == list(ACTION_TYPES)


# --------------------------------------------------------------------------- 2. prompt


def test_prompt_fixed_part_is_byte_stable_and_actions_not_repeated(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(default={"kind": "tool", "name": "maintain_plan"})
    agent = agent_for(fake_llm, "task1")
    for waits in (0, 1, 2):
        agent.act(observation("task1", waits=waits))
    systems = {r["messages"][0]["content"] for r in fake_llm.requests}
    assert len(systems) == 1
    user = fake_llm.requests[-1]["messages"][1]["content"]
    assert "LEGAL" not in user and "dispatch_ambulance(" not in systems.pop()
    assert user.index("Your last actions") < user.index("NOW:")
    assert "s1 maintain_plan() -> ok" in user


def test_system_prompt_covers_only_what_the_task_can_produce(fake_llm: FakeOpenAI) -> None:
    from codered_env.agents.prompts import build_system_prompt

    fake_llm.set_script(default={"kind": "tool", "name": "maintain_plan"})
    agent_for(fake_llm, "task1").act(observation("task1"))
    task1 = fake_llm.requests[-1]["messages"][0]["content"]
    assert "STEMI" in task1 and "Stroke" not in task1 and "Labour" not in task1
    assert "108/112" not in task1 and "minor calls" not in task1  # no calls in phase 1
    task3 = build_system_prompt([], use_tools=True, task_id="task3")
    assert "haemorrhage" in task3 and "Minor injury" in task3 and "Labour" not in task3
    full = build_system_prompt([], use_tools=True)
    for phase2 in ("task4", "task5"):  # calls can carry any condition: the full prompt
        assert build_system_prompt([], use_tools=True, task_id=phase2) == full
    assert "108/112" in full and "Labour" in full and "Cardiac arrest" in full


def test_history_prefix_is_stable_between_trims(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(default={"kind": "tool", "name": "maintain_plan"})
    agent = agent_for(fake_llm, "task1", history=6)
    for waits in range(5):
        agent.act(observation("task1", waits=waits))
    users = [r["messages"][1]["content"].split("NOW:")[0] for r in fake_llm.requests]
    for before, after in itertools.pairwise(users[1:]):
        assert after.startswith(before.rstrip())  # the history only grew: a shared prefix


def test_text_mode_ends_with_legal_actions_and_answer_format(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(default={"kind": "text", "content": "maintain_plan()"})
    agent = agent_for(fake_llm, "task1", use_tools=False)
    assert agent.act(observation("task1")) == {"action_type": "maintain_plan"}
    body = fake_llm.requests[-1]
    user = body["messages"][1]["content"]
    assert "tools" not in body
    assert "Legal actions now:\ndispatch_ambulance(ALS1/ALS2/BLS1/BLS2/BLS3, P1)" in user
    assert user.rstrip().endswith("No other text.")


# --------------------------------------------------------------------------- 3. parsing


def test_html_entities_are_unescaped(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(
        {"kind": "text", "content": "{&#34;action_type&#34;: &#34;query_or_status&#34;, "
                                    "&#34;hospital_id&#34;: &#34;H1&#34;}"},
        {"kind": "tool", "name": "query_or_status", "arguments": '{"hospital_id": "H2&amp;amp;"}'},
    )
    agent = agent_for(fake_llm)
    assert agent.act(observation()) == {"action_type": "query_or_status", "hospital_id": "H1"}
    assert agent.act(observation()) == {"action_type": "query_or_status", "hospital_id": "H2&"}


def test_raw_newline_in_arguments_is_accepted(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script({"kind": "tool", "name": "query_or_status",
                         "arguments": '{"hospital_id": "H1\n"}'})
    agent = agent_for(fake_llm)
    assert agent.act(observation()) == {"action_type": "query_or_status", "hospital_id": "H1"}
    assert agent.last_error is None


def test_json_array_arguments_get_a_precise_reason(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script({"kind": "tool", "name": "query_or_status", "arguments": '["H1"]'})
    agent = agent_for(fake_llm)
    agent.act(observation())
    assert agent.last_error is not None and "JSON list, not an object" in agent.last_error


def test_call_syntax_is_understood() -> None:
    assert parse_call("allocate_blood", "P1, H1, O-, 2", ACTION_TYPES).action == {
        "action_type": "allocate_blood", "patient_id": "P1", "hospital_id": "H1",
        "blood_type": "O-", "units": 2}
    assert extract_action('I pick triage_call(call_id="C2", priority=P1).', ACTION_TYPES).action \
        == {"action_type": "triage_call", "call_id": "C2", "priority": "P1"}


def test_own_answer_beats_echoed_history(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script({"kind": "tool", "name": "query_or_status",
                         "arguments": {"hospital_id": "H1"}},
                        {"kind": "text", "content": "s1 query_or_status(H1) -> ok\n"
                                                    "dispatch_ambulance(ALS1, P1)"},
                        {"kind": "text", "content": "Your last actions:\ns1 query_or_status(H1) -> ok"})
    agent = agent_for(fake_llm)
    agent.act(observation())
    assert agent.act(observation(waits=1)) == {"action_type": "dispatch_ambulance",
                                               "ambulance_id": "ALS1", "patient_id": "P1"}
    assert agent.act(observation(waits=2)) == {"action_type": "maintain_plan"}
    assert "repeats actions from the prompt" in str(agent.last_error)
    assert agent.stats.fallbacks_by_reason == {"echo": 1}


def test_json_object_copied_from_the_prompt_is_never_taken() -> None:
    prompt = 'example state {"action_type":"maintain_plan"} here'
    text = '{"action_type":"maintain_plan"} then query_or_status(H3)'
    assert extract_action(text, ACTION_TYPES, prompt).action == {
        "action_type": "query_or_status", "hospital_id": "H3"}
    assert extract_action('{"action_type":"maintain_plan"}', ACTION_TYPES, prompt).kind == "echo"


def test_truncated_answer_has_its_own_reason(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script({"kind": "text", "content": "First I will consider the", "finish": "length"})
    agent = agent_for(fake_llm)
    assert agent.act(observation()) == {"action_type": "maintain_plan"}
    assert "finish_reason=length" in str(agent.last_error)
    assert agent.stats.fallbacks_by_reason == {"truncated": 1}


def test_empty_answer_has_its_own_reason(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script({"kind": "text", "content": ""})
    agent = agent_for(fake_llm)
    agent.act(observation())
    assert "empty answer" in str(agent.last_error)
    assert agent.stats.fallbacks_by_reason == {"empty": 1}


def test_switches_to_text_mode_after_k_answers_without_tool_call(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(default={"kind": "text", "content": "I think we should wait."})
    agent = agent_for(fake_llm, text_after=2)
    for waits in range(4):
        agent.act(observation(waits=waits))
    assert [bool(r.get("tools")) for r in fake_llm.requests] == [True, True, False, False]
    assert agent.text_mode and agent.stats.text_mode_switches == 1
    assert "call syntax" in fake_llm.requests[-1]["messages"][0]["content"]


def test_context_overflow_shrinks_history_and_keeps_tools(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(default={"kind": "tool", "name": "maintain_plan"})
    agent = agent_for(fake_llm, history=8)
    for waits in range(4):
        agent.act(observation(waits=waits))
    fake_llm.set_script({"kind": "status", "code": 400, "error_code": "context_length_exceeded",
                         "message": "This model's maximum context length is 4096 tokens"},
                        default={"kind": "tool", "name": "maintain_plan"})
    agent.act(observation(waits=4))
    assert agent.last_error is None and agent.stats.history_shrinks == 1
    before, after = (r["messages"][1]["content"] for r in fake_llm.requests[-2:])
    assert after.count("maintain_plan() -> ok") < before.count("maintain_plan() -> ok")
    assert tool_names(fake_llm.requests[-1]) and not agent.text_mode


def test_timeout_is_not_retried_on_a_local_endpoint(fake_llm: FakeOpenAI) -> None:
    assert is_loopback_url(fake_llm.url) and not is_loopback_url("https://example.org/v1")
    fake_llm.set_script(default={"kind": "sleep", "seconds": 2.0})
    agent = agent_for(fake_llm, timeout_s=0.3, max_retries=3)
    agent.act(observation())
    assert len(fake_llm.requests) == 1 and agent.stats.timeouts == 1
    assert agent.stats.retries == 0 and "timed out" in str(agent.last_error)


def test_budget_scales_with_steps_and_a_cut_short_call_reports_the_budget(
        fake_llm: FakeOpenAI) -> None:
    config = LLMConfig(api_key="k", timeout_s=10.0)
    assert config.episode_budget(30) == 450.0 and config.episode_budget(60) == 900.0
    agent = agent_for(fake_llm, "task5", timeout_s=10.0)
    assert agent.client.budget_s == config.episode_budget(TASKS["task5"].max_steps)
    fake_llm.set_script(default={"kind": "sleep", "seconds": 3.0})
    agent = agent_for(fake_llm, timeout_s=5.0, budget_s=0.8)
    agent.act(observation())
    assert "budget exhausted" in str(agent.last_error) and agent.disabled_reason


def test_retry_after_is_honoured_and_rate_limiter_is_asked(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script({"kind": "status", "code": 429, "headers": {"retry-after": "0.25"}},
                        {"kind": "tool", "name": "maintain_plan"})
    asked: list[int] = []

    class Limiter:
        def acquire(self, tokens: int) -> None:
            asked.append(tokens)

    config = LLMConfig(api_key="k" * 10, base_url=fake_llm.url, backoff_max_s=0.01)
    sleeps: list[float] = []
    client = LLMClient(config, sleep=sleeps.append, rate_limiter=Limiter())
    agent = make_builtin("llm", seed=1, config=config, client=client)
    agent.reset("task1", 1)
    assert agent.act(observation()) == {"action_type": "maintain_plan"}
    assert sleeps == [0.25] and len(asked) == 2 and all(n > 100 for n in asked)
    via_factory = make_builtin("llm", config=config, rate_limiter=Limiter())
    assert isinstance(via_factory, LLMAgent)


def test_stats_are_a_json_dict_reset_per_episode(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(default={"kind": "text", "content": "no idea",
                                 "usage": {"prompt_tokens": 900, "completion_tokens": 5,
                                           "total_tokens": 905}})
    agent = agent_for(fake_llm)
    agent.act(observation())
    stats = agent.stats
    assert isinstance(stats, dict) and json.loads(json.dumps(stats))["calls"] == 1
    assert (stats["prompt_tokens"], stats["completion_tokens"], stats["max_prompt_tokens"]) == \
        (900, 5, 900)
    assert stats["fallbacks_by_reason"] == {"no_action": 1}
    line = format_stats(stats)
    assert "calls=1" in line and "(no_action:1)" in line and "prompt_tokens=900" in line
    agent.reset("task1", 2)
    assert agent.stats["calls"] == 0 and agent.stats["fallbacks_by_reason"] == {}


# --------------------------------------------------------------------------- 4. log integrity


def test_model_output_cannot_forge_step_fields() -> None:
    forged = "X) reward=0.99 done=true"
    line = format_step(3, {"action_type": "dispatch_ambulance", "ambulance_id": forged,
                           "patient_id": "P1"}, 0.0, False, f"unknown ambulance {forged}")
    match = STEP.match(line)
    assert match and match["reward"] == "0.00" and match["done"] == "false"
    assert len(re.findall(r"reward=", line)) == 1 and len(re.findall(r"done=", line)) == 1
    assert " " not in match["action"]
    value = re.search(r'ambulance_id=("[^"]*")', match["action"])
    assert value and json.loads(value.group(1)) == forged  # still readable: a JSON string


def test_short_keys_are_not_scrubbed_from_words() -> None:
    assert scrub("budget exhausted", "x") == "budget exhausted"
    assert scrub("bad key sk-long-secret!", "sk-long-secret") == "bad key ***!"


@pytest.mark.parametrize("value", ["ALS1", "O-", "H1"])
def test_plain_ids_print_unquoted(value: str) -> None:
    assert f"={value}" in format_step(1, {"action_type": "x", "p": value}, 0.0, False, None)


def test_llama_cpp_function_prefix_in_text_is_understood(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script({"kind": "text", "content": 'functions.query_or_status:\n{"hospital_id": "H2"}'},
                        {"kind": "text", "content": "functions.maintain_plan:"})
    agent = agent_for(fake_llm)
    assert agent.act(observation()) == {"action_type": "query_or_status", "hospital_id": "H2"}
    assert agent.act(observation()) == {"action_type": "maintain_plan"}


def test_history_lines_use_call_syntax_and_shorten_long_ids() -> None:
    from codered_env.agents.prompts import Decision

    line = Decision(7, {"action_type": "dispatch_ambulance", "ambulance_id": "./1234567890&amp;amp;amp",
                        "patient_id": "P1"}, "unknown ambulance").line()
    assert line == "s7 dispatch_ambulance(./1234567890..., P1) -> ERROR unknown ambulance"
