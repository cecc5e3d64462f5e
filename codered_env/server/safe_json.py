"""Strict JSON parsing for everything a client sends (HTTP bodies and WebSocket frames).

Python's ``json`` accepts ``NaN``/``Infinity``, turns ``1e400`` into ``inf``, keeps lone UTF-16
surrogates (``"\\ud800"``) in strings, raises ``RecursionError`` on deep nesting and
``ValueError`` on integers over 4,300 digits. Any of these reaching FastAPI or pydantic ends in
a 500 or a closed session, so they are refused here, at parse time, with a short message that
never echoes the input.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 32
MAX_INT_DIGITS = 40


class JsonRejected(ValueError):
    """The payload is not acceptable JSON; ``message`` says why in one short sentence."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _no_constants(name: str) -> Any:
    raise JsonRejected(f"{name} is not valid JSON: numbers must be finite")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonRejected("number out of range: numbers must be finite (at most about 1.8e308)")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise JsonRejected(f"integer too long: at most {MAX_INT_DIGITS} digits")
    return int(text)


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise JsonRejected("string contains a lone UTF-16 surrogate (e.g. \\ud800)") from None


def _check_tree(root: Any) -> None:
    """Depth and surrogate check without recursion (the payload is already size-capped)."""
    stack: list[tuple[Any, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            _check_text(node)
        elif isinstance(node, (dict, list)):
            if depth > MAX_DEPTH:
                raise JsonRejected(f"JSON nested too deeply: at most {MAX_DEPTH} levels")
            if isinstance(node, dict):
                for key, value in node.items():
                    _check_text(key)
                    stack.append((value, depth + 1))
            else:
                stack.extend((item, depth + 1) for item in node)


def parse_json(payload: bytes | str) -> Any:
    """Parse ``payload`` or raise :class:`JsonRejected` (never anything else)."""
    if isinstance(payload, bytes):
        try:
            payload = payload.decode("utf-8")
        except UnicodeDecodeError:
            raise JsonRejected("body is not valid UTF-8") from None
    try:
        value = json.loads(
            payload,
            parse_constant=_no_constants,
            parse_float=_finite_float,
            parse_int=_bounded_int,
        )
    except JsonRejected:
        raise
    except RecursionError:
        raise JsonRejected(f"JSON nested too deeply: at most {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise JsonRejected(f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except ValueError:
        raise JsonRejected("malformed JSON") from None
    if not _plainly_safe(payload):
        _check_tree(value)
    return value


def _plainly_safe(text: str) -> bool:
    """True when the parsed tree cannot hold a lone surrogate (ASCII text without ``\\u``
    escapes) nor nest deeper than ``MAX_DEPTH`` (fewer brackets than that): the common small
    frame skips the tree walk."""
    return text.isascii() and "\\u" not in text and text.count("{") + text.count("[") <= MAX_DEPTH
