"""Honest WebSocket throughput while other clients flood ``/grader`` with long replays.

Starts a CodeRedEnv server on 127.0.0.1, runs ``--honest`` WebSocket clients stepping as fast as
they can for ``--seconds`` alone, then again while ``--flooders`` clients post 200-action
``/grader`` replays (a new seed each time, so nothing is cached) back to back. Reports honest
steps per second in both phases, their ratio, the step p99 and how the flood was answered (by
HTTP status). Loopback only; bounded in time.

Usage::

    uv run python bench/bench_flood.py                 # 4 honest, 4 flooders, 15 s per phase
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
from websockets.asyncio.client import connect

ROOT = Path(__file__).resolve().parents[1]
REPLAY = [{"action_type": "maintain_plan"}] * 200


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def honest(url: str, index: int, stop: float, latencies: list[float]) -> None:
    async with connect(url, max_size=1 << 22) as ws:
        async def call(message: dict) -> dict:
            await ws.send(json.dumps(message))
            return dict(json.loads(await ws.recv()))

        await call({"type": "reset", "data": {"task_id": "task1", "seed": index}})
        while time.monotonic() < stop:
            began = time.perf_counter()
            reply = await call({"type": "step", "data": {"action_type": "maintain_plan"}})
            latencies.append((time.perf_counter() - began) * 1000)
            if reply["data"].get("done"):
                await call({"type": "reset", "data": {"task_id": "task1", "seed": index}})


async def flooder(base: str, index: int, stop: float, answers: Counter[int]) -> None:
    seed = 10_000 * (index + 1)
    async with httpx.AsyncClient(base_url=base, timeout=120) as http:
        while time.monotonic() < stop:
            seed += 1
            try:
                body = {"task_id": "task3", "seed": seed, "actions": REPLAY}
                answer = await http.post("/grader", json=body)
                answers[answer.status_code] += 1
            except httpx.HTTPError:
                answers[0] += 1


async def phase(port: int, args: argparse.Namespace, flood: bool) -> tuple[float, float, Counter[int]]:
    stop = time.monotonic() + args.seconds
    latencies: list[float] = []
    answers: Counter[int] = Counter()
    tasks = [honest(f"ws://127.0.0.1:{port}/ws", i, stop, latencies) for i in range(args.honest)]
    if flood:
        tasks += [flooder(f"http://127.0.0.1:{port}", i, stop, answers) for i in range(args.flooders)]
    await asyncio.gather(*tasks)
    latencies.sort()
    p99 = latencies[int(0.99 * (len(latencies) - 1))] if latencies else float("nan")
    return len(latencies) / args.seconds, p99, answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--honest", type=int, default=4)
    parser.add_argument("--flooders", type=int, default=4)
    args = parser.parse_args()
    port = _free_port()
    env = {**os.environ, "CODERED_STATE_DIR": tempfile.mkdtemp(prefix="codered-flood-")}
    proc = subprocess.Popen([sys.executable, "-m", "codered_env.server.app", "--port", str(port),
                             "--log-level", "warning"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        calm, calm_p99, _ = asyncio.run(phase(port, args, flood=False))
        flooded, flood_p99, answers = asyncio.run(phase(port, args, flood=True))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"honest WS steps/s: alone {calm:.0f} (p99 {calm_p99:.1f} ms), under the flood {flooded:.0f} "
          f"(p99 {flood_p99:.1f} ms): ratio {flooded / calm:.2f}")
    print("flood answers by status: " + ", ".join(f"{k} x{v}" for k, v in sorted(answers.items())))


if __name__ == "__main__":
    main()
