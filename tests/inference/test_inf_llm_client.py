"""The LLM agent and its client wrapper against the fake endpoint, via the real openai client."""

from __future__ import annotations

import time
from typing import Any

import pytest
from fake_openai import FakeOpenAI

from codered_env.agents.llm import (
    LLMAgent,
    LLMClient,
    LLMConfig,
    LLMError,
    build_tools,
    extract_json_action,
    parse_completion,
)

SCHEMAS: dict[str, dict[str, Any]] = {
    "dispatch_ambulance": {
        "title": "DispatchAmbulance",
        "type": "object",
        "properties": {
            "action_type": {"const": "dispatch_ambulance", "title": "Action Type"},
            "ambulance_id": {"type": "string", "title": "Ambulance Id"},
            "patient_id": {"type": "string", "title": "Patient Id"},
        },
        "required": ["action_type", "ambulance_id", "patient_id"],
    },
    "triage_call": {
        "type": "object",
        "$defs": {"Priority": {"enum": ["P1", "P2", "P3", "P4"], "title": "Priority"}},
        "properties": {
            "action_type": {"const": "triage_call"},
            "call_id": {"type": "string"},
            "priority": {"$ref": "#/$defs/Priority"},
        },
        "required": ["action_type", "call_id", "priority"],
    },
    "maintain_plan": {"type": "object", "properties": {"action_type": {"const": "maintain_plan"}}},
}
TYPES = tuple(SCHEMAS)
OBS = {"step": 0, "text": "clock 0 min; patient P1 at N3; AMB1 idle", "score_preview": 0.0}


def make_agent(fake: FakeOpenAI, **overrides: Any) -> LLMAgent:
    settings: dict[str, Any] = {
        "api_key": "sk-test-secret-123", "base_url": fake.url, "model": "fake-model",
        "timeout_s": 2.0, "max_retries": 2, "backoff_s": 0.01, "backoff_max_s": 0.05,
        "budget_s": 30.0,
    }
    settings.update(overrides)
    agent = LLMAgent(LLMConfig(**settings), schemas=SCHEMAS)
    agent.reset("task1", 0)
    return agent


def test_tools_are_generated_from_schemas_without_refs_or_action_type() -> None:
    tools = build_tools(SCHEMAS)
    assert [t["function"]["name"] for t in tools] == list(TYPES)
    triage = tools[1]["function"]["parameters"]
    assert triage["properties"]["priority"] == {"enum": ["P1", "P2", "P3", "P4"]}
    assert triage["required"] == ["call_id", "priority"]
    assert "action_type" not in tools[0]["function"]["parameters"]["properties"]
    assert "$ref" not in str(tools) and "title" not in str(tools)


def test_tool_call_becomes_the_action(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script({"kind": "tool", "name": "dispatch_ambulance",
                         "arguments": {"ambulance_id": "AMB1", "patient_id": "P1"}})
    agent = make_agent(fake_llm)
    assert agent.act(OBS) == {"action_type": "dispatch_ambulance", "ambulance_id": "AMB1",
                              "patient_id": "P1"}
    assert agent.last_error is None
    body = fake_llm.requests[0]
    assert body["model"] == "fake-model"
    assert {t["function"]["name"] for t in body["tools"]} == set(TYPES)
    assert OBS["text"] in body["messages"][1]["content"]
    assert fake_llm.auth_headers[0] == "Bearer sk-test-secret-123"


def test_json_text_answer_is_parsed(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script({"kind": "text", "content":
                         'Plan: triage first.\n```json\n{"action_type": "triage_call", '
                         '"call_id": "C2", "priority": "P1"}\n```'})
    agent = make_agent(fake_llm)
    assert agent.act(OBS) == {"action_type": "triage_call", "call_id": "C2", "priority": "P1"}
    assert agent.last_error is None


@pytest.mark.parametrize(("content", "reason"), [
    ("I would wait and see what happens.", "no action in the answer"),
    ('{"action_type": "launch_helicopter"}', "unknown action_type"),
    ("{not json at all", "no action in the answer"),
])
def test_garbage_becomes_maintain_plan_with_reason(fake_llm: FakeOpenAI, content: str,
                                                   reason: str) -> None:
    fake_llm.set_script({"kind": "text", "content": content})
    agent = make_agent(fake_llm)
    assert agent.act(OBS) == {"action_type": "maintain_plan"}
    assert agent.last_error is not None and reason in agent.last_error
    assert agent.stats.fallbacks == 1


def test_non_json_http_body_is_a_reasoned_fallback(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(*[{"kind": "raw", "body": "<html>oops</html>"}] * 3)
    agent = make_agent(fake_llm)
    assert agent.act(OBS) == {"action_type": "maintain_plan"}
    assert agent.last_error is not None and agent.last_error.startswith("llm: ")


def test_429_is_retried_then_succeeds(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(
        {"kind": "status", "code": 429, "headers": {"retry-after": "0"}},
        {"kind": "status", "code": 503},
        {"kind": "tool", "name": "maintain_plan", "arguments": "{}"},
    )
    agent = make_agent(fake_llm)
    assert agent.act(OBS) == {"action_type": "maintain_plan"}
    assert agent.last_error is None
    assert agent.stats.retries == 2 and len(fake_llm.requests) == 3


def test_persistent_429_gives_up_after_retries(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(default={"kind": "status", "code": 429})
    agent = make_agent(fake_llm, max_retries=2)
    assert agent.act(OBS) == {"action_type": "maintain_plan"}
    assert agent.last_error is not None and "429" in agent.last_error
    assert len(fake_llm.requests) == 3
    assert agent.disabled_reason is None  # a rate limit is not fatal: the next step tries again


def test_slow_answer_times_out(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(default={"kind": "sleep", "seconds": 3.0,
                                 "then": {"kind": "tool", "name": "maintain_plan"}})
    agent = make_agent(fake_llm, timeout_s=0.2, max_retries=1, local=False)
    started = time.monotonic()
    agent.act(OBS)
    assert time.monotonic() - started < 2.0  # two 0.2 s attempts, not the 3 s answer
    assert agent.last_error is not None and "timed out" in agent.last_error


def test_rejected_tools_switch_to_text_mode(fake_llm: FakeOpenAI) -> None:
    fake_llm.reject_tools = True
    fake_llm.set_script(default={"kind": "text", "content": '{"action_type": "maintain_plan"}'})
    agent = make_agent(fake_llm)
    assert agent.act(OBS) == {"action_type": "maintain_plan"}
    assert agent.last_error is None
    agent.act(OBS)
    assert [bool(r.get("tools")) for r in fake_llm.requests] == [True, False, False]
    assert "call syntax" in fake_llm.requests[1]["messages"][0]["content"]
    assert agent.stats.text_mode_switches == 1


def test_auth_failure_stops_calls_and_hides_key(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(default={"kind": "status", "code": 401,
                                 "message": "bad key sk-test-secret-123"})
    agent = make_agent(fake_llm)
    for _ in range(3):
        assert agent.act(OBS) == {"action_type": "maintain_plan"}
    assert len(fake_llm.requests) == 1
    assert agent.last_error is not None and "401" in agent.last_error
    assert "sk-test" not in agent.last_error and "sk-test" not in repr(agent.config)


def test_budget_exhaustion_stops_calls() -> None:
    now = [0.0]
    config = LLMConfig(api_key="k", base_url="http://127.0.0.1:9/v1", budget_s=10.0)
    client = LLMClient(config, clock=lambda: now[0])
    now[0] = 9.8
    with pytest.raises(LLMError) as info:
        client.complete([{"role": "user", "content": "x"}])
    assert info.value.kind == "budget" and info.value.fatal and client.stats.calls == 0


def test_connection_refused_is_retried_and_bounded() -> None:
    sleeps: list[float] = []
    config = LLMConfig(api_key="k", base_url="http://127.0.0.1:9/v1", max_retries=2,
                       backoff_s=0.5, backoff_max_s=4.0, timeout_s=1.0)
    client = LLMClient(config, sleep=sleeps.append)
    with pytest.raises(LLMError) as info:
        client.complete([{"role": "user", "content": "x"}])
    assert info.value.kind == "connection" and client.stats.calls == 3
    assert len(sleeps) == 2 and 0.25 <= sleeps[0] <= 0.5 and 0.5 <= sleeps[1] <= 1.0


def test_history_is_bounded_and_reports_outcomes(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(default={"kind": "tool", "name": "maintain_plan"})
    agent = make_agent(fake_llm, history=2)
    for step in range(5):
        agent.act({**OBS, "step": step, "last_action_error": "bad id" if step == 4 else None})
    last = fake_llm.requests[-1]["messages"][1]["content"]
    lines = [line for line in last.splitlines() if line.startswith("s")]
    # trimmed in chunks to half the cap: steps 1-2 kept, then 1 kept after step 3, ...
    assert 1 <= len(lines) <= 2 and lines[-1] == "s4 maintain_plan() -> ERROR bad id"


def test_config_from_env_reads_keys_and_ignores_bad_numbers() -> None:
    assert LLMConfig.from_env({}) is None
    config = LLMConfig.from_env({"API_KEY": "abc", "CODERED_LLM_TIMEOUT": "nan",
                                 "CODERED_LLM_RETRIES": "-3", "MODEL_NAME": "m"})
    assert config is not None
    assert (config.api_key, config.model, config.timeout_s, config.max_retries) == ("abc", "m",
                                                                                    30.0, 3)
    assert LLMConfig.from_env({"HF_TOKEN": "h", "OPENAI_API_KEY": "o"}).api_key == "h"


def test_parsers_accept_common_wrappings() -> None:
    qwen = '<tool_call>{"name": "triage_call", "arguments": {"call_id": "C1", "priority": "P2"}}'
    assert extract_json_action(qwen, TYPES).action == {"action_type": "triage_call",
                                                      "call_id": "C1", "priority": "P2"}
    nested = '{"action": {"action_type": "MAINTAIN_PLAN", "note": null}}'
    assert extract_json_action(nested, TYPES).action == {"action_type": "maintain_plan"}
    thought = '<think>{"action_type": "nope"}</think> {"action_type": "maintain_plan"}'
    assert extract_json_action(thought, TYPES).action == {"action_type": "maintain_plan"}
    assert parse_completion(object(), TYPES).kind == "empty"


def test_action_with_wrong_parameters_is_refused_with_the_reason(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script({"kind": "tool", "name": "triage_call",
                         "arguments": {"call_id": "C1", "priority": "urgent"}},
                        {"kind": "tool", "name": "maintain_plan"})
    agent = make_agent(fake_llm)
    assert agent.act(OBS) == {"action_type": "maintain_plan"}
    assert agent.last_error is not None
    assert agent.last_error.startswith("llm: invalid action: invalid triage_call")
    assert "priority" in agent.last_error
    agent.act({**OBS, "step": 1})
    history = fake_llm.requests[1]["messages"][1]["content"]
    assert "s1 triage_call(C1, urgent) -> ERROR llm: invalid action" in history


def test_timeouts_are_retried_once_only_on_a_remote_endpoint(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(default={"kind": "sleep", "seconds": 3.0})
    agent = make_agent(fake_llm, timeout_s=0.2, max_retries=3, local=False)
    agent.act(OBS)
    assert len(fake_llm.requests) == 2 and agent.stats.retries == 1
    assert agent.stats.timeouts == 2


def test_degraded_mode_after_repeated_failures_and_recovery(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(*[{"kind": "status", "code": 503}] * 11,
                        default={"kind": "tool", "name": "maintain_plan"})
    agent = make_agent(fake_llm, max_retries=2)
    counts = []
    for step in range(6):
        before = len(fake_llm.requests)
        agent.act({**OBS, "step": step})
        counts.append(len(fake_llm.requests) - before)
    # three full retry schedules, then single attempts until an answer, then normal again
    assert counts == [3, 3, 3, 1, 1, 1]
    assert agent.last_error is None
    fake_llm.set_script({"kind": "status", "code": 503}, {"kind": "tool", "name": "maintain_plan"})
    agent.act({**OBS, "step": 6})
    assert len(fake_llm.requests) == 12 + 2 and agent.last_error is None
