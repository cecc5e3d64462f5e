"""The 14 actions (the public contract, docs/MODEL.md#actions) and their parsing.

The pydantic models are generated from the action catalogue (``catalogue.py``).

Wire shape: one flat JSON object ``{"action_type": "<name>", ...params}``. ``parse_action``
turns any input into either a validated model or a readable error that says what was wrong and
what would be valid; it never raises.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model, model_validator

from .catalogue import WIRE_ORDER, ActionSpec, ParamSpec, action_spec
from .params import ACTION_ID_MAX_CHARS, MEMO_ENTRIES, MEMO_MAX_TEXT

Id = Annotated[str, Field(min_length=1, max_length=ACTION_ID_MAX_CHARS)]


class _Base(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    # (parameter, its aliases...) groups of which at most one may be given (catalogue aliases)
    alias_groups: ClassVar[tuple[tuple[str, ...], ...]] = ()

    @model_validator(mode="after")
    def _at_most_one_of_each_group(self) -> _Base:
        for group in self.alias_groups:
            if sum(getattr(self, name) is not None for name in group) > 1:
                raise ValueError(f"give at most one of {', '.join(group)}")
        return self

    def resolved(self, name: str) -> Any:
        """A parameter's value, or that of whichever of its aliases was given."""
        for group in self.alias_groups:
            if group[0] == name:
                return next((getattr(self, n) for n in group if getattr(self, n) is not None), None)
        return getattr(self, name)


def wire_annotation(param: ParamSpec) -> Any:
    """The pydantic type of a catalogue parameter: a Literal of its choices, a bounded strict
    int, or an id string."""
    if param.kind == "enum":
        return Literal.__getitem__(param.choices)  # type: ignore[attr-defined]
    if param.kind == "int":
        return Annotated[int, Field(ge=param.minimum, le=param.maximum, strict=True)]
    return Id


def _annotation(param: ParamSpec) -> Any:
    base = wire_annotation(param)
    return (base, ...) if param.required else (base | None, None)


_ACRONYMS = frozenset({"als", "bls", "or"})


def _class_name(spec: ActionSpec) -> str:
    """``dispatch_als`` -> ``DispatchALS``: the model's name (and its JSON-schema title)."""
    return "".join(part.upper() if part in _ACRONYMS else part.capitalize() for part in spec.name.split("_"))


def _model(spec: ActionSpec) -> type[_Base]:
    """The pydantic model of one catalogue action: its advertised parameters and aliases."""
    fields: dict[str, Any] = {p.name: _annotation(p) for p in spec.wire_params}
    model = create_model(  # type: ignore[call-overload]
        _class_name(spec),
        __base__=_Base,
        __doc__=spec.help,
        __module__=__name__,
        action_type=(Literal.__getitem__(spec.name), spec.name),  # type: ignore[attr-defined]
        **fields,
    )
    model.alias_groups = spec.alias_groups()
    return model  # type: ignore[no-any-return]


# In wire order (the decisions, then the wait): error texts and schemas list them so.
ACTION_MODELS: tuple[type[_Base], ...] = tuple(_model(action_spec(name)) for name in WIRE_ORDER)
globals().update({m.__name__: m for m in ACTION_MODELS})  # importable by name, so instances pickle
MODEL_BY_TYPE: dict[str, type[_Base]] = {m.model_fields["action_type"].default: m for m in ACTION_MODELS}
ACTION_TYPES: tuple[str, ...] = tuple(MODEL_BY_TYPE)
PHASE_OF: dict[str, int | None] = {name: action_spec(name).phase for name in ACTION_TYPES}
Action = Annotated[Union[tuple(ACTION_MODELS)], Field(discriminator="action_type")]  # noqa: UP007
_ADAPTER: TypeAdapter[Any] = TypeAdapter(Action)


def action_json_schemas() -> dict[str, dict[str, Any]]:
    """JSON schema of each action type's parameters, keyed by action type."""
    return {name: model.model_json_schema() for name, model in MODEL_BY_TYPE.items()}


def _param_help(action_type: str) -> str:
    fields = MODEL_BY_TYPE[action_type].model_fields
    parts = []
    for name, info in fields.items():
        if name == "action_type":
            continue
        annotation = info.annotation
        args = getattr(annotation, "__args__", None)
        kind = (
            "|".join(str(a) for a in args)
            if args and all(isinstance(a, str) for a in args)
            else (getattr(annotation, "__name__", None) or str(annotation).replace("typing.", ""))
        )
        parts.append(f"{name}{'' if info.is_required() else '?'}: {kind}")
    return f"{action_type}({', '.join(parts)})"


def _format_errors(action_type: str, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"] if x != action_type) or "action"
        problems.append(f"{loc}: {err['msg']}")
    return f"invalid {action_type}: {'; '.join(problems)}. Expected {_param_help(action_type)}"


def parse_action(raw: object) -> tuple[Any | None, str | None]:
    """Validate a wire action. Returns (model, None) or (None, error message)."""
    if type(raw) is dict:
        try:  # built and hashed in C: the same items of the same types give the same answer
            seen = (tuple(raw.items()), tuple(map(type, raw.values())))
            answer = _PLAIN_ANSWERS.get(seen)
        except TypeError:  # an unhashable value (a list): the general path says what is wrong
            seen, answer = None, None
        if answer is not None:
            return answer
        key = _plain_key(raw)
        if key is not None:
            answer = _validate_memo(raw["action_type"], key)
            if seen is not None:
                if len(_PLAIN_ANSWERS) >= MEMO_ENTRIES:
                    _PLAIN_ANSWERS.clear()
                _PLAIN_ANSWERS[seen] = answer
            return answer
    if isinstance(raw, BaseModel) and type(raw) in ACTION_MODELS:
        return raw, None
    if isinstance(raw, BaseModel):
        raw = raw.model_dump(exclude_none=True)
    if not isinstance(raw, Mapping):
        return None, (
            f'an action must be a JSON object like {{"action_type": "maintain_plan"}}, '
            f"got {type(raw).__name__}"
        )
    action_type = raw.get("action_type")
    if not isinstance(action_type, str) or action_type not in MODEL_BY_TYPE:
        shown = repr(action_type) if action_type is not None else "nothing"
        return None, f"unknown action_type {shown[:40]}; valid action types: {', '.join(ACTION_TYPES)}"
    data = {k: v for k, v in raw.items() if k != "metadata"}
    if len(data) > _MEMO_MAX_FIELDS or not all(_memoisable(k) and _memoisable(v) for k, v in data.items()):
        return _validate(action_type, data)  # lists, dicts, long texts: not worth keeping
    return _validate_memo(action_type, tuple([(k, type(v), v) for k, v in data.items()]))


_PLAIN_VALUES = frozenset({int, float, bool, type(None)})
# (items, their types) of plain dicts ``_plain_key`` accepted -> the answer (models are frozen);
# the types tell True, 1 and 1.0 apart, which compare and hash equal
_PLAIN_ANSWERS: dict[tuple[tuple[tuple[Any, Any], ...], tuple[type, ...]], tuple[Any | None, str | None]] = {}


def _plain_key(raw: dict[str, Any]) -> tuple[tuple[str, type, Any], ...] | None:
    """The memo key ``parse_action`` would build for a plain dict of a known action type with
    short strings, numbers and None only (what agents send); None for anything else, which
    takes the general path."""
    action_type = raw.get("action_type")
    if len(raw) > _MEMO_MAX_FIELDS or "metadata" in raw or type(action_type) is not str:
        return None
    if action_type not in MODEL_BY_TYPE:
        return None
    key = []
    for k, v in raw.items():
        kind = type(v)
        if type(k) is not str or len(k) > MEMO_MAX_TEXT:
            return None
        if kind is str:
            if len(v) > MEMO_MAX_TEXT:
                return None
        elif kind not in _PLAIN_VALUES:
            return None
        key.append((k, kind, v))
    return tuple(key)


_MEMO_MAX_FIELDS = len(max(MODEL_BY_TYPE.values(), key=lambda m: len(m.model_fields)).model_fields)


def _memoisable(value: object) -> bool:
    """Small immutable values only, so a client sending huge ids cannot fill memory via the memo."""
    if isinstance(value, str):
        return len(value) <= MEMO_MAX_TEXT
    return value is None or isinstance(value, (int, float))


def _validate(action_type: str, data: dict[str, Any]) -> tuple[Any | None, str | None]:
    try:
        return _ADAPTER.validate_python(data), None
    except ValidationError as exc:
        return None, _format_errors(action_type, exc)


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _validate_memo(action_type: str, key: tuple[tuple[str, type, Any], ...]) -> tuple[Any | None, str | None]:
    """Validation of the same fields (names, types and values, in order) gives the same answer
    and the models are frozen, so an agent's repeated actions are validated once."""
    return _validate(action_type, {k: v for k, _, v in key})

