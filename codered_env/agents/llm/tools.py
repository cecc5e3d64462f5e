"""Function-calling tool schemas: the fixed schema of every action, and the legal-now tools with enums."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from codered_env.agents.prompts import (
    ACTION_HELP,
    ACTION_PARAMS,
)

from .config import (
    DROPPED_PARAMS,
)


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


def _tool(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": ACTION_HELP.get(name, name),
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


def tool_for(name: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The static tool of an action type, from its JSON schema."""
    defs = {**schema.get("definitions", {}), **schema.get("$defs", {})}
    flat = _inline_refs(dict(schema), defs)
    properties = {k: _not_null(v) for k, v in flat.get("properties", {}).items()
                  if k not in DROPPED_PARAMS}
    required = [r for r in flat.get("required", []) if r in properties]
    return _tool(name, properties, required)


def build_tools(schemas: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """All static tools, in the order of ``schemas``."""
    return [tool_for(name, schema) for name, schema in schemas.items()]


def _param_schema(values: list[Any]) -> dict[str, Any]:
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return {"type": "integer", "minimum": min(values), "maximum": max(values)}
    return {"enum": [str(v) for v in values]}  # an enum needs no type: fewer prompt tokens


def legal_tools(legal: Mapping[str, Sequence[Mapping[str, Sequence[Any]]]],
                action_types: Sequence[str]) -> list[dict[str, Any]]:
    """One tool per action type legal now, each parameter restricted to the values some legal
    option allows (``enum`` for ids and choices, ``minimum``/``maximum`` for units).  A
    parameter is required when every option has it."""
    tools = []
    for name, options in legal.items():
        if name not in action_types or not isinstance(options, Sequence):
            continue
        values: dict[str, list[Any]] = {}
        for option in options:
            for param, allowed in option.items():
                bucket = values.setdefault(param, [])
                bucket.extend(v for v in allowed if v not in bucket)
        order = [p for p in ACTION_PARAMS.get(name, ()) if p in values]
        order += [p for p in values if p not in order]
        properties = {p: _param_schema(values[p]) for p in order if values[p]}
        required = [p for p in properties if all(p in option for option in options)]
        tools.append(_tool(name, properties, required))
    return tools
