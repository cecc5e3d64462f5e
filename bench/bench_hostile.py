"""The server under a hostile client mix, next to a quiet run (an opt-in load test).

Starts the CodeRedEnv server as a uvicorn subprocess on 127.0.0.1 and measures, for a few
"honest" WebSocket sessions stepping ``maintain_plan`` as fast as they can, the p50/p99 step
round trip and the steps per second:

* ``quiet``: the honest sessions alone;
* ``hostile``: the same sessions while attackers loop, all at once:
  ~60 KiB bodies of ``{}`` items to ``/grader``, NaN/1e400/surrogate bodies to ``/reset``,
  uncached ``/baseline`` and ``/web/episode`` runs, a ``/reset`` flood, bad WebSocket frames
  (arrays, deep nesting, huge integers, binary), ``/mcp`` session creation, and hundreds of
  slow-header sockets. An honest HTTP client also plays reset+step during the attack and
  every answer it gets is counted.

Then ``sessions``: how many concurrent WebSocket sessions the server holds (each resets and
steps), and ``disconnects``: abrupt (RST) disconnects in the middle of episodes, after which
the full session capacity must still be available.

Usage::

    uv run python bench/bench_hostile.py                 # about 2 minutes
    uv run python bench/bench_hostile.py --seconds 5 --sessions 128 --disconnects 500   # quick

The client and the server share the machine's cores: numbers on a busy machine are contended
(the report prints the load average).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from websockets.asyncio.client import connect

ROOT = Path(__file__).resolve().parents[1]
SERVER_ROOT = ROOT  # --root: serve another checkout's code (e.g. a checkout before a change, for "before")
MAINTAIN = {"action_type": "maintain_plan"}
HONEST_SESSIONS = 4


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def server(extra_env: dict[str, str]):  # type: ignore[no-untyped-def]
    port = free_port()
    fd, log_name = tempfile.mkstemp(prefix="codered-bench-", suffix=".log")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **extra_env}
    command = [sys.executable, "-m", "codered_env.server.app", "--host", "127.0.0.1", "--port", str(port)]
    with os.fdopen(fd, "wb") as log:
        proc = subprocess.Popen(
            [*command, "--log-level", "warning"],
            cwd=SERVER_ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).status == 200:
                    break
            if proc.poll() is not None:
                raise RuntimeError(Path(log_name).read_text()[-4000:])
            time.sleep(0.3)
        yield port, Path(log_name)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        with contextlib.suppress(OSError):
            os.unlink(log_name)


@dataclass
class Run:
    name: str
    step_ms: list[float] = field(default_factory=list)
    seconds: float = 0.0
    errors: int = 0
    http_status: Counter[int] = field(default_factory=Counter)
    attack_status: Counter[str] = field(default_factory=Counter)

    def pct(self, q: float) -> float:
        values = sorted(self.step_ms)
        if not values:
            return float("nan")
        return values[min(len(values) - 1, round(q / 100 * (len(values) - 1)))]


async def honest_ws(port: int, index: int, stop: float, run: Run) -> None:
    async with connect(f"ws://127.0.0.1:{port}/ws", max_size=None) as ws:
        await ws.send(json.dumps({"type": "reset", "data": {"task_id": "task5", "seed": index}}))
        await ws.recv()
        while time.monotonic() < stop:
            began = time.perf_counter()
            await ws.send(json.dumps({"type": "step", "data": MAINTAIN}))
            reply = json.loads(await ws.recv())
            run.step_ms.append((time.perf_counter() - began) * 1000)
            if reply["type"] != "observation":
                run.errors += 1
            elif reply["data"]["done"]:
                await ws.send(json.dumps({"type": "reset", "data": {"task_id": "task5", "seed": index}}))
                await ws.recv()


async def honest_http(port: int, stop: float, run: Run) -> None:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        while time.monotonic() < stop:
            reset = await http.post("/reset", json={"task_id": "task1"})
            run.http_status[reset.status_code] += 1
            if reset.status_code != 200:
                continue
            episode = reset.json()["episode_id"]
            for _ in range(3):
                step = await http.post("/step", json={"episode_id": episode, "action": MAINTAIN})
                run.http_status[step.status_code] += 1
            await asyncio.sleep(0.05)


async def _loop_posts(port: int, stop: float, run: Run, label: str, path: str, bodies: list[bytes]) -> None:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
        while time.monotonic() < stop:
            body = random.choice(bodies)
            try:
                response = await http.post(path, content=body, headers={"content-type": "application/json"})
                run.attack_status[f"{label} {response.status_code}"] += 1
            except httpx.HTTPError as exc:
                run.attack_status[f"{label} {type(exc).__name__}"] += 1


async def _loop_heavy(port: int, stop: float, run: Run, worker: int) -> None:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
        n = 0
        while time.monotonic() < stop:
            n += 1
            seed = 10_000 * worker + n  # never cached
            try:
                if n % 2:
                    response = await http.post("/baseline", json={"agent": "random", "seeds": [seed]})
                else:
                    response = await http.get("/web/episode", params={"task_id": "task5", "seed": seed})
                run.attack_status[f"heavy {response.status_code}"] += 1
            except httpx.HTTPError as exc:
                run.attack_status[f"heavy {type(exc).__name__}"] += 1


BAD_FRAMES: list[str | bytes] = [
    "[1, 2, 3]",
    '"x"',
    "42",
    "[" * 5000 + "]" * 5000,
    '{"type": "reset", "data": {"seed": ' + "9" * 5000 + "}}",
    b"\x00" * 100,
    '{"type": "reset", "data": {"episode_id": "\\ud800"}}',
]


async def _loop_bad_frames(port: int, stop: float, run: Run) -> None:
    while time.monotonic() < stop:
        try:
            async with connect(f"ws://127.0.0.1:{port}/ws", max_size=None) as ws:
                while time.monotonic() < stop:
                    await ws.send(random.choice(BAD_FRAMES))
                    reply = json.loads(await ws.recv())
                    run.attack_status[f"ws-bad {reply['data']['code']}"] += 1
        except Exception as exc:  # a server that closes the session on a bad frame
            run.attack_status[f"ws-bad session ended ({type(exc).__name__})"] += 1
            await asyncio.sleep(0.05)


async def _loop_mcp(port: int, stop: float, run: Run) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"}).encode()
    await _loop_posts(port, stop, run, "mcp", "/mcp", [body])


async def _slow_headers(port: int, stop: float, run: Run, count: int) -> None:
    writers = []
    for _ in range(count):
        with contextlib.suppress(OSError):
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\n")
            writers.append(writer)
    run.attack_status["slow-header sockets opened"] += len(writers)
    await asyncio.sleep(max(0.0, stop - time.monotonic()))
    closed = sum(1 for w in writers if w.transport.is_closing() or w.is_closing())
    run.attack_status["slow-header sockets closed by server"] += closed
    for writer in writers:
        writer.close()


async def measure(port: int, seconds: float, hostile: bool) -> Run:
    run = Run("hostile" if hostile else "quiet")
    stop = time.monotonic() + seconds
    tasks = [honest_ws(port, i, stop, run) for i in range(HONEST_SESSIONS)] + [honest_http(port, stop, run)]
    if hostile:
        garbage = b"[" + b"{}," * 20_000 + b"{}]"
        poison = [b'{"seed": NaN}', b'{"seed": 1e400}', b'{"task_id": "\\ud800"}', b"[" * 5000 + b"]" * 5000]
        tasks += [_loop_posts(port, stop, run, "garbage", "/grader", [garbage]) for _ in range(2)]
        tasks += [_loop_posts(port, stop, run, "poison", "/reset", poison)]
        tasks += [_loop_posts(port, stop, run, "reset-flood", "/reset", [b"{}"]) for _ in range(2)]
        tasks += [_loop_heavy(port, stop, run, w) for w in range(6)]
        tasks += [_loop_bad_frames(port, stop, run), _loop_mcp(port, stop, run)]
        tasks += [_slow_headers(port, stop, run, 300)]
    began = time.monotonic()
    await asyncio.gather(*tasks)
    run.seconds = time.monotonic() - began
    return run


async def hold_sessions(port: int, count: int) -> tuple[int, int]:
    """Open ``count`` sessions, reset and step each; returns (held, errors)."""
    stack = contextlib.AsyncExitStack()
    held = errors = 0
    async with stack:
        sockets = []
        for _ in range(count):
            try:
                sockets.append(await stack.enter_async_context(connect(f"ws://127.0.0.1:{port}/ws")))
            except Exception:
                errors += 1
        for ws in sockets:
            await ws.send(json.dumps({"type": "reset", "data": {}}))
        for ws in sockets:
            reply = json.loads(await ws.recv())
            errors += reply["type"] != "observation"
        for ws in sockets:
            await ws.send(json.dumps({"type": "step", "data": MAINTAIN}))
        for ws in sockets:
            reply = json.loads(await ws.recv())
            held += reply["type"] == "observation"
    return held, errors


async def abrupt_disconnects(port: int, count: int, parallel: int = 16) -> int:
    done = 0

    async def one() -> None:
        nonlocal done
        ws = await connect(f"ws://127.0.0.1:{port}/ws")
        await ws.send(json.dumps({"type": "reset", "data": {"task_id": "task3"}}))
        await ws.recv()
        await ws.send(json.dumps({"type": "step", "data": MAINTAIN}))
        sock = ws.transport.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        ws.transport.abort()
        done += 1

    for start in range(0, count, parallel):
        await asyncio.gather(*(one() for _ in range(min(parallel, count - start))), return_exceptions=True)
    return done


def report(
    quiet: Run, hostile: Run, sessions: tuple[int, int, int], disconnects: tuple[int, int, int]
) -> str:
    load = os.getloadavg()
    lines = [
        f"Machine: CPython {platform.python_version()}, {os.cpu_count()} cores, {platform.machine()}; "
        f"load average before the run {load[0]:.1f} (shared with other work: contended numbers).",
        "",
        "| run | honest WS steps | p50 step ms | p99 step ms | steps/s | WS errors | honest HTTP answers |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for run in (quiet, hostile):
        http = ", ".join(f"{k}: {v}" for k, v in sorted(run.http_status.items()))
        lines.append(
            f"| {run.name} | {len(run.step_ms)} | {run.pct(50):.2f} | {run.pct(99):.2f} | "
            f"{len(run.step_ms) / run.seconds:.0f} | {run.errors} | {http} |"
        )
    lines += ["", "Attack traffic answered during the hostile run:", ""]
    lines += [f"* {k}: {v}" for k, v in sorted(hostile.attack_status.items())]
    target, held, errors = sessions
    lines += [
        "",
        f"Sessions held: {held} of {target} concurrent WebSocket sessions reset and stepped "
        f"({errors} errors).",
    ]
    _count, survived, capacity = disconnects
    lines += [
        f"Disconnects survived: {survived} abrupt (RST) disconnects mid-episode; afterwards "
        f"{capacity} of {target} sessions could be opened again."
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="length of the quiet and hostile runs")
    parser.add_argument("--sessions", type=int, default=512)
    parser.add_argument("--disconnects", type=int, default=3000)
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout whose server to run")
    args = parser.parse_args()
    global SERVER_ROOT
    SERVER_ROOT = args.root
    env = {"MAX_CONCURRENT_ENVS": str(args.sessions), "CODERED_WS_IDLE_TIMEOUT_S": "30"}
    with server(env) as (port, _log):
        quiet = asyncio.run(measure(port, args.seconds, hostile=False))
        hostile = asyncio.run(measure(port, args.seconds, hostile=True))
        time.sleep(2)
        sessions = (args.sessions, *asyncio.run(hold_sessions(port, args.sessions)))
        survived = asyncio.run(abrupt_disconnects(port, args.disconnects))
        time.sleep(2)
        capacity, _ = asyncio.run(hold_sessions(port, args.sessions))
    print(report(quiet, hostile, sessions, (args.disconnects, survived, capacity)))


if __name__ == "__main__":
    main()
