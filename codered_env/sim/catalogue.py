"""The action catalogue: the one table every action surface is derived from.

Per action: its name (the wire ``action_type``), the phases it is legal in, one help text, its
parameters (wire name, kind, help, what an id names, the allowed values or range) and the verb
the console shows. The wire models (``actions.py``, ``models.py``), the Gymnasium action order,
the LLM tools and prompt, the console verbs, the advice texts and the README table all come
from here; only this module and the handler registry (``handlers.HANDLERS``) list the actions.

Enumerations come from the data modules (``params.py``, ``triage.py``, ``tasks.py``), never
re-typed here. Pure Python: no I/O, no pydantic.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from .city import PRAKASHNAGAR, City
from .facilities import HOSPITAL_SPECS
from .params import (
    ACTION_ID_MAX_CHARS,
    BLOOD_TYPE_QUERY_MIN,
    BLOOD_TYPES,
    CATH_LAB_PREP_RANGE,
    CHILDBEARING_AGE_RANGE,
    MAX_BLOOD_UNITS_PER_ACTION,
    MUTUAL_AID_DELAY_RANGE,
    MUTUAL_AID_UNIT_PREFIX,
    OR_PREP_MIN_BY_TIER,
    PROCEDURES,
    SPECIALIST_PAGE_DELAY_BY_TIER,
    SPECIALTIES,
)
from .tasks import TASKS
from .triage import PRIORITIES

ParamKind = Literal["id", "enum", "int"]
PHASE_1, PHASE_2 = 1, 2
BOTH_PHASES = frozenset({PHASE_1, PHASE_2})


@dataclass(frozen=True)
class ParamSpec:
    """One parameter of an action, as it travels on the wire."""

    name: str  # wire name, e.g. "ambulance_id"
    kind: ParamKind
    help: str  # one sentence, for tool schemas and docstrings
    id_of: str | None = None  # kind "id": what the id names ("ambulance", "hospital", ...)
    choices: tuple[str, ...] = ()  # kind "enum": the allowed values
    minimum: int | None = None  # kind "int"
    maximum: int | None = None
    required: bool = True
    alias_of: str | None = None  # a wire-only alternative spelling of that parameter


@dataclass(frozen=True)
class ActionSpec:
    """One action: what it is called, when it is legal, what it takes and what it does."""

    name: str  # the wire action_type
    phases: frozenset[int]  # {1}, {2} or {1, 2}
    help: str  # one help text (prompts, tool descriptions, docstrings, README)
    params: tuple[ParamSpec, ...]  # in call order: ``name(v1, v2)`` lists them so
    verb: str  # the console's verb / button label
    # Wire-only alternative names of parameters (accepted, never advertised); at most one of a
    # parameter and its aliases may be given.
    aliases: tuple[ParamSpec, ...] = field(default=())

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @property
    def wire_params(self) -> tuple[ParamSpec, ...]:
        """Every parameter the wire accepts: the advertised ones, then the aliases."""
        return self.params + self.aliases

    @property
    def phase(self) -> int | None:
        """The one phase the action is limited to, or None when it is legal in both."""
        return next(iter(self.phases)) if len(self.phases) == 1 else None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (the console's ``GET /web/actions``): advertised parameters only."""
        return {
            "name": self.name,
            "phases": sorted(self.phases),
            "help": self.help,
            "verb": self.verb,
            "signature": call_signature(self),
            "params": [
                {k: list(v) if isinstance(v, tuple) else v
                 for k, v in asdict(p).items() if k != "alias_of" and v not in (None, ())}
                for p in self.params
            ],
        }

    def alias_groups(self) -> tuple[tuple[str, ...], ...]:
        """(parameter, its aliases...) for every parameter that has aliases."""
        groups = []
        for p in self.params:
            names = tuple(a.name for a in self.aliases if a.alias_of == p.name)
            if names:
                groups.append((p.name, *names))
        return tuple(groups)


# ------------------------------------------------------------------------------ enumerations
def _span(values: list[int]) -> str:
    return f"{min(values)}-{max(values)}"


_TIERS_WITH_ORS = {h.tier for h in HOSPITAL_SPECS if h.ors}
_TIERS_WITH_SPECIALISTS = {h.tier for h in HOSPITAL_SPECS if h.specialists}
_OR_PREP = _span([*CATH_LAB_PREP_RANGE, *(OR_PREP_MIN_BY_TIER[t] for t in _TIERS_WITH_ORS)])
_PAGE_DELAY = _span([m for t in _TIERS_WITH_SPECIALISTS for m in SPECIALIST_PAGE_DELAY_BY_TIER[t]])
_AID_DELAY = _span(list(MUTUAL_AID_DELAY_RANGE))
_CHILDBEARING = _span(list(CHILDBEARING_AGE_RANGE))
_MAX_MUTUAL_AID = max(t.mutual_aid_limit for t in TASKS.values())


def fixed_id_choices(city: City = PRAKASHNAGAR) -> dict[str, tuple[str, ...]]:
    """``id_of`` -> every id of that kind that can exist in any episode in ``city``: hospitals,
    operating rooms, ambulances (own fleet and the mutual-aid units a task may get), nodes.
    Patients and calls are numbered per episode and have no fixed set."""
    return {
        "ambulance": city.unit_ids
        + tuple(f"{MUTUAL_AID_UNIT_PREFIX}{n}" for n in range(1, _MAX_MUTUAL_AID + 1)),
        "hospital": city.hospital_ids,
        "or": tuple(dict.fromkeys(or_id for h in city.hospitals for or_id, _ in h.ors)),
        "node": city.node_ids,
    }


# ------------------------------------------------------------------------------ parameters
def _id(
    name: str, id_of: str, help_text: str, *, required: bool = True, alias_of: str | None = None
) -> ParamSpec:
    return ParamSpec(name, "id", help_text, id_of=id_of, required=required, alias_of=alias_of)


AMBULANCE = _id("ambulance_id", "ambulance", "The unit to send, e.g. 'ALS1'.")
PATIENT = _id("patient_id", "patient", "A known patient, e.g. 'P1'.")
CALL = _id("call_id", "call", "A call in the queue, e.g. 'C1'.")
HOSPITAL = _id("hospital_id", "hospital", "A hospital, e.g. 'H1'.")
OR = _id("or_id", "or", "An operating room of that hospital, e.g. 'OR2'.")
PRIORITY = ParamSpec(
    "priority", "enum", "Triage priority: P1 immediate, P2 urgent, P3 non-urgent, P4 advice only.",
    choices=PRIORITIES,
)
PROCEDURE = ParamSpec("procedure", "enum", "The procedure to ready the room for.", choices=PROCEDURES)
SPECIALTY = ParamSpec("specialty", "enum", "The specialist to page.", choices=SPECIALTIES)
BLOOD_TYPE = ParamSpec("blood_type", "enum", "ABO/Rh type of the units.", choices=BLOOD_TYPES)
UNITS = ParamSpec(
    "units", "int", "How many units of blood.", minimum=1, maximum=MAX_BLOOD_UNITS_PER_ACTION
)
FROM_HOSPITAL = _id("from_hospital_id", "hospital", "The hospital the units leave.")
TO_HOSPITAL = _id("to_hospital_id", "hospital", "The hospital that receives them.")
TARGET = _id(
    "target_id", "patient_or_call", "Optional: the waiting patient or call the unit is for.", required=False
)
_TARGET_ALIASES = (
    _id("patient_id", "patient", "Same as target_id, for a patient.", required=False, alias_of="target_id"),
    _id("call_id", "call", "Same as target_id, for a call.", required=False, alias_of="target_id"),
)

# ------------------------------------------------------------------------------ the catalogue
# Gymnasium order: the wait first (always action index 0), then the decisions.
ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec(
        "maintain_plan", BOTH_PHASES, "Wait: the clock jumps to the next event that matters.", (), "advance"
    ),
    ActionSpec(
        "dispatch_ambulance", frozenset({PHASE_1}), "Send a unit to a known patient.",
        (AMBULANCE, PATIENT), "dispatch",
    ),
    ActionSpec(
        "dispatch_als", frozenset({PHASE_2}), "Send an ALS unit to a pending call.",
        (AMBULANCE, CALL), "send ALS",
    ),
    ActionSpec(
        "dispatch_bls", frozenset({PHASE_2}), "Send a BLS unit to a pending call.",
        (AMBULANCE, CALL), "send BLS",
    ),
    ActionSpec(
        "triage_call", frozenset({PHASE_2}),
        "Classify a call: P1/P2 lights+sirens, P3 cold (as if uncoded), P4 advice (closes it).",
        (CALL, PRIORITY), "triage",
    ),
    ActionSpec(
        "assign_hospital", BOTH_PHASES, "Set the hospital the crew transports the patient to.",
        (PATIENT, HOSPITAL), "assign to",
    ),
    ActionSpec(
        "prepare_or", BOTH_PHASES, f"Start readying an OR ({_OR_PREP} min); wasted if unused.",
        (HOSPITAL, PROCEDURE), "prepare OR",
    ),
    ActionSpec(
        "page_specialist", BOTH_PHASES,
        f"Call an on-call specialist in ({_PAGE_DELAY} min); wasted if unneeded.",
        (HOSPITAL, SPECIALTY), "page",
    ),
    ActionSpec(
        "preempt_or", BOTH_PHASES, "Stop an elective case to free its OR now (costs efficiency).",
        (HOSPITAL, OR), "pre-empt OR",
    ),
    ActionSpec(
        "allocate_blood", BOTH_PHASES,
        f"Reserve blood: untyped O+/O- (O- only for women {_CHILDBEARING}); "
        "typed: compatible, cross-matched.",
        (PATIENT, HOSPITAL, BLOOD_TYPE, UNITS), "reserve blood",
    ),
    ActionSpec(
        "transfer_blood", BOTH_PHASES, "Move blood stock between hospitals.",
        (FROM_HOSPITAL, TO_HOSPITAL, BLOOD_TYPE, UNITS), "transfer blood",
    ),
    ActionSpec(
        "request_mutual_aid", BOTH_PHASES,
        f"Ask the next district for an ALS unit ({_AID_DELAY} min); penalised if unneeded.",
        (TARGET,), "mutual aid", aliases=_TARGET_ALIASES,
    ),
    ActionSpec(
        "query_blood_type", BOTH_PHASES, f"Lab blood type; result after {BLOOD_TYPE_QUERY_MIN} min.",
        (PATIENT,), "type blood",
    ),
    ActionSpec(
        "query_or_status", BOTH_PHASES, "Per-OR status with remaining minutes.", (HOSPITAL,), "OR status"
    ),
)
ACTION_NAMES: tuple[str, ...] = tuple(a.name for a in ACTIONS)
NOOP = ACTION_NAMES[0]
#: The no-op wire action: the agents' default, every loop's fallback, the Gymnasium action 0.
MAINTAIN_PLAN: dict[str, str] = {"action_type": NOOP}
# Texts, schemas and tool lists name the decisions first and the wait last (the order of
# ``sim.ACTION_TYPES``, error messages and recorded prompts).
WIRE_ORDER: tuple[str, ...] = (*ACTION_NAMES[1:], NOOP)
_BY_NAME: dict[str, ActionSpec] = {a.name: a for a in ACTIONS}


def action_spec(name: str) -> ActionSpec:
    """The spec of one action; a ValueError naming the valid ones for an unknown name."""
    spec = _BY_NAME.get(name) if isinstance(name, str) else None
    if spec is None:
        raise ValueError(f"unknown action_type {name!r}; valid action types: {', '.join(WIRE_ORDER)}")
    return spec


def param_spec(param: ParamSpec, fixed: dict[str, tuple[str, ...]] | None = None) -> dict[str, Any]:
    """JSON Schema of one parameter: enums for choices and fixed ids, bounds for integers."""
    ids = (fixed if fixed is not None else fixed_id_choices()).get(param.id_of or "")
    if param.kind == "enum":
        schema: dict[str, Any] = {"type": "string", "enum": list(param.choices)}
    elif param.kind == "int":
        schema = {"type": "integer", "minimum": param.minimum, "maximum": param.maximum}
    elif ids:
        schema = {"type": "string", "enum": list(ids)}
    else:
        schema = {"type": "string", "minLength": 1, "maxLength": ACTION_ID_MAX_CHARS}
    return {**schema, "description": param.help}


def input_schema(spec: ActionSpec, city: City = PRAKASHNAGAR) -> dict[str, Any]:
    """JSON Schema (an object) of an action's advertised parameters, for tool definitions (ids
    enumerated as ``city`` has them)."""
    fixed = fixed_id_choices(city)
    return {
        "type": "object",
        "description": spec.help,
        "properties": {p.name: param_spec(p, fixed) for p in spec.params},
        "required": [p.name for p in spec.params if p.required],
        "additionalProperties": False,
    }


def call_signature(spec: ActionSpec) -> str:
    """``name(p1, p2)`` in call order (how prompts and history lines write an action)."""
    return f"{spec.name}({', '.join(spec.param_names)})"


def catalogue_payload() -> dict[str, Any]:
    """The whole catalogue as JSON-ready data, in Gymnasium order, with the no-op named."""
    return {"noop": NOOP, "actions": [spec.as_dict() for spec in ACTIONS]}


def _param_cell(param: ParamSpec) -> str:
    if param.kind == "enum":
        text = f"{param.name} ({' / '.join(param.choices)})"
    elif param.kind == "int":
        text = f"{param.name} ({param.minimum}-{param.maximum})"
    else:
        text = param.name
    return text if param.required else f"optional {text}"


def markdown_table() -> str:
    """The README's action table (tests/test_catalogue.py checks the README carries it)."""
    rows = ["| action_type | parameters | phase | what it does |", "|---|---|---|---|"]
    for name in WIRE_ORDER:
        spec = action_spec(name)
        params = ", ".join(_param_cell(p) for p in spec.params) or "--"
        phases = "+".join(str(p) for p in sorted(spec.phases))
        rows.append(f"| {name} | {params} | {phases} | {spec.help} |")
    return "\n".join(rows)
