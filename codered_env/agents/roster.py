"""Every agent this project ships, in one table: what ``make_agent`` accepts and where it is offered.

The lists elsewhere are computed from ``AGENTS``: ``BUILTIN_AGENTS`` (``codered play``,
``codered view``), ``SERVED_AGENTS`` (the server's ``/grader``, ``/view`` and ``/web/*`` routes
and the browser console's menus), ``REPORT_ORDER`` (the report's row order) and ``/agents``, which
serves the table itself.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class AgentSpec:
    """One agent.  ``builtin``: plays in-process with no API key, file or extra.  ``served``: the
    server and the browser console offer it (each request plays a whole episode, or asks a
    fresh agent for one decision); ``note`` says why an agent is not, or what it needs."""

    name: str
    summary: str
    builtin: bool
    served: bool
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


AGENTS: tuple[AgentSpec, ...] = (
    AgentSpec("noop", "Always maintain_plan: the floor every task must score near.", True, True),
    AgentSpec("random", "A uniformly random legal action (seeded by episode seed + step).", True, True),
    AgentSpec("heuristic", "The expert rule set (rules 1-7 in agents/heuristic.py).", True, True),
    AgentSpec(
        "planner", "Rollouts of the heuristic on fair forks of the episode (agents/planner.py).", True,
        False,
        "Not served: it keeps a replica of the whole episode, so a fresh agent asked for one "
        "decision plays the heuristic, and a whole episode takes about a minute on task5.",
    ),
    AgentSpec(
        "oracle", "The planner's search on exact copies of the episode: a ceiling (agents/oracle.py).",
        False, False,
        "Not a fair agent: it reads the hidden truth (true conditions, the real future), so it is in "
        "no default list; build it by name (codered eval --agents oracle) for the report's ceiling.",
    ),
    AgentSpec(
        "llm", "Any OpenAI-compatible chat model, through tool calls (agents/llm/).", False, False,
        "Needs an API key (HF_TOKEN, API_KEY or OPENAI_API_KEY); the server's /baseline runs it only "
        "when the server enables it.",
    ),
    AgentSpec(
        "ppo:PATH", "A MaskablePPO policy saved by codered train (agents/ppo.py).", False, False,
        "Needs the rl extra and the policy file.",
    ),
    AgentSpec(
        "factored:PATH",
        "A factored-interface policy saved by codered train --interface factored (agents/factored.py).",
        False, False, "Needs the rl extra and the policy.pt file.",
    ),
)
AGENT_SPECS: dict[str, AgentSpec] = {spec.name: spec for spec in AGENTS}
BUILTIN_AGENTS: tuple[str, ...] = tuple(spec.name for spec in AGENTS if spec.builtin)
SERVED_AGENTS: tuple[str, ...] = tuple(spec.name for spec in AGENTS if spec.served)
DEFAULT_AGENT = "heuristic"
# Report rows: every named agent in table order (``ppo:PATH`` and ``factored:PATH`` rows sort after them).
REPORT_ORDER: tuple[str, ...] = tuple(spec.name for spec in AGENTS if ":" not in spec.name)
assert DEFAULT_AGENT in SERVED_AGENTS
