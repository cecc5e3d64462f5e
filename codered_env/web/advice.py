"""Server-side help for the console: replay (task, seed, actions), then ask a built-in agent.

Everything here is a pure function of (task_id, seed, actions): the console sends the actions
played so far and gets back the running grade and what a built-in agent would do now (the
heuristic with the rule behind it), or the frames of a replay. Action
lists are capped by the caller (the route schema), so the work per request is bounded.
"""

from __future__ import annotations

import json
from typing import Any

from codered_env.agents import AGENT_SPECS, make_agent
from codered_env.replay import replay_frames as replay_frames  # re-exported: the server's route uses it
from codered_env.replay import replay_sim
from codered_env.sim import TASKS, CodeRedSim

# Grade keys that stay hidden until the episode is over: the per-patient rows name every
# patient's true condition, including callers no crew has reached yet.
_FINAL_ONLY = ("patients",)

# Why the heuristic (codered_env/agents/heuristic.py) chose an action type: the rule that fired.
RULES: dict[str, str] = {
    "triage_call": "Rule 1: every untriaged call is triaged first, from the caller's report.",
    "dispatch_ambulance": (
        "Rule 2: the most urgent waiting patient gets a unit first (P1 > P2 > P3, then the lowest "
        "vitals); a P1 gets the nearest ALS unless a BLS is more than 5 min closer, P2/P3 the "
        "nearest BLS."
    ),
    "request_mutual_aid": (
        "Rule 3: more patients and calls wait for a unit than units are free or already coming."
    ),
    "assign_hospital": (
        "Rule 4: the destination maximises care quality x 100 - travel minutes - 15 if crowded - "
        "25 if the needed OR is out of service - 40 if the specialist is unavailable; hospitals "
        "on diversion are excluded."
    ),
    "prepare_or": "Rule 5: the needed OR is readied at the destination of an inbound patient.",
    "preempt_or": (
        "Rule 5: a P1 patient is inbound and every capable room is running an elective case."
    ),
    "page_specialist": "Rule 5: the needed specialist is paged at an inbound patient's destination.",
    "query_blood_type": "Rule 6: a haemorrhaging patient is typed before blood is reserved.",
    "allocate_blood": (
        "Rule 6: 2 compatible units are reserved at the destination of a haemorrhaging patient "
        "(O-negative when the crew is about to arrive and the type is still unknown)."
    ),
    "maintain_plan": (
        "Rule 7: no rule fires: nothing to triage, dispatch, assign, prepare or reserve now."
    ),
}
RULES["dispatch_als"] = RULES["dispatch_bls"] = RULES["dispatch_ambulance"]


def agent_summary(agent_name: str) -> str:
    """What an agent other than the heuristic does, from the agent registry."""
    spec = AGENT_SPECS.get(agent_name)
    return f"The {agent_name} agent: {spec.summary}" if spec else ""


def _running_grade(sim: CodeRedSim) -> dict[str, Any]:
    grade = sim.grade()
    if sim.done:
        return grade
    return {k: v for k, v in grade.items() if k not in _FINAL_ONLY}


def _context(action: dict[str, Any], obs: dict[str, Any]) -> str:
    """What the action is about, in the observation's own words (never hidden information)."""
    notes = []
    for call in obs.get("calls", []):
        if call.get("call_id") in (action.get("call_id"), action.get("target_id")):
            notes.append(f"{call['call_id']}: \u201c{call['report']}\u201d")
    for patient in obs.get("patients", []):
        if patient.get("patient_id") in (action.get("patient_id"), action.get("target_id")):
            notes.append(f"{patient['patient_id']}: {patient['label']} ({patient['priority']})")
    return " ".join(notes)


def explain(action: dict[str, Any], obs: dict[str, Any]) -> str:
    """The heuristic rule behind ``action`` plus the call/patient it concerns."""
    rule = RULES.get(str(action.get("action_type")), "A rule of the heuristic agent fired.")
    context = _context(action, obs)
    return f"{rule} {context}".strip()


def advice(task_id: str, seed: int, actions: list[Any], agent_name: str = "heuristic") -> dict[str, Any]:
    """Running grade after ``actions`` and ``agent_name``'s next action with its reason.

    The agent is built fresh and sees only the current observation, so an autoplaying page
    that asks once per step never learns anything about the future (a whole continuation
    computed ahead would reveal calls that have not arrived yet)."""
    sim = replay_sim(task_id, seed, actions)
    answer: dict[str, Any] = {"step": sim.step_count, "done": bool(sim.done), "grade": _running_grade(sim)}
    if sim.done:
        answer["suggestion"] = None
        return answer
    obs = sim.observation()
    agent = make_agent(agent_name, seed + sim.step_count)
    agent.reset(task_id, seed)
    action = json.loads(json.dumps(agent.act(obs)))
    reason = explain(action, obs) if agent_name == "heuristic" else agent_summary(agent_name)
    answer["suggestion"] = {"agent": agent_name, "action": action, "reason": reason}
    return answer


def task_menu() -> list[dict[str, Any]]:
    return [
        {"task_id": t.task_id, "name": t.name, "phase": t.phase, "max_steps": t.max_steps}
        for t in TASKS.values()
    ]
