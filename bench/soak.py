"""Soak test: many concurrent sessions over WebSocket, HTTP and MCP, a SIGKILL + restart mid-run.

Starts a CodeRedEnv server on 127.0.0.1 (a random free port, its own state directory), then for
``--minutes`` runs ``--ws`` WebSocket sessions (the typed client, which resumes by itself),
``--http`` stateful HTTP episodes and ``--mcp`` MCP sessions (JSON-RPC over HTTP), each playing
episodes back to back. Halfway through, the server is killed with SIGKILL and restarted on the
same port and state directory. Every finished episode's served score is compared with the same
actions replayed in process. It reports episodes completed, lost (episodes that did not
finish: the client gave up on them, whatever the error) and mismatched, client-visible errors
by kind, the time from the kill to a healthy server, and the server's RSS over time. Loopback
only; bounded in time and count.

Usage::

    uv run python bench/soak.py                            # 64 sessions, 4 minutes
    uv run python bench/soak.py --minutes 1 --ws 8 --http 4 --mcp 4 --json /tmp/soak.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
TASKS = ("task1", "task2", "task3", "task4", "task5")
MAINTAIN = {"action_type": "maintain_plan"}
MAX_STEPS = 40  # per episode: episodes end by the step cap of this script or by themselves
RETRY_WINDOW_S = 120.0  # a client keeps retrying a request this long (covers the restart)
# Every request is answered in well under a second: a reply this late means a stuck connection,
# and the request is repeated (idempotently: HTTP steps carry expect_step, MCP checks the step).
HTTP_TIMEOUT = httpx.Timeout(20.0, connect=5.0)
RSS_EVERY_S = 5.0


@dataclass
class Report:
    completed: Counter[str] = field(default_factory=Counter)
    lost: Counter[str] = field(default_factory=Counter)
    mismatched: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    rss_mb: list[tuple[float, float]] = field(default_factory=list)
    recovery_s: float | None = None
    start_s: float = 0.0
    run_s: float = 0.0  # from the first session to the last one's end (stuck requests show here)

    def as_dict(self) -> dict[str, Any]:
        return {"completed": dict(self.completed), "lost": dict(self.lost),
                "mismatched": dict(self.mismatched), "errors": dict(self.errors),
                "recovery_s": self.recovery_s, "first_start_s": self.start_s, "run_s": round(self.run_s, 1),
                "rss_mb": [(round(t, 1), round(m, 1)) for t, m in self.rss_mb]}


class Server:
    def __init__(self, env: dict[str, str]) -> None:
        self.port = _free_port()
        self.state = Path(tempfile.mkdtemp(prefix="codered-soak-"))
        self.env = {**os.environ, **env, "CODERED_STATE_DIR": str(self.state), "PYTHONUNBUFFERED": "1"}
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> float:
        began = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "codered_env.server.app", "--host", "127.0.0.1", "--port", str(self.port),
             "--log-level", "warning"], cwd=ROOT, env=self.env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        while time.monotonic() - began < 180:
            try:
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    return time.monotonic() - began
            except httpx.HTTPError:
                time.sleep(0.05)
        raise RuntimeError("the server did not become healthy")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def rss_mb(self) -> float | None:
        if self.proc is None or self.proc.poll() is not None:
            return None
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            return None
        return None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.state, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def reference_score(task_id: str, seed: int, actions: list[dict[str, Any]]) -> float:
    """The score of the same actions played in process."""
    from codered_env.server.environment import CodeRedEnvironment

    env = CodeRedEnvironment()
    env.replay([{"op": "reset", "task_id": task_id, "seed": seed, "episode_id": "soak"},
                *({"op": "step", "action": a} for a in actions)])
    return float(env.state.score)


def _policy(seed: int) -> Any:
    from codered_env.agents import make_agent

    return make_agent("heuristic", seed=seed)


def _wire(action: Any) -> dict[str, Any]:
    return dict(action) if isinstance(action, dict) else action.model_dump(exclude_none=True)


def _check(report: Report, kind: str, task_id: str, seed: int, actions: list[dict[str, Any]],
           served: float) -> None:
    if abs(reference_score(task_id, seed, actions) - served) > 1e-9:
        report.mismatched[kind] += 1
    else:
        report.completed[kind] += 1


# ---------------------------------------------------------------------------- clients


async def ws_worker(url: str, index: int, stop_at: float, report: Report) -> None:
    from codered_env import CodeRedEnv

    episode = 0
    while time.monotonic() < stop_at:
        task_id, seed = TASKS[(index + episode) % len(TASKS)], 1000 * index + episode
        episode += 1
        env = CodeRedEnv(base_url=url, reconnect_timeout_s=RETRY_WINDOW_S)
        agent = _policy(seed)
        actions: list[dict[str, Any]] = []
        try:
            result = await env.reset(task_id=task_id, seed=seed)
            agent.reset(task_id, seed)
            while not result.done and len(actions) < MAX_STEPS:
                action = _wire(agent.act(result.observation.model_dump()))
                actions.append(action)
                result = await env.step(action)
            served = (await env.state()).score
            _check(report, "ws", task_id, seed, actions, served)
        except Exception as exc:
            _failure(report, "ws", exc)
        finally:
            with contextlib.suppress(Exception):
                await env.close()


def _failure(report: Report, kind: str, exc: BaseException) -> None:
    """An episode that did not finish: the client gave up on it (its error is counted too)."""
    report.lost[kind] += 1
    report.errors[f"{kind}:{type(exc).__name__}"] += 1


async def _post(http: httpx.AsyncClient, path: str, body: dict[str, Any] | None, report: Report, kind: str,
                headers: dict[str, str] | None = None, method: str = "POST",
                params: dict[str, Any] | None = None) -> httpx.Response:
    """A request, retrying connection failures, time-outs and 503s for RETRY_WINDOW_S (each
    counted as an error)."""
    deadline = time.monotonic() + RETRY_WINDOW_S
    while True:
        try:
            answer = await http.request(method, path, json=body, headers=headers, params=params)
            if answer.status_code != 503 or time.monotonic() > deadline:
                return answer
            report.errors[f"{kind}:503"] += 1
        except httpx.TransportError as exc:
            if time.monotonic() > deadline:
                raise
            report.errors[f"{kind}:{type(exc).__name__}"] += 1
        await asyncio.sleep(0.5)


async def http_worker(url: str, index: int, stop_at: float, report: Report) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=HTTP_TIMEOUT) as http:
        episode = 0
        while time.monotonic() < stop_at:
            task_id, seed = TASKS[(index + episode) % len(TASKS)], 2000 * index + episode
            episode += 1
            agent = _policy(seed)
            actions: list[dict[str, Any]] = []
            try:
                reset = await _post(http, "/reset", {"task_id": task_id, "seed": seed}, report, "http")
                payload = reset.json()
                episode_id = payload["episode_id"]
                agent.reset(task_id, seed)
                while not payload["done"] and len(actions) < MAX_STEPS:
                    action = _wire(agent.act(payload["observation"]))
                    body = {"episode_id": episode_id, "action": action, "expect_step": len(actions)}
                    answer = await _post(http, "/step", body, report, "http")
                    if answer.status_code != 200:
                        raise RuntimeError(f"step answered {answer.status_code}: {answer.text[:200]}")
                    actions.append(action)
                    payload = answer.json()
                state = await _post(http, "/state", None, report, "http", method="GET",
                                    params={"episode_id": episode_id})
                _check(report, "http", task_id, seed, actions, state.json()["score"])
            except Exception as exc:
                _failure(report, "http", exc)


async def mcp_worker(url: str, index: int, stop_at: float, report: Report) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=HTTP_TIMEOUT) as http:
        episode = 0
        while time.monotonic() < stop_at:
            task_id, seed = TASKS[(index + episode) % len(TASKS)], 3000 * index + episode
            episode += 1
            try:
                opened = await _post(http, f"/mcp?task_id={task_id}&seed={seed}", {
                    "jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18"}}, report, "mcp")
                headers = {"Mcp-Session-Id": opened.headers["mcp-session-id"]}
                actions: list[dict[str, Any]] = []
                done, score = False, 0.0
                while not done and len(actions) < MAX_STEPS:
                    result = await _tool(http, headers, len(actions), report)
                    actions.append(MAINTAIN)
                    done, score = bool(result["done"]), float(result["score"])
                _check(report, "mcp", task_id, seed, actions, score)
            except Exception as exc:
                _failure(report, "mcp", exc)


async def _tool(
    http: httpx.AsyncClient, headers: dict[str, str], steps: int, report: Report
) -> dict[str, Any]:
    """One maintain_plan call; after a failure, view_full_state (read-only) says whether it was
    applied before the call is repeated."""
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "maintain_plan", "arguments": {}}}
    view = {**call, "params": {"name": "view_full_state", "arguments": {}}}
    deadline = time.monotonic() + RETRY_WINDOW_S
    failed = False
    while True:
        try:
            if failed:
                seen = await http.post("/mcp", json=view, headers=headers)
                result = seen.json()["result"]["structuredContent"] if seen.status_code == 200 else None
                if result is None:
                    raise RuntimeError(f"MCP session answered {seen.status_code}: {seen.text[:200]}")
                if result["step"] == steps + 1:
                    return dict(result)
            answer = await http.post("/mcp", json=call, headers=headers)
            if answer.status_code == 200 and "result" in answer.json():
                return dict(answer.json()["result"]["structuredContent"])
            raise RuntimeError(f"MCP call answered {answer.status_code}: {answer.text[:200]}")
        except (httpx.TransportError, KeyError) as exc:
            if time.monotonic() > deadline:
                raise
            report.errors[f"mcp:{type(exc).__name__}"] += 1
            failed = True
            await asyncio.sleep(0.5)


# ---------------------------------------------------------------------------- the run


async def run(args: argparse.Namespace, server: Server, report: Report) -> None:
    began = time.monotonic()
    stop_at = began + args.minutes * 60
    workers = [asyncio.create_task(ws_worker(server.url, i, stop_at, report)) for i in range(args.ws)]
    workers += [asyncio.create_task(http_worker(server.url, i, stop_at, report)) for i in range(args.http)]
    workers += [asyncio.create_task(mcp_worker(server.url, i, stop_at, report)) for i in range(args.mcp)]

    async def sample_rss() -> None:
        while time.monotonic() < stop_at:
            rss = server.rss_mb()
            if rss is not None:
                report.rss_mb.append((time.monotonic() - began, rss))
            await asyncio.sleep(RSS_EVERY_S)

    async def crash() -> None:
        await asyncio.sleep(args.minutes * 60 * args.kill_at)
        server.kill()
        report.recovery_s = await asyncio.to_thread(server.start)

    await asyncio.gather(*workers, sample_rss(), crash())
    report.run_s = time.monotonic() - began


def markdown(report: Report, args: argparse.Namespace) -> str:
    rss = [m for _, m in report.rss_mb]
    lines = [
        f"Soak: {args.ws} WebSocket + {args.http} HTTP + {args.mcp} MCP sessions for {args.minutes:g} min, "
        f"SIGKILL + restart at {args.kill_at:.0%} of the run.",
        "",
        "| kind | episodes completed | lost | mismatched |",
        "|---|---:|---:|---:|",
    ]
    for kind in ("ws", "http", "mcp"):
        row = (report.completed[kind], report.lost[kind], report.mismatched[kind])
        lines.append(f"| {kind} | {row[0]} | {row[1]} | {row[2]} |")
    errors = ", ".join(f"{k} {v}" for k, v in sorted(report.errors.items())) or "none"
    lines += ["", f"Client-visible errors (each retried): {errors}.",
              f"Time from SIGKILL to a healthy server: {report.recovery_s:.2f} s (first start "
              f"{report.start_s:.2f} s).",
              f"Server RSS: {min(rss, default=0):.0f}-{max(rss, default=0):.0f} MB over {len(rss)} samples.",
              f"Run: {report.run_s:.0f} s from the first session to the end of the last episode."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=4.0)
    parser.add_argument("--ws", type=int, default=32)
    parser.add_argument("--http", type=int, default=16)
    parser.add_argument("--mcp", type=int, default=16)
    parser.add_argument("--kill-at", type=float, default=0.5, help="fraction of the run at which to SIGKILL")
    parser.add_argument("--json", type=Path, help="write the report as JSON here")
    args = parser.parse_args()
    # One loopback client stands for many: lift the per-address session allowance.
    server = Server({"CODERED_MCP_SESSIONS_PER_MINUTE": "100000", "MAX_CONCURRENT_ENVS": "64"})
    report = Report()
    try:
        report.start_s = server.start()
        asyncio.run(run(args, server, report))
    finally:
        server.stop()
    print(markdown(report, args))
    if args.json:
        args.json.write_text(json.dumps(report.as_dict(), indent=1))


if __name__ == "__main__":
    main()
