"""Latency of an MCP ``tools/call`` (POST /mcp, standard session) vs a ``/ws`` step, and the size
of the tool list.

Starts a server on a free 127.0.0.1 port, then plays the same heuristic action lists (task5,
seeds from 0, until ``--calls`` decisions) both ways, one blocking client each (httpx keep-alive
for /mcp, websockets for /ws), the two kinds interleaved episode by episode so machine load hits
both alike. Prints p50/p90 per call and the tool list's size (JSON characters, and tokens
estimated as characters / 4: no tokenizer is a dependency).

    uv run python bench/bench_mcp.py --calls 200
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import httpx
from websockets.sync.client import connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "server"))

from support_server import running_server

from codered_env.agents import make_agent
from codered_env.runner import run_episode

TASK = "task5"


def _mcp_episode(http: httpx.Client, seed: int, actions: list[dict]) -> list[float]:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}
    session = http.post(f"/mcp?task_id={TASK}&seed={seed}", json=init).headers["mcp-session-id"]
    times = []
    for n, action in enumerate(actions, 1):
        args = {k: v for k, v in action.items() if k != "action_type"}
        body = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                "params": {"name": action["action_type"], "arguments": args}}
        start = time.perf_counter()
        answer = http.post("/mcp", json=body, headers={"Mcp-Session-Id": session}).json()
        times.append(time.perf_counter() - start)
        assert not answer["result"]["isError"], answer
    http.delete("/mcp", headers={"Mcp-Session-Id": session})
    return times


def _ws_episode(ws_url: str, seed: int, actions: list[dict]) -> list[float]:
    times = []
    with connect(ws_url, max_size=None) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"task_id": TASK, "seed": seed}}))
        ws.recv()
        for action in actions:
            start = time.perf_counter()
            ws.send(json.dumps({"type": "step", "data": action}))
            reply = json.loads(ws.recv())
            times.append(time.perf_counter() - start)
            assert reply["type"] == "observation", reply
    return times


def _summary(name: str, times: list[float]) -> str:
    ordered = sorted(times)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    return f"{name}: n={len(times)} p50 {statistics.median(times) * 1e3:.2f} ms, p90 {p90 * 1e3:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    with running_server({"CODERED_MCP_SESSIONS_PER_MINUTE": "100000"}) as server, httpx.Client(
        base_url=server.base_url, timeout=60
    ) as http:
        tools = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).json()
        text = json.dumps(tools["result"]["tools"])
        mcp_times: list[float] = []
        ws_times: list[float] = []
        seed = 0
        while len(mcp_times) < args.calls:
            actions = run_episode(TASK, seed, make_agent("heuristic")).actions
            ws_times += _ws_episode(server.ws_url, seed, actions)
            mcp_times += _mcp_episode(http, seed, actions)
            seed += 1
    print(_summary("POST /mcp tools/call", mcp_times))
    print(_summary("/ws step", ws_times))
    print(f"tools/list: {len(tools['result']['tools'])} tools, {len(text):,} JSON chars, "
          f"~{len(text) / 4:,.0f} tokens (chars / 4)")
    compact = json.dumps([{k: t[k] for k in ("name", "description", "inputSchema")}
                          for t in tools["result"]["tools"]])
    print(f"without outputSchema/annotations: {len(compact):,} chars, ~{len(compact) / 4:,.0f} tokens")


if __name__ == "__main__":
    main()
