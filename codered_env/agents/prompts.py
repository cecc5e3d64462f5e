"""Prompts for the LLM agent: the system prompt and the per-turn user message.

Nothing here talks to a network or prints anything; the strings are built from the public
action contract (MODEL.md §3) and the rubric (MODEL.md §5), so the prompt stays in step with the
environment.  Keep the per-turn message compact: the observation text plus a bounded list of the
agent's most recent decisions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: One line per action type: the parameters and what the action does.
ACTION_HELP: dict[str, str] = {
    "dispatch_ambulance": "(ambulance_id, patient_id) Phase 1: send a unit to a known patient.",
    "dispatch_als": "(ambulance_id, call_id) Phase 2: send an ALS unit to a pending call.",
    "dispatch_bls": "(ambulance_id, call_id) Phase 2: send a BLS unit to a pending call.",
    "triage_call": (
        "(call_id, priority) Phase 2: classify a pending call as P1 immediate or P2 urgent "
        "(lights and sirens), P3 non-urgent (cold; also how an uncoded call is sent) or P4 "
        "no-dispatch advice (the call closes)."
    ),
    "assign_hospital": (
        "(patient_id, hospital_id) Set the destination the crew transports the patient to."
    ),
    "prepare_or": (
        "(hospital_id, procedure) Start readying an OR: cath_lab, trauma_surgery, "
        "stroke_intervention or general. Takes 15-30 min; wasted if unused."
    ),
    "page_specialist": (
        "(hospital_id, specialty) Call an on-call specialist in (10-20 min); wasted if unneeded."
    ),
    "preempt_or": (
        "(hospital_id, or_id) Stop an elective case to free its OR now (costs efficiency)."
    ),
    "allocate_blood": (
        "(patient_id, hospital_id, blood_type, units) Reserve blood at the destination. Untyped: "
        "uncross-matched O+ (men, older women) or O- (women of child-bearing age), issued in 5 min; "
        "typed: type-specific units are cross-matched 12 min after the patient reaches that lab."
    ),
    "transfer_blood": (
        "(from_hospital_id, to_hospital_id, blood_type, units) Move blood stock between hospitals."
    ),
    "request_mutual_aid": (
        "(optional target id) Ask the neighbouring district for an ALS unit (10-20 min away). "
        "Limited; unneeded requests are penalised."
    ),
    "query_blood_type": "(patient_id) Lab result arrives after 5 minutes.",
    "query_or_status": "(hospital_id) Detailed per-OR status: remaining minutes, prep timers.",
    "maintain_plan": "() Wait: the clock jumps to the next event that matters (a few minutes).",
}

_RUBRIC = """Grading (0-1, deterministic):
  0.32 time_score     - share of each patient's achievable treatment benefit still obtained
                       (falls with delay as the condition's outcome curve does)
  0.16 efficiency     - no wasted pages, unused OR preps, premature blood, invalid actions,
                       over-triage
  0.16 secondary_harm - outcome of secondary casualties
  0.16 prep_ready     - OR and specialist ready when each patient arrives
  0.10 vitals_score   - patients' vitals at treatment
  0.10 cascade_score  - cascades prevented or managed (overcrowding, news-cycle call surges)
  minus a penalty for unneeded or badly timed mutual-aid requests.
Components with nothing to measure are dropped and their weight is shared out. Doing nothing
scores near zero."""

_CLOCK = """Clock: each decision costs about 1 simulated minute; maintain_plan jumps ahead to
the next event that matters. The step budget is limited, so act early: dispatch the nearest suitable
unit, pick a hospital that can give definitive care (tier 1 for cath lab / thrombectomy), and
ready the OR and specialist so they are ready when the patient arrives - not much earlier.
Once everything useful is under way, use maintain_plan to let time pass."""

_TOOLS_FORMAT = (
    "Answer every turn by calling exactly one tool (one tool per action type). "
    "Ids must be copied exactly from the observation."
)

_TEXT_FORMAT = (
    "Answer every turn with exactly one JSON object and nothing else, e.g. "
    '{"action_type": "dispatch_ambulance", "ambulance_id": "ALS1", "patient_id": "P1"} '
    'or {"action_type": "maintain_plan"}. Ids must be copied exactly from the observation.'
)


def care_table() -> str:
    """Where each condition gets definitive care, from the simulation's own condition table."""
    from codered_env.sim.conditions import CONDITIONS

    lines = ["Definitive care (tier: treatment [procedure / specialist needed]):"]
    for cond in CONDITIONS.values():
        if not cond.care_by_tier:
            lines.append(f"- {cond.label} ({cond.true_priority}): no transport needed")
            continue
        options = []
        for tier, care in sorted(cond.care_by_tier.items()):
            needs = "/".join(x for x in (care.procedure, care.specialist) if x) or "nothing to prepare"
            options.append(f"T{tier} {care.label} [{needs}]")
        blood = ", needs blood" if cond.needs_blood else ""
        lines.append(f"- {cond.label} ({cond.true_priority}, target {cond.target_min} min{blood}): "
                     + "; ".join(options))
    return "\n".join(lines)


def action_catalogue(action_types: Sequence[str]) -> str:
    """Render the list of actions, one per line, in the given order."""
    lines = [f"- {name} {ACTION_HELP.get(name, '')}".rstrip() for name in action_types]
    return "\n".join(lines)


def build_system_prompt(action_types: Sequence[str], *, use_tools: bool) -> str:
    """The system prompt: role, actions, rubric, clock and answer format."""
    role = (
        "You are the emergency medical response coordinator of Prakashnagar, a mid-size Indian "
        "city (12 nodes, 3 hospitals: tier 1 AIIMS with cath lab, tier 2 District Hospital, "
        "tier 3 Community Health Centre for stabilisation only). You dispatch ambulances, triage "
        "108/112 calls, choose destination hospitals, ready ORs and specialists before patients "
        "arrive, manage blood and call for mutual aid, while roads close and hospitals divert. "
        "Every observation lists the clock, what happened, and the currently legal actions; an "
        "invalid action changes nothing, costs a minute and lowers efficiency. In call-queue tasks "
        "you see only what each caller says until a crew is on scene: triage from the report "
        "(P1 life threat, P2 urgent, P3 non-urgent, P4 advice only, no ambulance) and send ALS to "
        "the sickest callers."
    )
    answer = _TOOLS_FORMAT if use_tools else _TEXT_FORMAT
    return "\n\n".join(
        [role, "Actions:\n" + action_catalogue(action_types), care_table(), _RUBRIC, _CLOCK, answer]
    )


@dataclass(frozen=True)
class Decision:
    """One past decision, as remembered in the bounded history."""

    step: int
    action: Mapping[str, Any]
    error: str | None
    score_preview: float | None


def format_history(history: Sequence[Decision]) -> str:
    """Render the agent's recent decisions, oldest first, one line each."""
    if not history:
        return "Your recent decisions: none yet."
    lines = ["Your recent decisions (oldest first):"]
    for item in history:
        action = json.dumps(dict(item.action), separators=(",", ":"), sort_keys=True)
        outcome = f"error: {item.error}" if item.error else "ok"
        score = "" if item.score_preview is None else f"; score preview {item.score_preview:.3f}"
        lines.append(f"- step {item.step}: {action} -> {outcome}{score}")
    return "\n".join(lines)


def build_user_message(observation_text: str, history: Sequence[Decision]) -> str:
    """The per-turn user message: bounded history, then the current observation."""
    return (
        f"{format_history(history)}\n\nCurrent observation:\n{observation_text.strip()}\n\n"
        "Choose the single best next action."
    )
