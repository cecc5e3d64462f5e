"""Registration of the Gymnasium ids: ``CodeRedEnv-task1-v2`` .. ``CodeRedEnv-task5-v2`` (the flat
``Discrete`` interface), ``CodeRedFactored-task1-v0`` .. ``CodeRedFactored-task5-v0`` (stable
slots, factored ``MultiDiscrete`` actions; ``gymnasium.make_vec`` gives its native vector env) and
``CodeRedFactored-gen-task1-v0`` .. (the same on a generated city per episode, drawn from the
``train`` split; ``split="test"`` for the held-out cities)."""

from __future__ import annotations

import gymnasium

from ..sim.tasks import TASK_IDS

FLAT_VERSION, FACTORED_VERSION = 2, 0


def register_envs() -> list[str]:
    """Register every id (idempotent); returns them, the flat ones first, the generated-city ones last."""
    ids = []
    for task_id in TASK_IDS:
        flat, factored = (
            f"CodeRedEnv-{task_id}-v{FLAT_VERSION}",
            f"CodeRedFactored-{task_id}-v{FACTORED_VERSION}",
        )
        if flat not in gymnasium.registry:
            gymnasium.register(
                id=flat, entry_point="codered_env.gym_env:CodeRedGymEnv", kwargs={"task_id": task_id}
            )
        if factored not in gymnasium.registry:
            gymnasium.register(
                id=factored,
                entry_point="codered_env.gym_env:CodeRedFactoredEnv",
                vector_entry_point="codered_env.gym_env:CodeRedFactoredVectorEnv",
                kwargs={"task_id": task_id},
            )
        factored_gen = f"CodeRedFactored-gen-{task_id}-v{FACTORED_VERSION}"
        if factored_gen not in gymnasium.registry:
            gymnasium.register(
                id=factored_gen,
                entry_point="codered_env.gym_env:CodeRedFactoredEnv",
                vector_entry_point="codered_env.gym_env:CodeRedFactoredVectorEnv",
                kwargs={"task_id": task_id, "split": "train"},
            )
        ids += [flat, factored, factored_gen]
    return sorted(ids, key=lambda i: (not i.startswith("CodeRedEnv-"), "-gen-" in i))
