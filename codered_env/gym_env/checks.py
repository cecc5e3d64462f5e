"""What the Gymnasium adapters accept from a caller: reset options and actions. A bad reset
option raises a ``TypeError``/``ValueError`` naming what would be valid, before anything
changes; a malformed action is refused like an illegal one (the adapters never raise on an
action), with a message saying what was wrong."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..sim.tasks import TASK_IDS, TASKS

_INTEGER_KINDS = frozenset("iu")


def check_task(task_id: Any) -> None:
    """Raise ``ValueError`` naming the valid tasks unless ``task_id`` is one."""
    if task_id not in TASKS:
        raise ValueError(f"unknown task_id {task_id!r}; valid: {', '.join(TASK_IDS)}")


def reset_options(options: Any, valid: tuple[str, ...]) -> dict[str, Any]:
    """``options`` of ``reset`` as a dict (None: empty); a non-mapping or a key outside ``valid``
    raises."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"reset options must be a dict with keys among {', '.join(valid)}; "
                        f"got {type(options).__name__}")
    unknown = sorted(str(k) for k in options if k not in valid)
    if unknown:
        raise ValueError(f"unknown reset option {', '.join(map(repr, unknown))}; valid: {', '.join(valid)}")
    return dict(options)


def _as_array(action: Any) -> np.ndarray | None:
    try:
        return np.asarray(action)
    except (TypeError, ValueError, RuntimeError):
        return None


def flat_index(action: Any) -> int | None:
    """``action`` as an index of the flat ``Discrete`` space: an integer (Python, NumPy, or a
    one-element integer array or tensor); None for anything else (floats, bools, text, lists)."""
    if isinstance(action, (int, np.integer)) and not isinstance(action, bool):
        return int(action)
    array = _as_array(action)
    if array is None or array.size != 1 or array.dtype.kind not in _INTEGER_KINDS:
        return None
    return int(array.reshape(()))


def factored_vector(action: Any, length: int) -> np.ndarray:
    """``action`` as the ``length`` integer components of a factored action; raises ``ValueError``
    saying what is wrong (whole-number floats are taken, as some learners emit them)."""
    array = _as_array(action)
    if array is None or array.dtype.kind not in _INTEGER_KINDS | {"f"} or array.size != length:
        raise ValueError(f"a factored action is {length} integers (type, unit, case, hospital, parameter)")
    if array.dtype.kind == "f":
        if not (np.isfinite(array).all() and (array == np.round(array)).all()):
            raise ValueError("the components of a factored action are whole numbers")
        if np.abs(array).max() >= 2.0**62:
            raise ValueError("a component is out of range")
    return array.astype(np.int64).reshape(length)


def shown(action: Any, limit: int = 80) -> str:
    """``action`` for an error message: one line, at most ``limit`` characters."""
    try:
        text = repr(np.asarray(action).tolist())
    except (TypeError, ValueError, RuntimeError):
        text = repr(action)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
