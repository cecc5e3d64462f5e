"""GRPO on CodeRedEnv with TRL's ``environment_factory`` (tool calling). NOT run in this repository.

Needs a GPU and a real chat model with a tool-calling template TRL can parse (e.g. Qwen3), plus the
`trl` extra (``uv sync --extra trl`` and a matching PyTorch). Nothing here has been trained by the
project: no result of this script is reported anywhere.

    python examples/grpo_codered.py --model Qwen/Qwen3-1.7B --tasks task1,task2 --seeds 0-255

Each rollout: ``CodeRedToolEnv.reset(**row)`` appends the opening state to the prompt, the model
calls one tool per decision (replies say what changed), and ``get_reward()`` (the final grade in
[0.01, 0.99]) is the reward. Evaluation seeds 10000+ are never in the training set.
"""

from __future__ import annotations

import argparse


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="Qwen/Qwen3-1.7B")
    parser.add_argument("--tasks", default="task1,task2")
    parser.add_argument("--seeds", default="0-255")
    parser.add_argument("--output-dir", default="runs/grpo")
    args = parser.parse_args()

    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from codered_env.trl import CodeRedToolEnv, episode_dataset

    lo, _, hi = args.seeds.partition("-")
    rows = episode_dataset(args.tasks.split(","), range(int(lo), int(hi or lo) + 1))
    config = GRPOConfig(
        output_dir=args.output_dir,
        num_generations=8,                 # a group of rollouts of the same (task, seed)
        per_device_train_batch_size=8,
        max_completion_length=8192,        # the whole episode: tool calls and compact replies
        max_tool_calling_iterations=60,    # the largest step budget (task3/task5)
        learning_rate=1e-6,
        logging_steps=1,
        chat_template_kwargs={"enable_thinking": False},
        bf16=True,
    )
    trainer = GRPOTrainer(
        model=args.model,
        train_dataset=Dataset.from_list(rows),
        environment_factory=CodeRedToolEnv,  # the reward comes from CodeRedToolEnv.get_reward()
        args=config,
    )
    trainer.train()


if __name__ == "__main__":
    main()
