"""inference.py --env-url: the same episode through a real CodeRedEnv server (WebSocket)."""

from __future__ import annotations

import io
import socket

import pytest
from fake_openai import FakeOpenAI
from runlog_check import parse_run_log
from support_server import RunningServer
from test_inf_script import TASK2, base_env, llm_env, load_inference, run_script


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_in_process(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """inference.run() in this process, which has already imported openenv: a fresh interpreter
    with --env-url pays ~10 s of CPU importing it (the subprocess path is covered once below)."""
    inference, out = load_inference(), io.StringIO()
    code = inference.run(inference.parse_args(args), out, env)
    return code, out.getvalue()


@pytest.fixture
def server_url(server: RunningServer) -> str:
    """The session's shared server (tests/conftest.py): a start costs several seconds of CPU."""
    return server.base_url


def test_remote_heuristic_matches_in_process(server_url: str) -> None:
    args = ["--task", "task2", "--seed", "3", "--agent", "heuristic"]
    code, stdout = run_in_process(args, base_env())  # the in-simulator reference run
    assert code == 0
    local = parse_run_log(stdout)
    proc = run_script([*args, "--env-url", server_url], base_env())
    remote = parse_run_log(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert remote.actions == local.actions and remote.rewards == local.rewards
    assert remote.score == local.score and remote.errors == local.errors


def test_remote_llm_with_unsendable_actions(server_url: str, fake_llm: FakeOpenAI) -> None:
    fake_llm.set_script({"kind": "tool", "name": "dispatch_ambulance",
                         "arguments": {"ambulance_id": "ALS1", "patient_id": "P1"}},
                        {"kind": "tool", "name": "triage_call",
                         "arguments": {"call_id": "C1", "priority": "P9"}},
                        {"kind": "text", "content": "garbage"})
    code, stdout = run_in_process([*TASK2, "--env-url", server_url], llm_env(fake_llm))
    log = parse_run_log(stdout)
    assert code == 0
    assert len(log.rewards) == 6 and log.errors[0] == "null"
    assert log.errors[1].startswith("llm: invalid action") and log.actions[1] == "maintain_plan()"


def test_unreachable_server_still_prints_the_log() -> None:
    code, stdout = run_in_process(["--task", "task1", "--env-url",
                                   f"http://127.0.0.1:{free_port()}"], base_env())
    log = parse_run_log(stdout)
    assert log.rewards == [] and code == 1 and log.score == 0.01
