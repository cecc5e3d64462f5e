"""The agent interface shared by built-in, LLM and user agents."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..sim.catalogue import MAINTAIN_PLAN

MAINTAIN: dict[str, Any] = MAINTAIN_PLAN


@runtime_checkable
class Agent(Protocol):
    """An agent sees only the observation dict and answers with one wire action dict."""

    name: str

    def reset(self, task_id: str, seed: int) -> None: ...

    def act(self, observation: dict[str, Any]) -> dict[str, Any]: ...


class NoopAgent:
    """Always ``maintain_plan``: the floor every task must score near."""

    name = "noop"

    def reset(self, task_id: str, seed: int) -> None:
        return None

    def act(self, observation: dict[str, Any]) -> dict[str, Any]:
        return dict(MAINTAIN)
