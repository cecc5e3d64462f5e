"""CodeRedEnv's MCP tools: one per action of the catalogue (``codered_env.sim.catalogue``: names,
help texts and input schemas), plus the read-only ``view_full_state``.

A :class:`ToolSession` is the tool view of one :class:`CodeRedEnvironment` (one episode). It is
created only for sessions that use tools (an MCP session, or a ``/ws`` session that sends a
``call_tool``/``list_tools``/``mcp`` frame), so plain ``/ws`` play never pays for it.

Every call answers an MCP ``CallToolResult``: ``content`` is the compact text (what changed since
the previous reply), ``structuredContent`` carries ``reward``, ``done``, ``score`` (the running
score; the final grade once done), ``error`` (``None`` or why the call was refused), ``step``,
``clock_min`` and ``text``. A call is refused with ``isError`` when:

* the tool is unknown or the arguments do not match its input schema (nothing happens: the
  simulation never sees the call, exactly like a ``VALIDATION_ERROR`` on ``/ws``);
* the episode is already over (nothing happens);
* the simulation refuses the action (an id that is unknown now, the wrong phase, no stock...):
  the world is unchanged except that the decision minute passes and efficiency counts the
  invalid decision, exactly as on ``/ws`` and HTTP ``/step``, so an action list scores the same
  on every surface.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from codered_env.city_choice import DEFAULT_CITY
from codered_env.server.environment import CodeRedEnvironment
from codered_env.sim import TASKS, parse_action
from codered_env.sim.catalogue import ACTIONS, ActionSpec, input_schema
from codered_env.sim.citygen import resolve_city

# The TRL tool environment's reply helpers: one definition of "what changed".
from codered_env.trl.env import _TICKING, keyed_lines, reply_lines

VIEW_TOOL = "view_full_state"
VIEW_HELP = (
    "Show the whole current state: clock, patients, calls, units, hospitals, roads and the "
    "legal actions now. Read-only: no time passes and nothing changes."
)
# OpenEnv's ToolErrorType values for calls that never reach the simulation.
TOOL_NOT_FOUND, INVALID_ARGS = "tool_not_found", "invalid_args"
MAX_SHOWN_ARGUMENT_CHARS = 80

# The structured result of every tool (kept terse: hosts send it with each tool definition).
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "score: running score in [0, 1], the final grade once done; error: why the call "
    "was refused, else null; text: the reply shown as content.",
    "properties": {
        "reward": {"type": "number"},
        "done": {"type": "boolean"},
        "score": {"type": "number"},
        "error": {"type": ["string", "null"]},
        "step": {"type": "integer"},
        "clock_min": {"type": "integer"},
        "text": {"type": "string"},
    },
    "required": ["reward", "done", "score", "error", "step", "clock_min", "text"],
}


def _description(spec: ActionSpec) -> str:
    tasks = [task_id for task_id, task in TASKS.items() if task.phase in spec.phases]
    if len(tasks) == len(TASKS):
        return spec.help
    return f"{spec.help} Legal in {', '.join(tasks)} only."


# a few cities' tool lists are kept: a server's sessions mostly play the same handful of cities
@lru_cache(maxsize=64)
def tool_list(city: str = DEFAULT_CITY) -> tuple[dict[str, Any], ...]:
    """The MCP tool definitions (``tools/list``) of an episode in ``city`` (a canonical city
    name): ids such as hospitals, units and nodes are enumerated as that city has them."""
    city_map = resolve_city(city)
    action_hints = {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": False}
    tools = [
        {
            "name": spec.name,
            "description": _description(spec),
            "inputSchema": input_schema(spec, city_map),
            "outputSchema": OUTPUT_SCHEMA,
            "annotations": action_hints,
        }
        for spec in ACTIONS
    ]
    tools.append(
        {
            "name": VIEW_TOOL,
            "description": VIEW_HELP,
            "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
            "outputSchema": OUTPUT_SCHEMA,
            "annotations": {"readOnlyHint": True, "openWorldHint": False},
        }
    )
    return tuple(tools)


def tool_names() -> tuple[str, ...]:
    return tuple(tool["name"] for tool in tool_list())


@lru_cache(maxsize=64)
def _validators(city: str) -> dict[str, Any]:
    from jsonschema import Draft202012Validator

    return {tool["name"]: Draft202012Validator(tool["inputSchema"]) for tool in tool_list(city)}


def checked_call(
    name: Any, arguments: Any, city: str = DEFAULT_CITY
) -> tuple[tuple[str, str] | None, Any]:
    """``(refusal, None)`` when the call cannot reach the simulation, else ``(None, the parsed
    action)`` (None for the read-only view): the arguments are checked against the schema of the
    tool for ``city``, then parsed by the simulation once."""
    validator = _validators(city).get(name) if isinstance(name, str) else None
    if validator is None:
        shown = repr(name)[:MAX_SHOWN_ARGUMENT_CHARS] if isinstance(name, str) else type(name).__name__
        return (TOOL_NOT_FOUND, f"unknown tool {shown}; tools: {', '.join(tool_names())}"), None
    if not isinstance(arguments, dict):
        return (INVALID_ARGS, f"arguments of {name} must be a JSON object"), None
    problems = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    if problems:
        shown = "; ".join(_describe(problem) for problem in problems[:3])
        return (INVALID_ARGS, f"invalid arguments for {name}: {shown}"), None
    if name == VIEW_TOOL:
        return None, None
    parsed, error = parse_action({"action_type": name, **arguments})
    if error is not None:
        return (INVALID_ARGS, error), None
    return None, parsed


def _describe(problem: Any) -> str:
    where = ".".join(str(p) for p in problem.absolute_path)
    message = problem.message
    if len(message) > 200:
        message = message[:197] + "..."
    return f"{where}: {message}" if where else message


@dataclass(frozen=True)
class ToolOutcome:
    """One tool call's answer."""

    structured: dict[str, Any]
    is_error: bool
    error_type: str | None = None  # set when the call never reached the simulation

    @property
    def text(self) -> str:
        return str(self.structured["text"])

    def call_result(self) -> dict[str, Any]:
        """The MCP ``CallToolResult``."""
        return {
            "content": [{"type": "text", "text": self.text}],
            "structuredContent": self.structured,
            "isError": self.is_error,
        }


class ToolSession:
    """The tool view of one environment: calls become steps, replies show what changed.

    ``resettable`` is False for sessions bound to one episode (standard MCP sessions).
    """

    def __init__(self, env: CodeRedEnvironment, resettable: bool = True) -> None:
        self.env = env
        self.resettable = resettable
        self.attached = False  # a /ws connection is attached to this session
        self._lock = threading.Lock()
        self._shown: dict[str, str] = {}
        self._shown_episode: str | None = None

    def close(self, reason: str | None = None) -> None:
        self.env.close(reason)

    @property
    def city(self) -> str:
        """The canonical name of the city the session's episode plays in."""
        return self.env.city

    def tool_definitions(self) -> list[dict[str, Any]]:
        """The tool definitions of this session's episode (ids of its city)."""
        return list(tool_list(self.city))

    def replay(self, events: list[dict[str, Any]]) -> None:
        """Re-build the session from its journal (``journal.py``): the episode, and the text
        the last reply showed (what the next reply's "what changed" compares against)."""
        last_reset = max((i for i, e in enumerate(events) if e["op"] == "reset"), default=0)
        shown = max((i for i, e in enumerate(events) if e["op"] == "shown" and i > last_reset), default=None)
        if shown is None:
            self.env.replay(events)
            return
        self.env.replay(events[:shown])
        after_step = shown > 0 and events[shown - 1]["op"] == "step"
        view = self.env.last_step_observation() if after_step else self.env.current_observation()
        self._remember(view.model_dump())
        self.env.replay(events[shown + 1 :])

    def _shown_recorded(self) -> None:
        if self.env.recorder is not None:
            self.env.recorder({"op": "shown"})

    def call(self, name: Any, arguments: Any) -> ToolOutcome:
        """Run one tool call (refusals never change anything but the decision minute)."""
        arguments = {} if arguments is None else arguments
        refusal, parsed = checked_call(name, arguments, self.city)
        with self._lock:
            if refusal is not None:
                return self._refused(refusal[1], refusal[0])
            if self.env.episode_id is None:
                return self._refused("no episode yet: send a reset first")
            if self.env.finished:
                return self._refused(
                    f"the episode is over (final score {self.env.state.score:.3f}); a tool cannot "
                    "reset it: start a new session for a new episode"
                )
            if name == VIEW_TOOL:
                view = self.env.current_observation()
                self._remember(view.model_dump())
                self._shown_recorded()
                return self._outcome(0.0, None, view.text, is_error=False)
            observation = self.env.step_wire(parsed, logged={"action_type": name, **arguments})
            reward, error = float(observation.reward or 0.0), observation.last_action_error
            text = self._delta(reward, error, observation.model_dump())
            self._shown_recorded()
            return self._outcome(reward, error, text, is_error=error is not None)

    # ------------------------------------------------------------------ internals

    def _refused(self, message: str, error_type: str | None = None) -> ToolOutcome:
        outcome = self._outcome(0.0, message, f"REFUSED: {message}", is_error=True)
        return ToolOutcome(outcome.structured, True, error_type)

    def _outcome(self, reward: float, error: str | None, text: str, is_error: bool) -> ToolOutcome:
        try:
            state = self.env.state
            score, done, step, clock = state.score, state.done, state.step_count, state.clock_min
        except Exception:  # no episode yet on a plain /ws session
            score, done, step, clock = 0.0, False, 0, 0
        structured = {
            "reward": round(reward, 6),
            "done": done,
            "score": score,
            "error": error,
            "step": step,
            "clock_min": clock,
            "text": text,
        }
        return ToolOutcome(structured, is_error)

    def _remember(self, observation: dict[str, Any]) -> None:
        self._shown = {key: _TICKING.sub("", line) for key, line in keyed_lines(observation).items()}
        self._shown_episode = self.env.episode_id

    def _delta(self, reward: float, error: str | None, observation: dict[str, Any]) -> str:
        """The head line, the refusal, the events and the lines that changed since the last reply."""
        if self._shown_episode != self.env.episode_id:
            self._shown = {}
        state = self.env.state
        head = (
            f"t={state.clock_min} step {state.step_count}/{state.max_steps} "
            f"score {state.score:.3f} ({reward:+.3f})" + (" | DONE" if state.done else "")
        )
        lines = [head]
        if error:
            lines.append(f"REFUSED: {error}")
        events, now = reply_lines(observation)
        lines.extend(events)
        shown: dict[str, str] = {}
        for key, line in now.items():
            shown[key] = steady = _TICKING.sub("", line)  # minute counters are not a change
            if self._shown.get(key) != steady:
                lines.append(line)
        self._shown = shown
        self._shown_episode = self.env.episode_id
        return "\n".join(lines)
