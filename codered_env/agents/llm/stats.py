"""Per-episode statistics of the LLM agent (``LLMStats``) and the rate-limiter protocol it uses."""

from __future__ import annotations

from typing import Any, Protocol


class LLMStats(dict):
    """Per-episode counters: a plain dict (``json.dumps``-able) with attribute access.

    Keys: calls, failed_calls, retries, timeouts, unanswered, fallbacks, fallbacks_by_reason,
    prompt_tokens, completion_tokens, max_prompt_tokens, tool_answers, text_answers,
    text_mode_switches, history_shrinks, seconds."""

    def __init__(self) -> None:
        super().__init__(calls=0, failed_calls=0, retries=0, timeouts=0, unanswered=0,
                         fallbacks=0, fallbacks_by_reason={}, prompt_tokens=0,
                         completion_tokens=0, max_prompt_tokens=0, tool_answers=0,
                         text_answers=0, text_mode_switches=0, history_shrinks=0, seconds=0.0)

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def fallback(self, kind: str) -> None:
        self["fallbacks"] += 1
        reasons = self["fallbacks_by_reason"]
        reasons[kind] = reasons.get(kind, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        return {k: (dict(v) if isinstance(v, dict) else v) for k, v in self.items()}


class RateLimiter(Protocol):
    """Shared by concurrent agents: blocks until ``tokens`` may be sent."""

    def acquire(self, tokens: int) -> None: ...
