"""``codered llm serve``: the command line is checked always; the real server (llama.cpp with the
packaged SmolLM2 GGUF) only with CODERED_LOCAL_LLM=1 and the ``local-llm`` extra installed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from runlog_check import parse_run_log

from codered_env.agents import local_llm
from codered_env.agents.local_llm import (
    LocalLLMError,
    ServeOptions,
    client_env_lines,
    packaged_model_path,
    server_available,
    server_command,
    server_env,
)

REPO = Path(__file__).resolve().parents[2]


def test_server_command_is_cpu_friendly_and_loopback() -> None:
    options = ServeOptions(model=Path("/m/model.gguf"), port=9999, n_threads=2)
    command = server_command(options)
    assert command[1:3] == ["-m", "llama_cpp.server"]
    pairs = dict(zip(command[3::2], command[4::2], strict=False))
    assert pairs["--host"] == "127.0.0.1" and pairs["--port"] == "9999"
    assert pairs["--n_threads"] == "2" and pairs["--logits_all"] == "False"
    assert pairs["--chat_format"] == "chatml-function-calling"
    env = server_env(options, base={})
    assert env == {"OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "2"}
    assert "export API_BASE_URL=http://127.0.0.1:9999/v1" in client_env_lines(options)


def test_missing_model_package_is_a_clear_error() -> None:
    with pytest.raises(LocalLLMError, match="local-llm"):
        packaged_model_path("codered_no_such_model_package")


def test_a_server_killed_by_an_illegal_instruction_says_how_to_rebuild(monkeypatch) -> None:
    """A native llama.cpp build on a VM that advertises AVX-512/AMX but refuses them dies of
    SIGILL on the first completion: the warm-up's dropped connection becomes an actionable error."""
    dying = subprocess.Popen([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGILL)"])
    dying.wait(timeout=30)

    def refused(options: ServeOptions, timeout: float = 300.0) -> float:
        raise ConnectionResetError("Remote end closed connection without response")

    monkeypatch.setattr(local_llm, "warm_up", refused)
    options = ServeOptions(model=Path("/m/model.gguf"), port=_free_port())
    with pytest.raises(LocalLLMError, match=r"illegal CPU instruction.*GGML_NATIVE=OFF"):
        local_llm._checked_warm_up(options, dying)
    assert "code 3" in local_llm.describe_exit(3)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.skipif(os.environ.get("CODERED_LOCAL_LLM") != "1",
                    reason="opt-in: CODERED_LOCAL_LLM=1 with the local-llm extra installed")
def test_served_smollm2_plays_an_episode() -> None:
    assert server_available(), "llama-cpp-python[server] is not installed"
    assert packaged_model_path().stat().st_size > 10_000_000
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "codered_env.cli", "llm", "serve",
                               "--port", str(port)], cwd=REPO, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:  # ready = warm-up done and the exports printed
            line = server.stderr.readline() if server.stderr else ""
            assert line or server.poll() is None, "server exited"
            if "export API_BASE_URL" in line:
                break
        urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5).read()
        env = {k: v for k, v in os.environ.items()
               if k not in ("HF_TOKEN", "API_KEY", "OPENAI_API_KEY")}
        env.update(API_BASE_URL=f"http://127.0.0.1:{port}/v1", MODEL_NAME="smollm2-135m-instruct",
                   CODERED_LLM_TIMEOUT="120", CODERED_LLM_MAX_TOKENS="64")
        proc = subprocess.run([sys.executable, "inference.py", "--task", "task1", "--seed", "3000",
                               "--max-steps", "3"], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=900, check=False)
        log = parse_run_log(proc.stdout)
        assert log.model == "smollm2-135m-instruct" and len(log.rewards) == 3
        assert "llm-stats: calls=" in proc.stderr and "prompt_tokens=0 " not in proc.stderr
    finally:
        server.terminate()
        server.wait(timeout=30)
