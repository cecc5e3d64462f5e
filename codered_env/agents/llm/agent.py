"""``LLMAgent``: the agent that plays CodeRedEnv through the client, tools and parsing of this package."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from codered_env.agents.prompts import (
    Decision,
    build_system_prompt,
    build_user_message,
    compact_state,
)

from .client import (
    LLMClient,
    LLMError,
)
from .config import (
    DEGRADED_AFTER,
    FALLBACK_ACTION,
    MAX_REASON_CHARS,
    MIN_SECRET_CHARS,
    LLMConfig,
)
from .parsing import (
    Parsed,
    parse_completion,
)
from .stats import (
    LLMStats,
    RateLimiter,
)
from .tools import (
    build_tools,
    legal_tools,
)


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
