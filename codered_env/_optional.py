"""Optional extras: which importable modules each one needs, and one check with an install hint.

Heavy dependencies (PyTorch, sb3-contrib, TRL ...) are optional extras imported only inside the
functions that use them. Code that needs one calls ``require(extra)`` first, which fails with an
``ImportError`` naming what is missing and how to install it. This module imports nothing from
the project, so any layer may use it.
"""

from __future__ import annotations

import importlib.util

# extra -> (modules it must make importable, how to install it)
EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "rl": (
        ("torch", "sb3_contrib", "stable_baselines3", "gymnasium"),
        "install the `rl` extra and a CPU PyTorch (see docs/TRAINING.md), e.g. `uv sync --extra rl` "
        "then `uv pip install --no-config <torch cpu wheel>`",
    ),
    "gym": (("gymnasium",), "install the `gym` extra: `uv sync --extra gym`"),
    "trl": (("trl", "transformers", "datasets"), "install the `trl` extra: `uv sync --extra trl`"),
}
# Who asks, in the error message ("codered train needs torch: ...").
_USERS: dict[str, str] = {"rl": "codered train", "gym": "the Gymnasium adapter", "trl": "the TRL environment"}


def importable(module: str) -> bool:
    """Whether ``module`` can be imported, found without importing it."""
    return importlib.util.find_spec(module) is not None


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here (empty when it is installed)."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; known: {', '.join(EXTRAS)}")
    return [m for m in EXTRAS[extra][0] if not importable(m)]


def require(extra: str) -> None:
    """Fail with an install hint when ``extra`` is not installed."""
    absent = missing(extra)
    if absent:
        raise ImportError(f"{_USERS[extra]} needs {', '.join(absent)}: {EXTRAS[extra][1]}")
