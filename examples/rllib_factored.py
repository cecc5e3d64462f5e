"""RLlib PPO with action masking on the factored interface (the mask inside the observation).

RLlib's ``ActionMaskingTorchRLModule`` expects an observation ``{"action_mask", "observations"}``
and adds ``log(mask)`` to the action logits; for ``MultiDiscrete`` those are the components'
logits side by side, which is exactly the layout of the factored ``action_mask``. ``ForRLlib``
flattens the other arrays into ``observations``. As with every component-wise mask, a sampled
combination can still be illegal (refused, a minute passes).

    uv pip install "ray[rllib]"   # with a CPU torch already installed
    uv run python examples/rllib_factored.py --task task1 --iterations 1
"""

from __future__ import annotations

import argparse
from typing import Any

import gymnasium
import numpy as np
import ray
from gymnasium import spaces
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule
from ray.tune.registry import register_env

from codered_env.gym_env import CodeRedFactoredEnv

FEATURES = ("global", "units", "cases", "hospitals", "unit_case_minutes", "case_hospital_minutes")


class ForRLlib(gymnasium.ObservationWrapper):
    """The factored observation as RLlib's masking module reads it."""

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        size = sum(int(np.prod(env.observation_space[k].shape)) for k in FEATURES)
        mask = env.observation_space["action_mask"]
        self.observation_space = spaces.Dict(
            {
                "action_mask": spaces.Box(0.0, 1.0, mask.shape, np.float32),
                "observations": spaces.Box(0.0, 1.0, (size,), np.float32),
            }
        )

    def observation(self, observation: dict[str, Any]) -> dict[str, np.ndarray]:
        return {
            "action_mask": observation["action_mask"].astype(np.float32),
            "observations": np.concatenate([observation[k].ravel() for k in FEATURES]),
        }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="task1")
    parser.add_argument("--iterations", type=int, default=1)
    args = parser.parse_args()
    ray.init(num_cpus=1, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    register_env(
        "codered_factored", lambda config: ForRLlib(CodeRedFactoredEnv(config.get("task_id", "task1")))
    )
    config = (
        PPOConfig()
        .environment("codered_factored", env_config={"task_id": args.task})
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=ActionMaskingTorchRLModule, model_config={"head_fcnet_hiddens": [64]}
            )
        )
    )
    algo = config.build_algo()
    for i in range(args.iterations):
        result = algo.train()
        runners = result.get("env_runners", {})
        print(
            f"iteration {i + 1}: env steps {runners.get('num_env_steps_sampled_lifetime')}, "
            f"episode return mean {runners.get('episode_return_mean')}"
        )
    algo.stop()
    ray.shutdown()


if __name__ == "__main__":
    main()
