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
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import ipaddress
import json
import math
import os
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

import openai

from codered_env.agents.prompts import (
    ACTION_HELP,
    ACTION_PARAMS,
    MAX_OBSERVATION_CHARS,  # noqa: F401  (re-exported)
    Decision,
    build_system_prompt,
    build_user_message,
    compact_state,
    observation_text,  # noqa: F401  (re-exported: codered_env.agents.llm.observation_text)
)

DEFAULT_BASE_URL = "https://router.huggingface.co/v1"
DEFAULT_MODEL = "Qwen/Qwen2.5-72B-Instruct"
FALLBACK_ACTION: dict[str, Any] = {"action_type": "maintain_plan"}
MIN_CALL_SECONDS = 0.5
DEGRADED_AFTER = 3
MAX_REASON_CHARS = 160
MIN_SECRET_CHARS = 8
_KEY_VARS = ("HF_TOKEN", "API_KEY", "OPENAI_API_KEY")
_DROPPED_PARAMS = ("action_type", "metadata")
_FALSE = {"0", "false", "no", "off"}
_TRUE = {"1", "true", "yes", "on"}


# --------------------------------------------------------------------------- configuration


def api_key_from_env(env: Mapping[str, str] | None = None) -> str | None:
    """The API key from ``HF_TOKEN``, ``API_KEY`` or ``OPENAI_API_KEY`` (first non-empty)."""
    env = os.environ if env is None else env
    for var in _KEY_VARS:
        value = (env.get(var) or "").strip()
        if value:
            return value
    return None


def is_loopback_url(url: str) -> bool:
    """Whether the endpoint is on this machine (localhost, 127.0.0.0/8, ::1)."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _env_number(env: Mapping[str, str], name: str, default: float, low: float) -> float:
    """A float from the environment; malformed or out-of-range values give the default."""
    try:
        value = float(env.get(name, ""))
    except ValueError:
        return default
    return value if math.isfinite(value) and value >= low else default


def _env_flag(env: Mapping[str, str], name: str, default: bool | None) -> bool | None:
    value = env.get(name, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    return default


@dataclass(frozen=True)
class LLMConfig:
    """Connection and behaviour settings of the LLM agent (the key is never shown in repr).

    ``budget_s`` is the wall-clock budget of one episode; ``None`` scales it with the task's
    step count (``step_budget_s`` per step).  ``local`` is ``None`` to detect a loopback
    endpoint from ``base_url``."""

    api_key: str = field(repr=False)
    base_url: str = DEFAULT_BASE_URL
    model: str = DEFAULT_MODEL
    timeout_s: float = 30.0
    max_retries: int = 3
    backoff_s: float = 1.0
    backoff_max_s: float = 10.0
    budget_s: float | None = None
    step_budget_s: float | None = None
    history: int = 4
    temperature: float = 0.0
    max_tokens: int = 256
    use_tools: bool = True
    static_tools: bool = False
    text_after: int = 3
    local: bool | None = None

    @property
    def is_local(self) -> bool:
        return is_loopback_url(self.base_url) if self.local is None else self.local

    def episode_budget(self, max_steps: int) -> float:
        """Seconds one episode of ``max_steps`` steps may spend on model calls."""
        if self.budget_s is not None:
            return self.budget_s
        per_step = self.step_budget_s if self.step_budget_s is not None else 1.5 * self.timeout_s
        return max(60.0, per_step * max(1, max_steps))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> LLMConfig | None:
        """Build from environment variables; ``None`` when no API key is set and the endpoint
        is not local (a local server needs no key)."""
        env = os.environ if env is None else env
        base_url = (env.get("API_BASE_URL") or DEFAULT_BASE_URL).strip()
        key = api_key_from_env(env)
        if key is None:
            if not is_loopback_url(base_url):
                return None
            key = "local"
        budget = _env_number(env, "CODERED_LLM_BUDGET", -1.0, -1.0)
        step_budget = _env_number(env, "CODERED_LLM_STEP_BUDGET", -1.0, -1.0)
        return cls(
            api_key=key,
            base_url=base_url,
            model=(env.get("MODEL_NAME") or DEFAULT_MODEL).strip(),
            timeout_s=_env_number(env, "CODERED_LLM_TIMEOUT", 30.0, 0.05),
            max_retries=int(_env_number(env, "CODERED_LLM_RETRIES", 3, 0)),
            backoff_s=_env_number(env, "CODERED_LLM_BACKOFF", 1.0, 0.0),
            backoff_max_s=_env_number(env, "CODERED_LLM_BACKOFF_MAX", 10.0, 0.0),
            budget_s=budget if budget >= 1.0 else None,
            step_budget_s=step_budget if step_budget >= 0.1 else None,
            history=int(_env_number(env, "CODERED_LLM_HISTORY", 4, 0)),
            temperature=_env_number(env, "CODERED_LLM_TEMPERATURE", 0.0, 0.0),
            max_tokens=int(_env_number(env, "CODERED_LLM_MAX_TOKENS", 256, 16)),
            use_tools=bool(_env_flag(env, "CODERED_LLM_TOOLS", True)),
            static_tools=bool(_env_flag(env, "CODERED_LLM_STATIC_TOOLS", False)),
            text_after=int(_env_number(env, "CODERED_LLM_TEXT_AFTER", 3, 0)),
            local=_env_flag(env, "CODERED_LLM_LOCAL", None),
        )


# --------------------------------------------------------------------------- statistics


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


# --------------------------------------------------------------------------- client wrapper


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


# --------------------------------------------------------------------------- tools


def _inline_refs(node: Any, defs: Mapping[str, Any], depth: int = 0) -> Any:
    """Resolve local ``$ref``s and drop ``title``s so simple endpoints accept the schema."""
    if depth > 20:
        return {}
    if isinstance(node, list):
        return [_inline_refs(item, defs, depth + 1) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.rsplit("/", 1)[-1] in defs:
        return _inline_refs(defs[ref.rsplit("/", 1)[-1]], defs, depth + 1)
    return {
        key: _inline_refs(value, defs, depth + 1)
        for key, value in node.items()
        if key not in ("title", "$defs", "definitions")
    }


def _not_null(prop: Any) -> Any:
    """``anyOf: [X, null]`` (an optional field) becomes plain ``X``; endpoints handle it better."""
    if not isinstance(prop, dict) or not isinstance(prop.get("anyOf"), list):
        return prop
    options = [o for o in prop["anyOf"] if o != {"type": "null"}]
    if len(options) != 1 or not isinstance(options[0], dict):
        return prop
    rest = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
    return {**options[0], **rest}


def _tool(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": ACTION_HELP.get(name, name),
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


def tool_for(name: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The static tool of an action type, from its JSON schema."""
    defs = {**schema.get("definitions", {}), **schema.get("$defs", {})}
    flat = _inline_refs(dict(schema), defs)
    properties = {k: _not_null(v) for k, v in flat.get("properties", {}).items()
                  if k not in _DROPPED_PARAMS}
    required = [r for r in flat.get("required", []) if r in properties]
    return _tool(name, properties, required)


def build_tools(schemas: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """All static tools, in the order of ``schemas``."""
    return [tool_for(name, schema) for name, schema in schemas.items()]


def _param_schema(values: list[Any]) -> dict[str, Any]:
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return {"type": "integer", "minimum": min(values), "maximum": max(values)}
    return {"enum": [str(v) for v in values]}  # an enum needs no type: fewer prompt tokens


def legal_tools(legal: Mapping[str, Sequence[Mapping[str, Sequence[Any]]]],
                action_types: Sequence[str]) -> list[dict[str, Any]]:
    """One tool per action type legal now, each parameter restricted to the values some legal
    option allows (``enum`` for ids and choices, ``minimum``/``maximum`` for units).  A
    parameter is required when every option has it."""
    tools = []
    for name, options in legal.items():
        if name not in action_types or not isinstance(options, Sequence):
            continue
        values: dict[str, list[Any]] = {}
        for option in options:
            for param, allowed in option.items():
                bucket = values.setdefault(param, [])
                bucket.extend(v for v in allowed if v not in bucket)
        order = [p for p in ACTION_PARAMS.get(name, ()) if p in values]
        order += [p for p in values if p not in order]
        properties = {p: _param_schema(values[p]) for p in order if values[p]}
        required = [p for p in properties if all(p in option for option in options)]
        tools.append(_tool(name, properties, required))
    return tools


# --------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class Parsed:
    """The outcome of reading one model answer: an action, or the reason (and its category)
    there is none."""

    action: dict[str, Any] | None
    reason: str | None = None
    kind: str | None = None


def _unescape(value: Any) -> Any:
    """HTML entities a chat template put into the text (``&#34;``, ``&amp;amp;``) undone,
    repeatedly, in strings inside any JSON value."""
    if isinstance(value, str):
        for _ in range(8):
            plain = html.unescape(value)
            if plain == value:
                break
            value = plain
        return value
    if isinstance(value, list):
        return [_unescape(v) for v in value]
    if isinstance(value, dict):
        return {str(_unescape(k)): _unescape(v) for k, v in value.items()}
    return value


def _load_arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Tool-call arguments as a dict, or the reason they are unusable."""
    if isinstance(raw, dict):
        return _unescape(raw), None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if not isinstance(raw, str):
        return None, "arguments are neither JSON text nor an object"
    try:
        value = json.loads(_unescape(raw), strict=False)
    except json.JSONDecodeError:
        return None, "arguments are not valid JSON"
    if not isinstance(value, dict):
        return None, f"arguments are JSON {type(value).__name__}, not an object"
    return value, None


def _make_action(name: str, params: Mapping[str, Any], action_types: Sequence[str]) -> Parsed:
    action_type = name.strip().lower()
    if action_type not in action_types:
        return Parsed(None, f"unknown action_type {name.strip()[:40]!r}", "unknown_action")
    clean = {k: (v.strip() if isinstance(v, str) else v) for k, v in params.items()
             if v is not None and k not in _DROPPED_PARAMS}
    return Parsed({"action_type": action_type, **clean})


def normalize_action(obj: Any, action_types: Sequence[str], depth: int = 0) -> Parsed:
    """Turn a decoded JSON value into a wire action dict, accepting common wrappings."""
    if not isinstance(obj, dict) or depth > 3:
        return Parsed(None, "answer is not a JSON object", "no_action")
    for wrapper in ("action", "function", "tool_call"):
        inner = obj.get(wrapper)
        if isinstance(inner, dict):
            return normalize_action(inner, action_types, depth + 1)
    name = obj.get("action_type", obj.get("name", obj.get("action")))
    if not isinstance(name, str) or not name.strip():
        return Parsed(None, "no action_type in the answer", "no_action")
    args, problem = _load_arguments(obj.get("arguments", obj.get("parameters")))
    if args is None:
        return Parsed(None, f"tool {problem}", "bad_arguments")
    params = {k: v for k, v in obj.items()
              if k not in ("action_type", "name", "action", "arguments", "parameters")}
    return _make_action(name, {**params, **args}, action_types)


_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
_CALL = re.compile(r"\b([A-Za-z_]+)\s*\(([^()]*)\)")
_PREFIXED = re.compile(r"\bfunctions\.([A-Za-z_]+):\s*")
_QUOTES = "\"'`"


def _coerce(value: str) -> Any:
    text = value.strip().strip(_QUOTES).strip()
    return int(text) if re.fullmatch(r"-?\d{1,6}", text) else text


def parse_call(name: str, inner: str, action_types: Sequence[str],
               order: Sequence[str] | None = None) -> Parsed:
    """``name(v1, v2)`` or ``name(k=v, ...)``: positional values follow the action type's
    parameter order (``order`` when given, else :data:`ACTION_PARAMS`)."""
    action_type = name.strip().lower()
    if action_type not in action_types:
        return Parsed(None, f"unknown action_type {name.strip()[:40]!r}", "unknown_action")
    params = list(order if order is not None else ACTION_PARAMS.get(action_type, ()))
    values: dict[str, Any] = {}
    parts = [p for p in inner.split(",") if p.strip()]
    for index, part in enumerate(parts):
        key, sep, value = part.partition("=")
        if sep and re.fullmatch(r"\s*[A-Za-z_]+\s*", key):
            values[key.strip()] = _coerce(value)
        elif index < len(params):
            values[params[index]] = _coerce(part)
        else:
            return Parsed(None, f"too many values for {action_type}", "bad_arguments")
    return Parsed({"action_type": action_type, **values})


@dataclass(frozen=True)
class _Candidate:
    start: int
    end: int
    parsed: Parsed


def _candidates(text: str, action_types: Sequence[str]) -> list[_Candidate]:
    """Every JSON object and every ``name(...)`` call in the text that reads as an action."""
    found: list[_Candidate] = []
    decoder = json.JSONDecoder(strict=False)
    for match in re.finditer(r"\{", text):
        if any(c.start < match.start() < c.end for c in found):
            continue
        try:
            obj, end = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        found.append(_Candidate(match.start(), end, normalize_action(obj, action_types)))
    for match in _PREFIXED.finditer(text):  # llama.cpp's chatml-function-calling syntax
        name = match.group(1).lower()
        if name not in action_types or any(c.start <= match.start() < c.end for c in found):
            continue
        args: Any = {}
        end = match.end()
        with contextlib.suppress(json.JSONDecodeError):
            args, end = decoder.raw_decode(text, match.end())
        found = [c for c in found if not (match.start() < c.start < end)]
        found.append(_Candidate(match.start(), end,
                                normalize_action({"name": name, "arguments": args}, action_types)))
    for match in _CALL.finditer(text):
        if match.group(1).lower() not in action_types:
            continue
        if any(c.start <= match.start() < c.end for c in found):
            continue
        found.append(_Candidate(match.start(), match.end(),
                                parse_call(match.group(1), match.group(2), action_types)))
    return sorted(found, key=lambda c: c.start)


def _line_of(text: str, start: int, end: int) -> str:
    head = text.rfind("\n", 0, start) + 1
    tail = text.find("\n", end)
    return text[head: len(text) if tail < 0 else tail].strip()


def _is_echo(text: str, cand: _Candidate, prompt: str) -> bool:
    """A candidate copied from the prompt: its whole answer line, with more than the action,
    appears in the prompt (a history or state line), or it is a JSON object found verbatim in
    the prompt."""
    if not prompt:
        return False
    snippet = text[cand.start: cand.end].strip()
    line = _line_of(text, cand.start, cand.end)
    if len(line) > len(snippet) + 3 and line in prompt:
        return True
    return snippet.startswith("{") and snippet in prompt


def extract_action(text: str, action_types: Sequence[str], prompt: str = "") -> Parsed:
    """The model's own action in free text: the last usable candidate that is not an echo
    of the prompt (models reason first and answer last)."""
    cleaned = _unescape(_THINK.sub(" ", text or ""))
    candidates = _candidates(cleaned, action_types)
    usable = [c for c in candidates if c.parsed.action is not None]
    own = [c for c in usable if not _is_echo(cleaned, c, prompt)]
    if own:
        return own[-1].parsed
    if usable:
        return Parsed(None, "answer only repeats actions from the prompt", "echo")
    for cand in candidates:
        return cand.parsed
    snippet = " ".join(cleaned.split())[:50]
    return Parsed(None, f"no action in the answer {snippet!r}", "no_action")


def extract_json_action(text: str, action_types: Sequence[str], prompt: str = "") -> Parsed:
    """Backward-compatible name of :func:`extract_action`."""
    return extract_action(text, action_types, prompt)


def parse_completion(completion: Any, action_types: Sequence[str], prompt: str = "") -> Parsed:
    """Read a chat completion: the first tool call naming an action type, else an action in
    the text; truncated and empty answers are told apart."""
    choices = getattr(completion, "choices", None)
    if not choices:
        return Parsed(None, "empty model response (no choices)", "empty")
    choice = choices[0]
    message = getattr(choice, "message", None)
    truncated = getattr(choice, "finish_reason", None) == "length"
    parsed = _from_tool_calls(getattr(message, "tool_calls", None) or [], action_types)
    if parsed is None:
        content = getattr(message, "content", None)
        if not isinstance(content, str) or not content.strip():
            if truncated:
                return Parsed(None, "answer cut off at max_tokens before any action "
                              "(finish_reason=length)", "truncated")
            return Parsed(None, "empty answer: neither a tool call nor text", "empty")
        parsed = extract_action(content, action_types, prompt)
    if parsed.action is None and truncated:
        return Parsed(None, f"answer cut off at max_tokens (finish_reason=length); {parsed.reason}",
                      "truncated")
    return parsed


def _from_tool_calls(calls: Sequence[Any], action_types: Sequence[str]) -> Parsed | None:
    for call in calls:
        function = getattr(call, "function", None)
        name = getattr(function, "name", None)
        if not isinstance(name, str):
            continue
        name = _unescape(name)
        args, problem = _load_arguments(getattr(function, "arguments", None))
        if args is None:
            return Parsed(None, f"tool {name[:40]!r}: {problem}", "bad_arguments")
        if name.strip().lower() in action_types:
            return _make_action(name, args, action_types)
        return normalize_action({"name": name, "arguments": args}, action_types)
    return None


# --------------------------------------------------------------------------- the agent


def schema_error(action: dict[str, Any]) -> str | None:
    """Why an action does not fit its action model (``None`` if it does).  Such an action could
    not even be sent over the wire, so the agent treats it as unusable."""
    from codered_env.sim import parse_action

    _, error = parse_action(action)
    return None if error is None else f"invalid action: {error}"


def scrub(message: str, secret: str) -> str:
    """One line, bounded, with the key removed - only a key long enough to be a real secret
    (a short one would mangle ordinary words)."""
    if secret and len(secret) >= MIN_SECRET_CHARS:
        message = message.replace(secret, "***")
    return " ".join(message.split())[:MAX_REASON_CHARS]


_scrub = scrub


def _default_schemas() -> dict[str, dict[str, Any]]:
    from codered_env.sim import ACTION_TYPES
    from codered_env.sim.actions import action_json_schemas

    schemas = action_json_schemas()
    return {name: dict(schemas.get(name, {})) for name in ACTION_TYPES}


def _task_steps(task_id: str) -> int:
    try:
        from codered_env.sim import TASKS

        return int(TASKS[task_id].max_steps)
    except Exception:  # an unknown task: the environment will say so; budget for 60 steps
        return 60


class LLMAgent:
    """An agent that asks a chat model for each action.

    Same interface as the built-in agents (``reset(task_id, seed)``, ``act(observation)``).
    After each :meth:`act`, :attr:`last_error` holds the agent-side problem of that step (or
    ``None`` when the model's action was used as given); :attr:`stats` (a dict, reset per
    episode) counts calls, retries, timeouts, tokens and fallbacks by reason.
    """

    name = "llm"

    def __init__(
        self,
        config: LLMConfig | None = None,
        *,
        client: LLMClient | None = None,
        schemas: Mapping[str, Mapping[str, Any]] | None = None,
        validator: Callable[[dict[str, Any]], str | None] | None = None,
        rate_limiter: RateLimiter | None = None,
        seed: int | None = None,
    ) -> None:
        """``config`` defaults to :meth:`LLMConfig.from_env`; ``ValueError`` without a key."""
        del seed  # accepted for make_agent(name, seed=...); the model call is what varies
        config = config or LLMConfig.from_env()
        if config is None:
            raise ValueError("the llm agent needs an API key: set HF_TOKEN, API_KEY or "
                             "OPENAI_API_KEY (or API_BASE_URL to a local server)")
        self.config = config
        self.client = client or LLMClient(config, rate_limiter=rate_limiter)
        schema_map = dict(schemas) if schemas is not None else _default_schemas()
        self.action_types: tuple[str, ...] = tuple(schema_map)
        self._static_tools = build_tools(schema_map)
        self._history: list[Decision] = []
        self._history_cap = max(0, config.history)
        self._pending: tuple[int, dict[str, Any], str | None] | None = None
        self._validate = validator or schema_error
        self._use_tools = config.use_tools
        self._disabled: str | None = None
        self._failed_in_a_row = 0
        self._no_tool_call = 0
        self._turn = 0
        self._task_id: str | None = None
        self.last_error: str | None = None

    @property
    def model(self) -> str:
        return self.config.model

    @property
    def stats(self) -> LLMStats:
        return self.client.stats

    @property
    def disabled_reason(self) -> str | None:
        """Why the agent stopped calling the model (fatal error or budget), if it did."""
        return self._disabled

    @property
    def text_mode(self) -> bool:
        return not self._use_tools

    def fingerprint(self) -> dict[str, Any]:
        """Model, prompt version (hash of every task's system prompt, tool and text mode) and
        the settings that shape the answers; the evaluation store reuses episodes on a match."""
        from codered_env.sim import TASK_IDS

        prompts = [build_system_prompt(self.action_types, use_tools=tools, task_id=task)
                   for task in TASK_IDS for tools in (True, False)]
        prompt = hashlib.sha256("\0".join(prompts).encode()).hexdigest()[:16]
        c = self.config
        return {"agent": type(self).__qualname__, "model": c.model, "prompt": prompt,
                "temperature": c.temperature, "max_tokens": c.max_tokens, "history": c.history,
                "use_tools": c.use_tools, "static_tools": c.static_tools, "text_after": c.text_after}

    def reset(self, task_id: str, seed: int) -> None:
        """Start a new episode: empty history, fresh budget and counters, tools re-enabled."""
        self.client.start_run(seed, _task_steps(task_id))
        self._task_id = task_id
        self._history.clear()
        self._history_cap = max(0, self.config.history)
        self._pending = None
        self._use_tools = self.config.use_tools
        self._disabled = None
        self._failed_in_a_row = 0
        self._no_tool_call = 0
        self._turn = 0
        self.last_error = None

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        """Choose the next wire action; never raises."""
        self._remember_outcome(observation)
        self._turn += 1
        self.last_error = None
        try:
            parsed = self._decide(observation)
        except Exception as exc:  # a bug or an odd response object must not end the run
            parsed = Parsed(None, f"agent error ({type(exc).__name__})", "agent_error")
        action, reason, kind = parsed.action, parsed.reason, parsed.kind
        proposed = action
        if action is not None:
            reason = self._validate(action)
            action, kind = (None, "invalid_action") if reason else (action, None)
        if action is None:
            self.stats.fallback(kind or "other")
            self.last_error = f"llm: {str(reason)[:240]}; played maintain_plan"
            action = dict(FALLBACK_ACTION)
        step = observation.get("step")
        step = (step if isinstance(step, int) and not isinstance(step, bool)
                else self._turn - 1) + 1
        self._pending = (step, proposed or action, self.last_error)
        return dict(action)

    def _remember_outcome(self, observation: Mapping[str, Any]) -> None:
        if self._pending is None:
            return
        step, action, agent_error = self._pending
        self._pending = None
        if self._history_cap == 0:
            return
        error = agent_error or observation.get("last_action_error")
        self._history.append(Decision(step=step, action=action,
                                      error=str(error)[:MAX_REASON_CHARS] if error else None))
        if len(self._history) > self._history_cap:
            # Trim in chunks (keep the newer half) so the history prefix of the prompt stays
            # byte-identical for several calls in a row.
            del self._history[: len(self._history) - max(1, self._history_cap // 2)]

    def _decide(self, observation: Mapping[str, Any]) -> Parsed:
        if self._disabled:
            self.stats.unanswered += 1
            return Parsed(None, self._disabled, "disabled")
        legal = observation.get("legal_actions")
        legal = legal if isinstance(legal, Mapping) and legal else None
        try:
            completion, user = self._complete(observation, legal)
        except LLMError as exc:
            self.stats.unanswered += 1
            self._failed_in_a_row += 1
            reason = scrub(exc.message, self.config.api_key)
            if exc.fatal:
                self._disabled = f"{reason} (model calls stopped)"
            return Parsed(None, reason, exc.kind)
        self._failed_in_a_row = 0
        tools_sent = self._use_tools
        parsed = parse_completion(completion, self.action_types, prompt=user)
        self._count_answer(completion, tools_sent)
        return parsed

    def _count_answer(self, completion: Any, tools_sent: bool) -> None:
        choices = getattr(completion, "choices", None) or [None]
        message = getattr(choices[0], "message", None)
        if getattr(message, "tool_calls", None):
            self.stats.tool_answers += 1
            self._no_tool_call = 0
            return
        self.stats.text_answers += 1
        if not tools_sent:
            return
        self._no_tool_call += 1
        if self.config.text_after and self._no_tool_call >= self.config.text_after:
            self._use_tools = False  # the model (or its chat template) ignores tools
            self.stats.text_mode_switches += 1

    def _tools(self, legal: Mapping[str, Any] | None) -> list[dict[str, Any]] | None:
        if not self._use_tools:
            return None
        if self.config.static_tools or legal is None:
            return self._static_tools
        return legal_tools(legal, self.action_types) or self._static_tools

    def _complete(self, observation: Mapping[str, Any], legal: Mapping[str, Any] | None) -> tuple[Any, str]:
        # After DEGRADED_AFTER unanswered steps in a row, one attempt per step until one works,
        # so a dead or throttled endpoint does not cost the full retry schedule every step.
        retries = 0 if self._failed_in_a_row >= DEGRADED_AFTER else None
        for _ in range(8):
            messages, user = self._messages(observation, legal)
            try:
                return self.client.complete(messages, self._tools(legal), retries), user
            except LLMError as exc:
                if exc.kind == "context_length" and self._history:
                    self._shrink_history()
                    continue
                if exc.kind == "bad_request" and self._use_tools:
                    self._use_tools = False  # the endpoint rejected tools: text mode from now on
                    self.stats.text_mode_switches += 1
                    continue
                raise
        raise LLMError("context_length", "prompt exceeds the model's context even without history")

    def _shrink_history(self) -> None:
        self._history_cap = len(self._history) // 2
        del self._history[: len(self._history) - self._history_cap]
        self.stats.history_shrinks += 1

    def _messages(self, observation: Mapping[str, Any],
                  legal: Mapping[str, Any] | None) -> tuple[list[dict[str, Any]], str]:
        use_tools = self._use_tools
        shown = compact_state(observation, tools=use_tools or legal is not None)
        user = build_user_message(shown, self._history, legal=legal, use_tools=use_tools)
        system = build_system_prompt(self.action_types, use_tools=use_tools, task_id=self._task_id)
        return [{"role": "system", "content": system}, {"role": "user", "content": user}], user
