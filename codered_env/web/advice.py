"""Server-side help for the console: replay (task, seed, actions), then ask a built-in agent.

Everything here is a pure function of (task_id, seed, actions): the console sends the actions
played so far and gets back the running grade and what a built-in agent would do now (the
heuristic with the rule behind it and why, in plain words: ``reasons.plain_reason``), or the
frames of a replay. Action
lists are capped by the caller (the route schema), so the work per request is bounded.
"""

from __future__ import annotations

import json
from typing import Any

from codered_env.agents import AGENT_SPECS, make_agent
from codered_env.replay import replay_frames as replay_frames  # re-exported: the server's route uses it
from codered_env.replay import replay_sim
from codered_env.sim import CodeRedSim
from codered_env.sim.catalogue import action_spec

from .briefing import task_briefs
from .reasons import plain_reason

# Grade keys that stay hidden until the episode is over: the per-patient rows name every
# patient's true condition, including callers no crew has reached yet.
_FINAL_ONLY = ("patients",)

def agent_summary(agent_name: str) -> str:
    """What an agent other than the heuristic does, from the agent roster."""
    spec = AGENT_SPECS.get(agent_name)
    return f"The {agent_name} agent: {spec.summary}" if spec else ""


def _running_grade(sim: CodeRedSim) -> dict[str, Any]:
    grade = sim.grade()
    if sim.done:
        return grade
    return {k: v for k, v in grade.items() if k not in _FINAL_ONLY}


def action_help(action: dict[str, Any]) -> str:
    """What the action does: its help text in the action catalogue."""
    try:
        return action_spec(str(action.get("action_type"))).help
    except ValueError:
        return ""


def advice(task_id: str, seed: int, actions: list[Any], agent_name: str = "heuristic",
           city: str = "prakashnagar") -> dict[str, Any]:
    """Running grade after ``actions`` and ``agent_name``'s next action with its reason.

    The agent is built fresh and sees only the current observation, so an autoplaying page
    that asks once per step never learns anything about the future (a whole continuation
    computed ahead would reveal calls that have not arrived yet)."""
    sim = replay_sim(task_id, seed, actions, city)
    answer: dict[str, Any] = {"step": sim.step_count, "done": bool(sim.done), "grade": _running_grade(sim)}
    if sim.done:
        answer["suggestion"] = None
        return answer
    obs = sim.observation()
    agent = make_agent(agent_name, seed + sim.step_count)
    agent.reset(task_id, seed)
    action = json.loads(json.dumps(agent.act(obs)))
    suggestion: dict[str, Any] = {"agent": agent_name, "action": action}
    rule = getattr(agent, "last_rule", None)
    if agent_name == "heuristic" and rule is not None:
        suggestion["rule"] = rule
        suggestion["reason"] = plain_reason(rule, action, obs) or action_help(action)
    else:
        suggestion["reason"] = " ".join(p for p in (agent_summary(agent_name), action_help(action)) if p)
    answer["suggestion"] = suggestion
    return answer


def task_menu() -> list[dict[str, Any]]:
    """The console's task menu: each task with its goal and what scores (``briefing``)."""
    return [dict(brief) for brief in task_briefs()]
