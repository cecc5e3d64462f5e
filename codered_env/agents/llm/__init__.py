"""LLM agent: plays CodeRedEnv through any OpenAI-compatible chat-completions endpoint.

Modules by job: ``config`` (``LLMConfig``, environment variables), ``stats`` (``LLMStats``),
``client`` (``LLMClient``: the model call with retries and budget), ``tools`` (function-calling
schemas), ``parsing`` (reading an answer into an action) and ``agent`` (``LLMAgent``); every
public name is importable from ``codered_env.agents.llm`` itself.

Design (see docs/INFERENCE.md):

* Only the official ``openai`` client is used.  Each step the agent offers one function-calling
  tool per action type that is **legal now**, with JSON-schema ``enum``s for every id and choice
  and numeric bounds for blood units, all taken from the observation's legal-action list, so a
  grammar-constrained server can only emit legal calls (``static_tools`` sends the fixed schema
  of all 14 action types instead, for servers that reject per-step schemas).
* The prompt is built for prefix caching (``prompts.py``); the action list is never sent twice.
* Answers are read leniently: HTML entities unescaped, JSON with raw newlines accepted, the
  observation's own ``name(v1, v2)`` syntax understood, and the model's own answer preferred
  over anything it echoed from the prompt.  Truncated (``finish_reason == "length"``) and empty
  answers get their own reasons.  After ``text_after`` answers in a row without a tool call the
  agent switches to text mode for the episode.
* Errors are read by code: a context overflow shrinks the history (tools stay); other 400/422
  answers to a request with tools switch to text mode.  429/5xx/connection errors are retried
  with backoff (honouring ``Retry-After``); a timed-out call is not retried on a local endpoint
  (a one-request-at-a-time server is still busy with the abandoned request).  The run budget
  scales with the task's step count.
* Anything unusable becomes ``maintain_plan`` with the reason in :attr:`LLMAgent.last_error`;
  :attr:`LLMAgent.stats` counts calls, retries, timeouts, tokens and fallbacks by reason.
* Neither the API key nor any prompt text is ever printed or logged.
"""

from __future__ import annotations

from codered_env.agents.prompts import MAX_OBSERVATION_CHARS, observation_text

from .agent import (
    DEGRADED_AFTER,
    FALLBACK_ACTION,
    MAX_REASON_CHARS,
    MIN_SECRET_CHARS,
    LLMAgent,
    _default_schemas,
    _scrub,
    schema_error,
    scrub,
)
from .client import MIN_CALL_SECONDS, LLMClient, LLMError, classify_error, estimate_tokens
from .config import DEFAULT_BASE_URL, DEFAULT_MODEL, LLMConfig, api_key_from_env, is_loopback_url
from .parsing import (
    Parsed,
    extract_action,
    extract_json_action,
    normalize_action,
    parse_call,
    parse_completion,
)
from .stats import LLMStats, RateLimiter
from .tools import build_tools, legal_tools, tool_for

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MODEL",
    "DEGRADED_AFTER",
    "FALLBACK_ACTION",
    "MAX_OBSERVATION_CHARS",
    "MAX_REASON_CHARS",
    "MIN_CALL_SECONDS",
    "MIN_SECRET_CHARS",
    "LLMAgent",
    "LLMClient",
    "LLMConfig",
    "LLMError",
    "LLMStats",
    "Parsed",
    "RateLimiter",
    "_default_schemas",
    "_scrub",
    "api_key_from_env",
    "build_tools",
    "classify_error",
    "estimate_tokens",
    "extract_action",
    "extract_json_action",
    "is_loopback_url",
    "legal_tools",
    "normalize_action",
    "observation_text",
    "parse_call",
    "parse_completion",
    "schema_error",
    "scrub",
    "tool_for",
]
