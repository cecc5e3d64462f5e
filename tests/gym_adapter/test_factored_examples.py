"""The factored interface's library examples run (each skips when its library is missing; the
RLlib one starts a local Ray instance, so it also needs ``CODERED_SLOW=1``)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run(script: str, *args: str, timeout: int = 600) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _needs(*modules: str) -> None:
    for module in modules:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")


def test_sb3_maskable_ppo_example() -> None:
    _needs("torch", "sb3_contrib")
    out = _run("sb3_factored.py", "--task", "task1", "--steps", "256")
    assert "task1 seed 10000: grade" in out


def test_torchrl_action_mask_example() -> None:
    _needs("torch", "torchrl", "tensordict")
    out = _run("torchrl_factored.py", "--task", "task2", "--steps", "60")
    assert "ActionMask random: 60 steps" in out and "type-first random: 60 steps" in out


@pytest.mark.slow
def test_rllib_action_masking_example() -> None:
    if os.environ.get("CODERED_SLOW") != "1":
        pytest.skip("slow test (starts a local Ray instance): set CODERED_SLOW=1 to run it")
    _needs("torch", "ray")
    _needs("ray.rllib")
    out = _run("rllib_factored.py", "--task", "task1", "--iterations", "1", timeout=900)
    assert "iteration 1: env steps" in out
