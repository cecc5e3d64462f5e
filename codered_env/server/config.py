"""Server settings, read from environment variables once per app construction."""

from __future__ import annotations

import os
from dataclasses import dataclass

from codered_env.server.limits import ONE_MIB


def _int_env(name: str, default: int, minimum: int = 1) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from exc
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def _float_env(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be a number, got {raw!r}") from exc
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    return value


@dataclass(frozen=True)
class ServerSettings:
    """Everything tunable about the server.

    Attributes:
        max_concurrent_envs: WebSocket sessions served at once (``MAX_CONCURRENT_ENVS``).
        ws_idle_timeout_s: an idle WebSocket session is reaped after this long
            (``CODERED_WS_IDLE_TIMEOUT_S``), so abandoned sockets never keep a slot.
        http_max_sessions: stateful HTTP episodes kept at once (``CODERED_HTTP_MAX_SESSIONS``).
        http_idle_ttl_s: an HTTP episode untouched this long expires (``CODERED_HTTP_TTL_S``).
        max_body_bytes: larger request bodies and WebSocket frames are refused
            (``CODERED_MAX_BODY_BYTES``).
        heavy_jobs: /grader agent runs and /baseline runs executing at once
            (``CODERED_HEAVY_JOBS``); more wait up to ``heavy_wait_s`` and then get 503.
        enable_llm_baseline: ``CODERED_ENABLE_LLM_BASELINE=1`` allows ``/baseline`` with
            the LLM agent (it also needs an API key in the server's environment).
    """

    max_concurrent_envs: int = 64
    ws_idle_timeout_s: float = 300.0
    http_max_sessions: int = 64
    http_idle_ttl_s: float = 600.0
    max_body_bytes: int = ONE_MIB
    heavy_jobs: int = 2
    heavy_wait_s: float = 30.0
    enable_llm_baseline: bool = False

    @classmethod
    def from_env(cls) -> ServerSettings:
        return cls(
            max_concurrent_envs=_int_env("MAX_CONCURRENT_ENVS", 64),
            ws_idle_timeout_s=_float_env("CODERED_WS_IDLE_TIMEOUT_S", 300.0),
            http_max_sessions=_int_env("CODERED_HTTP_MAX_SESSIONS", 64),
            http_idle_ttl_s=_float_env("CODERED_HTTP_TTL_S", 600.0),
            max_body_bytes=_int_env("CODERED_MAX_BODY_BYTES", ONE_MIB, minimum=1024),
            heavy_jobs=_int_env("CODERED_HEAVY_JOBS", 2),
            heavy_wait_s=_float_env("CODERED_HEAVY_WAIT_S", 30.0),
            enable_llm_baseline=os.environ.get("CODERED_ENABLE_LLM_BASELINE", "") == "1",
        )
