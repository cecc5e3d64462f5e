"""The pinned trajectory digest: what the simulation and the rubric give, step by step, for a few
fixed episodes. A change to the score or the dynamics changes these digests on purpose: bump
``DIGEST_VERSION``, re-record the digests, and say in CHANGELOG.md what changed and why."""

from __future__ import annotations

import hashlib
import json

import pytest

from codered_env.agents import make_agent
from codered_env.sim import TASK_IDS, CodeRedSim

# the preview's answer rate is per code (plan.answer_rates) and a caller in a news cycle's surge
# window counts as caused at the chance the surge brought them (call_sources); the pace table
# re-measured: task4-5 step rewards moved, no final score did (CHANGELOG.md)
DIGEST_VERSION = "0.4.7"
SEEDS = (1000, 1001)
EXPECTED: dict[str, str] = {
    "task1": "804a3617a9fec30a",
    "task2": "ebfc38b54f38254f",
    "task3": "027d5eebff454361",
    "task4": "303b7b0364486449",
    "task5": "9eb1971b1f6d0113",
}


def episode_digest(task_id: str) -> str:
    """SHA-256 over, per seed and policy (random, heuristic), every step's action, reward, minutes
    and error, and the final grade."""
    h = hashlib.sha256()
    for seed in SEEDS:
        for policy in ("random", "heuristic"):
            sim = CodeRedSim(task_id, seed)
            agent = make_agent(policy, seed)
            agent.reset(task_id, seed)
            while not sim.done:
                action = agent.act(sim.observation())
                result = sim.step(action)
                h.update(json.dumps([action, round(result.reward, 10), result.minutes, result.error],
                                    sort_keys=True).encode())
            h.update(json.dumps(sim.grade(), sort_keys=True, default=repr).encode())
    return h.hexdigest()[:16]


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_trajectory_digest_is_pinned(task_id: str) -> None:
    assert episode_digest(task_id) == EXPECTED[task_id], f"digest version {DIGEST_VERSION}"
