"""The generator's declared condition sets (used by the LLM prompt) match what it produces."""

from __future__ import annotations

from codered_env.sim import TASKS
from codered_env.sim.conditions import CONDITIONS
from codered_env.sim.generator import PHASE1_CONDITIONS, generate, possible_conditions


def produced(task_id: str, seeds: range) -> set[str]:
    seen: set[str] = set()
    for seed in seeds:
        scenario = generate(TASKS[task_id], seed)
        seen |= {p.condition for p in scenario.patients.values()}
        seen |= {s.patient.condition for s in scenario.spawns}
    return seen


def test_phase1_tasks_produce_exactly_their_declared_conditions() -> None:
    assert set(PHASE1_CONDITIONS) == {t for t, spec in TASKS.items() if spec.phase == 1}
    for task_id, declared in PHASE1_CONDITIONS.items():
        assert produced(task_id, range(200)) == set(declared), task_id


def test_phase2_tasks_may_produce_any_condition() -> None:
    for task_id, spec in TASKS.items():
        if spec.phase == 2:
            assert possible_conditions(task_id) == tuple(CONDITIONS)
            assert produced(task_id, range(40)) <= set(CONDITIONS)


def test_possible_conditions_keep_the_condition_table_order() -> None:
    assert possible_conditions("task2") == ("stemi", "stroke")
    assert possible_conditions("no-such-task") == tuple(CONDITIONS)
