"""Speed of ``codered eval`` run serially, in worker processes and on Ray; concurrent LLM episodes.

A benchmark, not a test (results go to docs/PERFORMANCE.md).  Two parts:

``cpu``
    The ``heuristic`` agent (CPU-bound) over every task and ``--seeds`` seeds, stored in a fresh
    SQLite file per run: serial, ``--workers 2`` processes, and Ray with 1 and 2 CPUs (when ray
    is installed).  Configurations run interleaved in ``--rounds`` rounds, and each is compared
    with the serial runs of its own phase (Ray's idle processes cost CPU too), because on a
    shared machine the CPU a run gets drifts by 2x within minutes.  Ray's start-up
    (``ray.init``) is timed separately.  Every run must store exactly the serial results; the
    script checks it.
``llm``
    ``--llm-episodes`` LLM episodes of ``--llm-steps`` steps against the test suite's fake
    OpenAI-compatible endpoint with ``--latency`` seconds per request, at concurrency 1 and 8.

Usage::

    uv run python bench/bench_eval_scaling.py                    # both parts, markdown on stdout
    uv run python bench/bench_eval_scaling.py --part llm --latency 1.0
    uv run --extra ray python bench/bench_eval_scaling.py --part cpu --seeds 20 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from codered_env.evaluation.backends import _import_ray
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


def _run(seeds: list[int], execution: Execution, db: Path) -> float:
    started = time.perf_counter()
    summary = run_evaluation(["heuristic"], list(TASK_IDS), seeds, db_path=db, progress=None,
                             execution=execution)
    elapsed = time.perf_counter() - started
    assert summary.failed == 0 and summary.ran == len(TASK_IDS) * len(seeds), summary.as_dict()
    return elapsed


SERIAL = Execution()
PROCS2 = Execution(workers=2, min_parallel_s=0)


def _phase(label: str, configs: dict[str, Execution], seeds: list[int], rounds: int, tmp: Path,
           reference: dict[tuple, tuple] | None) -> tuple[list[dict[str, Any]], dict[tuple, tuple]]:
    """``rounds`` rounds of every configuration in turn, each run into a fresh store.  On a
    shared machine the CPU a run gets drifts by 2x within minutes, so configurations are
    interleaved and compared with the serial runs of the same phase (median of the rounds)."""
    times: dict[str, list[float]] = {name: [] for name in configs}
    for attempt in range(rounds):
        for name, execution in configs.items():
            db = tmp / f"{label}-{name}-{attempt}.db"
            times[name].append(_run(seeds, execution, db))
            results = _stored(db)
            reference = reference or results
            assert results == reference, f"{name} results differ from serial"
    serial = statistics.median(times["serial"])
    rows = [{"phase": label, "config": name, "median": statistics.median(t), "min": min(t),
             "speedup": serial / statistics.median(t)} for name, t in times.items()]
    return rows, reference


def cpu_part(seeds: int, rounds: int = 3) -> list[dict[str, Any]]:
    seed_list = list(range(seeds))
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        rows, reference = _phase("no Ray", {"serial": SERIAL, "processes, --workers 2": PROCS2},
                                 seed_list, rounds, tmp, None)
        try:
            ray = _import_ray()
        except RuntimeError:  # Ray not installed: the processes phase only
            ray = None
        if ray is None:
            return [{**row, "episodes": len(TASK_IDS) * seeds} for row in rows]
        for cpus in (1, 2):
            started = time.perf_counter()
            try:
                ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
            except Exception as exc:  # a loaded machine can time Ray's start-up out
                print(f"Ray with num_cpus={cpus} did not start: {exc}", file=sys.stderr)
                continue
            label = f"Ray up, num_cpus={cpus} (ray.init {time.perf_counter() - started:.1f} s)"
            configs = {"serial": SERIAL, f"Ray, local, num_cpus={cpus}": Execution(backend="ray")}
            if cpus == 2:
                configs["processes, --workers 2"] = PROCS2
            try:
                _run(seed_list, Execution(backend="ray"), tmp / f"ray{cpus}-warm.db")  # imports
                phase_rows, _ = _phase(f"ray{cpus}", configs, seed_list, rounds, tmp, reference)
            finally:
                ray.shutdown()
            rows += [{**row, "phase": label} for row in phase_rows]
    for row in rows:
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
    parser.add_argument("--rounds", type=int, default=3, help="cpu part: interleaved rounds")
    parser.add_argument("--llm-episodes", type=int, default=8)
    parser.add_argument("--llm-steps", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.5)
    args = parser.parse_args()
    print(f"load before: {os.getloadavg()}, cpus: {os.cpu_count()}")
    if args.part in ("cpu", "both"):
        rows = cpu_part(args.seeds, args.rounds)
        print("\n| phase | configuration | episodes | median wall s | min wall s | speedup vs serial |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['phase']} | {r['config']} | {r['episodes']} | {r['median']:.2f} | "
                  f"{r['min']:.2f} | {r['speedup']:.2f}× |")
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
