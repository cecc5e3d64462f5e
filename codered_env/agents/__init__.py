"""Built-in agents: ``noop``, ``random`` (seeded), ``heuristic`` (the expert rule set) and
``planner`` (rollouts of the heuristic on fair forks of the episode, planner.py).

``make_agent(name, seed)`` builds one; the LLM agent lives in ``codered_env.agents.llm`` and is
built by ``make_agent("llm")`` only when that module is importable and configured.
``make_agent("ppo:PATH")`` loads a policy saved by ``codered train`` and ``make_agent("factored:PATH")``
one saved by ``codered train --interface factored`` (both need the ``rl`` extra).
Every agent and where it is offered: ``AGENTS`` (roster.py), served at ``GET /agents``.
"""

from __future__ import annotations

from typing import Any

from .base import Agent, NoopAgent
from .heuristic import HeuristicAgent
from .oracle import OracleAgent
from .planner import PlannerAgent
from .random_agent import RandomAgent
from .roster import AGENT_SPECS, AGENTS, BUILTIN_AGENTS, SERVED_AGENTS


def make_agent(name: str, seed: int = 0, **kwargs: Any) -> Agent:
    """Build an agent by name: noop, random, heuristic, or llm (needs an API key)."""
    if name == "noop":
        return NoopAgent()
    if name == "random":
        return RandomAgent(seed)
    if name == "heuristic":
        return HeuristicAgent(seed)
    if name == "planner":  # kwargs: forks, max_candidates, min_gain (the per-decision budget)
        return PlannerAgent(seed, **kwargs)
    if name == "oracle":  # a ceiling that reads the hidden truth, never a fair result (oracle.py)
        return OracleAgent(seed, **kwargs)
    if name == "llm":
        from .llm import LLMAgent  # imported lazily: pulls in the openai client

        return LLMAgent(**kwargs)
    if name.startswith("ppo:"):
        from .ppo import PPOAgent  # imported lazily: pulls in torch and sb3-contrib

        return PPOAgent(name[len("ppo:"):])
    if name.startswith("factored:"):
        from .factored import FactoredAgent  # imported lazily: pulls in torch

        return FactoredAgent(name[len("factored:"):])
    raise ValueError(f"unknown agent {name!r}; choose from {', '.join(AGENT_SPECS)}")


__all__ = [
    "AGENTS",
    "AGENT_SPECS",
    "BUILTIN_AGENTS",
    "SERVED_AGENTS",
    "Agent",
    "HeuristicAgent",
    "NoopAgent",
    "OracleAgent",
    "PlannerAgent",
    "RandomAgent",
    "make_agent",
]
