"""TorchRL on the factored interface: ``GymWrapper`` plus TorchRL's ``ActionMask`` transform.

The observation's ``action_mask`` (bool, one entry per value of each component, in
``MultiDiscrete`` order) is what ``ActionMask`` expects for a ``MultiCategorical`` action spec:
sampled actions respect it component by component. The masks are the union over the legal action
types, so a sampled combination can still be illegal (refused, a minute passes); a learner that
picks the type first and each component from ``type_masks[type]`` never is (see ``TypeFirst``).

    uv pip install torchrl tensordict   # with a CPU torch already installed
    uv run python examples/torchrl_factored.py --task task2 --steps 200
"""

from __future__ import annotations

import argparse

import torch
from tensordict import TensorDict
from torchrl.envs import GymWrapper, TransformedEnv
from torchrl.envs.transforms import ActionMask

from codered_env.gym_env import NVEC, CodeRedFactoredEnv


class TypeFirst:
    """A random policy that samples the action type from ``action_mask[:n_types]``, then every
    other component from that type's row of ``type_masks`` (exact for the chosen type)."""

    def __init__(self, seed: int = 0) -> None:
        self.generator = torch.Generator().manual_seed(seed)

    def __call__(self, td: TensorDict) -> TensorDict:
        mask, rows = td["action_mask"], td["type_masks"]
        kind = torch.multinomial(mask[: NVEC[0]].float(), 1, generator=self.generator)
        row, action, start = rows[int(kind)], [int(kind)], 0
        for size in NVEC[1:]:
            part = row[start : start + size].float()
            action.append(int(torch.multinomial(part, 1, generator=self.generator)))
            start += size
        td["action"] = torch.tensor(action, dtype=torch.int64)
        return td


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="task2")
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    env = TransformedEnv(
        GymWrapper(CodeRedFactoredEnv(args.task), categorical_action_encoding=True), ActionMask()
    )
    env.set_seed(0)
    masked = env.rollout(args.steps, break_when_any_done=False)  # random actions under ActionMask
    typed = env.rollout(args.steps, policy=TypeFirst(0), break_when_any_done=False)
    for name, rollout in (("ActionMask random", masked), ("type-first random", typed)):
        reward = float(rollout["next", "reward"].sum())
        print(
            f"{name}: {rollout.batch_size[0]} steps, reward {reward:.3f}, "
            f"episodes ended {int(rollout['next', 'done'].sum())}"
        )


if __name__ == "__main__":
    main()
