"""Prompts for the LLM agent, laid out for prefix caching.

A request is ``[system, user]``:

* the **system prompt** is fixed for the whole run (it depends only on the answer mode: tools or
  text) and byte-stable, so a server's prompt cache reuses it on every call;
* the **user message** starts with the bounded history of the agent's own decisions in a stable
  form (one line per decision in call syntax, rendered once and never rewritten; it is trimmed in
  chunks, so consecutive calls share most of it), then the **changing state** (the observation's
  compact text without its legal-action line), and - in text mode only - the legal actions in
  call syntax and the one-line answer format, repeated last where small models look.

In tools mode the legal actions travel as per-step tool schemas (see ``llm.legal_tools``) and are
not repeated in the prompt.  Nothing here talks to a network or prints anything.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from codered_env.sim.catalogue import WIRE_ORDER, action_spec

#: Parameters of each action type, in the order ``name(v1, v2)`` lists them, and its help text:
#: both from the action catalogue (``codered_env.sim.catalogue``).
ACTION_PARAMS: dict[str, tuple[str, ...]] = {name: action_spec(name).param_names for name in WIRE_ORDER}
ACTION_HELP: dict[str, str] = {name: action_spec(name).help for name in WIRE_ORDER}

_ROLE = (
    "You are the EMS dispatcher of Prakashnagar, India. Hospitals: H1 tier 1 (cath lab), H2 tier 2, "
    "H3 tier 3 (stabilise only). One action per turn; invalid ones waste a minute."
)
_CALLS = (
    " Calls (108/112): you hear only the caller until a crew is on scene; triage from the report, "
    "ALS to the sickest."
)

_STRATEGY = (
    "Score: treated near target time; OR and specialist ready on arrival; no waste (pages, preps, "
    "blood, invalid actions{calls_waste}). Plan: nearest unit, a hospital with definitive "
    "care, its OR prepared, its specialist paged, then maintain_plan."
)
_CALLS_WASTE = ", ALS to minor calls"

TOOLS_FORMAT = "Call exactly one tool; copy ids exactly."

TEXT_FORMAT = (
    "Answer with ONE line: the action in call syntax, values in the listed parameter order, e.g. "
    "dispatch_ambulance(ALS1, P1) or triage_call(C2, P1) or maintain_plan(). No other text."
)


def care_table(conditions: Sequence[str] | None = None) -> str:
    """Where each condition gets definitive care, from the simulation's own condition table;
    conditions with the same care share a line. ``conditions`` limits it to those keys."""
    from codered_env.sim.conditions import CONDITIONS

    lines: dict[str, list[str]] = {}
    on_scene: list[str] = []
    for key, cond in CONDITIONS.items():
        if conditions is not None and key not in conditions:
            continue
        if not cond.care_by_tier:
            on_scene.append(f"{cond.label} {cond.true_priority}")
            continue
        head = f"{cond.true_priority} {cond.target_min}m"
        if cond.needs_blood:
            head += " needs blood"
        by_care: dict[str, list[str]] = {}
        for tier, care in sorted(cond.care_by_tier.items()):
            needs = "+".join(dict.fromkeys(x for x in (care.procedure, care.specialist) if x))
            by_care.setdefault(care.label + (f" [{needs}]" if needs else ""), []).append(f"T{tier}")
        body = "; ".join(f"{'/'.join(t)} {label}" for label, t in by_care.items()) or "no transport"
        lines.setdefault(f"{head}: {body}", []).append(cond.label)
    rows = [f"- {'/'.join(labels)} {rest}" for rest, labels in lines.items()]
    if on_scene:
        rows.append("- no transport: " + ", ".join(on_scene))
    return "Care (tier, treatment [OR + specialist]):\n" + "\n".join(rows)


def action_catalogue(action_types: Sequence[str]) -> str:
    """One line per action type in call syntax (text mode only)."""
    return "\n".join(
        f"- {name}({', '.join(ACTION_PARAMS.get(name, ()))}) {ACTION_HELP.get(name, '')}".rstrip()
        for name in action_types
    )


def build_system_prompt(action_types: Sequence[str], *, use_tools: bool, task_id: str | None = None) -> str:
    """The fixed part of every request: identical bytes for every call of a run in one mode.

    With a ``task_id`` it covers only what that task can produce: the care rows of its possible
    conditions and, for phase-1 tasks (no calls), no call-handling text. Phase-2 tasks and an
    unknown task get the full prompt."""
    from codered_env.sim.generator import possible_conditions
    from codered_env.sim.tasks import TASKS

    task = TASKS.get(task_id) if task_id else None
    has_calls = task is None or task.phase == 2
    conditions = possible_conditions(task.task_id) if task is not None else None
    role = _ROLE + (_CALLS if has_calls else "")
    strategy = _STRATEGY.format(calls_waste=_CALLS_WASTE if has_calls else "")
    parts = [role, care_table(conditions), strategy]
    if use_tools:
        parts.append(TOOLS_FORMAT)
    else:
        parts.append("Actions:\n" + action_catalogue(action_types))
        parts.append(TEXT_FORMAT)
    return "\n\n".join(parts)


# --------------------------------------------------------------------------- history

MAX_VALUE_CHARS = 16
MAX_ERROR_CHARS = 60


def short_value(value: Any) -> str:
    """A parameter value as shown in history: long (usually invalid) ids are cut short, so a
    garbled id is not copied back into the next answer at full length."""
    text = " ".join(str(value).split())
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 4] + "..."


def call_syntax(action: Mapping[str, Any]) -> str:
    """``name(v1, v2)`` in the action type's parameter order; unknown keys as ``k=v``."""
    name = str(action.get("action_type", "?"))
    order = ACTION_PARAMS.get(name, ())
    values = [short_value(action[p]) for p in order if action.get(p) is not None]
    extra = [f"{short_value(k)}={short_value(v)}" for k, v in action.items()
             if k not in order and k != "action_type" and v is not None]
    shown = name if name in ACTION_PARAMS else short_value(name)
    return f"{shown}({', '.join(values + extra)})"


@dataclass(frozen=True)
class Decision:
    """One past decision, as remembered in the bounded history."""

    step: int
    action: Mapping[str, Any]
    error: str | None
    score_preview: float | None = None

    def line(self) -> str:
        """The decision's history line: fixed once the decision is made."""
        outcome = "ok"
        if self.error:
            outcome = "ERROR " + " ".join(self.error.split())[:MAX_ERROR_CHARS]
        return f"s{self.step} {call_syntax(self.action)} -> {outcome}"


def format_history(history: Sequence[Decision]) -> str:
    """The agent's recent decisions, oldest first, one stable line each."""
    if not history:
        return "Your last actions: none yet."
    return "Your last actions:\n" + "\n".join(item.line() for item in history)


# --------------------------------------------------------------------------- state


MAX_OBSERVATION_CHARS = 12_000


def observation_text(observation: Mapping[str, Any]) -> str:
    """The full text of an observation: its ``text`` field, else ``sim.render_text``, else
    compact JSON; bounded in length."""
    text = observation.get("text")
    if not isinstance(text, str) or not text.strip():
        text = _rendered(observation, compact=False, tools=False)
    if text is None:
        body = {k: v for k, v in observation.items() if k not in ("text", "legal_actions")}
        text = json.dumps(body, separators=(",", ":"), default=str, sort_keys=True)
        legal = observation.get("legal_actions")
        if legal:
            text += "\nLEGAL: " + json.dumps(legal, separators=(",", ":"), default=str)
    return text[:MAX_OBSERVATION_CHARS]


def _rendered(observation: Mapping[str, Any], *, compact: bool, tools: bool) -> str | None:
    from codered_env.sim.render_lines import lines_text, render_lines

    try:
        lines = render_lines(dict(observation), compact=compact, blood_stock=not tools, legal=not tools)
    except Exception:  # an observation the renderer cannot read (missing or odd fields)
        return None
    text = lines_text(lines)
    return text if text.strip() else None


def compact_state(observation: Mapping[str, Any], *, tools: bool) -> str:
    """The observation's state for the prompt, built from its keyed lines (``render_lines`` in
    compact form): no task/seed banner, no hospital names (the system prompt names them), no unit
    kind where the id already says it (``ALS1``, not ``ALS1(ALS)``), on-call specialists grouped
    (``on_call cardio,neuro``), no ``dest -`` / ``blood ?`` fields (nothing chosen / not typed
    yet); with tools also no legal-action line and no blood stock, which the tools' enums carry
    (blood types in stock, unit bounds). An observation the renderer cannot read is shown as
    ``observation_text`` gives it."""
    text = _rendered(observation, compact=True, tools=tools)
    return (observation_text(observation) if text is None else text)[:MAX_OBSERVATION_CHARS]


def _values(values: Sequence[Any]) -> str:
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        low, high = min(values), max(values)
        return str(low) if low == high else f"{low}-{high}"
    return "/".join(str(v) for v in values)


def legal_text(legal: Mapping[str, Sequence[Mapping[str, Sequence[Any]]]]) -> str:
    """Every legal action in call syntax; ``a/b`` lists choices, ``1-6`` a range of units."""
    lines = []
    for name, options in legal.items():
        shown = []
        for option in options:
            order = [p for p in ACTION_PARAMS.get(name, ()) if p in option]
            order += [p for p in option if p not in order]
            shown.append(f"{name}({', '.join(_values(list(option[p])) for p in order)})")
        lines.append(" | ".join(dict.fromkeys(shown)))
    return "\n".join(lines)


def build_user_message(state_text: str, history: Sequence[Decision], *,
                       legal: Mapping[str, Any] | None = None, use_tools: bool = True) -> str:
    """History first (stable), then the changing state; in text mode the legal actions and the
    answer format close the message."""
    parts = [format_history(history), "NOW:\n" + state_text.strip()]
    if not use_tools:
        if legal:
            parts.append("Legal actions now:\n" + legal_text(legal))
        parts.append(TEXT_FORMAT)
    return "\n\n".join(parts)
