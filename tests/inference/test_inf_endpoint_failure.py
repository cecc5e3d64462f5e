"""inference.py tells a broken run from a real one: a dead model endpoint (every step
unanswered) exits 3 and says why on stderr; a partial failure exits 0 with a warning."""

from __future__ import annotations

import socket

from fake_openai import FakeOpenAI
from runlog_check import parse_run_log
from test_inf_script import KEY, base_env, llm_env, run_script

from inference import ENDPOINT_FAILURE_EXIT


def test_dead_endpoint_exits_non_zero_and_says_why() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: connections are refused
    env = base_env(HF_TOKEN=KEY, API_BASE_URL=f"http://127.0.0.1:{port}/v1", MODEL_NAME="fake/m",
                   CODERED_LLM_RETRIES="0")
    proc = run_script(["--task", "task1", "--seed", "0", "--max-steps", "4"], env)
    assert proc.returncode == ENDPOINT_FAILURE_EXIT == 3, proc.stderr
    log = parse_run_log(proc.stdout)  # the run log is still complete
    assert len(log.rewards) == 4
    assert "model endpoint failed on every one of the 4 step(s)" in proc.stderr
    assert "cannot connect" in proc.stderr and KEY not in proc.stderr


def test_partial_endpoint_failure_is_a_warning(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script({"kind": "status", "code": 500},
                        default={"kind": "tool", "name": "maintain_plan", "arguments": {}})
    proc = run_script(["--task", "task1", "--seed", "0", "--max-steps", "3"],
                      llm_env(fake_llm, CODERED_LLM_RETRIES="0"))
    assert proc.returncode == 0, proc.stderr
    assert "model endpoint failed on 1 of 3 step(s)" in proc.stderr
