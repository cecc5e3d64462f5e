"""CodeRedEnv."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from codered_env.openenv_lazy import install as _defer_heavy_openenv_packages

# OpenEnv's package __init__s import gradio, fastmcp and openai, which CodeRedEnv never uses
# (seconds of start-up); its submodules are loaded on their own (openenv_lazy.py).
_defer_heavy_openenv_packages()

# Lazy exports: ``import codered_env`` (and ``codered_env.sim``) never imports openenv; the
# client and the wire models load it on first use.
_LAZY_EXPORTS = {
    "CodeRedEnv": "codered_env.client",
    "CodeRedAction": "codered_env.models",
    "CodeRedObservation": "codered_env.models",
    "CodeRedState": "codered_env.models",
}


def __getattr__(name: str) -> Any:
    module = _LAZY_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'codered_env' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY_EXPORTS])


__all__ = ["CodeRedAction", "CodeRedEnv", "CodeRedObservation", "CodeRedState"]
