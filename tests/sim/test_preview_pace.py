"""The running preview expects care at the reference pace (docs/MODEL.md §8.5): a patient not yet
treated is valued as if definitive care began ``params.PREVIEW_PACE_MIN`` minutes after the
furthest stage they reached (the call, the first crew, the first hospital door), or now if that
is past."""

from __future__ import annotations

import dataclasses
import os

import pytest

from codered_env.agents import make_agent
from codered_env.sim import CodeRedSim
from codered_env.sim.params import PREVIEW_PACE_MIN
from codered_env.sim.rubric import _kept_if_treated_at, care_minute
from codered_env.sim.types import Patient


def _first_patient(task_id: str = "task1", seed: int = 0) -> tuple[CodeRedSim, Patient]:
    sim = CodeRedSim(task_id, seed)
    return sim, next(iter(sim.world.patients.values()))


def test_care_is_expected_at_the_pace_of_the_furthest_stage_reached() -> None:
    _, p = _first_patient()
    from_call, from_crew, from_door = PREVIEW_PACE_MIN[p.condition]
    t0 = p.appeared_at
    unreached = dataclasses.replace(p, first_unit_at=None, first_hospital_arrival=None)
    assert care_minute(unreached, t0) == t0 + from_call
    reached = dataclasses.replace(unreached, first_unit_at=t0 + 7)
    assert care_minute(reached, t0 + 7) == t0 + 7 + from_crew
    at_door = dataclasses.replace(reached, first_hospital_arrival=t0 + 30)
    assert care_minute(at_door, t0 + 30) == t0 + 30 + from_door


def test_past_the_pace_care_is_expected_now_so_waiting_still_costs() -> None:
    _, p = _first_patient()
    late = p.appeared_at + PREVIEW_PACE_MIN[p.condition][0] + 25
    unreached = dataclasses.replace(p, first_unit_at=None, first_hospital_arrival=None)
    assert care_minute(unreached, late) == late
    assert _kept_if_treated_at_sim(unreached, late + 10) < _kept_if_treated_at_sim(unreached, late)


def _kept_if_treated_at_sim(p: Patient, t: int) -> float:
    return _kept_if_treated_at(p, t)


@pytest.mark.skipif(os.environ.get("CODERED_SLOW") != "1", reason="slow: set CODERED_SLOW=1 to run it")
def test_the_pace_in_params_is_the_heuristics_measured_pace() -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from preview_pace import measured_pace

    assert measured_pace(list(range(12))) == PREVIEW_PACE_MIN


def test_an_episode_of_the_heuristic_previews_close_to_its_final_score() -> None:
    """Valued at the reference pace, the heuristic's preview halfway through task3 is within 0.2 of
    where it ends (valued as if care began at once it stood 0.25 above)."""
    sim = CodeRedSim("task3", 7)
    agent = make_agent("heuristic")
    agent.reset("task3", 7)
    previews = []
    while not sim.done:
        sim.step(agent.act(sim.observation()))
        previews.append(sim.score_preview)
    final = sim.grade()["score"]
    assert abs(previews[len(previews) // 2] - final) < 0.2
