"""LLM agent: plays CodeRedEnv through any OpenAI-compatible chat-completions endpoint.

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

The package by job: ``config`` (LLMConfig), ``stats`` (LLMStats), ``client`` (LLMClient, errors,
retries), ``tools`` (tool schemas), ``parsing`` (reading answers), ``agent`` (LLMAgent). Every
name stays importable from ``codered_env.agents.llm``.
"""

from __future__ import annotations

from codered_env.agents.prompts import MAX_OBSERVATION_CHARS as MAX_OBSERVATION_CHARS
from codered_env.agents.prompts import observation_text as observation_text

from .agent import LLMAgent as LLMAgent
from .agent import _default_schemas as _default_schemas
from .agent import _scrub as _scrub
from .agent import _task_steps as _task_steps
from .agent import schema_error as schema_error
from .agent import scrub as scrub
from .client import _CONTEXT_WORDS as _CONTEXT_WORDS
from .client import _RETRYABLE_KINDS as _RETRYABLE_KINDS
from .client import LLMClient as LLMClient
from .client import LLMError as LLMError
from .client import _error_text as _error_text
from .client import _retry_after as _retry_after
from .client import classify_error as classify_error
from .client import estimate_tokens as estimate_tokens
from .config import _FALSE as _FALSE
from .config import _KEY_VARS as _KEY_VARS
from .config import _TRUE as _TRUE
from .config import DEFAULT_BASE_URL as DEFAULT_BASE_URL
from .config import DEFAULT_MODEL as DEFAULT_MODEL
from .config import DEGRADED_AFTER as DEGRADED_AFTER
from .config import DROPPED_PARAMS as DROPPED_PARAMS
from .config import FALLBACK_ACTION as FALLBACK_ACTION
from .config import MAX_REASON_CHARS as MAX_REASON_CHARS
from .config import MIN_CALL_SECONDS as MIN_CALL_SECONDS
from .config import MIN_SECRET_CHARS as MIN_SECRET_CHARS
from .config import LLMConfig as LLMConfig
from .config import _env_flag as _env_flag
from .config import _env_number as _env_number
from .config import api_key_from_env as api_key_from_env
from .config import is_loopback_url as is_loopback_url
from .parsing import _CALL as _CALL
from .parsing import _PREFIXED as _PREFIXED
from .parsing import _QUOTES as _QUOTES
from .parsing import _THINK as _THINK
from .parsing import Parsed as Parsed
from .parsing import _Candidate as _Candidate
from .parsing import _candidates as _candidates
from .parsing import _coerce as _coerce
from .parsing import _from_tool_calls as _from_tool_calls
from .parsing import _is_echo as _is_echo
from .parsing import _line_of as _line_of
from .parsing import _load_arguments as _load_arguments
from .parsing import _make_action as _make_action
from .parsing import _unescape as _unescape
from .parsing import extract_action as extract_action
from .parsing import extract_json_action as extract_json_action
from .parsing import normalize_action as normalize_action
from .parsing import parse_call as parse_call
from .parsing import parse_completion as parse_completion
from .stats import LLMStats as LLMStats
from .stats import RateLimiter as RateLimiter
from .tools import _inline_refs as _inline_refs
from .tools import _not_null as _not_null
from .tools import _param_schema as _param_schema
from .tools import _tool as _tool
from .tools import build_tools as build_tools
from .tools import legal_tools as legal_tools
from .tools import tool_for as tool_for
