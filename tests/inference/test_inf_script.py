"""inference.py end to end: the run log against the fake endpoint, no-key fallback, failures."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI
from runlog_check import parse_run_log

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "inference.py"
KEY = "sk-fake-key-never-printed"
KEY_VARS = ("HF_TOKEN", "API_KEY", "OPENAI_API_KEY", "API_BASE_URL", "MODEL_NAME", "MAX_STEPS",
            "BENCHMARK", "SUCCESS_THRESHOLD")

TASK2_PLAN: list[dict[str, Any]] = [
    {"kind": "tool", "name": "dispatch_ambulance",
     "arguments": {"ambulance_id": "ALS1", "patient_id": "P1"}},
    {"kind": "tool", "name": "assign_hospital", "arguments": {"patient_id": "P1",
                                                              "hospital_id": "H1"}},
    {"kind": "tool", "name": "prepare_or", "arguments": {"hospital_id": "H1",
                                                         "procedure": "cath_lab"}},
    {"kind": "tool", "name": "page_specialist", "arguments": {"hospital_id": "H1",
                                                              "specialty": "cardiology"}},
    {"kind": "tool", "name": "query_or_status", "arguments": {"hospital_id": "H2"}},
    {"kind": "tool", "name": "maintain_plan", "arguments": {}},
]


def base_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS}
    env.update({"CODERED_LLM_TIMEOUT": "3", "CODERED_LLM_BACKOFF": "0.01",
                "CODERED_LLM_BACKOFF_MAX": "0.05", "CODERED_LLM_RETRIES": "2",
                "PYTHONUNBUFFERED": "1"})
    env.update(extra)
    return env


def llm_env(fake: FakeOpenAI, **extra: str) -> dict[str, str]:
    return base_env(HF_TOKEN=KEY, API_BASE_URL=fake.url, MODEL_NAME="fake/model-1", **extra)


def run_script(args: list[str], env: dict[str, str],
               timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=timeout, check=False)


TASK2 = ["--task", "task2", "--seed", "3", "--max-steps", "6"]


def assert_clean(proc: subprocess.CompletedProcess[str], fake: FakeOpenAI | None = None) -> None:
    assert KEY not in proc.stdout and KEY not in proc.stderr
    if fake is not None:
        for body in fake.requests:  # no prompt text leaks to our streams
            system = body["messages"][0]["content"]
            assert system[:60] not in proc.stdout and system[:60] not in proc.stderr


def test_tool_calls(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(*TASK2_PLAN)
    proc = run_script(TASK2, llm_env(fake_llm))
    log = parse_run_log(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert (log.task, log.env, log.model) == ("task2", "codered_env", "fake/model-1")
    assert len(log.rewards) == 6 and len(fake_llm.requests) == 6
    assert [a.split("(")[0] for a in log.actions] == [b["name"] for b in TASK2_PLAN]
    assert all(not e.startswith("llm:") for e in log.errors)
    assert fake_llm.auth_headers[0] == f"Bearer {KEY}"
    assert_clean(proc, fake_llm)


def test_json_text(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(default={"kind": "text", "content":
                                 'Sure! {"action_type": "query_or_status", "hospital_id": "H1"}'})
    proc = run_script(TASK2, llm_env(fake_llm))
    log = parse_run_log(proc.stdout)
    assert len(log.rewards) == 6
    assert all(a.startswith("query_or_status") for a in log.actions)
    assert log.errors == ["null"] * 6
    assert_clean(proc, fake_llm)


def test_garbage(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(default={"kind": "text", "content": "Let me think about it... maybe?"})
    proc = run_script(TASK2, llm_env(fake_llm))
    log = parse_run_log(proc.stdout)
    assert len(log.rewards) == 6
    assert all(a.startswith("maintain_plan") for a in log.actions)
    assert all(e.startswith("llm: no action in the answer") for e in log.errors)
    assert_clean(proc, fake_llm)


def test_rate_limited(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(default={"kind": "status", "code": 429, "headers": {"retry-after": "0"}})
    proc = run_script(TASK2, llm_env(fake_llm))
    log = parse_run_log(proc.stdout)
    # 1 try + 2 retries on each of the first 3 steps, then one try per step (degraded mode)
    assert len(log.rewards) == 6 and len(fake_llm.requests) == 3 * 3 + 3
    assert all("429" in e for e in log.errors)
    assert_clean(proc, fake_llm)


def test_timeouts_keep_the_run_short(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(default={"kind": "sleep", "seconds": 3.0,
                                 "then": {"kind": "tool", "name": "maintain_plan"}})
    proc = run_script(["--task", "task2", "--seed", "3", "--max-steps", "3"],
                      llm_env(fake_llm, CODERED_LLM_TIMEOUT="0.2", CODERED_LLM_RETRIES="0"))
    log = parse_run_log(proc.stdout)
    # Every call gave up at its 0.2 s timeout instead of waiting out the 3 s answer, and none was
    # retried: no wall-clock bound, which would only measure the machine's load.
    assert len(log.rewards) == 3 and all("timed out" in e for e in log.errors)
    assert len(fake_llm.requests) == 3


def test_run_budget_bounds_the_whole_run(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script(default={"kind": "sleep", "seconds": 0.6,
                                 "then": {"kind": "tool", "name": "maintain_plan"}})
    proc = run_script(TASK2, llm_env(fake_llm, CODERED_LLM_BUDGET="1.5",
                                     CODERED_LLM_RETRIES="0"))
    log = parse_run_log(proc.stdout)
    assert len(log.rewards) == 6 and len(fake_llm.requests) <= 3
    assert "budget exhausted" in log.errors[-1]


def test_no_key_plays_heuristic_task1() -> None:
    proc = run_script(["--task", "task1", "--seed", "0"], base_env())
    log = parse_run_log(proc.stdout)
    assert proc.returncode == 0
    assert log.model == "heuristic" and "no API key" in proc.stderr
    assert log.score >= 0.5 and log.success
    assert log.dones[-1] == "true"


def test_env_vars_benchmark_threshold_and_max_steps() -> None:
    proc = run_script(["--task", "task1", "--seed", "1", "--agent", "noop"],
                      base_env(BENCHMARK="my_bench", SUCCESS_THRESHOLD="0.995", MAX_STEPS="4"))
    log = parse_run_log(proc.stdout, threshold=0.995)
    assert log.env == "my_bench" and log.model == "noop" and len(log.rewards) == 4
    assert not log.success


def test_bad_task_still_prints_start_and_end() -> None:
    proc = run_script(["--task", "task9", "--seed", "0"], base_env())
    log = parse_run_log(proc.stdout)
    assert log.task == "task9" and log.rewards == [] and proc.returncode == 1
    assert "unknown task" in proc.stderr


def _wait_for(condition: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _popen_with_sigint(disposition: Any, args: list[str],
                       env: dict[str, str]) -> subprocess.Popen[str]:
    """Start inference.py with SIGINT in the given state at exec: an ignored signal stays
    ignored in the child (what bash gives `pytest &` in a script, and so every test's children),
    a caught one is reset to the default."""
    previous = signal.signal(signal.SIGINT, disposition)
    try:
        return subprocess.Popen([sys.executable, str(SCRIPT), *args], env=env, cwd=REPO,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("inherited", [signal.default_int_handler, signal.SIG_IGN],
                         ids=["sigint-default", "sigint-ignored-by-parent"])
def test_sigint_mid_run_prints_end(fake_llm: FakeOpenAI, inherited: Any) -> None:
    # Step 1 is answered at once; step 2's call gets no answer for a minute and the client waits
    # that long, so the signal lands inside a blocking HTTP call and the run cannot finish first.
    fake_llm.set_script({"kind": "tool", "name": "maintain_plan"},
                        default={"kind": "sleep", "seconds": 60.0,
                                 "then": {"kind": "tool", "name": "maintain_plan"}})
    env = llm_env(fake_llm, CODERED_LLM_TIMEOUT="60")
    proc = _popen_with_sigint(inherited, ["--task", "task2", "--seed", "3"], env)
    watchdog = threading.Timer(90, proc.kill)  # a hung child must not hang the suite
    watchdog.start()
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        assert lines[1].startswith("[STEP] step=1 "), lines
        _wait_for(lambda: len(fake_llm.requests) == 2, 30, "the step-2 model call")
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=30)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    log = parse_run_log("".join(lines) + rest)  # START, STEP 1 and END: still a valid run log
    assert proc.returncode == 130, err
    assert len(log.rewards) == 1 and "interrupted" in err
    assert log.dones == ["false"] and "grades what was played" in err  # not played out
    assert "llm-stats: calls=2 " in err  # the statistics line still follows END


# ----------------------------------------------------------------------- in-process failures

def load_inference() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("inference_under_test", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


def test_environment_error_mid_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from codered_env.evaluation import episode

    inference = load_inference()
    real_step = episode.LocalEnv.step
    calls = {"n": 0}

    def flaky_step(self: Any, action: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 4:
            raise ConnectionError("simulated environment failure")
        return real_step(self, action)

    monkeypatch.setattr(episode.LocalEnv, "step", flaky_step)
    out = io.StringIO()
    args = inference.parse_args(["--task", "task2", "--seed", "3", "--agent", "heuristic"])
    handler = signal.getsignal(signal.SIGINT)
    code = inference.run(args, out, {})
    log = parse_run_log(out.getvalue())
    assert code == 1 and len(log.rewards) == 3
    assert signal.getsignal(signal.SIGINT) is handler  # Ctrl-C works again after the run


def test_agent_crash_is_a_step_error_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    inference = load_inference()

    class Broken:
        last_error = None

        def reset(self, task_id: str, seed: int) -> None:
            del task_id, seed

        def act(self, observation: dict[str, Any]) -> dict[str, Any]:
            raise RuntimeError("boom")

    monkeypatch.setattr(inference, "choose_agent",
                        lambda requested, env, seed: (Broken(), "broken"))
    out = io.StringIO()
    code = inference.run(inference.parse_args(["--task", "task1", "--max-steps", "2"]), out, {})
    log = parse_run_log(out.getvalue())
    assert code == 0 and log.model == "broken"
    assert log.errors == ["agent error (RuntimeError); played maintain_plan"] * 2


def test_forged_fields_in_model_output_stay_inside_their_value(fake_llm: FakeOpenAI) -> None:
    forged = "X) reward=0.99 done=true"
    fake_llm.set_script(default={"kind": "tool", "name": "dispatch_ambulance",
                                 "arguments": {"ambulance_id": forged, "patient_id": "P1"}})
    proc = run_script(["--task", "task1", "--seed", "3", "--max-steps", "3"], llm_env(fake_llm))
    log = parse_run_log(proc.stdout)  # strict run-log check: every field where it belongs
    # the cap ends the run like a budget: the last step carries the play-out; the rewards (the
    # preview's changes, 2 decimals each) add up to the noop floor 0.01
    assert len(log.rewards) == 3 and abs(sum(float(r) for r in log.rewards) - 0.01) <= 0.015
    assert log.dones == ["false", "false", "true"]
    for line in proc.stdout.splitlines()[1:-1]:
        assert line.count("reward=") == 1 and line.count("done=") == 1
    assert "llm-stats: calls=3 " in proc.stderr and "fallbacks=0" in proc.stderr
