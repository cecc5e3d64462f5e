"""The agent run log of MODEL.md section 8 -- the stdout contract of ``inference.py`` and
``codered play``. Evaluators parse these lines, so every detail here is deliberate."""

from __future__ import annotations

import json
from typing import Any


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def action_to_text(action: Any) -> str:
    """``name(k=v,...)`` on one line; anything that is not an action dict is shown as JSON."""
    if isinstance(action, dict) and isinstance(action.get("action_type"), str):
        params = ",".join(f"{k}={_one_line(v)}" for k, v in action.items() if k != "action_type")
        return _one_line(f"{action['action_type']}({params})")
    try:
        return _one_line(json.dumps(action, sort_keys=True, default=str))
    except (TypeError, ValueError):
        return _one_line(repr(action))


def _reward(value: float) -> str:
    """Two decimals, never ``-0.00`` (a tiny negative reward prints as 0.00)."""
    rounded = round(float(value), 2)
    return f"{0.0 if rounded == 0 else rounded:.2f}"


def format_start(task: str, env: str, model: str) -> str:
    return f"[START] task={_one_line(task)} env={_one_line(env)} model={_one_line(model)}"


def format_step(step: int, action: Any, reward: float, done: bool, error: str | None) -> str:
    err = "null" if error is None else _one_line(error) or "null"
    return (
        f"[STEP] step={step} action={action_to_text(action)} reward={_reward(reward)} "
        f"done={str(bool(done)).lower()} error={err}"
    )


def format_end(success: bool, steps: int, score: float, rewards: list[float]) -> str:
    joined = ",".join(_reward(r) for r in rewards)
    return f"[END] success={str(bool(success)).lower()} steps={steps} score={score:.3f} rewards={joined}"
