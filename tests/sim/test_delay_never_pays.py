"""Delay never pays (docs/MODEL.md §8, invariants): holding a dispatch, a hospital assignment, a
preparation or a call's triage back by k minutes, all else equal, never raises the final score.

The held policy is the heuristic holding every action of the held kind ``k`` minutes from the
decision at which it would have played it, waiting one minute (an OR-status query: no effect on
the world) in its place, so nothing else is played earlier (the red team's ``WaitingTwin``).
The fast sweep covers every task on twenty seeds, the broad one (``CODERED_SLOW=1``) a hundred
seeds and two holds: the mean, since on a single seed waiting can let the heuristic choose
better (task3 seed 2106: a room prepared 3 min later is ready only once a more urgent patient has
arrived, who takes it; over seeds 2000-2199 that hold costs 0.012-0.022 on average)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from redteam.policies import HELD_TYPES, RedTeamAgent, Twist, WaitingTwin

from codered_env.sim import TASK_IDS, CodeRedSim
from codered_env.sim.tasks import TASKS

HOLDS = {
    "dispatch": HELD_TYPES["hold_dispatch"],
    "assignment": HELD_TYPES["hold_assign"],
    "preparation": HELD_TYPES["hold_prep"],
    "triage": HELD_TYPES["hold_triage"],
}
TOLERANCE = 0.002  # a gain above this counts as delay paying


def held_heuristic(seed: int, hold: str, minutes: int) -> WaitingTwin:
    """The heuristic, every action of ``hold`` played ``minutes`` late, all else equal."""
    return WaitingTwin(RedTeamAgent(seed, Twist(), "heuristic"), HOLDS[hold], minutes, f"held-{hold}")


def final_score(task_id: str, seed: int, agent: WaitingTwin) -> float:
    sim = CodeRedSim(task_id, seed)
    agent.reset(task_id, seed)
    while not sim.done:
        sim.step(agent.act(sim.observation()))
    return sim.grade()["score"]


def _gains(task_id: str, seeds: range, hold: str, minutes: int) -> list[float]:
    return [
        final_score(task_id, s, held_heuristic(s, hold, minutes))
        - final_score(task_id, s, held_heuristic(s, hold, 0))
        for s in seeds
    ]


# (task, hold) pairs where the hold can act: calls are triaged only in the call-queue tasks
CASES = [(t, hold) for t in TASK_IDS for hold in sorted(HOLDS) if hold != "triage" or TASKS[t].phase == 2]


def test_a_held_action_is_played_late_and_nothing_else_early() -> None:
    plain = [a for a in _played("task3", 4, 0) if a["action_type"] != "query_or_status"]
    held = _played("task3", 4, 5)
    assert all(a["action_type"] == "query_or_status" for a in held[:5])
    # the heuristic's first dispatches, the same jobs in the same order, each 5 min late (the
    # unit may differ: the roads' speeds change with the clock)
    assert [_job(a) for a in held[5:10]] == [_job(a) for a in plain[:5]]
    assert all(a["action_type"] == "dispatch_ambulance" for a in plain[:5])


def _job(action: dict) -> tuple[str, str | None]:
    return action["action_type"], action.get("patient_id")


def _played(task_id: str, seed: int, minutes: int) -> list[dict]:
    agent, sim = held_heuristic(seed, "dispatch", minutes), CodeRedSim(task_id, seed)
    agent.reset(task_id, seed)
    played = []
    while not sim.done and len(played) < 12:
        played.append(agent.act(sim.observation()))
        sim.step(played[-1])
    return played


@pytest.mark.parametrize(("task_id", "hold"), CASES)
def test_holding_back_never_raises_the_score(task_id: str, hold: str) -> None:
    gains = _gains(task_id, range(2000, 2020), hold, 6)
    assert sum(gains) / len(gains) <= TOLERANCE, gains


@pytest.mark.slow
@pytest.mark.parametrize(("task_id", "hold", "minutes"), [(t, hold, m) for t, hold in CASES for m in (3, 10)])
def test_holding_back_never_raises_the_score_broad(task_id: str, hold: str, minutes: int) -> None:
    gains = _gains(task_id, range(2100, 2200), hold, minutes)
    assert sum(gains) / len(gains) <= TOLERANCE, gains
