"""Derived values by identity (``sim/derived.py``) and the text ``render_text`` makes with them:
a value is made once per part object, forgotten once a turn passes without it, and an
episode's text with the memo is the text without it, line for line, on every task and on a
generated city (whose map line is reused)."""

from __future__ import annotations

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
