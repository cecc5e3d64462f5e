"""`inference.py --max-steps N` is honest: a run cut before the task's budget ends the way the
budget ends it (the world plays on without decisions, the last reward holds the play-out), so the
[END] score, the rewards and a replay of the trajectory all tell the same story (issue 25)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import inference  # noqa: E402
from codered_env.evaluation.trajectory import replay  # noqa: E402
from codered_env.sim import TASKS, grade_episode  # noqa: E402


def _run(argv: list[str]) -> list[str]:
    out = io.StringIO()
    assert inference.run(inference.parse_args(argv), out, {}) == 0
    return out.getvalue().splitlines()


def _fields(line: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in line.split()[1:] if "=" in part)


@pytest.mark.parametrize(("task", "seed", "cap", "agent"),
                         [("task1", 0, 5, "heuristic"), ("task2", 3, 7, "random"),
                          ("task4", 1, 12, "heuristic")])
def test_end_score_is_what_the_rewards_add_up_to(tmp_path: Path, task: str, seed: int, cap: int,
                                                 agent: str) -> None:
    path = tmp_path / "run.jsonl"
    lines = _run(["--task", task, "--seed", str(seed), "--max-steps", str(cap), "--agent", agent,
                  "--trajectory", str(path)])
    steps, end = [_fields(x) for x in lines if x.startswith("[STEP]")], _fields(lines[-1])
    assert len(steps) == cap < TASKS[task].max_steps
    assert [s["done"] for s in steps] == ["false"] * (cap - 1) + ["true"]
    rewards = [float(r) for r in end["rewards"].split(",")]
    assert sum(rewards) == pytest.approx(float(end["score"]), abs=0.005 * cap + 1e-9)
    records = [json.loads(x) for x in path.read_text().splitlines()]
    exact = sum(r["reward"] for r in records if r["type"] == "step")
    actions = [r["action"] for r in records if r["type"] == "step"]
    graded = grade_episode(task, seed, actions)["score"]
    assert exact == pytest.approx(graded, abs=1e-6)  # unrounded: exactly the final grade
    assert float(end["score"]) == pytest.approx(graded, abs=5e-4)
    assert replay(path).matches is True


def test_a_full_run_is_unchanged_by_the_cap_logic() -> None:
    full = _run(["--task", "task1", "--seed", "0", "--agent", "heuristic"])
    capped = _run(["--task", "task1", "--seed", "0", "--agent", "heuristic", "--max-steps", "999"])
    assert full == capped
