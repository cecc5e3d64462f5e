"""Registration of ``CodeRedEnv-task1-v1`` .. ``CodeRedEnv-task5-v1`` with Gymnasium."""

from __future__ import annotations

import gymnasium

from ..sim.tasks import TASK_IDS


def register_envs() -> list[str]:
    """Register ``CodeRedEnv-task1-v1`` .. ``CodeRedEnv-task5-v1`` (idempotent); returns the ids.

    v1 (issue 21): the ``max_steps`` feature is the budget over the largest budget in the task
    table (v0 divided by 60, so tasks 3-5 all read 1.0)."""
    ids = []
    for task_id in TASK_IDS:
        env_id = f"CodeRedEnv-{task_id}-v1"
        if env_id not in gymnasium.registry:
            gymnasium.register(
                id=env_id,
                entry_point="codered_env.gym_env:CodeRedGymEnv",
                kwargs={"task_id": task_id},
            )
        ids.append(env_id)
    return ids
