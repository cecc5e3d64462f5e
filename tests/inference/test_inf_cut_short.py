"""A run that does not finish (Ctrl-C, an environment failure) is graded as played: its [END]
score is the sum of its rewards, its last STEP says done=false; a failing model endpoint does not
end the run (the agent waits out the episode), so it ends with done=true and the final grade."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI
from runlog_check import parse_run_log
from test_inf_script import llm_env, load_inference, run_script

from codered_env.evaluation import episode
from codered_env.evaluation.trajectory import Trajectory
from codered_env.sim import CodeRedSim


def potential_after(task_id: str, seed: int, actions: list[dict[str, Any]]) -> float:
    """What the rewards add up to after these actions (the running score times the task's pace
    factor), the world not played on."""
    sim = CodeRedSim(task_id=task_id, seed=seed)
    for action in actions:
        sim.step(action)
    return episode.clamp_score(sim.potential)


def fail_step(monkeypatch: pytest.MonkeyPatch, at_call: int, exc: BaseException) -> None:
    real_step = episode.LocalEnv.step
    calls = {"n": 0}

    def step(self: Any, action: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == at_call:
            raise exc
        return real_step(self, action)

    monkeypatch.setattr(episode.LocalEnv, "step", step)


@pytest.mark.parametrize(("exc", "code"), [(KeyboardInterrupt(), 130),
                                           (ConnectionError("server gone"), 1)],
                         ids=["ctrl-c", "environment-error"])
def test_cut_short_run_is_graded_as_played(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str],
                                           exc: BaseException, code: int) -> None:
    inference = load_inference()
    fail_step(monkeypatch, 6, exc)
    path = tmp_path / "run.jsonl"
    args = inference.parse_args(["--task", "task2", "--seed", "3", "--agent", "heuristic",
                                 "--trajectory", str(path)])
    out = io.StringIO()
    assert inference.run(args, out, {}) == code
    log = parse_run_log(out.getvalue())
    trajectory = Trajectory.load(path)
    rewards = [step.reward for step in trajectory.steps]
    assert len(log.rewards) == len(rewards) == 5 and log.dones[-1] == "false"
    expected = potential_after("task2", 3, [step.action for step in trajectory.steps])
    assert expected > 0.01  # the check below would pass trivially at the floor
    assert log.score == pytest.approx(expected, abs=5e-4)
    assert log.score == pytest.approx(episode.clamp_score(sum(rewards)), abs=5e-4)
    assert trajectory.end is not None and trajectory.end["interrupted"] is True
    assert "grades what was played" in capsys.readouterr().err


def test_interrupt_after_the_last_step_keeps_the_final_grade(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The episode ended (step cap, done=true) before Ctrl-C: nothing was cut short, so the
    # score is the capped episode's grade, exactly as without the interrupt.
    inference = load_inference()
    argv = ["--task", "task2", "--seed", "3", "--agent", "heuristic", "--max-steps", "5"]
    clean = io.StringIO()
    assert inference.run(inference.parse_args(argv), clean, {}) == 0
    real = inference.RunLog.step

    def step(self: Any, record: Any) -> None:
        real(self, record)
        if record.done:
            raise KeyboardInterrupt

    monkeypatch.setattr(inference.RunLog, "step", step)
    out = io.StringIO()
    assert inference.run(inference.parse_args(argv), out, {}) == 130
    assert out.getvalue() == clean.getvalue()
    log = parse_run_log(out.getvalue())
    assert log.dones[-1] == "true" and log.score > potential_after("task2", 3, [])


def test_interrupt_before_a_step_line_still_prints_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # Ctrl-C lands after the environment played step 3 but before its STEP line: the step
    # happened, so the line is printed (late, before END) and its reward counts in the score.
    inference = load_inference()
    real = inference.RunLog.step
    raised = {"done": False}

    def step(self: Any, record: Any) -> None:
        if record.step == 3 and not raised["done"]:
            raised["done"] = True
            raise KeyboardInterrupt
        real(self, record)

    monkeypatch.setattr(inference.RunLog, "step", step)
    out = io.StringIO()
    args = inference.parse_args(["--task", "task2", "--seed", "3", "--agent", "heuristic"])
    assert inference.run(args, out, {}) == 130
    log = parse_run_log(out.getvalue())
    assert len(log.rewards) == 3 and log.dones[-1] == "false"
    assert log.score == pytest.approx(
        episode.clamp_score(sum(float(r) for r in log.rewards)), abs=0.02)


def test_failing_model_endpoint_plays_the_episode_out(fake_llm: FakeOpenAI,
                                                      tmp_path: Path) -> None:
    # Every call fails past its retries: the agent stops calling the model and waits out the
    # episode, which ends normally (done=true); the final grade is the sum of the rewards, and
    # the exit code (3) says the endpoint failed throughout.
    fake_llm.set_script(default={"kind": "status", "code": 500})
    path = tmp_path / "run.jsonl"
    proc = run_script(["--task", "task1", "--seed", "2", "--trajectory", str(path)],
                      llm_env(fake_llm))
    log = parse_run_log(proc.stdout)
    assert proc.returncode == 3, proc.stderr
    assert log.dones[-1] == "true" and all("played maintain_plan" in e for e in log.errors)
    rewards = [step.reward for step in Trajectory.load(path).steps]
    assert log.score == pytest.approx(episode.clamp_score(sum(rewards)), abs=5e-4)
    assert "grades what was played" not in proc.stderr
