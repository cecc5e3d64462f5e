"""The 14 actions (the public contract of MODEL.md section 3) and their parsing.

Wire shape: one flat JSON object ``{"action_type": "<name>", ...params}``. ``parse_action``
turns any input into either a validated model or a readable error that says what was wrong and
what would be valid; it never raises.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from .params import BLOOD_TYPES, MAX_BLOOD_UNITS_PER_ACTION, MEMO_ENTRIES, MEMO_MAX_TEXT

Priority = Literal["P1", "P2", "P3", "P4"]
Procedure = Literal["cath_lab", "trauma_surgery", "stroke_intervention", "general"]
Specialty = Literal["cardiology", "neurology", "trauma_surgery", "obstetrics"]
BloodType = Literal["O-", "O+", "A-", "A+", "B-", "B+", "AB-", "AB+"]
assert set(BloodType.__args__) == set(BLOOD_TYPES)  # type: ignore[attr-defined]

Units = Annotated[int, Field(ge=1, le=MAX_BLOOD_UNITS_PER_ACTION, strict=True)]
Id = Annotated[str, Field(min_length=1, max_length=32)]


class _Base(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DispatchAmbulance(_Base):
    """Phase 1: send a unit to a known patient."""

    action_type: Literal["dispatch_ambulance"] = "dispatch_ambulance"
    ambulance_id: Id
    patient_id: Id


class DispatchALS(_Base):
    """Phase 2: send an ALS (paramedic) unit to a pending call."""

    action_type: Literal["dispatch_als"] = "dispatch_als"
    ambulance_id: Id
    call_id: Id


class DispatchBLS(_Base):
    """Phase 2: send a BLS unit to a pending call."""

    action_type: Literal["dispatch_bls"] = "dispatch_bls"
    ambulance_id: Id
    call_id: Id


class TriageCall(_Base):
    """Phase 2: classify a pending call P1 immediate .. P4 no-dispatch advice."""

    action_type: Literal["triage_call"] = "triage_call"
    call_id: Id
    priority: Priority


class AssignHospital(_Base):
    """Set the hospital the crew will transport the patient to."""

    action_type: Literal["assign_hospital"] = "assign_hospital"
    patient_id: Id
    hospital_id: Id


class PrepareOR(_Base):
    """Start readying an operating room (or the cath lab) for a procedure."""

    action_type: Literal["prepare_or"] = "prepare_or"
    hospital_id: Id
    procedure: Procedure


class PageSpecialist(_Base):
    """Call an on-call specialist in to the hospital."""

    action_type: Literal["page_specialist"] = "page_specialist"
    hospital_id: Id
    specialty: Specialty


class PreemptOR(_Base):
    """Stop an elective case to free its OR now (costs efficiency)."""

    action_type: Literal["preempt_or"] = "preempt_or"
    hospital_id: Id
    or_id: Id


class AllocateBlood(_Base):
    """Reserve blood units for a patient at a hospital."""

    action_type: Literal["allocate_blood"] = "allocate_blood"
    patient_id: Id
    hospital_id: Id
    blood_type: BloodType
    units: Units


class TransferBlood(_Base):
    """Move blood stock between hospitals by road."""

    action_type: Literal["transfer_blood"] = "transfer_blood"
    from_hospital_id: Id
    to_hospital_id: Id
    blood_type: BloodType
    units: Units


class RequestMutualAid(_Base):
    """Ask the neighbouring district for an ALS unit; optionally name the patient/call it is for."""

    action_type: Literal["request_mutual_aid"] = "request_mutual_aid"
    target_id: Id | None = None
    patient_id: Id | None = None
    call_id: Id | None = None

    @model_validator(mode="after")
    def _one_target(self) -> RequestMutualAid:
        given = [v for v in (self.target_id, self.patient_id, self.call_id) if v is not None]
        if len(given) > 1:
            raise ValueError("give at most one of target_id, patient_id, call_id")
        return self

    @property
    def target(self) -> str | None:
        return self.target_id or self.patient_id or self.call_id


class QueryBloodType(_Base):
    """Order the patient's ABO/Rh type; the result arrives 5 minutes later."""

    action_type: Literal["query_blood_type"] = "query_blood_type"
    patient_id: Id


class QueryORStatus(_Base):
    """Detailed per-OR status of a hospital (remaining minutes, preparation timers)."""

    action_type: Literal["query_or_status"] = "query_or_status"
    hospital_id: Id


class MaintainPlan(_Base):
    """Wait: advance to the next event that matters (at most 10 minutes)."""

    action_type: Literal["maintain_plan"] = "maintain_plan"


ACTION_MODELS: tuple[type[_Base], ...] = (
    DispatchAmbulance,
    DispatchALS,
    DispatchBLS,
    TriageCall,
    AssignHospital,
    PrepareOR,
    PageSpecialist,
    PreemptOR,
    AllocateBlood,
    TransferBlood,
    RequestMutualAid,
    QueryBloodType,
    QueryORStatus,
    MaintainPlan,
)
MODEL_BY_TYPE: dict[str, type[_Base]] = {m.model_fields["action_type"].default: m for m in ACTION_MODELS}
ACTION_TYPES: tuple[str, ...] = tuple(MODEL_BY_TYPE)
PHASE_OF: dict[str, int | None] = {t: None for t in ACTION_TYPES} | {
    "dispatch_ambulance": 1,
    "dispatch_als": 2,
    "dispatch_bls": 2,
    "triage_call": 2,
}
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

