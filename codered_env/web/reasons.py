"""Why the heuristic suggests an action, in plain words for the console's Suggest card.

``heuristic.RULES`` states each rule the way its code works (scores, penalties, tie-breaks);
a visitor wants the reason for *this* action: "C3 is the most urgent call waiting, and ALS2 is
the advanced unit that can get there soonest". ``plain_reason`` builds that sentence from the
rule that fired, the action and the observation the agent saw (never hidden information), and
falls back to the rule's own text for an action a rule does not normally produce.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from codered_env.agents.heuristic import BEFORE_ARRIVAL, RULES
from codered_env.sim.conditions import CONDITIONS

PRIORITY_WORDS = {"P1": "immediate", "P2": "urgent", "P3": "non-urgent", "P4": "advice only"}
UNIT_WORDS = {"ALS": "advanced (ALS)", "BLS": "basic (BLS)"}
ROOM_WORDS = {
    "cath_lab": "cath lab",
    "trauma_surgery": "trauma theatre",
    "stroke_intervention": "stroke intervention room",
    "general": "general theatre",
}
SPECIALIST_WORDS = {
    "cardiology": "cardiologist",
    "neurology": "neurologist",
    "trauma_surgery": "trauma surgeon",
    "obstetrics": "obstetrician",
}

Obs = Mapping[str, Any]
Action = Mapping[str, Any]


def _row(obs: Obs, part: str, key: str, value: Any) -> dict[str, Any]:
    return next((row for row in obs.get(part, []) if row.get(key) == value), {})


def _priority(priority: str | None) -> str:
    return f"priority {priority}, {PRIORITY_WORDS[priority]}" if priority in PRIORITY_WORDS else "not triaged"


def _case(obs: Obs, action: Action) -> tuple[str, str | None]:
    """The call or patient an action is about, named with what the dispatcher knows of it."""
    call = _row(obs, "calls", "call_id", action.get("call_id") or action.get("target_id"))
    if call:
        return f"Call {call['call_id']} ({_priority(call.get('priority'))})", call.get("priority")
    patient = _row(obs, "patients", "patient_id", action.get("patient_id") or action.get("target_id"))
    if patient:
        label = f"{patient.get('label')}; {_priority(patient.get('priority'))}"
        return f"{patient['patient_id']} ({label})", patient.get("priority")
    return "The case", None


def _inbound(obs: Obs, hospital_id: str, needs: Callable[[Any], bool]) -> str:
    """The patients on their way to ``hospital_id`` whose care there ``needs`` (a Care test)."""
    tier = _row(obs, "hospitals", "hospital_id", hospital_id).get("tier")
    names = []
    for p in obs.get("patients", []):
        condition = CONDITIONS.get(p.get("condition", ""))
        care = condition.care_at(tier) if condition and tier is not None else None
        if p.get("destination") == hospital_id and p.get("status") in BEFORE_ARRIVAL and care and needs(care):
            names.append(f"{p['patient_id']} ({p.get('label')})")
    return " and ".join(names) or "A patient"


def _triage(action: Action, obs: Obs) -> str:
    call = _row(obs, "calls", "call_id", action.get("call_id"))
    said = f" The caller says \u201c{call['report']}\u201d," if call.get("report") else ""
    return (
        f"Call {action.get('call_id')} is not triaged yet, and triage comes first: it decides how fast "
        f"and with which kind of unit the call is answered.{said} which reads as "
        f"{_priority(action.get('priority'))}."
    )


def _dispatch(action: Action, obs: Obs) -> str:
    case, priority = _case(obs, action)
    unit_id = action.get("ambulance_id")
    kind = _row(obs, "ambulances", "ambulance_id", unit_id).get("kind")
    if priority == "P1" and kind == "BLS":
        why = f"{unit_id}, a basic (BLS) unit, can get there clearly sooner than any advanced (ALS) unit."
    elif priority == "P1" or kind not in UNIT_WORDS:
        why = f"{unit_id} is the {UNIT_WORDS.get(kind, 'free')} unit that can get there soonest."
    elif kind == "ALS":
        why = f"No basic (BLS) unit can take it, so {unit_id}, an advanced (ALS) unit, goes."
    else:
        why = f"{unit_id} is the nearest basic (BLS) unit; advanced (ALS) units stay free for the sickest."
    return f"{case} is the most urgent case still waiting for a unit. {why}"


def _mutual_aid(action: Action, obs: Obs) -> str:
    target = f" The extra unit is meant for {_case(obs, action)[0]}." if action.get("target_id") else ""
    return (
        "More patients and calls are waiting for a unit than there are units free or on their way, "
        f"so ask the neighbouring district for an extra unit.{target}"
    )


def _assign(action: Action, obs: Obs) -> str:
    case = _case(obs, action)[0]
    hospital = _row(obs, "hospitals", "hospital_id", action.get("hospital_id"))
    name = f"{action.get('hospital_id')} {hospital.get('name', '')}".strip()
    return (
        f"{case} needs a hospital. {name} promises the best outcome, counting the drive, the care "
        "each hospital can give and how ready it is (crowding, operating rooms, specialists); "
        "hospitals on diversion are left out."
    )


def _prepare(action: Action, obs: Obs) -> str:
    room = ROOM_WORDS.get(action.get("procedure", ""), str(action.get("procedure")))
    hospital = action.get("hospital_id")
    who = _inbound(obs, hospital, lambda care: care.procedure == action.get("procedure"))
    return (
        f"{who}, on the way to {hospital}, will need the {room}. Readying a room takes time, so "
        "starting now has it ready when the patient arrives."
    )


def _page(action: Action, obs: Obs) -> str:
    doctor = SPECIALIST_WORDS.get(action.get("specialty", ""), f"{action.get('specialty')} specialist")
    hospital = action.get("hospital_id")
    who = _inbound(obs, hospital, lambda care: care.specialist == action.get("specialty"))
    return (
        f"{who}, on the way to {hospital}, will need a {doctor}, who is on call rather than in the "
        "hospital: paging now brings them in before the patient arrives."
    )


def _preempt(action: Action, obs: Obs) -> str:
    hospital = action.get("hospital_id")
    return (
        f"A P1 patient is on the way to {hospital}, and every room there that can treat them is busy "
        f"with a planned (elective) operation: stopping the one in {action.get('or_id')} frees the "
        "room in time. Stopping a planned case costs a little efficiency."
    )


def _blood(action: Action, obs: Obs) -> str:
    case = _case(obs, action)[0]
    patient = _row(obs, "patients", "patient_id", action.get("patient_id"))
    kind, hospital = action.get("blood_type"), action.get("hospital_id")
    untyped = " Group O can be given before the blood type is known;"
    if patient.get("blood_type"):
        which = f" {kind} suits {action.get('patient_id')}'s blood type ({patient['blood_type']})."
    elif kind == "O-":
        which = f"{untyped} O-negative is kept for women who may bear children."
    else:
        which = f"{untyped} O-positive spares the scarcer O-negative."
    return (
        f"{case} is bleeding and will need a transfusion at {hospital}: reserve "
        f"{action.get('units')} units of {kind} there now, so the blood is ready on arrival.{which}"
    )


def _type_blood(action: Action, obs: Obs) -> str:
    case = _case(obs, action)[0]
    return (
        f"{case} is bleeding, and the hospital it is going to has no suitable group O blood in stock: "
        "ask the lab for the patient's blood type, so that matching blood can be reserved."
    )


def _wait(action: Action, obs: Obs) -> str:
    return (
        "Nothing needs doing right now (nothing to triage, send, assign, prepare or reserve), "
        "so let the clock run to the next event."
    )


# Rule number (heuristic.RULES) -> {action type: plain reason}.
_BY_RULE: dict[int, dict[str, Callable[[Action, Obs], str]]] = {
    1: {"triage_call": _triage},
    2: dict.fromkeys(("dispatch_ambulance", "dispatch_als", "dispatch_bls"), _dispatch),
    3: {"request_mutual_aid": _mutual_aid},
    4: {"assign_hospital": _assign},
    5: {"prepare_or": _prepare, "page_specialist": _page, "preempt_or": _preempt},
    6: {"allocate_blood": _blood, "query_blood_type": _type_blood},
    7: {"maintain_plan": _wait},
}


def plain_reason(rule: int | None, action: Action, obs: Obs) -> str:
    """Why the heuristic's rule ``rule`` chose ``action`` in ``obs``, in plain words."""
    if rule is None or not 1 <= rule <= len(RULES):
        return ""
    explain = _BY_RULE.get(rule, {}).get(str(action.get("action_type")))
    if explain is None:
        return RULES[rule - 1][0].upper() + RULES[rule - 1][1:]
    return explain(action, obs)
