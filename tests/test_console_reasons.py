"""The Suggest card's reasons: plain words about the action at hand, built only from what the
agent saw, for every rule of the heuristic."""

from __future__ import annotations

import json
import re

import pytest

from codered_env.agents import make_agent
from codered_env.agents.heuristic import RULES
from codered_env.sim import TASK_IDS, CodeRedSim
from codered_env.sim.conditions import CONDITIONS
from codered_env.web.advice import advice
from codered_env.web.reasons import _BY_RULE, plain_reason

# Words of the rule engine a visitor should not have to read.
JARGON = re.compile(r"\bRule \d|benefit kept|maximis|\d+ x |call-to-treatment|fallback", re.I)
ID_KEYS = ("ambulance_id", "call_id", "patient_id", "hospital_id", "or_id", "target_id")


def heuristic_decisions(task_id: str, seed: int, limit: int = 80):
    """(rule, action, observation) of the heuristic's first ``limit`` decisions."""
    sim, agent = CodeRedSim(task_id, seed), make_agent("heuristic", seed)
    agent.reset(task_id, seed)
    while not sim.done and limit:
        obs = sim.observation()
        action = agent.act(obs)
        yield agent.last_rule, action, obs
        sim.step(action)
        limit -= 1


def test_every_rule_has_plain_words() -> None:
    assert set(_BY_RULE) == set(range(1, len(RULES) + 1))


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_reasons_name_the_action_in_plain_words(task_id: str) -> None:
    for rule, action, obs in heuristic_decisions(task_id, 0):
        reason = plain_reason(rule, action, obs)
        assert reason and not JARGON.search(reason), (action, reason)
        assert action["action_type"] in _BY_RULE[rule], f"rule {rule} made {action}: no plain words for it"
        for key in ID_KEYS:
            if key in action:
                assert str(action[key]) in reason, (key, action, reason)


@pytest.mark.parametrize("task_id", ["task4", "task5"])
def test_reasons_never_name_a_condition_the_agent_has_not_seen(task_id: str) -> None:
    labels = {c.label for c in CONDITIONS.values()}
    for rule, action, obs in heuristic_decisions(task_id, 1):
        seen = json.dumps(dict(obs), default=str)
        for label in labels:
            if label in plain_reason(rule, action, obs):
                assert label in seen, (label, action)


def test_an_unknown_rule_or_action_falls_back_to_the_rule_text() -> None:
    assert plain_reason(None, {"action_type": "maintain_plan"}, {}) == ""
    assert plain_reason(99, {"action_type": "maintain_plan"}, {}) == ""
    fallback = plain_reason(2, {"action_type": "transfer_blood"}, {})
    assert fallback.lower() == RULES[1].lower()
    # Rows missing from the observation never crash a reason.
    unknown = {"action_type": "dispatch_als", "ambulance_id": "ALS9", "call_id": "C9"}
    assert "ALS9" in plain_reason(2, unknown, {})


def test_advice_gives_the_rule_and_its_plain_reason() -> None:
    suggestion = advice("task4", 0, [])["suggestion"]
    assert suggestion["rule"] == 1 and suggestion["action"]["action_type"] == "triage_call"
    assert "not triaged yet" in suggestion["reason"] and not JARGON.search(suggestion["reason"])
    other = advice("task4", 0, [], "noop")["suggestion"]
    assert "rule" not in other and other["reason"].startswith("The noop agent")
