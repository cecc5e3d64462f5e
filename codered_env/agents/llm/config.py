"""The LLM agent's configuration: endpoint, model, key and limits (``LLMConfig``), from the environment."""

from __future__ import annotations

import ipaddress
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from codered_env.sim.catalogue import MAINTAIN_PLAN

DEFAULT_BASE_URL = "https://router.huggingface.co/v1"
DEFAULT_MODEL = "Qwen/Qwen2.5-72B-Instruct"
FALLBACK_ACTION: dict[str, Any] = MAINTAIN_PLAN
MIN_CALL_SECONDS = 0.5
DEGRADED_AFTER = 3
MAX_REASON_CHARS = 160
MIN_SECRET_CHARS = 8
_KEY_VARS = ("HF_TOKEN", "API_KEY", "OPENAI_API_KEY")
DROPPED_PARAMS = ("action_type", "metadata")
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
