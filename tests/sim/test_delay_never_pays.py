"""Delay never pays (docs/MODEL.md §8, invariants): holding a dispatch, a hospital assignment, a
preparation or a call's triage back by k minutes, all else equal, never raises the final score.

The held policy is the heuristic that, the first time it would play an action of the held kind,
waits ``k`` decision minutes (an OR-status query: one minute, no effect on the world) before
playing it. The fast sweep covers every task on twenty seeds (a mean: one seed on which waiting
lets the heuristic choose better can gain alone); the broad one (``CODERED_SLOW=1``)
more seeds and holds."""

from __future__ import annotations

from typing import Any

import pytest

from codered_env.agents.heuristic import HeuristicAgent, action_key
from codered_env.sim import TASK_IDS, CodeRedSim
from codered_env.sim.tasks import TASKS

HOLDS = {
    "dispatch": ("dispatch_ambulance", "dispatch_als", "dispatch_bls"),
    "assignment": ("assign_hospital",),
    "preparation": ("prepare_or", "preempt_or", "page_specialist", "allocate_blood", "query_blood_type"),
    "triage": ("triage_call",),
}
TOLERANCE = 0.002  # a gain above this counts as delay paying
FILLER = {"action_type": "query_or_status", "hospital_id": "H1"}


class HeldHeuristic(HeuristicAgent):
    """The heuristic, holding every action of ``kinds`` back by ``minutes`` after first proposing it."""

    def __init__(self, seed: int, kinds: tuple[str, ...], minutes: int) -> None:
        super().__init__(seed)
        self.kinds, self.minutes = kinds, minutes
        self.first_proposed: dict[str, int] = {}

    def act(self, obs: dict[str, Any]) -> dict[str, Any]:
        action = super().act(obs)
        if action["action_type"] not in self.kinds:
            return action
        key = action_key(action)
        first = self.first_proposed.setdefault(key, obs["clock_min"])
        return action if obs["clock_min"] - first >= self.minutes else dict(FILLER)


def final_score(task_id: str, seed: int, agent: HeuristicAgent) -> float:
    sim = CodeRedSim(task_id, seed)
    agent.reset(task_id, seed)
    while not sim.done:
        sim.step(agent.act(sim.observation()))
    return sim.grade()["score"]


def _gains(task_id: str, seeds: range, hold: str, minutes: int) -> list[float]:
    return [
        final_score(task_id, s, HeldHeuristic(s, HOLDS[hold], minutes))
        - final_score(task_id, s, HeldHeuristic(s, HOLDS[hold], 0))
        for s in seeds
    ]


# (task, hold) pairs where the hold can act: calls are triaged only in the call-queue tasks
CASES = [(t, hold) for t in TASK_IDS for hold in sorted(HOLDS) if hold != "triage" or TASKS[t].phase == 2]


@pytest.mark.parametrize(("task_id", "hold"), CASES)
def test_holding_back_never_raises_the_score(task_id: str, hold: str) -> None:
    gains = _gains(task_id, range(2000, 2020), hold, 6)
    assert sum(gains) / len(gains) <= TOLERANCE, gains


# Known: on task3 seeds 2106 and 2113 the heuristic's secondary haemorrhage, bound for a hospital
# whose rooms a less urgent case takes minutes before it arrives, waits there ~100 min; preparing
# 3 min later lets it take the room first (+0.21, 7 fewer deaths per 100: the outcome, not the
# score's doing). A heuristic that re-chooses the destination of a patient whose wait grew would
# fix it (docs/MODEL.md §9).
KNOWN_GAINS = {("task3", "preparation", 3)}
BROAD = [
    pytest.param(t, hold, m, marks=[pytest.mark.xfail(strict=True, reason="heuristic: a room lost en route")]
                 if (t, hold, m) in KNOWN_GAINS else [])
    for t, hold in CASES for m in (3, 10)
]


@pytest.mark.slow
@pytest.mark.parametrize(("task_id", "hold", "minutes"), BROAD)
def test_holding_back_never_raises_the_score_broad(task_id: str, hold: str, minutes: int) -> None:
    gains = _gains(task_id, range(2100, 2120), hold, minutes)
    assert sum(gains) / len(gains) <= TOLERANCE, gains
