"""Speed of ``codered eval`` run serially, in worker processes and on Ray; concurrent LLM episodes.

A benchmark, not a test (results go to docs/PERFORMANCE.md).  Two parts:

``cpu``
    The ``heuristic`` agent (CPU-bound) over every task and ``--seeds`` seeds, stored in a fresh
    SQLite file per configuration: serial, ``--workers 2`` processes, and Ray with 1 and 2 CPUs
    (when ray is installed).  Ray's start-up (``ray.init``) is timed separately from the run.
    Every configuration must store exactly the serial results; the script checks it.
``llm``
    ``--llm-episodes`` LLM episodes of ``--llm-steps`` steps against the test suite's fake
    OpenAI-compatible endpoint with ``--latency`` seconds per request, at concurrency 1 and 8.

Usage::

    uv run python bench/bench_eval_scaling.py                    # both parts, markdown on stdout
    uv run python bench/bench_eval_scaling.py --part llm --latency 1.0
    uv run --extra ray python bench/bench_eval_scaling.py --part cpu --seeds 20
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from codered_env.evaluation.evaluate import Execution, run_evaluation
from codered_env.evaluation.store import EpisodeStore
from codered_env.evaluation.trajectory import Trajectory
from codered_env.sim import TASK_IDS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "evaluation"))


def _stored(db: Path) -> dict[tuple, tuple]:
    with EpisodeStore(db) as store:
        records = store.records()
    return {(r.agent, r.task_id, r.seed): (
        r.score, r.components, r.steps, [s.to_json() for s in Trajectory.from_jsonl(r.trajectory).steps])
        for r in records}


def _run(name: str, seeds: list[int], execution: Execution, tmp: Path) -> tuple[float, Path]:
    db = tmp / f"{name}.db"
    started = time.perf_counter()
    summary = run_evaluation(["heuristic"], list(TASK_IDS), seeds, db_path=db, progress=None,
                             execution=execution)
    elapsed = time.perf_counter() - started
    assert summary.failed == 0 and summary.ran == len(TASK_IDS) * len(seeds), summary.as_dict()
    return elapsed, db


def cpu_part(seeds: int) -> list[dict[str, Any]]:
    seed_list = list(range(seeds))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        serial_s, serial_db = _run("serial", seed_list, Execution(), tmp)
        reference = _stored(serial_db)
        rows.append({"config": "serial (1 process)", "seconds": serial_s, "init": None})
        procs_s, db = _run("procs2", seed_list, Execution(workers=2, min_parallel_s=0), tmp)
        assert _stored(db) == reference, "process results differ from serial"
        rows.append({"config": "processes, --workers 2", "seconds": procs_s, "init": None})
        try:
            import ray
        except ImportError:
            return rows
        for cpus in (1, 2):
            started = time.perf_counter()
            try:
                ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
            except Exception as exc:  # a loaded machine can time Ray's start-up out
                print(f"Ray with num_cpus={cpus} did not start: {exc}", file=sys.stderr)
                continue
            init_s = time.perf_counter() - started
            try:
                ray_s, db = _run(f"ray{cpus}", seed_list, Execution(backend="ray", workers=cpus), tmp)
            finally:
                ray.shutdown()
            assert _stored(db) == reference, "Ray results differ from serial"
            rows.append({"config": f"Ray, local, num_cpus={cpus}", "seconds": ray_s, "init": init_s})
    for row in rows:
        row["speedup"] = serial_s / row["seconds"]
        row["episodes"] = len(TASK_IDS) * seeds
    return rows


def llm_part(episodes: int, steps: int, latency: float) -> list[dict[str, Any]]:
    from fake_endpoint import FakeEndpoint

    from codered_env.agents.llm import LLMConfig

    rows: list[dict[str, Any]] = []
    results = {}
    with tempfile.TemporaryDirectory() as tmpdir:
        for k in (1, 8):
            with FakeEndpoint(latency_s=latency) as endpoint:
                config = LLMConfig(api_key="k-bench", base_url=endpoint.url, model="fake/m",
                                   timeout_s=latency + 10, budget_s=3600)
                db = Path(tmpdir) / f"k{k}.db"
                started = time.perf_counter()
                summary = run_evaluation(["llm"], ["task1"], list(range(episodes)), db_path=db,
                                         llm_config=config, progress=None, max_steps=steps,
                                         execution=Execution(concurrency=k))
                elapsed = time.perf_counter() - started
                assert summary.ran == episodes and summary.failed == summary.invalid == 0
                results[k] = _stored(db)
                rows.append({"config": f"--concurrency {k}", "seconds": elapsed,
                             "calls": endpoint.answered, "peak": endpoint.peak_in_flight,
                             "tokens": summary.tokens()})
    assert results[1] == results[8], "episodes differ between concurrency 1 and 8"
    for row in rows:
        row["speedup"] = rows[0]["seconds"] / row["seconds"]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=("cpu", "llm", "both"), default="both")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--llm-episodes", type=int, default=8)
    parser.add_argument("--llm-steps", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.5)
    args = parser.parse_args()
    print(f"load before: {os.getloadavg()}, cpus: {os.cpu_count()}")
    if args.part in ("cpu", "both"):
        rows = cpu_part(args.seeds)
        print("\n| configuration | episodes | wall s | speedup vs serial | ray.init s |")
        print("|---|---|---|---|---|")
        for r in rows:
            init = "—" if r["init"] is None else f"{r['init']:.1f}"
            print(f"| {r['config']} | {r['episodes']} | {r['seconds']:.2f} | {r['speedup']:.2f}× | {init} |")
    if args.part in ("llm", "both"):
        rows = llm_part(args.llm_episodes, args.llm_steps, args.latency)
        print(f"\n{args.llm_episodes} LLM episodes × {args.llm_steps} steps, {args.latency} s per call\n")
        print("| configuration | wall s | speedup | calls | peak in flight | tokens (prompt, completion) |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['config']} | {r['seconds']:.2f} | {r['speedup']:.2f}× | {r['calls']} | "
                  f"{r['peak']} | {r['tokens']} |")
    print(f"\nload after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
