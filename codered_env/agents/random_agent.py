"""A seeded random agent: uniform over the legal action types, then over their options."""

from __future__ import annotations

from random import Random
from typing import Any


class RandomAgent:
    """Picks an action type uniformly from ``legal_actions``, then an option, then each value.

    Seeded from (agent seed, task id, episode seed), so runs are reproducible.
    """

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.rng = Random(seed)

    def reset(self, task_id: str, seed: int) -> None:
        self.rng = Random(f"random-agent:{self.seed}:{task_id}:{seed}")

    def act(self, observation: dict[str, Any]) -> dict[str, Any]:
        legal = observation.get("legal_actions") or {"maintain_plan": [{}]}
        action_type = self.rng.choice(sorted(legal))
        option = self.rng.choice(legal[action_type])
        action: dict[str, Any] = {"action_type": action_type}
        for param in sorted(option):
            action[param] = self.rng.choice(option[param])
        return action
