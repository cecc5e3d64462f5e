"""Registration of the Gymnasium ids: ``CodeRedEnv-task1-v16`` .. ``CodeRedEnv-task5-v16`` (the flat
``Discrete`` interface), ``CodeRedFactored-task1-v14`` .. ``CodeRedFactored-task5-v14`` (stable
slots, factored ``MultiDiscrete`` actions; ``gymnasium.make_vec`` gives its native vector env),
``CodeRedFactored-gen-task1-v14`` .. (the same on a generated city per episode, drawn from the
``train`` split; ``split="test"`` for the held-out cities) and ``CodeRedEnv-gen-task1-v16`` ..
``-task5-v16`` (the flat interface on generated cities)."""

from __future__ import annotations

import gymnasium

from ..sim.tasks import TASK_IDS

FLAT_VERSION, FACTORED_VERSION = 16, 14


GEN_FLAT_VERSION = 16  # CodeRedEnv-gen-taskN: the flat interface on generated cities


def flat_id(task_id: str) -> str:
    """The flat interface's id for ``task_id`` (Prakashnagar)."""
    return f"CodeRedEnv-{task_id}-v{FLAT_VERSION}"


def factored_id(task_id: str) -> str:
    """The factored interface's id for ``task_id`` (Prakashnagar)."""
    return f"CodeRedFactored-{task_id}-v{FACTORED_VERSION}"


def register_envs() -> list[str]:
    """Register every id (idempotent); returns them: the flat ones, the factored ones, the factored
    ones on generated cities, the flat ones on generated cities."""
    ids = []
    for task_id in TASK_IDS:
        flat, factored = flat_id(task_id), factored_id(task_id)
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
    return sorted(ids, key=lambda i: (not i.startswith("CodeRedEnv-"), "-gen-" in i)) + _register_gen_flat()


def _register_gen_flat() -> list[str]:
    """``CodeRedEnv-gen-task1-v16`` .. ``-task5-v16``: a city per episode from ``split`` (or ``city``)."""
    ids = []
    for task_id in TASK_IDS:
        gen = f"CodeRedEnv-gen-{task_id}-v{GEN_FLAT_VERSION}"
        if gen not in gymnasium.registry:
            gymnasium.register(
                id=gen, entry_point="codered_env.gym_env:CodeRedGenGymEnv", kwargs={"task_id": task_id}
            )
        ids.append(gen)
    return ids
