"""Prompt tokens per LLM-agent call, counted exactly as llama-cpp-python's server counts them.

Needs the ``local-llm`` extra.  Plays each task (seed 3000 by default) with the heuristic agent
while the LLM agent builds the request it would send at every step (per-step legal tools,
history of the actions played); each request is rendered by llama-cpp-python's own
``chatml-function-calling`` handler and tokenised with the packaged SmolLM2 vocabulary, which is
what the server reports as ``usage.prompt_tokens`` (the model is not run, so this is fast).

    uv run python bench/llm_prompt_tokens.py [task1 task5 ...] [--seed N]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
from typing import Any

from llama_cpp import Llama
from llama_cpp.llama_chat_format import chatml_function_calling

from codered_env.agents import make_agent
from codered_env.agents.llm import LLMAgent, LLMConfig, legal_tools
from codered_env.agents.local_llm import packaged_model_path
from codered_env.sim import TASK_IDS, CodeRedSim


class _Capture:
    """Stands in for the model: records the rendered prompt, answers ``message:``."""

    verbose = False

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def create_completion(self, prompt: str, **_: Any) -> dict[str, Any]:
        self.prompts.append(prompt)
        return {"id": "x", "object": "text_completion", "created": 0, "model": "m",
                "choices": [{"text": "message:", "index": 0, "logprobs": None,
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}


def prompt_tokens(vocab: Llama, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    capture = _Capture()
    with contextlib.suppress(Exception):  # only the first rendered prompt is needed
        chatml_function_calling(llama=capture, messages=messages, tools=tools, tool_choice="auto")
    return len(vocab.tokenize(capture.prompts[0].encode(), add_bos=False, special=True))


def measure(vocab: Llama, task: str, seed: int) -> list[int]:
    agent = LLMAgent(LLMConfig(api_key="unused-key", base_url="http://127.0.0.1:1/v1"))
    agent.reset(task, seed)
    expert = make_agent("heuristic", seed=seed)
    expert.reset(task, seed)
    sim = CodeRedSim(task_id=task, seed=seed)
    counts = []
    while True:
        obs = dict(sim.observation())
        if obs["done"]:
            return counts
        obs["text"] = sim.render_text()
        agent._remember_outcome(obs)
        messages, _ = agent._messages(obs["text"], obs["legal_actions"])
        counts.append(prompt_tokens(vocab, messages, legal_tools(obs["legal_actions"],
                                                                 agent.action_types)))
        action = expert.act(obs)
        agent._pending = (obs["step"] + 1, action, None)
        sim.step(action)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", default=list(TASK_IDS))
    parser.add_argument("--seed", type=int, default=3000)
    args = parser.parse_args()
    vocab = Llama(str(packaged_model_path()), vocab_only=True, verbose=False)
    for task in args.tasks:
        counts = measure(vocab, task, args.seed)
        print(f"{task}: calls={len(counts)} first={counts[0]} mean={statistics.fmean(counts):.0f} "
              f"max={max(counts)}")


if __name__ == "__main__":
    main()
