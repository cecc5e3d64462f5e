"""The HTTP side: ``LLMClient`` (a chat-completions call with retries, backoff, budget) and errors."""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import openai

from .config import (
    MIN_CALL_SECONDS,
    LLMConfig,
)
from .stats import (
    LLMStats,
    RateLimiter,
)


class LLMError(Exception):
    """A failed model call.  ``kind`` is a short category; ``fatal`` disables further calls."""

    def __init__(self, kind: str, message: str, *, fatal: bool = False,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.fatal = fatal
        self.retry_after = retry_after


_RETRYABLE_KINDS = frozenset({"rate_limited", "server", "timeout", "connection", "invalid_response"})
_CONTEXT_WORDS = ("context_length", "context length", "context window", "maximum context",
                  "n_ctx", "too many tokens", "prompt is too long")


def _retry_after(exc: openai.APIStatusError) -> float | None:
    """Seconds from a ``Retry-After``/``retry-after-ms`` header, if any."""
    headers = getattr(exc.response, "headers", None) or {}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            value = float(headers.get(name, ""))
        except (TypeError, ValueError):
            continue
        if math.isfinite(value) and value >= 0:
            return value * scale
    return None


def _error_text(exc: openai.APIStatusError) -> str:
    """The error's code and message as the server sent them (lowercase, for matching only)."""
    body = exc.body
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        body = body["error"]
    parts = [str(getattr(exc, "code", "") or "")]
    if isinstance(body, Mapping):
        parts += [str(body.get("code") or ""), str(body.get("message") or "")]
    parts.append(str(getattr(exc, "message", "") or ""))
    return " ".join(parts).lower()


def classify_error(exc: Exception) -> LLMError:
    """Map an ``openai`` exception to an :class:`LLMError` (no prompt or key in the message)."""
    if isinstance(exc, openai.APITimeoutError):
        return LLMError("timeout", "model call timed out")
    if isinstance(exc, openai.APIConnectionError):
        return LLMError("connection", "cannot connect to the model endpoint")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if status == 429:
            return LLMError("rate_limited", "HTTP 429 rate limited", retry_after=_retry_after(exc))
        if status in (401, 403):
            return LLMError("auth", f"HTTP {status} authentication failed", fatal=True)
        if status == 404:
            return LLMError("not_found", "HTTP 404 model or endpoint not found", fatal=True)
        if status >= 500 or status in (408, 409):
            return LLMError("server", f"HTTP {status} server error", retry_after=_retry_after(exc))
        if any(word in _error_text(exc) for word in _CONTEXT_WORDS):
            return LLMError("context_length", f"HTTP {status} prompt exceeds the model's context")
        return LLMError("bad_request", f"HTTP {status} request rejected")
    return LLMError("invalid_response", f"unusable response ({type(exc).__name__})")


def estimate_tokens(messages: Sequence[Mapping[str, Any]], tools: Any, max_tokens: int) -> int:
    """A rough size of a request for a rate limiter: ~4 characters a token plus the answer."""
    size = sum(len(str(m.get("content") or "")) for m in messages)
    if tools:
        size += len(json.dumps(tools, separators=(",", ":")))
    return size // 4 + max_tokens


class LLMClient:
    """Chat-completions caller with per-call timeout, retries with backoff and a run budget."""

    def __init__(
        self,
        config: LLMConfig,
        *,
        client: openai.OpenAI | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        rate_limiter: RateLimiter | None = None,
    ) -> None:
        self.config = config
        self._client = client or openai.OpenAI(
            api_key=config.api_key, base_url=config.base_url,
            timeout=config.timeout_s, max_retries=0,
        )
        self._sleep = sleep
        self._clock = clock
        self._limiter = rate_limiter
        self._budget = config.episode_budget(30)
        self._deadline = clock() + self._budget
        self._rng = random.Random(0)
        self.stats = LLMStats()

    def start_run(self, seed: int = 0, max_steps: int = 30) -> None:
        """Reset the run budget (scaled to ``max_steps``), the counters and the jitter."""
        self._budget = self.config.episode_budget(max_steps)
        self._deadline = self._clock() + self._budget
        self._rng = random.Random(seed)
        self.stats = LLMStats()

    @property
    def budget_s(self) -> float:
        return self._budget

    def remaining(self) -> float:
        """Seconds left in the run budget."""
        return max(0.0, self._deadline - self._clock())

    def _backoff(self, attempt: int, hint: float | None) -> float:
        cap = self.config.backoff_max_s
        if hint is not None:
            return min(hint, max(cap, 60.0))  # a server's own Retry-After is honoured up to 1 min
        base = min(cap, self.config.backoff_s * (2**attempt))
        return base * (0.5 + 0.5 * self._rng.random())

    def _call_once(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                   timeout: float) -> Any:
        kwargs: dict[str, Any] = {
            "model": self.config.model, "messages": messages,
            "temperature": self.config.temperature, "max_tokens": self.config.max_tokens,
            "timeout": timeout,
        }
        if tools:
            kwargs["tools"] = tools
            kwargs["tool_choice"] = "auto"
        if self._limiter is not None:
            self._limiter.acquire(estimate_tokens(messages, tools, self.config.max_tokens))
        return self._client.chat.completions.create(**kwargs)

    def _record_usage(self, completion: Any) -> None:
        usage = getattr(completion, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        self.stats.prompt_tokens += prompt
        self.stats.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)
        self.stats.max_prompt_tokens = max(self.stats.max_prompt_tokens, prompt)

    def _retry_limit(self, kind: str, retries: int) -> int:
        if kind != "timeout":
            return retries
        # A local server works one request at a time: a retry would queue behind the request
        # it is still computing.  Remote: one retry at most, the call already cost a timeout.
        return 0 if self.config.is_local else min(retries, 1)

    def complete(self, messages: list[dict[str, Any]],
                 tools: list[dict[str, Any]] | None = None,
                 max_retries: int | None = None) -> Any:
        """One completion, retried on transient failures; raises :class:`LLMError`."""
        retries = self.config.max_retries if max_retries is None else max_retries
        attempt = 0
        while True:
            floor = min(MIN_CALL_SECONDS, self.config.timeout_s)
            remaining = self.remaining()
            timeout = min(self.config.timeout_s, remaining)
            if timeout < floor:
                raise LLMError("budget", "LLM run budget exhausted", fatal=True)
            started = self._clock()
            self.stats.calls += 1
            try:
                completion = self._call_once(messages, tools, timeout)
            except openai.OpenAIError as exc:
                error = classify_error(exc)
            else:
                self.stats.seconds += self._clock() - started
                self._record_usage(completion)
                return completion
            self.stats.seconds += self._clock() - started
            self.stats.failed_calls += 1
            if error.kind == "timeout":
                self.stats.timeouts += 1
                if timeout < self.config.timeout_s:  # cut short by the budget, not the server
                    raise LLMError("budget", "LLM run budget exhausted", fatal=True)
            if error.kind not in _RETRYABLE_KINDS or attempt >= self._retry_limit(error.kind, retries):
                raise error
            delay = self._backoff(attempt, error.retry_after)
            if delay + floor > self.remaining():
                raise error
            self.stats.retries += 1
            attempt += 1
            self._sleep(delay)
