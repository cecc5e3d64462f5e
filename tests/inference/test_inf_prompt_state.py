"""The LLM prompt's state is built from the observation's keyed lines, not from regexes over its
text: it must equal, byte for byte, what the earlier regex rewrite of ``render_text`` gave
(kept below as the reference) on many states of every task, in tools and text mode, for an
in-process observation and for the one a client receives over the wire."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from codered_env.agents.llm import LLMAgent, LLMConfig
from codered_env.agents.prompts import Decision, build_user_message, compact_state, observation_text
from codered_env.models import CodeRedObservation
from codered_env.sim import render_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sim"))
from test_render_lines import STATES

# The regex rewrite compact_state used to apply to render_text (reference only).
_BLOOD_STOCK = re.compile(r" \| blood (?:[ABO]{1,2}[+-]:\d+ ?)+$")
_HEADER = re.compile(r"^CodeRedEnv \S+ seed \d+ \| ")
_HOSPITAL_NAME = re.compile(r"^( H\d+ T\d) .*? (load \d+/\d+)")
_UNIT_KIND = re.compile(r"\b((ALS|BLS)\d+)\(\2\)")
_ON_CALL = re.compile(r"(?:\b[a-z]+:on_call\b ?)+")


def _group_on_call(match: re.Match[str]) -> str:
    names = [item.split(":")[0] for item in match.group(0).split()]
    return "on_call " + ",".join(names) + (" " if match.group(0).endswith(" ") else "")


def regex_compact(text: str, *, tools: bool) -> str:
    lines = []
    for line in text.strip().splitlines():
        if tools and line.startswith("LEGAL"):
            continue
        line = _HOSPITAL_NAME.sub(r"\1 \2", _HEADER.sub("", line))
        line = _ON_CALL.sub(_group_on_call, _UNIT_KIND.sub(r"\1", line))
        line = line.replace(" | dest - |", " |").replace(" | blood ? |", " |")
        lines.append(_BLOOD_STOCK.sub("", line) if tools else line)
    return "\n".join(lines)


@pytest.mark.parametrize("tools", [True, False])
def test_prompt_state_equals_the_regex_rewrite_on_every_state(tools: bool) -> None:
    assert len(STATES) > 500
    for obs in STATES:
        expected = regex_compact(render_text(obs), tools=tools)
        assert compact_state(obs, tools=tools) == expected
        assert compact_state({**obs, "text": render_text(obs)}, tools=tools) == expected


def test_wire_observation_gives_the_same_prompt_state() -> None:
    for obs in STATES[::10]:
        wire = CodeRedObservation.from_sim(obs, render_text(obs), reward=0.0).model_dump()
        for tools in (True, False):
            assert compact_state(wire, tools=tools) == regex_compact(wire["text"], tools=tools)


def test_whole_user_message_unchanged() -> None:
    agent = LLMAgent(LLMConfig(api_key="sk-test-secret-123", base_url="http://127.0.0.1:9/v1",
                               model="m"))
    history = [Decision(1, {"action_type": "maintain_plan"}, None)]
    for obs in STATES[::25]:
        agent.reset(obs["task_id"], obs["seed"])
        agent._history = list(history)
        for use_tools in (True, False):
            agent._use_tools = use_tools
            legal = obs["legal_actions"] or None
            _, user = agent._messages(obs, legal)
            state = regex_compact(render_text(obs), tools=use_tools or legal is not None)
            assert user == build_user_message(state, history, legal=legal, use_tools=use_tools)


def test_an_observation_the_renderer_cannot_read_is_shown_as_given() -> None:
    text_only: dict[str, Any] = {"step": 0, "text": "clock 0 min; patient P1 at N3; AMB1 idle"}
    assert compact_state(text_only, tools=True) == text_only["text"]
    partial = {k: v for k, v in STATES[0].items() if k != "hospitals"}
    assert compact_state(partial, tools=False) == observation_text(partial)
    assert '"ambulances"' in compact_state(partial, tools=False), "JSON fallback keeps the data"
