"""Server-side help for the console: replay (task, seed, actions), then ask a built-in agent.

Everything here is a pure function of (task_id, seed, actions): the console sends the actions
played so far and gets back the running grade and what a built-in agent would do now (the
heuristic with the rule behind it), or the frames of a replay. Action
lists are capped by the caller (the route schema), so the work per request is bounded.
"""

from __future__ import annotations

import json
from typing import Any

from codered_env.agents import make_agent
from codered_env.agents.heuristic import RULES
from codered_env.sim import TASKS, CodeRedSim
from codered_env.sim.catalogue import action_spec
from codered_env.viewer import public_view

# Grade keys that stay hidden until the episode is over: the per-patient rows name every
# patient's true condition, including callers no crew has reached yet.
_FINAL_ONLY = ("patients",)

OTHER_AGENTS: dict[str, str] = {
    "random": "The random agent: a uniformly random legal action (seeded by episode seed + step).",
    "noop": "The noop agent: always maintain_plan.",
}


def replay_sim(task_id: str, seed: int, actions: list[Any]) -> CodeRedSim:
    """The simulation after ``actions`` (actions past the end of the episode are ignored)."""
    sim = CodeRedSim(task_id, seed)
    for action in actions:
        if sim.done:
            break
        sim.step(action)
    return sim


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


def action_help(action: dict[str, Any]) -> str:
    """What the action does: its help text in the action catalogue."""
    try:
        return action_spec(str(action.get("action_type"))).help
    except ValueError:
        return ""


def explain(action: dict[str, Any], obs: dict[str, Any], rule: int | None = None) -> str:
    """Why the heuristic chose ``action`` (rule ``rule`` of ``heuristic.RULES``), what the action
    does (the catalogue's help) and the call/patient it concerns."""
    why = f"Rule {rule}: {RULES[rule - 1]}" if rule is not None and 1 <= rule <= len(RULES) else ""
    return " ".join(part for part in (why, action_help(action), _context(action, obs)) if part)


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
    if agent_name == "heuristic":
        reason = explain(action, obs, getattr(agent, "last_rule", None))
    else:
        reason = " ".join(p for p in (OTHER_AGENTS.get(agent_name, ""), action_help(action)) if p)
    answer["suggestion"] = {"agent": agent_name, "action": action, "reason": reason}
    return answer


def replay_frames(task_id: str, seed: int, actions: list[Any]) -> list[dict[str, Any]]:
    """Viewer frames (see ``codered_env.viewer``) of ``actions`` replayed on (task, seed)."""
    sim = CodeRedSim(task_id, seed)
    frames = [{"observation": public_view(sim.observation()), "action": None, "reward": None, "error": None}]
    for action in actions:
        if sim.done:
            break
        result = sim.step(action)
        frames.append(
            {
                "observation": public_view(sim.observation()),
                "action": json.loads(json.dumps(action, default=repr)),
                "reward": result.reward,
                "error": result.error,
            }
        )
    return frames


def task_menu() -> list[dict[str, Any]]:
    return [
        {"task_id": t.task_id, "name": t.name, "phase": t.phase, "max_steps": t.max_steps}
        for t in TASKS.values()
    ]
