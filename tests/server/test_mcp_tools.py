"""The MCP tool layer in process (no server): names and schemas from the catalogue, results,
refusals that leave the world unchanged, and heuristic play replayed as tool calls."""

from __future__ import annotations

from typing import Any

import pytest

from codered_env.agents import make_agent
from codered_env.runner import run_episode
from codered_env.server.environment import CodeRedEnvironment
from codered_env.server.mcp_tools import (
    INVALID_ARGS,
    OUTPUT_SCHEMA,
    TOOL_NOT_FOUND,
    VIEW_TOOL,
    ToolSession,
    tool_list,
)
from codered_env.sim import CodeRedSim
from codered_env.sim.catalogue import ACTION_NAMES, ACTIONS, input_schema

REQUIRED_FIELDS = {"reward", "done", "score", "error"}


def _session(task_id: str = "task3", seed: int = 4) -> ToolSession:
    env = CodeRedEnvironment()
    env.reset(task_id=task_id, seed=seed)
    return ToolSession(env)


def _snapshot(tools: ToolSession) -> tuple[Any, str]:
    return tools.env.state.model_dump(exclude={"episode_id"}), tools.env.current_observation().text


def _args(action: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in action.items() if k != "action_type"}


def test_tools_are_the_actions_plus_one_read_only_view() -> None:
    tools = tool_list()
    assert [t["name"] for t in tools] == [*ACTION_NAMES, VIEW_TOOL]
    for spec, tool in zip(ACTIONS, tools[:-1], strict=True):
        assert tool["inputSchema"] == input_schema(spec)  # the catalogue's schema, enums included
        assert tool["description"].startswith(spec.help)
    for tool in tools:
        assert tool["inputSchema"]["type"] == "object"
        assert tool["inputSchema"].get("additionalProperties") is False
        assert tool["outputSchema"] == OUTPUT_SCHEMA
        assert tool["description"]
    assert tools[-1]["annotations"]["readOnlyHint"] is True
    assert not {"reset", "step", "state", "close"} & {t["name"] for t in tools}


@pytest.mark.parametrize(("task_id", "seed"), [("task1", 0), ("task2", 5), ("task3", 2), ("task4", 1),
                                               ("task5", 3)])
def test_heuristic_replayed_as_tool_calls_scores_as_in_process(task_id: str, seed: int) -> None:
    reference = run_episode(task_id, seed, make_agent("heuristic"))
    tools = _session(task_id, seed)
    rewards = []
    for action in reference.actions:
        outcome = tools.call(action["action_type"], _args(action))
        assert outcome.error_type is None, outcome.structured["error"]
        rewards.append(outcome.structured["reward"])
    final = outcome.structured
    assert final["done"] is True
    assert final["score"] == reference.score == tools.env.grade()["score"]
    assert rewards == pytest.approx(reference.rewards, abs=1e-6)


def test_every_result_carries_the_structured_fields_and_the_text() -> None:
    tools = _session()
    for name, args in ((VIEW_TOOL, {}), ("maintain_plan", {}), ("query_or_status", {"hospital_id": "H1"})):
        result = tools.call(name, args).call_result()
        structured = result["structuredContent"]
        assert structured.keys() >= REQUIRED_FIELDS
        assert result["content"] == [{"type": "text", "text": structured["text"]}]
        assert result["isError"] is False and structured["error"] is None


@pytest.mark.parametrize(
    ("name", "arguments", "error_type"),
    [
        ("launch_helicopter", {}, TOOL_NOT_FOUND),
        ("reset", {}, TOOL_NOT_FOUND),
        ("assign_hospital", {"patient_id": "P1"}, INVALID_ARGS),  # missing parameter
        ("assign_hospital", {"patient_id": 7, "hospital_id": "H1"}, INVALID_ARGS),  # wrong type
        ("maintain_plan", {"minutes": 5}, INVALID_ARGS),  # extra parameter
        ("triage_call", {"call_id": "C1", "priority": "P9"}, INVALID_ARGS),  # not in the enum
        ("allocate_blood", {"patient_id": "P1", "hospital_id": "H1", "blood_type": "O-", "units": 99},
         INVALID_ARGS),  # out of range
        ("maintain_plan", ["not", "an", "object"], INVALID_ARGS),
    ],
)
def test_malformed_calls_are_error_results_and_change_nothing(
    name: str, arguments: Any, error_type: str
) -> None:
    tools = _session()
    before = _snapshot(tools)
    outcome = tools.call(name, arguments)
    assert outcome.is_error and outcome.error_type == error_type
    assert outcome.call_result()["isError"] is True
    assert outcome.structured["error"] and outcome.structured["reward"] == 0.0
    assert _snapshot(tools) == before


def test_an_illegal_action_is_an_error_result_and_the_same_refusal_as_the_simulation() -> None:
    tools = _session("task1", 0)
    reference = CodeRedSim("task1", 0)
    illegal = {"action_type": "dispatch_ambulance", "ambulance_id": "ALS1", "patient_id": "P99"}
    expected = reference.step(illegal)
    outcome = tools.call("dispatch_ambulance", _args(illegal))
    assert outcome.is_error and outcome.error_type is None
    assert outcome.structured["error"] == expected.error and "P99" in expected.error
    assert outcome.text.splitlines()[1] == f"REFUSED: {expected.error}"
    # Exactly what the simulation does with a refused decision: nothing but the decision minute.
    served = tools.env.current_observation().model_dump()
    assert {k: served[k] for k in reference.observation() if k != "last_action_error"} == {
        k: v for k, v in reference.observation().items() if k != "last_action_error"
    }


def test_a_finished_episode_refuses_further_calls_without_change() -> None:
    tools = _session("task1", 0)
    for action in run_episode("task1", 0, make_agent("heuristic")).actions:
        tools.call(action["action_type"], _args(action))
    before = _snapshot(tools)
    outcome = tools.call("maintain_plan", {})
    assert outcome.is_error and "episode is over" in outcome.structured["error"]
    assert outcome.structured["done"] is True
    assert _snapshot(tools) == before
    assert tools.call(VIEW_TOOL, {}).is_error  # nothing more to see either: the episode is over


def test_replies_show_what_changed_and_the_view_shows_everything() -> None:
    tools = _session("task3", 4)
    full = tools.call(VIEW_TOOL, {}).text
    assert full == tools.env.current_observation().text
    reply = tools.call("query_or_status", {"hospital_id": "H1"}).text
    assert reply.startswith("t=") and len(reply) < len(full)
    again = tools.call(VIEW_TOOL, {})
    assert again.structured["reward"] == 0.0 and again.structured["step"] == 1


def test_a_session_without_an_episode_refuses_tool_calls() -> None:
    outcome = ToolSession(CodeRedEnvironment()).call("maintain_plan", {})
    assert outcome.is_error and "reset" in outcome.structured["error"]
