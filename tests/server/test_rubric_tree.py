"""The RFC 004 rubric tree equals the grader (sim/rubric.py) on every task, seeds and policies."""

from __future__ import annotations

import pytest
from openenv.core.rubrics import Rubric

from codered_env.agents import make_agent
from codered_env.server.environment import CodeRedEnvironment
from codered_env.server.rubric_tree import PENALTY_NODE, CodeRedRubric
from codered_env.sim import TASK_IDS, CodeRedSim
from codered_env.sim.params import RUBRIC_WEIGHTS, SCORE_CEIL, SCORE_FLOOR

NODES = [*RUBRIC_WEIGHTS, PENALTY_NODE]


def _check_equal(rubric: CodeRedRubric, sim: CodeRedSim) -> None:
    grade = sim.grade()
    assert rubric(None, sim) == grade["score"]
    scores = {name: node.last_score for name, node in rubric.named_rubrics()}
    assert list(scores) == NODES
    for name in RUBRIC_WEIGHTS:
        assert scores[name] == (grade["components"][name] or 0.0)
        assert rubric.get_rubric(name).weight == grade["weights"][name]  # type: ignore[attr-defined]
    assert scores[PENALTY_NODE] == grade["mutual_aid_penalty"]
    # The tree adds up to the grade (components are reported rounded to 4 decimals).
    expected = min(SCORE_CEIL, max(SCORE_FLOOR if grade["final"] else 0.0, rubric.weighted_sum()))
    assert expected == pytest.approx(grade["score"], abs=2e-4)


@pytest.mark.parametrize("task_id", TASK_IDS)
@pytest.mark.parametrize(("agent", "seed"), [("heuristic", 0), ("heuristic", 11), ("random", 3), ("noop", 5)])
def test_the_tree_equals_grade_during_and_after_an_episode(task_id: str, agent: str, seed: int) -> None:
    rubric = CodeRedRubric()
    sim = CodeRedSim(task_id, seed)
    policy = make_agent(agent, seed=seed)
    policy.reset(task_id, seed)
    while not sim.done:
        sim.step(policy.act(sim.observation()))
        if sim.step_count % 7 == 0:
            _check_equal(rubric, sim)  # the running preview
    sim.finish()
    _check_equal(rubric, sim)  # the final grade
    assert rubric(None, sim.grade()) == sim.grade()["score"]  # a grade dict works as well


def test_the_environment_exposes_its_episode_as_a_rubric() -> None:
    env = CodeRedEnvironment()
    env.reset(task_id="task3", seed=2)
    for _ in range(5):
        env.step({"action_type": "maintain_plan"})
    assert isinstance(env.rubric, Rubric)
    assert env.rubric(None, None) == env.grade()["score"]
    assert [name for name, _ in env.rubric.named_rubrics()] == NODES


def test_a_rubric_without_a_grade_source_says_what_it_needs() -> None:
    with pytest.raises(ValueError, match="no grade"):
        CodeRedRubric()(None, None)
