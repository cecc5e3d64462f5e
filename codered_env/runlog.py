"""The agent run log (docs/INFERENCE.md#output-contract) -- the stdout contract of ``inference.py`` and
``codered play``. Evaluators parse these lines, so every detail here is deliberate.

Values that come from outside the program (a model's action parameters, error messages quoting
them) can never forge another field: a parameter value that is not a plain token is printed as
a JSON string with its whitespace and ``=`` escaped (``\\u0020``, ``\\u003d``), so the action
text holds no space and no ``name=`` of its own; in the ``error`` text every ``field=`` that
names a run-log field is neutralised to ``field:``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

FIELDS = ("task", "env", "model", "step", "action", "reward", "done", "error", "success",
          "steps", "score", "rewards")
_PLAIN = re.compile(r"[A-Za-z0-9_.:+/\-]+")
_FIELD_ASSIGN = re.compile(r"\b(" + "|".join(FIELDS) + r")\s*=", re.IGNORECASE)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def quote_value(value: Any) -> str:
    """A parameter value as one token: plain ids stay as they are, anything else becomes a JSON
    string literal whose whitespace, ``=`` and control characters are ``\\u`` escapes."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return json.dumps(value)
    text = str(value)
    if _PLAIN.fullmatch(text):
        return text
    quoted = json.dumps(text, ensure_ascii=True)
    return re.sub(r"[\s=]", lambda m: f"\\u{ord(m.group()):04x}", quoted)


def action_to_text(action: Any) -> str:
    """``name(k=v,...)`` on one line without spaces; anything that is not an action dict is
    shown as an escaped JSON string."""
    if isinstance(action, Mapping) and isinstance(action.get("action_type"), str):
        name = action["action_type"]
        name = name if _PLAIN.fullmatch(name) else quote_value(name)
        params = ",".join(f"{quote_value(k)}={quote_value(v)}" for k, v in action.items()
                          if k != "action_type")
        return f"{name}({params})"
    try:
        text = json.dumps(action, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(action)
    return quote_value(text)


def safe_error(error: str | None) -> str:
    """The ``error`` field: one line, ``null`` when empty, no forged ``field=`` inside."""
    if error is None:
        return "null"
    text = _FIELD_ASSIGN.sub(lambda m: f"{m.group(1)}:", _one_line(error))
    return text or "null"


def _reward(value: float) -> str:
    """Two decimals, never ``-0.00`` (a tiny negative reward prints as 0.00)."""
    rounded = round(float(value), 2)
    return f"{0.0 if rounded == 0 else rounded:.2f}"


def format_start(task: str, env: str, model: str) -> str:
    return f"[START] task={_one_line(task)} env={_one_line(env)} model={_one_line(model)}"


def format_step(step: int, action: Any, reward: float, done: bool, error: str | None) -> str:
    return (
        f"[STEP] step={step} action={action_to_text(action)} reward={_reward(reward)} "
        f"done={str(bool(done)).lower()} error={safe_error(error)}"
    )


def format_end(success: bool, steps: int, score: float, rewards: list[float]) -> str:
    joined = ",".join(_reward(r) for r in rewards)
    return f"[END] success={str(bool(success)).lower()} steps={steps} score={score:.3f} rewards={joined}"


def format_stats(stats: Mapping[str, Any]) -> str:
    """The per-episode statistics line of the LLM agent (stderr, never stdout)."""
    reasons = stats.get("fallbacks_by_reason") or {}
    by_reason = ",".join(f"{k}:{v}" for k, v in sorted(reasons.items())) or "none"
    calls = int(stats.get("calls", 0) or 0)
    answered = max(1, calls - int(stats.get("failed_calls", 0) or 0))
    mean_prompt = int(stats.get("prompt_tokens", 0) or 0) // answered
    return (
        f"llm-stats: calls={calls} retries={stats.get('retries', 0)} "
        f"timeouts={stats.get('timeouts', 0)} fallbacks={stats.get('fallbacks', 0)} "
        f"({by_reason}) prompt_tokens={stats.get('prompt_tokens', 0)} "
        f"completion_tokens={stats.get('completion_tokens', 0)} "
        f"mean_prompt_tokens={mean_prompt} max_prompt_tokens={stats.get('max_prompt_tokens', 0)} "
        f"text_mode={'yes' if stats.get('text_mode_switches') else 'no'} "
        f"seconds={float(stats.get('seconds', 0.0) or 0.0):.1f}"
    )
