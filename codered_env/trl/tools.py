"""The TRL tool methods, generated from the action catalogue (``codered_env.sim.catalogue``).

One method per action, named after it, with a real signature (``inspect.signature`` shows the
parameters in call order, typed ``str``/``int`` or ``Literal[...]`` for enumerations and for ids
that have a fixed set in the tools' city, such as hospitals; with no city, ids are plain ``str``)
and a Google-style docstring (the action's help, one
``Args:`` line per parameter). That is exactly what TRL and transformers' ``get_json_schema`` read
to build the tool schema, so the schema is the catalogue's. Calling a method binds its arguments
against that signature (a missing or unknown argument raises ``TypeError`` as a hand-written
method would, which TRL reports to the model as a failed tool call) and hands the action to the
environment's ``_act``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Literal

from ..sim.catalogue import ACTIONS, ActionSpec, ParamSpec, fixed_id_choices
from ..sim.city import PRAKASHNAGAR, City

RETURNS = "What changed after the decision."


def param_choices(param: ParamSpec, city: City | None = PRAKASHNAGAR) -> tuple[str, ...]:
    """The values a parameter can take when they form a fixed set (enums, the ids ``city`` has;
    no ids for ``city=None``), else ()."""
    if param.kind == "enum":
        return param.choices
    if param.kind == "id" and city is not None:
        return fixed_id_choices(city).get(param.id_of or "", ())
    return ()


def param_annotation(param: ParamSpec, city: City | None = PRAKASHNAGAR) -> Any:
    """``Literal[...]`` for a fixed set of values, else ``int`` or ``str``."""
    choices = param_choices(param, city)
    if choices:
        return Literal[choices]  # type: ignore[valid-type]
    return int if param.kind == "int" else str


def param_description(param: ParamSpec) -> str:
    """The parameter's catalogue help; an integer's range is appended (a tool schema built from
    type hints has no minimum/maximum)."""
    if param.kind == "int" and param.minimum is not None and param.maximum is not None:
        return f"{param.help} From {param.minimum} to {param.maximum}."
    return param.help


def tool_docstring(spec: ActionSpec) -> str:
    lines = [spec.help, ""]
    if spec.params:
        lines.append("Args:")
        lines += [f"    {p.name}: {param_description(p)}" for p in spec.params]
        lines.append("")
    lines += ["Returns:", f"    {RETURNS}"]
    return "\n".join(lines)


def tool_signature(spec: ActionSpec, city: City | None = PRAKASHNAGAR) -> inspect.Signature:
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for p in spec.params:
        default = inspect.Parameter.empty if p.required else ""
        params.append(inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                        default=default, annotation=param_annotation(p, city)))
    return inspect.Signature(params, return_annotation=str)


def make_tool(spec: ActionSpec, city: City | None = PRAKASHNAGAR) -> Callable[..., str]:
    """The tool method of one action, ids enumerated as ``city`` has them (an optional parameter
    left at "" is not sent)."""
    signature = tool_signature(spec, city)
    optional = {p.name for p in spec.params if not p.required}

    def tool(*args: Any, **kwargs: Any) -> str:
        bound = signature.bind(*args, **kwargs)
        self = bound.arguments.pop("self")
        params = {k: v for k, v in bound.arguments.items() if not (k in optional and v == "")}
        return self._act(action_type=spec.name, **params)

    tool.__name__ = tool.__qualname__ = spec.name
    tool.__doc__ = tool_docstring(spec)
    tool.__signature__ = signature  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in list(signature.parameters.values())[1:]}
    tool.__annotations__["return"] = str
    return tool


def add_action_tools(cls: type, city: City | None = PRAKASHNAGAR) -> type:
    """Class decorator: one tool method per catalogue action (ids of ``city``)."""
    for spec in ACTIONS:
        setattr(cls, spec.name, make_tool(spec, city))
    return cls


def with_only_tools(env_cls: type, names: list[str]) -> type:
    """A subclass of a tool environment offering only the tools ``names`` (a shorter prompt for a small
    model: every schema costs prompt tokens). TRL offers every public *function* of the class as a
    tool, so each other tool is shadowed by a non-function attribute; the actions stay valid in the
    simulation, the model is just not shown them. Raises ``ValueError`` naming the valid tools."""
    offered = [n for n, _ in inspect.getmembers(env_cls, predicate=inspect.isfunction)
               if not n.startswith("_") and n not in ("reset", "get_reward")]
    unknown = [n for n in names if n not in offered]
    if unknown or not names:
        raise ValueError(f"unknown tool(s) {unknown or names!r}; valid: {', '.join(offered)}")
    hidden = {n: None for n in offered if n not in names}
    return type(env_cls.__name__, (env_cls,), {"__doc__": env_cls.__doc__, **hidden})
