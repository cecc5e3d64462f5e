"""Derived values by identity (``sim/derived.py``) and the text ``render_text`` makes with them:
a value is made once per part object, forgotten once a turn passes without it, and an
episode's text with the memo is the text without it, line for line, on every task and on a
generated city (whose map line is reused)."""

from __future__ import annotations

import copy

import pytest

from codered_env.agents import make_agent
from codered_env.server.environment import plain_observation
from codered_env.sim import TASK_IDS, CodeRedSim, render_text
from codered_env.sim.derived import Derived
from codered_env.sim.render_lines import render_lines


def test_a_value_is_made_once_per_object_and_forgotten_after_an_unasked_turn() -> None:
    made: list[object] = []
    derived = Derived()
    row, twin = {"a": 1}, {"a": 1}

    def make(part: dict[str, int]) -> str:
        made.append(part)
        return f"a={part['a']}"

    assert derived.get(row, "t", make) == "a=1"
    derived.turn()
    assert derived.get(row, "t", make) == "a=1"  # asked again in the next turn: kept
    assert made == [row]
    assert derived.get(twin, "t", make) == "a=1"  # an equal object is another part
    assert derived.get(row, "other", make) == "a=1"  # another tag is another value
    assert len(made) == 3
    derived.turn()
    derived.turn()  # a turn without it: forgotten
    assert len(derived) == 0
    derived.get(row, "t", make)
    assert len(made) == 4


@pytest.mark.parametrize(("task_id", "city"), [(t, "prakashnagar") for t in TASK_IDS] + [("task3", "gen-7")])
def test_an_episodes_text_with_the_memo_is_its_text_without(task_id: str, city: str) -> None:
    sim = CodeRedSim(task_id, 3, city=city)
    agent = make_agent("heuristic", seed=3)
    agent.reset(task_id, 3)
    derived = Derived()
    for _ in range(60):
        if sim.done:
            break
        data = plain_observation(sim.observation_view())
        assert render_text(data, derived) == render_text(data), sim.step_count
        sim.step(agent.act(data))
    assert len(derived) > 0


def test_derived_lines_are_refused_for_other_options() -> None:
    data = CodeRedSim("task1", 0).observation()
    with pytest.raises(ValueError, match="default options"):
        render_lines(data, compact=True, derived=Derived())


SAME_SECTIONS = ("dispatch_ambulance", "dispatch_als", "dispatch_bls", "assign_hospital",
                 "request_mutual_aid")


def _identity_and_content(task_id: str) -> tuple[int, int]:
    """(steps where a section was the same object, steps where it was another), checking that
    it is the same object exactly when its content is the same."""
    sim = CodeRedSim(task_id, 2)
    agent = make_agent("heuristic", seed=2)
    agent.reset(task_id, 2)
    before: dict[str, tuple[object, object]] = {}
    kept = changed = 0
    for step in range(50):
        if sim.done:
            break
        legal = sim.observation_view()["legal_actions"]
        for name in SAME_SECTIONS:
            options = legal.get(name)
            if options is None:
                continue
            if name in before:
                last, content = before[name]
                assert (options is last) == (options == content), (task_id, name, step)
                kept += options is last
                changed += options is not last
            before[name] = (options, copy.deepcopy(options))
        sim.step(agent.act(sim.observation_view()) if step % 2 else {"action_type": "maintain_plan"})
    return kept, changed


def test_sections_built_every_step_keep_their_identity_while_their_content_is_the_same() -> None:
    counts = [_identity_and_content(task_id) for task_id in ("task1", "task3", "task5")]
    assert sum(k for k, _ in counts) > 0 and sum(c for _, c in counts) > 0, counts
