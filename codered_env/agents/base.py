"""The agent interface shared by built-in, LLM and user agents."""

from __future__ import annotations

import hashlib
import importlib
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

MAINTAIN: dict[str, Any] = {"action_type": "maintain_plan"}


@runtime_checkable
class Agent(Protocol):
    """An agent sees only the observation dict and answers with one wire action dict."""

    name: str

    def reset(self, task_id: str, seed: int) -> None: ...

    def act(self, observation: dict[str, Any]) -> dict[str, Any]: ...


def source_digest(*module_names: str) -> str:
    """SHA-256 (16 hex digits) of the named modules' files: what an agent's code version is."""
    digest = hashlib.sha256()
    for name in module_names:
        module = importlib.import_module(name)
        digest.update(name.encode())
        digest.update(Path(str(module.__file__)).read_bytes())
    return digest.hexdigest()[:16]


def code_fingerprint(agent: object, *also: str) -> dict[str, Any]:
    """The default fingerprint of an agent: its class and the source of its module (and of
    ``also``, the modules its decisions depend on).  Agents whose settings change their play
    (planner budget, PPO checkpoint, LLM model and prompt) add those in their ``fingerprint()``;
    the evaluation store reuses an episode only when the fingerprint matches."""
    cls = type(agent)
    return {"agent": cls.__qualname__, "code": source_digest(cls.__module__, *also)}


class NoopAgent:
    """Always ``maintain_plan``: the floor every task must score near."""

    name = "noop"

    def reset(self, task_id: str, seed: int) -> None:
        return None

    def act(self, observation: dict[str, Any]) -> dict[str, Any]:
        return dict(MAINTAIN)

    def fingerprint(self) -> dict[str, Any]:
        return code_fingerprint(self)
