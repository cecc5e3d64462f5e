"""LLM agent: plays CodeRedEnv through any OpenAI-compatible chat-completions endpoint.

Design (see docs/INFERENCE.md):

* Only the official ``openai`` client is used.  Each of the 14 action types is offered as one
  function-calling tool whose parameter schema is generated from the pydantic action models
  (``codered_env.sim.actions.action_json_schemas()``).
* If the endpoint rejects tools (HTTP 400/422) the agent switches to text mode for the rest of the
  run; in either mode a JSON action found in the answer text is accepted.
* Anything unusable (no answer, garbage, unknown action type, transport failure after retries, run
  budget exhausted) becomes ``maintain_plan`` and the reason is kept in :attr:`LLMAgent.last_error`
  so the caller can report it in that step's ``error=`` field.
* Each call has a timeout; 429/5xx/timeouts/connection errors are retried with exponential backoff
  (honouring ``Retry-After``); the whole run has a wall-clock budget.
* Neither the API key nor any prompt text is ever printed or logged; error messages are truncated
  and scrubbed of the key.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import openai

from codered_env.agents.prompts import (
    ACTION_HELP,
    Decision,
    build_system_prompt,
    build_user_message,
)

DEFAULT_BASE_URL = "https://router.huggingface.co/v1"
DEFAULT_MODEL = "Qwen/Qwen2.5-72B-Instruct"
FALLBACK_ACTION: dict[str, Any] = {"action_type": "maintain_plan"}
MIN_CALL_SECONDS = 0.5
DEGRADED_AFTER = 3
MAX_OBSERVATION_CHARS = 12_000
MAX_REASON_CHARS = 160
_KEY_VARS = ("HF_TOKEN", "API_KEY", "OPENAI_API_KEY")
_DROPPED_PARAMS = ("action_type", "metadata")


# --------------------------------------------------------------------------- configuration


def api_key_from_env(env: Mapping[str, str] | None = None) -> str | None:
    """The API key from ``HF_TOKEN``, ``API_KEY`` or ``OPENAI_API_KEY`` (first non-empty)."""
    env = os.environ if env is None else env
    for var in _KEY_VARS:
        value = (env.get(var) or "").strip()
        if value:
            return value
    return None


def _env_number(env: Mapping[str, str], name: str, default: float, low: float) -> float:
    """A float from the environment; malformed or out-of-range values give the default."""
    try:
        value = float(env.get(name, ""))
    except ValueError:
        return default
    return value if math.isfinite(value) and value >= low else default


@dataclass(frozen=True)
class LLMConfig:
    """Connection and behaviour settings of the LLM agent (the key is never shown in repr)."""

    api_key: str = field(repr=False)
    base_url: str = DEFAULT_BASE_URL
    model: str = DEFAULT_MODEL
    timeout_s: float = 30.0
    max_retries: int = 3
    backoff_s: float = 1.0
    backoff_max_s: float = 10.0
    budget_s: float = 900.0
    history: int = 6
    temperature: float = 0.0
    max_tokens: int = 512
    use_tools: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> LLMConfig | None:
        """Build from environment variables; ``None`` when no API key is set."""
        env = os.environ if env is None else env
        key = api_key_from_env(env)
        if key is None:
            return None
        return cls(
            api_key=key,
            base_url=(env.get("API_BASE_URL") or DEFAULT_BASE_URL).strip(),
            model=(env.get("MODEL_NAME") or DEFAULT_MODEL).strip(),
            timeout_s=_env_number(env, "CODERED_LLM_TIMEOUT", 30.0, 0.05),
            max_retries=int(_env_number(env, "CODERED_LLM_RETRIES", 3, 0)),
            backoff_s=_env_number(env, "CODERED_LLM_BACKOFF", 1.0, 0.0),
            backoff_max_s=_env_number(env, "CODERED_LLM_BACKOFF_MAX", 10.0, 0.0),
            budget_s=_env_number(env, "CODERED_LLM_BUDGET", 900.0, 1.0),
            history=int(_env_number(env, "CODERED_LLM_HISTORY", 6, 0)),
            temperature=_env_number(env, "CODERED_LLM_TEMPERATURE", 0.0, 0.0),
            max_tokens=int(_env_number(env, "CODERED_LLM_MAX_TOKENS", 512, 16)),
            use_tools=env.get("CODERED_LLM_TOOLS", "1").strip().lower() not in {"0", "false", "no"},
        )


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


_RETRYABLE_KINDS = frozenset(
    {"rate_limited", "server", "timeout", "connection", "invalid_response"}
)


@dataclass
class LLMStats:
    """Counters for one run (one episode)."""

    calls: int = 0
    failed_calls: int = 0
    retries: int = 0
    fallbacks: int = 0
    unanswered: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, float | int]:
        return dict(self.__dict__)


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
        return LLMError("bad_request", f"HTTP {status} request rejected")
    return LLMError("invalid_response", f"unusable response ({type(exc).__name__})")


class LLMClient:
    """Chat-completions caller with per-call timeout, retries with backoff and a run budget."""

    def __init__(
        self,
        config: LLMConfig,
        *,
        client: openai.OpenAI | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self._client = client or openai.OpenAI(
            api_key=config.api_key, base_url=config.base_url,
            timeout=config.timeout_s, max_retries=0,
        )
        self._sleep = sleep
        self._clock = clock
        self._deadline = clock() + config.budget_s
        self._rng = random.Random(0)
        self.stats = LLMStats()

    def start_run(self, seed: int = 0) -> None:
        """Reset the run budget, the counters and the backoff jitter."""
        self._deadline = self._clock() + self.config.budget_s
        self._rng = random.Random(seed)
        self.stats = LLMStats()

    def remaining(self) -> float:
        """Seconds left in the run budget."""
        return max(0.0, self._deadline - self._clock())

    def _backoff(self, attempt: int, hint: float | None) -> float:
        cap = self.config.backoff_max_s
        if hint is not None:
            return min(hint, cap)
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
        return self._client.chat.completions.create(**kwargs)

    def _record_usage(self, completion: Any) -> None:
        usage = getattr(completion, "usage", None)
        self.stats.prompt_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
        self.stats.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)

    def complete(self, messages: list[dict[str, Any]],
                 tools: list[dict[str, Any]] | None = None,
                 max_retries: int | None = None) -> Any:
        """One completion, retried on transient failures; raises :class:`LLMError`.

        A timed-out call is retried at most once (it already used a whole timeout)."""
        retries = self.config.max_retries if max_retries is None else max_retries
        attempt = 0
        while True:
            floor = min(MIN_CALL_SECONDS, self.config.timeout_s)
            timeout = min(self.config.timeout_s, self.remaining())
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
            limit = min(retries, 1) if error.kind == "timeout" else retries
            if error.kind not in _RETRYABLE_KINDS or attempt >= limit:
                raise error
            delay = self._backoff(attempt, error.retry_after)
            if delay + floor > self.remaining():
                raise error
            self.stats.retries += 1
            attempt += 1
            self._sleep(delay)


# --------------------------------------------------------------------------- tools and parsing


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


def tool_for(name: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """One function-calling tool for an action type, from its JSON schema."""
    defs = {**schema.get("definitions", {}), **schema.get("$defs", {})}
    flat = _inline_refs(dict(schema), defs)
    properties = {k: _not_null(v) for k, v in flat.get("properties", {}).items()
                  if k not in _DROPPED_PARAMS}
    required = [r for r in flat.get("required", []) if r in properties]
    description = ACTION_HELP.get(name) or str(schema.get("description", name))
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


def build_tools(schemas: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """All tools, in the order of ``schemas``."""
    return [tool_for(name, schema) for name, schema in schemas.items()]


@dataclass(frozen=True)
class Parsed:
    """The outcome of reading one model answer: an action, or the reason there is none."""

    action: dict[str, Any] | None
    reason: str | None = None


def _load_arguments(raw: Any) -> dict[str, Any] | None:
    if isinstance(raw, dict):
        return raw
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None
    return None


def normalize_action(obj: Any, action_types: Sequence[str], depth: int = 0) -> Parsed:
    """Turn a decoded JSON value into a wire action dict, accepting common wrappings."""
    if not isinstance(obj, dict) or depth > 3:
        return Parsed(None, "answer is not a JSON object")
    for wrapper in ("action", "function", "tool_call"):
        inner = obj.get(wrapper)
        if isinstance(inner, dict):
            return normalize_action(inner, action_types, depth + 1)
    name = obj.get("action_type", obj.get("name", obj.get("action")))
    if not isinstance(name, str) or not name.strip():
        return Parsed(None, "no action_type in the answer")
    args = _load_arguments(obj.get("arguments", obj.get("parameters")))
    if args is None:
        return Parsed(None, "tool arguments are not a JSON object")
    params = {k: v for k, v in obj.items()
              if k not in ("action_type", "name", "action", "arguments", "parameters")}
    return _make_action(name, {**params, **args}, action_types)


def _make_action(name: str, params: Mapping[str, Any], action_types: Sequence[str]) -> Parsed:
    action_type = name.strip().lower()
    if action_type not in action_types:
        return Parsed(None, f"unknown action_type {name.strip()[:40]!r}")
    clean = {k: v for k, v in params.items() if v is not None and k not in _DROPPED_PARAMS}
    return Parsed({"action_type": action_type, **clean})


_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


def extract_json_action(text: str, action_types: Sequence[str]) -> Parsed:
    """Find the first JSON object in free text that is a usable action."""
    cleaned = _THINK.sub(" ", text or "")
    decoder = json.JSONDecoder()
    reason = "no JSON action in the answer"
    for match in re.finditer(r"\{", cleaned):
        try:
            obj, _ = decoder.raw_decode(cleaned, match.start())
        except json.JSONDecodeError:
            continue
        parsed = normalize_action(obj, action_types)
        if parsed.action is not None:
            return parsed
        reason = parsed.reason or reason
    return Parsed(None, reason)


def parse_completion(completion: Any, action_types: Sequence[str]) -> Parsed:
    """Read a chat completion: the first tool call, else a JSON action in the text."""
    choices = getattr(completion, "choices", None)
    if not choices:
        return Parsed(None, "empty model response")
    message = getattr(choices[0], "message", None)
    for call in getattr(message, "tool_calls", None) or []:
        function = getattr(call, "function", None)
        name = getattr(function, "name", None)
        if not isinstance(name, str):
            continue
        args = _load_arguments(getattr(function, "arguments", None))
        if args is None:
            return Parsed(None, f"arguments of tool {name[:40]!r} are not a JSON object")
        if name.strip().lower() in action_types:
            return _make_action(name, args, action_types)
        return normalize_action({"name": name, "arguments": args}, action_types)
    content = getattr(message, "content", None)
    if not isinstance(content, str) or not content.strip():
        return Parsed(None, "model answered with neither a tool call nor text")
    return extract_json_action(content, action_types)


# --------------------------------------------------------------------------- the agent


def _render(observation: Mapping[str, Any]) -> str | None:
    try:
        from codered_env.sim import render_text

        text = render_text(dict(observation))
    except Exception:  # an observation the renderer cannot read: fall back to JSON
        return None
    return text if isinstance(text, str) and text.strip() else None


def observation_text(observation: Mapping[str, Any]) -> str:
    """The compact text of an observation: its ``text`` field, else ``sim.render_text``, else
    compact JSON; bounded in length."""
    text = observation.get("text")
    if not isinstance(text, str) or not text.strip():
        text = _render(observation)
    if text is None:
        body = {k: v for k, v in observation.items() if k not in ("text", "legal_actions")}
        text = json.dumps(body, separators=(",", ":"), default=str, sort_keys=True)
        legal = observation.get("legal_actions")
        if legal:
            text += "\nlegal_actions: " + json.dumps(legal, separators=(",", ":"), default=str)
    return text[:MAX_OBSERVATION_CHARS]


def schema_error(action: dict[str, Any]) -> str | None:
    """Why an action does not fit its action model (``None`` if it does).  Such an action could
    not even be sent over the wire, so the agent treats it as unusable."""
    from codered_env.sim import parse_action

    _, error = parse_action(action)
    return None if error is None else f"invalid action: {error}"


def _scrub(message: str, secret: str) -> str:
    if secret:
        message = message.replace(secret, "***")
    return " ".join(message.split())[:MAX_REASON_CHARS]


def _default_schemas() -> dict[str, dict[str, Any]]:
    from codered_env.sim import ACTION_TYPES
    from codered_env.sim.actions import action_json_schemas

    schemas = action_json_schemas()
    return {name: dict(schemas.get(name, {})) for name in ACTION_TYPES}


class LLMAgent:
    """An agent that asks a chat model for each action.

    Same interface as the built-in agents (``reset(task_id, seed)``, ``act(observation)``).
    After each :meth:`act`, :attr:`last_error` holds the agent-side problem of that step (or
    ``None`` when the model's action was used as given); :attr:`stats` counts calls and retries.
    """

    name = "llm"

    def __init__(
        self,
        config: LLMConfig | None = None,
        *,
        client: LLMClient | None = None,
        schemas: Mapping[str, Mapping[str, Any]] | None = None,
        validator: Callable[[dict[str, Any]], str | None] | None = None,
    ) -> None:
        """``config`` defaults to :meth:`LLMConfig.from_env`; ``ValueError`` without a key."""
        config = config or LLMConfig.from_env()
        if config is None:
            raise ValueError("the llm agent needs an API key: set HF_TOKEN, API_KEY or "
                             "OPENAI_API_KEY")
        self.config = config
        self.client = client or LLMClient(config)
        schema_map = dict(schemas) if schemas is not None else _default_schemas()
        self.action_types: tuple[str, ...] = tuple(schema_map)
        self._tools = build_tools(schema_map)
        self._history: deque[Decision] = deque(maxlen=max(0, config.history))
        self._pending: tuple[int, dict[str, Any], str | None] | None = None
        self._validate = validator or schema_error
        self._use_tools = config.use_tools
        self._disabled: str | None = None
        self._failed_in_a_row = 0
        self._turn = 0
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

    def reset(self, task_id: str, seed: int) -> None:
        """Start a new episode: empty history, fresh budget, tools re-enabled."""
        del task_id
        self.client.start_run(seed)
        self._history.clear()
        self._pending = None
        self._use_tools = self.config.use_tools
        self._disabled = None
        self._failed_in_a_row = 0
        self._turn = 0
        self.last_error = None

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        """Choose the next wire action; never raises."""
        self._remember_outcome(observation)
        self._turn += 1
        self.last_error = None
        try:
            action, reason = self._decide(observation)
        except Exception as exc:  # a bug or an odd response object must not end the run
            action, reason = None, f"agent error ({type(exc).__name__})"
        proposed = action
        if action is not None:
            reason = self._validate(action)
            action = None if reason else action
        if action is None:
            self.stats.fallbacks += 1
            self.last_error = f"llm: {str(reason)[:240]}; played maintain_plan"
            action = dict(FALLBACK_ACTION)
        step = observation.get("step")
        step = (step if isinstance(step, int) and not isinstance(step, bool)
                else self._turn - 1) + 1
        self._pending = (step, proposed or action, self.last_error)
        return dict(action)

    def _remember_outcome(self, observation: Mapping[str, Any]) -> None:
        if self._pending is None or self._history.maxlen == 0:
            return
        step, action, agent_error = self._pending
        error = agent_error or observation.get("last_action_error")
        score = observation.get("score_preview")
        self._history.append(Decision(
            step=step, action=action,
            error=str(error)[:MAX_REASON_CHARS] if error else None,
            score_preview=float(score) if isinstance(score, (int, float)) else None,
        ))
        self._pending = None

    def _decide(self, observation: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
        if self._disabled:
            self.stats.unanswered += 1
            return None, self._disabled
        user = build_user_message(observation_text(observation), list(self._history))
        try:
            completion = self._complete(user)
        except LLMError as exc:
            self.stats.unanswered += 1
            self._failed_in_a_row += 1
            reason = _scrub(exc.message, self.config.api_key)
            if exc.fatal:
                self._disabled = f"{reason} (model calls stopped)"
            return None, reason
        self._failed_in_a_row = 0
        parsed = parse_completion(completion, self.action_types)
        return parsed.action, parsed.reason

    def _complete(self, user: str) -> Any:
        # After DEGRADED_AFTER unanswered steps in a row, one attempt per step until one works,
        # so a dead or throttled endpoint does not cost the full retry schedule every step.
        retries = 0 if self._failed_in_a_row >= DEGRADED_AFTER else None
        try:
            tools = self._tools if self._use_tools else None
            return self.client.complete(self._messages(user), tools, retries)
        except LLMError as exc:
            if exc.kind != "bad_request" or not self._use_tools:
                raise
        self._use_tools = False  # the endpoint rejected tools: text mode for the rest of the run
        return self.client.complete(self._messages(user), None, retries)

    def _messages(self, user: str) -> list[dict[str, Any]]:
        system = build_system_prompt(self.action_types, use_tools=self._use_tools)
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]
