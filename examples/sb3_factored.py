"""sb3-contrib's MaskablePPO on the factored interface (``MultiDiscrete`` with per-component masks).

MaskablePPO masks each component of a ``MultiDiscrete`` action with its slice of one flat mask:
``env.unwrapped.action_masks()`` is that mask (legal types, then per component the values some
legal action uses). Components are sampled independently, so a sampled combination can still be
illegal (refused, a minute passes): the reference learner (``codered train --interface
factored``) scores whole legal combinations instead.

    uv run python examples/sb3_factored.py --task task1 --steps 2048
"""

from __future__ import annotations

import argparse

import gymnasium
from sb3_contrib import MaskablePPO
from sb3_contrib.common.wrappers import ActionMasker

import codered_env.gym_env  # noqa: F401  registers the ids


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="task1")
    parser.add_argument("--steps", type=int, default=2048)
    args = parser.parse_args()
    env = ActionMasker(
        gymnasium.make(f"CodeRedFactored-{args.task}-v14"), lambda e: e.unwrapped.action_masks()
    )
    model = MaskablePPO("MultiInputPolicy", env, n_steps=256, batch_size=64, seed=0, device="cpu", verbose=0)
    model.learn(total_timesteps=args.steps)
    obs, info = env.reset(seed=10_000)
    done, refused = False, 0
    while not done:
        action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
        obs, _, terminated, truncated, info = env.step(action)
        refused += info["action_error"] is not None
        done = terminated or truncated
    print(f"{args.task} seed 10000: grade {info['grade']['score']:.3f}, refused actions {refused}")


if __name__ == "__main__":
    main()
