"""Reading the model's answer: tool calls, JSON, the observation's ``name(v1, v2)`` syntax, leniently."""

from __future__ import annotations

import contextlib
import html
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from codered_env.agents.prompts import (
    ACTION_PARAMS,
)

from .config import (
    DROPPED_PARAMS,
)


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
             if v is not None and k not in DROPPED_PARAMS}
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
