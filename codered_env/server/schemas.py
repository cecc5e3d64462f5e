"""Request and response bodies of the CodeRedEnv HTTP routes (beyond OpenEnv's own)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, model_validator

from codered_env.agents.roster import SERVED_AGENTS
from codered_env.city_choice import DEFAULT_CITY, MAX_CITY_SEED, city_key, valid_cities
from codered_env.models import CodeRedAction
from codered_env.sim import TASK_IDS

TaskId = Literal[TASK_IDS]  # type: ignore[valid-type]
BuiltinAgent = Literal[SERVED_AGENTS]  # type: ignore[valid-type]  # from the agent registry
BaselineAgent = Literal[(*SERVED_AGENTS, "llm")]  # type: ignore[valid-type]


def _json_integer(value: Any) -> Any:
    """JSON Schema counts 3.0 as an integer; accept it as 3 (strings and booleans stay out)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


SeedInt = Annotated[int, Field(ge=0, le=2**32 - 1, strict=True), BeforeValidator(_json_integer)]
def _city(value: Any) -> str:
    """The canonical name of a city given on the wire (ValueError: what is valid)."""
    return city_key(_json_integer(value))


CityChoice = Annotated[
    str,
    BeforeValidator(_city),
    WithJsonSchema({
        "anyOf": [
            {"type": "integer", "minimum": 0, "maximum": MAX_CITY_SEED},
            # the city's name, or a seed as digits (no leading zeros) or "gen-<seed>"; nine digits
            # at most here, so every string the schema admits is a city (seeds up to 2**32 - 1
            # are accepted as integers)
            {"type": "string", "pattern": f"^({DEFAULT_CITY}|(gen-)?(0|[1-9][0-9]{{0,8}}))$"},
            {"type": "null"},  # the default city
        ],
        "description": f"The city to play in: {valid_cities()}; null means {DEFAULT_CITY}.",
        "examples": [DEFAULT_CITY, 100000],
    }),
]
# Server-issued ids are 24 characters; 64 leaves room without letting clients send essays.
EpisodeIdStr = Annotated[str, Field(min_length=1, max_length=64)]

MAX_GRADER_ACTIONS = 500
MAX_BASELINE_SEEDS = 10


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ResetBody(_Body):
    """Body of ``POST /reset`` (all optional: an empty body starts task1 with seed 0)."""

    task_id: TaskId = Field(default="task1", description="Which task to play.")
    seed: SeedInt | None = Field(default=None, description="Episode seed (default 0).")
    city: CityChoice = DEFAULT_CITY
    episode_id: EpisodeIdStr | None = Field(
        default=None,
        description=(
            "Omit it to start a new episode (the server issues its id). The id of one of your "
            "live episodes restarts that episode; ids are never chosen by clients."
        ),
    )


class StepBody(_Body):
    """Body of ``POST /step``: the OpenEnv step request plus the episode to continue."""

    action: CodeRedAction
    episode_id: EpisodeIdStr = Field(description="The episode to continue (the id POST /reset returned).")
    timeout_s: float | None = Field(
        default=None, gt=0, description="Accepted for OpenEnv compatibility; a step never takes long."
    )
    request_id: str | None = Field(default=None, max_length=255)
    expect_step: int | None = Field(
        default=None,
        ge=0,
        le=100_000,
        description=(
            "The episode's step count as the client last saw it. A retry of a step whose answer was "
            "lost (the step count is one more and the last action is this one) is answered again "
            "instead of applied twice; any other mismatch is a 409 and nothing is applied."
        ),
    )


class EpisodeResponse(BaseModel):
    """OpenEnv's reset/step response shape plus the ``episode_id`` it belongs to."""

    observation: dict[str, Any]
    reward: float | None = None
    done: bool = False
    episode_id: str


# Fields of /grader that must not both be given (non-null), with their JSON types.
_GRADER_EXCLUSIVE = (
    ("episode_id", "actions"),
    ("episode_id", "task_id"),
    ("episode_id", "seed"),
    ("episode_id", "agent"),
    ("episode_id", "city"),
    ("agent", "actions"),
)
_GRADER_TYPES = {
    "episode_id": "string",
    "actions": "array",
    "task_id": "string",
    "seed": "integer",
    "agent": "string",
    "city": ["integer", "string"],
}


def _grader_schema(schema: dict[str, Any]) -> None:
    schema["not"] = {
        "anyOf": [
            {"required": [a, b], "properties": {a: {"type": _GRADER_TYPES[a]}, b: {"type": _GRADER_TYPES[b]}}}
            for a, b in _GRADER_EXCLUSIVE
        ]
    }


class GraderBody(_Body):
    """Body of ``POST /grader``: give ``actions`` (replay), or ``episode_id`` (live episode),
    or neither (the built-in ``agent`` plays ``task_id``/``seed``)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_grader_schema)

    task_id: TaskId | None = Field(default=None, description="Task (default task1).")
    seed: SeedInt | None = Field(default=None, description="Episode seed (default 0).")
    actions: list[CodeRedAction] | None = Field(
        default=None,
        max_length=MAX_GRADER_ACTIONS,
        description=(
            "Wire actions to replay from the start of the episode; each must match the action "
            "schema, exactly as a live episode requires (a schema-invalid action is a 422)."
        ),
    )
    episode_id: EpisodeIdStr | None = Field(default=None, description="A live HTTP episode's id.")
    agent: BuiltinAgent | None = Field(
        default=None,
        description="Built-in agent to run when neither actions nor episode_id is given (default heuristic).",
    )
    city: CityChoice | None = Field(default=None, description="City of the episode (default prakashnagar).")

    @model_validator(mode="after")
    def _one_mode(self) -> GraderBody:
        for a, b in _GRADER_EXCLUSIVE:
            if getattr(self, a) is not None and getattr(self, b) is not None:
                raise ValueError(
                    f"give either {a} or {b}, not both: episode_id grades a live episode, "
                    "actions are replayed on (task_id, seed), and agent plays (task_id, seed) "
                    "when neither is given"
                )
        return self


class BaselineBody(_Body):
    """Body of ``POST /baseline`` (all optional)."""

    agent: BaselineAgent = Field(default="heuristic", description="Agent to evaluate.")
    seeds: list[SeedInt] = Field(
        default_factory=lambda: [0, 1, 2],
        min_length=1,
        max_length=MAX_BASELINE_SEEDS,
        description="Seeds to play on every task.",
    )
    tasks: list[TaskId] | None = Field(
        default=None, min_length=1, max_length=5, description="Tasks (default: all five)."
    )
