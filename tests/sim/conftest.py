"""Fixtures shared by the simulation tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from codered_env.sim import CodeRedSim

StepChecker = Callable[[Callable[[CodeRedSim], None]], list[int]]


@pytest.fixture()
def check_every_step(monkeypatch: pytest.MonkeyPatch) -> StepChecker:
    """``check_every_step(check)`` wraps ``CodeRedSim.step`` so ``check(sim)`` runs after every step
    of every simulation alive (forks and rollouts included) for the rest of the test; it returns
    a counter of the steps checked (``[n]``)."""

    def install(check: Callable[[CodeRedSim], None]) -> list[int]:
        calls = [0]
        original = CodeRedSim.step

        def step(self: CodeRedSim, action: object) -> Any:
            out = original(self, action)
            check(self)
            calls[0] += 1
            return out

        monkeypatch.setattr(CodeRedSim, "step", step)
        return calls

    return install
