"""A strict checker of the agent run log (docs/INFERENCE.md#output-contract), shared by the
inference tests."""

from __future__ import annotations

import re
from dataclasses import dataclass

START = re.compile(r"^\[START\] task=(?P<task>\S+) env=(?P<env>\S+) model=(?P<model>\S.*)$")
STEP = re.compile(r"^\[STEP\] step=(?P<step>\d+) action=(?P<action>\S.*) "
                  r"reward=(?P<reward>-?\d+\.\d{2}) done=(?P<done>true|false) "
                  r"error=(?P<error>\S.*)$")
REWARDS = r"(-?\d+\.\d{2}(,-?\d+\.\d{2})*)?"
END = re.compile(r"^\[END\] success=(?P<success>true|false) steps=(?P<steps>\d+) "
                 rf"score=(?P<score>\d+\.\d{{3}}) rewards=(?P<rewards>{REWARDS})$")


@dataclass
class RunLog:
    task: str
    env: str
    model: str
    rewards: list[str]
    errors: list[str]
    actions: list[str]
    dones: list[str]
    success: bool
    score: float


def parse_run_log(stdout: str, threshold: float = 0.1) -> RunLog:
    """Parse and validate; any deviation from the contract fails an assertion."""
    assert stdout.endswith("\n"), "log must end with a newline"
    lines = stdout.splitlines()
    assert len(lines) >= 2, f"need START and END, got {lines!r}"
    start = START.match(lines[0])
    assert start, f"bad START line {lines[0]!r}"
    end = END.match(lines[-1])
    assert end, f"bad END line {lines[-1]!r}"
    steps = [STEP.match(line) for line in lines[1:-1]]
    for line, match in zip(lines[1:-1], steps, strict=True):
        assert match, f"bad STEP line {line!r}"
    numbers = [int(m["step"]) for m in steps if m]
    assert numbers == list(range(1, len(numbers) + 1)), f"steps not consecutive: {numbers}"
    assert int(end["steps"]) == len(numbers)
    rewards = [m["reward"] for m in steps if m]
    assert (end["rewards"].split(",") if end["rewards"] else []) == rewards
    score = float(end["score"])
    assert 0.0 < score < 1.0
    assert (end["success"] == "true") == (score >= threshold)
    dones = [m["done"] for m in steps if m]
    assert "true" not in dones[:-1], "done=true before the last step"
    return RunLog(task=start["task"], env=start["env"], model=start["model"], rewards=rewards,
                  errors=[m["error"] for m in steps if m],
                  actions=[m["action"] for m in steps if m], dones=dones,
                  success=end["success"] == "true", score=score)
