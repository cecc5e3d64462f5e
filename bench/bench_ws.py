"""WebSocket step latency and throughput of the CodeRedEnv server vs a trivial OpenEnv env.

Both servers run as uvicorn subprocesses on 127.0.0.1 (same uvicorn settings, same OpenEnv
``create_app`` session machinery, ``MAX_CONCURRENT_ENVS=64``). For each concurrency level
N (1, 16, 64 by default) the benchmark opens N raw WebSocket sessions from one asyncio
client process, resets each, and then has every session step as fast as it can; an episode
that ends is reset (resets are timed separately and not counted as steps). It reports the
p50/p99 round-trip latency of a step and the aggregate steps per second.

CodeRedEnv sessions cycle through task1..task5 and send ``maintain_plan`` (the action that
advances the clock to the next event, i.e. the costliest simulation step); the trivial
environment increments a counter.

Usage::

    uv run python bench/bench_ws.py                      # print a markdown report
    uv run python bench/bench_ws.py --write /tmp/ws.md   # then paste into docs/PERFORMANCE.md
    uv run python bench/bench_ws.py --levels 1 8 --total-steps 400   # quick run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect

ROOT = Path(__file__).resolve().parents[1]
TASKS = ("task1", "task2", "task3", "task4", "task5")
WARMUP_STEPS = 5
DEFAULT_LEVELS = [1, 16, 64]
DEFAULT_MODES = ["full", "none"]


@dataclass
class Target:
    name: str
    command: list[str]
    reset_data: Callable[[int], dict[str, Any]]
    action: dict[str, Any]
    query: str = ""  # appended to /ws


@dataclass
class LevelResult:
    target: str
    sessions: int
    steps: int
    wall_s: float
    step_ms: list[float] = field(repr=False)
    reset_ms: list[float] = field(repr=False)
    errors: int = 0
    ready: int = 0
    server_cpu_s: float = 0.0  # CPU time the server process spent over the timed steps

    @property
    def server_us_per_step(self) -> float:
        return self.server_cpu_s / self.steps * 1e6 if self.steps else float("nan")

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.wall_s if self.wall_s > 0 else 0.0

    def pct(self, q: float, data: list[float] | None = None) -> float:
        values = sorted(self.step_ms if data is None else data)
        if not values:
            return float("nan")
        index = min(len(values) - 1, max(0, round(q / 100 * (len(values) - 1))))
        return values[index]


def codered_name(observation: str) -> str:
    """``codered`` for the default observation mode, ``codered/<mode>`` for another."""
    return "codered" if observation == "full" else f"codered/{observation}"


def targets(observations: tuple[str, ...] = ("full",)) -> list[Target]:
    """The trivial environment and one CodeRedEnv target per observation mode (one server each)."""
    py = sys.executable
    trivial = Target(
        "trivial",
        [py, str(ROOT / "bench" / "trivial_env.py")],
        lambda i: {"seed": i, "episode_id": f"bench-{i}"},
        {"increment": 1},
    )
    return [trivial, *(
        Target(
            codered_name(observation),
            [py, "-m", "codered_env.server.app", "--log-level", "warning"],
            lambda i: {"seed": i, "episode_id": f"bench-{i}", "task_id": TASKS[i % len(TASKS)]},
            {"action_type": "maintain_plan"},
            "" if observation == "full" else f"?observation={observation}",
        )
        for observation in observations
    )]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


STATE_DIR = tempfile.mkdtemp(prefix="codered-bench-state-")  # the session journal, as deployed


def start(target: Target) -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    env = {**os.environ, "MAX_CONCURRENT_ENVS": "64", "PYTHONUNBUFFERED": "1",
           "CODERED_STATE_DIR": os.environ.get("CODERED_STATE_DIR", STATE_DIR)}
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [*target.command, "--host", "127.0.0.1", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        deadline = time.monotonic() + 180  # a cold start on a busy shared machine
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                    if r.status == 200:
                        return proc, port
            except OSError:
                time.sleep(0.1)
        proc.kill()
        proc.wait()
        log.seek(0)
        tail = log.read().decode(errors="replace")[-4000:]
    raise RuntimeError(f"{target.name} server failed to start:\n{tail}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def _session(
    url: str, target: Target, index: int, steps: int, result: LevelResult, start_gate: asyncio.Event
) -> None:
    async with connect(url, max_size=1 << 22, compression=None) as ws:

        async def call(message: dict[str, Any]) -> dict[str, Any]:
            await ws.send(json.dumps(message))
            reply: dict[str, Any] = json.loads(await ws.recv())
            if reply.get("type") == "error":
                result.errors += 1
            return reply

        async def reset() -> None:
            began = time.perf_counter()
            await call({"type": "reset", "data": target.reset_data(index)})
            result.reset_ms.append((time.perf_counter() - began) * 1000)

        await reset()
        for _ in range(WARMUP_STEPS):
            reply = await call({"type": "step", "data": target.action})
            if reply.get("data", {}).get("done"):
                await reset()
        result.ready += 1
        await start_gate.wait()
        for _ in range(steps):
            began = time.perf_counter()
            reply = await call({"type": "step", "data": target.action})
            result.step_ms.append((time.perf_counter() - began) * 1000)
            result.steps += 1
            if reply.get("data", {}).get("done"):
                await reset()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run_level(
    port: int, target: Target, sessions: int, total_steps: int, pid: int | None = None
) -> LevelResult:
    url = f"ws://127.0.0.1:{port}/ws{target.query}"
    steps = max(20, total_steps // sessions)
    result = LevelResult(target.name, sessions, 0, 0.0, [], [])
    gate = asyncio.Event()
    tasks = [asyncio.create_task(_session(url, target, i, steps, result, gate)) for i in range(sessions)]
    while result.ready < sessions and not any(t.done() for t in tasks):
        await asyncio.sleep(0.01)  # every session connected, reset and warmed up
    began, cpu_before = time.perf_counter(), cpu_seconds(pid) if pid else 0.0
    gate.set()
    await asyncio.gather(*tasks)
    result.wall_s = time.perf_counter() - began
    result.server_cpu_s = (cpu_seconds(pid) - cpu_before) if pid else 0.0
    return result


def step_breakdown(episodes: int = 3) -> list[tuple[str, dict[str, float]]]:
    """In-process CPU time (microseconds per step) of each stage of a CodeRedEnv WebSocket step,
    the client's decoding of the full reply, and the HTTP routes' validated observation."""
    from openenv.core.env_server.serialization import serialize_observation
    from pydantic_core import to_json

    from codered_env.models import CodeRedObservation
    from codered_env.server.environment import plain_observation
    from codered_env.sim import CodeRedSim, render_text
    from codered_env.sim.derived import Derived

    cpu = time.process_time  # CPU time: waiting for a core on a busy machine is not counted
    stages = ("sim.step", "observation view", "render_text", "encode reply", "client json.loads",
              "validated obs + serialize")
    rows = []
    for task_id in TASKS:
        costs = dict.fromkeys(stages, 0.0)
        steps = 0
        for seed in range(episodes):
            sim, derived = CodeRedSim(task_id, seed), Derived()  # the server keeps one per episode
            while not sim.done:
                t0 = cpu()
                sim.step({"action_type": "maintain_plan"})
                t1 = cpu()
                data = plain_observation(sim.observation_view())
                t2 = cpu()
                text = render_text(data, derived)
                t3 = cpu()
                reply = {"observation": {**data, "text": text}, "reward": 0.0}
                encoded = to_json({"type": "observation", "data": reply})
                t4 = cpu()
                json.loads(encoded)
                t5 = cpu()
                serialize_observation(CodeRedObservation.from_sim(sim.observation(), text, 0.0))
                t6 = cpu()
                marks = (t0, t1, t2, t3, t4, t5, t6)
                for key, began, ended in zip(costs, marks, marks[1:], strict=False):
                    costs[key] += ended - began
                steps += 1
        rows.append((task_id, {k: v / steps * 1e6 for k, v in costs.items()}))
    return rows


def breakdown_markdown(rows: list[tuple[str, dict[str, float]]]) -> list[str]:
    keys = list(rows[0][1])
    lines = [
        "",
        "In-process CPU time of one `maintain_plan` step by stage (microseconds, mean over 3 "
        "episodes per task). A `full` WebSocket step pays the first four on the server "
        "(`without_text` skips render_text, `none` pays sim.step only) and its client pays "
        "`client json.loads` to decode the reply; the stateful HTTP routes build and validate "
        "the observation model instead (the last column, which includes its own observation()).",
        "",
        "| task | " + " | ".join(keys) + " |",
        "|---|" + "---:|" * len(keys),
    ]
    for task_id, costs in rows:
        lines.append(f"| {task_id} | " + " | ".join(f"{costs[k]:.0f}" for k in keys) + " |")
    return lines


def markdown(results: list[LevelResult], args: argparse.Namespace) -> str:
    by_key = {(r.target, r.sessions): r for r in results}
    lines = [
        "# WebSocket server performance (CodeRedEnv vs a trivial OpenEnv environment)",
        "",
        "Generated by `uv run python bench/bench_ws.py"
        + (f" --levels {' '.join(map(str, args.levels))}" if args.levels != DEFAULT_LEVELS else "")
        + (f" --observation {' '.join(args.observation)}" if args.observation != DEFAULT_MODES else "")
        + (f" --total-steps {args.total_steps}" if args.total_steps != 1500 else "")
        + (f" --rounds {args.rounds}" if args.rounds != 3 else "")
        + "`.",
        f"Machine: {platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPU cores, {platform.system()} {platform.machine()}; the client "
        "(one asyncio process) and the server share these cores, loopback only.",
        "Each level opens N WebSocket sessions and steps them concurrently; latency is the "
        "client-side round trip of one `step` frame. CodeRedEnv sends `maintain_plan` "
        "(advance to the next event) over task1..task5; resets are excluded from step "
        "latency and reported separately. Each level runs 3 interleaved rounds per env "
        "(trivial, codered, trivial, ...) and pools them, so background load hits both alike. "
        "`codered` is the default observation mode (`full`: the whole observation and its text); "
        "`codered/<mode>` is `/ws?observation=<mode>`.",
        "",
        "| sessions | env | steps | p50 step ms | p99 step ms | steps/s | server CPU us/step | "
        "p50 reset ms | errors |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.sessions} | {r.target} | {r.steps} | {r.pct(50):.2f} | {r.pct(99):.2f} | "
            f"{r.steps_per_s:.0f} | {r.server_us_per_step:.0f} | {r.pct(50, r.reset_ms):.2f} | {r.errors} |"
        )
    lines += ["", "Server CPU us/step: the server process's CPU time over the timed steps, per step "
              "(resets included); unlike steps/s it hardly depends on what else the machine runs.",
              "", "| sessions | env | p50 ratio to trivial | throughput ratio | server CPU ratio |",
              "|---:|---|---:|---:|---:|"]
    for n in args.levels:
        tr = by_key.get(("trivial", n))
        for name in map(codered_name, args.observation):
            cr = by_key.get((name, n))
            if cr and tr:
                lines.append(f"| {n} | {name} | {cr.pct(50) / tr.pct(50):.2f}x | "
                             f"{cr.steps_per_s / tr.steps_per_s:.2f}x | "
                             f"{cr.server_us_per_step / tr.server_us_per_step:.2f}x |")
    lines += ["", "Target: `codered` throughput >= 0.8x the trivial environment's at 16 and 64 sessions."]
    lines += breakdown_markdown(step_breakdown())
    return "\n".join([*lines, ""])


def merge(parts: list[LevelResult]) -> LevelResult:
    """Pool interleaved rounds of one (env, level): all latencies, summed steps and time."""
    return LevelResult(
        parts[0].target,
        parts[0].sessions,
        sum(p.steps for p in parts),
        sum(p.wall_s for p in parts),
        [x for p in parts for x in p.step_ms],
        [x for p in parts for x in p.reset_ms],
        sum(p.errors for p in parts),
        server_cpu_s=sum(p.server_cpu_s for p in parts),
    )


ANALYSIS_MARKER = "<!-- analysis: kept when bench_ws.py rewrites the results above -->"


def write_report(path: Path, report: str) -> None:
    """Replace the generated results, keeping any hand-written analysis below the marker."""
    kept = ""
    if path.exists() and ANALYSIS_MARKER in (text := path.read_text()):
        kept = text[text.index(ANALYSIS_MARKER) :]
    path.write_text(report + ("\n" + kept if kept else ""))


async def main_async(args: argparse.Namespace) -> list[LevelResult]:
    servers = {t.name: (t, *start(t)) for t in targets(tuple(args.observation))}
    results: list[LevelResult] = []
    per_round = max(1, args.total_steps // args.rounds)
    try:
        for n in args.levels:
            rounds: dict[str, list[LevelResult]] = {name: [] for name in servers}
            for _ in range(args.rounds):  # interleaved, so load drift hits both alike
                for name, parts in rounds.items():
                    target, proc, port = servers[name]
                    parts.append(await run_level(port, target, n, per_round, proc.pid))
            for parts in rounds.values():
                res = merge(parts)
                print(
                    f"{res.target:12s} N={n:3d} p50={res.pct(50):7.2f}ms "
                    f"p99={res.pct(99):7.2f}ms {res.steps_per_s:8.0f} steps/s "
                    f"errors={res.errors}",
                    file=sys.stderr,
                )
                results.append(res)
    finally:
        for _, proc, _ in servers.values():
            stop(proc)
        shutil.rmtree(STATE_DIR, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", type=int, nargs="+", default=DEFAULT_LEVELS)
    parser.add_argument("--total-steps", type=int, default=1500, help="steps per level and env")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per level")
    parser.add_argument("--write", type=Path, help="also write the markdown report here")
    parser.add_argument("--json", type=Path, help="write raw summary numbers as JSON")
    parser.add_argument("--observation", nargs="+", default=DEFAULT_MODES,
                        choices=["full", "without_text", "none"],
                        help="what CodeRedEnv step replies carry (/ws?observation=), one server each "
                             "(default: full none)")
    args = parser.parse_args()
    results = asyncio.run(main_async(args))
    report = markdown(results, args)
    print(report)
    if args.write:
        write_report(args.write, report)
    if args.json:
        summary = [
            {
                "env": r.target,
                "sessions": r.sessions,
                "steps": r.steps,
                "p50_ms": r.pct(50),
                "p99_ms": r.pct(99),
                "steps_per_s": r.steps_per_s,
                "errors": r.errors,
                "server_cpu_us_per_step": r.server_us_per_step,
            }
            for r in results
        ]
        args.json.write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
