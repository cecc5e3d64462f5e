"""Wire types of the CodeRedEnv OpenEnv server and client: Action, Observation, State.

* :class:`CodeRedAction` is the flat wire action ``{"action_type": ..., **params}``. Its
  fields are the union of the parameters of the 14 actions of the action catalogue
  (:mod:`codered_env.sim.catalogue`; generated from it, as the ``action_type`` Literal is),
  and every instance is validated by the simulation's own per-action models, so a missing,
  misspelt or out-of-range parameter is a schema error (HTTP 422 / WebSocket
  ``VALIDATION_ERROR``). The published JSON schema is tight: a ``oneOf`` with one branch per
  action type that names its required parameters and allows no others.
* :class:`CodeRedObservation` types every key of the simulation's observation dict, plus
  ``text`` (the compact rendering for LLM prompts).
* :class:`CodeRedState` is what ``state`` returns: episode id, step count, task, seed, clock,
  running score and whether the episode is over.

This module imports openenv (for the base classes); ``codered_env.sim`` never imports it.
"""

from __future__ import annotations

from typing import Any, Literal

from openenv.core.env_server.types import Action, Observation, State
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    create_model,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from codered_env.sim.actions import ACTION_TYPES, MODEL_BY_TYPE, parse_action, wire_annotation
from codered_env.sim.catalogue import action_spec

ActionType: Any = Literal.__getitem__(ACTION_TYPES)  # type: ignore[attr-defined]


def _at_most_one(names: tuple[str, ...]) -> dict[str, Any]:
    pairs = [
        {"required": [a, b], "properties": {a: {"type": "string"}, b: {"type": "string"}}}
        for i, a in enumerate(names)
        for b in names[i + 1 :]
    ]
    return {"not": {"anyOf": pairs}}


def _action_variants() -> list[dict[str, Any]]:
    """One JSON-schema branch per action type: its required and its allowed parameters."""
    variants = []
    for name, model in MODEL_BY_TYPE.items():
        params = [f for f in model.model_fields if f != "action_type"]
        required = [f for f in params if model.model_fields[f].is_required()]
        properties = model.model_json_schema()["properties"]
        assert "$ref" not in str(properties), "action parameters must be inline schemas"
        variant: dict[str, Any] = {
            "title": name,
            "description": (model.__doc__ or name).strip().splitlines()[0],
            "properties": {**properties, "action_type": {"const": name}},
            "required": ["action_type", *required],
            "propertyNames": {"enum": ["action_type", "metadata", *params]},
        }
        for group in action_spec(name).alias_groups():  # at most one of a parameter and its aliases
            variant.update(_at_most_one(group))
        variants.append(variant)
    return variants


def _tighten_action_schema(schema: dict[str, Any]) -> None:
    schema["oneOf"] = _action_variants()


def _wire_fields() -> dict[str, Any]:
    """Every parameter of every action (first description wins), all optional on the flat model."""
    fields: dict[str, Any] = {}
    for name in ACTION_TYPES:
        for param in action_spec(name).wire_params:
            if param.name not in fields:
                annotation = wire_annotation(param)
                fields[param.name] = (annotation | None, Field(default=None, description=param.help))
    return fields


class _CodeRedActionBase(Action):
    """One dispatcher decision, in the flat wire shape ``{"action_type": ..., **params}``.

    Only the parameters of the chosen ``action_type`` may be given (see ``/tasks`` or the
    ``oneOf`` of this schema for each action's parameters).
    """

    model_config = ConfigDict(json_schema_extra=_tighten_action_schema)

    action_type: ActionType = Field(description=f"Which of the {len(ACTION_TYPES)} actions to take.")
    # The simulation's parsed form of the action, kept from validation (None when the model was
    # built without it): a server hands it to the simulation, which then does not check it again.
    _sim_action: Any = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _valid_for_its_type(cls, data: Any, handler: Any) -> Any:
        """Check the raw input against the simulation's model for its action type.

        This runs before field parsing so that a parameter that does not belong to the
        action type is refused even when it is ``null``, exactly as the schema says.
        """
        parsed = None
        if isinstance(data, dict):
            units = data.get("units")
            if isinstance(units, float) and units.is_integer():  # JSON Schema: 2.0 is 2
                data = {**data, "units": int(units)}
            parsed, error = parse_action(data)
            if error is not None:
                # A custom error keeps only strings in the error context, so the error list
                # stays JSON-serialisable (OpenEnv sends it back in VALIDATION_ERROR frames).
                raise PydanticCustomError("invalid_action", "{reason}", {"reason": error})
        action = handler(data)
        if parsed is not None and isinstance(action, _CodeRedActionBase):
            action._sim_action = parsed
        return action

    @property
    def sim_action(self) -> Any:
        """The simulation's parsed action (validated with this model), or None."""
        return self._sim_action

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if not name.startswith("_"):  # a changed field: the parsed form no longer matches
            super().__setattr__("_sim_action", None)

    def __eq__(self, other: object) -> bool:
        """Equal fields (and metadata) make equal actions, whether or not a parsed form is kept."""
        if not isinstance(other, BaseModel):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  # mutable, like every pydantic model

    def to_wire(self) -> dict[str, Any]:
        """The flat wire dict the simulation takes (unset parameters and metadata left out)."""
        return self.model_dump(exclude_none=True, exclude={"metadata"})


# The parameter fields come from the action catalogue (codered_env/sim/catalogue.py).
CodeRedAction = create_model(  # type: ignore[call-overload]
    "CodeRedAction",
    __base__=_CodeRedActionBase,
    __doc__=_CodeRedActionBase.__doc__,
    __module__=__name__,
    **_wire_fields(),
)


class CodeRedState(State):
    """The episode's bookkeeping, as returned by ``state`` (WebSocket) and ``GET /state``."""

    task_id: str | None = Field(default=None, description="Task of the current episode.")
    seed: int | None = Field(default=None, description="Seed of the current episode.")
    city: str = Field(
        default="prakashnagar", description='City of the current episode ("prakashnagar" or "gen-<seed>").'
    )
    clock_min: int = Field(default=0, description="Simulated minutes since the emergency began.")
    max_steps: int = Field(default=0, description="Step budget of the task.")
    score: float = Field(
        default=0.0,
        description="Running score preview in [0, 1]; the final score once the episode is done.",
    )
    total_reward: float = Field(default=0.0, description="Sum of the step rewards so far.")
    invalid_actions: int = Field(default=0, description="Steps answered with last_action_error.")
    done: bool = Field(default=False, description="Whether the episode is over.")


# ---------------------------------------------------------------------------- observation parts


class _Part(BaseModel):
    """Observation parts: every field the simulation sends is declared and typed.

    Extra keys are tolerated (and published as allowed) so that a newer simulation never
    breaks a running server; tests/server check that the declared fields match the sim.
    """

    model_config = ConfigDict(extra="allow")


class Vitals(_Part):
    """Displayed vitals; ``score`` is a 0-1 summary (0 dead .. 1 stable)."""

    hr: int
    sbp: int
    spo2: int
    rr: int
    gcs: int
    score: float


class PatientView(_Part):
    """A known patient (phase 2: only once a crew is on scene)."""

    patient_id: str
    condition: str
    label: str
    priority: str
    secondary: bool
    status: str
    node: str
    call_id: str | None
    sex: str = Field(description="'M' or 'F' (decides which uncross-matched group O is safe).")
    age: int
    vitals: Vitals
    blood_type: str | None = Field(description="Known only after query_blood_type returns.")
    ambulance_id: str | None
    destination: str | None = Field(description="Hospital chosen with assign_hospital.")
    hospital: str | None = Field(description="Hospital the patient is at / was treated at.")
    eta_min: int | None
    waiting_for: list[str] = Field(description="What treatment at the hospital waits for.")
    blood_reserved: dict[str, int] = Field(
        description="Units reserved for the patient and not yet used, per hospital_id."
    )
    minutes_since_call: int
    minutes_since_onset: int = Field(description="Since symptom onset (last known well).")
    treatment_start_min: int | None


class AmbulanceView(_Part):
    ambulance_id: str
    kind: str = Field(description="ALS or BLS.")
    mutual_aid: bool
    status: str
    node: str
    next_node: str | None
    destination: str | None
    eta_min: int | None
    busy_min: int | None
    patient_id: str | None
    call_id: str | None
    held: bool = Field(description="Waiting at a node because every route is closed.")


class OperatingRoomView(_Part):
    or_id: str
    procedures: list[str]
    state: str
    procedure: str | None
    patient_id: str | None
    elective: bool


class SpecialistView(_Part):
    state: str
    until: int | None


class HospitalView(_Part):
    hospital_id: str
    name: str
    tier: int
    node: str
    occupancy: int
    capacity: int
    crowded: bool
    diverted_until: int | None
    ors: list[OperatingRoomView]
    specialists: dict[str, SpecialistView]
    icu_free: int
    blood: dict[str, int] = Field(description="Units in stock per blood type (zeros omitted).")


class CallView(_Part):
    """A 108/112 call in the queue (phase 2); the caller's report, not the true condition."""

    call_id: str
    received_min: int
    waiting_min: int
    node: str
    report: str
    priority: str | None = Field(description="The agent's triage, if any.")
    status: str
    ambulance_id: str | None
    patient_id: str | None


class ClosedRoad(_Part):
    edge: list[str]
    until: int


class CongestedRoad(_Part):
    edge: list[str]
    factor: float
    until: int


class RoadsView(_Part):
    closed: list[ClosedRoad]
    congested: list[CongestedRoad]
    peak_hour: bool


class CityNode(_Part):
    node_id: str
    name: str
    kind: str


class CityRoad(_Part):
    edge: list[str]
    minutes: float
    label: str
    riverside: bool


class CityMap(_Part):
    """The public map of a generated city (every city but Prakashnagar, whose map is documented)."""

    id: str = Field(description='The city\'s name for reset: "gen-<seed>".')
    name: str
    hub: str
    entry_node: str = Field(description="Where mutual-aid units enter the city.")
    nodes: list[CityNode]
    roads: list[CityRoad]
    stations: dict[str, str] = Field(description="Home station (node id) of every unit.")


class MutualAidPending(_Part):
    unit_id: str
    arrives_min: int
    target_id: str | None


class MutualAidView(_Part):
    limit: int
    used: int
    remaining: int
    pending: list[MutualAidPending]


class OperatingRoomStatus(_Part):
    or_id: str
    procedures: list[str]
    state: str
    procedure: str | None
    minutes_left: int | None
    elective: bool
    patient_id: str | None


class ORStatusResult(_Part):
    """The answer to the last ``query_or_status``."""

    hospital_id: str
    at: int
    ors: list[OperatingRoomStatus]


LegalActions = dict[str, list[dict[str, list[Any]]]]


class CodeRedObservation(Observation):
    """What the agent sees after reset and after every step.

    ``text`` is the compact rendering of the same information for LLM prompts;
    ``legal_actions`` maps each action type that is legal now to options, each option
    mapping every parameter to its allowed values.
    """

    task_id: str
    seed: int
    step: int
    max_steps: int
    clock_min: int = Field(description="Simulated minutes since the emergency began.")
    minutes: int = Field(
        default=0,
        description="Simulated minutes the last decision took (discount per minute: gamma ** minutes).",
    )
    horizon_min: int
    phase: int = Field(description="1: patients known at the start; 2: patients arrive as calls.")
    patients: list[PatientView]
    ambulances: list[AmbulanceView]
    hospitals: list[HospitalView]
    calls: list[CallView]
    roads: RoadsView
    alerts: list[str]
    events: list[str] = Field(description="What happened since the last step.")
    mutual_aid: MutualAidView
    query_result: ORStatusResult | None
    score_preview: float = Field(description="Running score in [0, 1].")
    last_action_error: str | None = Field(
        description="Why the last action was invalid (the world did not change), else null."
    )
    legal_actions: LegalActions
    city: CityMap | None = Field(
        default=None, description="The map of a generated city; absent (null) for Prakashnagar."
    )
    text: str = Field(description="Compact text rendering for LLM prompts.")

    @classmethod
    def from_sim(cls, data: dict[str, Any], text: str, reward: float | None) -> CodeRedObservation:
        """Build from ``CodeRedSim.observation()`` and ``render_text()``."""
        return cls.model_validate({**data, "text": text, "reward": reward})

    @model_serializer(mode="wrap")
    def _without_absent_city(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Prakashnagar's observation has no ``city`` key (its map is documented): its dump
        has none either, as the simulation's dict and the wire form."""
        data = handler(self)
        if isinstance(data, dict) and data.get("city", ...) is None:
            del data["city"]
        return data


class WireObservation(CodeRedObservation):
    """A server-side observation that carries the simulation's JSON-ready dict unchanged.

    The WebSocket server sends thousands of these per second; building the nested models and
    dumping them again costs more than the rest of a step. A WireObservation skips both: it is
    created without validation and ``model_dump()`` returns the stored dict. The simulation's
    output is checked against this schema by the test suite (every task, random play). Its
    nested fields are plain dicts; ``CodeRedObservation.model_validate(obs.model_dump())``
    gives the typed form.
    """

    _wire: dict[str, Any] = PrivateAttr(default_factory=dict)

    @classmethod
    def from_sim(
        cls, data: dict[str, Any], text: str, reward: float | None
    ) -> WireObservation:
        wire = {**data, "text": text, "reward": reward, "metadata": {}}
        obs = cls.model_construct(**wire)
        obs._wire = wire
        return obs

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        exclude = kwargs.pop("exclude", None)
        if kwargs or not isinstance(exclude, (set, frozenset, type(None))):
            typed = CodeRedObservation.model_validate(self._wire)
            return typed.model_dump(exclude=exclude, **kwargs)
        skip = exclude or set()
        return {key: value for key, value in self._wire.items() if key not in skip}
