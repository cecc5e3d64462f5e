"""In-process speed of the CodeRedEnv simulation core (a benchmark, not a test).

For every task and for the ``random`` and ``heuristic`` agents the benchmark first *records*
episodes (seeds ``0..N-1``): the agent plays against a live ``CodeRedSim`` and its actions are
kept, together with every ``render_text()`` output (for the text-length statistics). It then
*replays* the recorded action lists, so the agents' own cost is excluded, in three modes:

``core``
    ``CodeRedSim.step(action)`` only -- the simulation (tick loop, action handling, the running
    grade that yields the reward). Constructing the episode (``CodeRedSim(task, seed)``, i.e.
    reset) is timed separately.
``core+obs``
    ``step`` followed by the structured ``observation()`` dict -- what an adapter (server,
    Gymnasium wrapper, trainer) pays per step.
``render``
    ``render_text(observation)`` alone, on the observations of the replay (the extra cost an
    LLM-prompt adapter pays on top of ``core+obs``).

Each mode is repeated ``--repeats`` times and the fastest repeat is reported (the usual
``timeit`` convention: slower repeats measure interference, not the code). Gymnasium's
``CartPole-v1`` (``gym.make`` with its default wrappers, fixed action, reset on termination) is
timed in the same process for a ratio. Target from the brief: >= 10,000 core steps/s
(<= 100 us per step) on the 2-core reference machine.

Usage::

    uv run python bench/bench_sim.py                       # markdown report on stdout (~30-60 s)
    uv run python bench/bench_sim.py --json bench/sim.json # also write the raw numbers
    uv run python bench/bench_sim.py --seeds 5 --repeats 2 # quick run
    uv run python bench/bench_sim.py --profile task5       # cProfile of the core replay of one task
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as _dt
import gc
import io
import json
import os
import platform
import pstats
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from codered_env.agents import make_agent
from codered_env.sim import TASK_IDS, CodeRedSim, render_text

AGENTS: tuple[str, ...] = ("random", "heuristic")
TEXT_TARGET_TASK = "task5"
TEXT_TARGET_MEDIAN = 2500
STEP_TARGET_US = 100.0


@dataclass
class Recording:
    """The recorded episodes of one (task, agent) pair."""

    task_id: str
    agent: str
    actions: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    text_lengths: list[int] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    minutes: list[int] = field(default_factory=list)

    @property
    def steps(self) -> int:
        return sum(len(a) for a in self.actions.values())


@dataclass
class ModeResult:
    """Timing of one replay mode for one (task, agent) pair (fastest repeat)."""

    steps: int
    total_s: float
    us_per_step: float
    steps_per_s: float
    p50_us: float
    p99_us: float
    max_us: float


@dataclass
class PairResult:
    task_id: str
    agent: str
    episodes: int
    steps: int
    sim_minutes: int
    mean_score: float
    reset_us: float
    core: ModeResult
    core_obs: ModeResult
    render: ModeResult
    us_per_sim_minute: float


# ---------------------------------------------------------------------------- recording
def record(task_id: str, agent_name: str, seeds: range) -> Recording:
    """Play the agent on each seed; keep its actions and the length of every text rendering."""
    rec = Recording(task_id, agent_name)
    agent = make_agent(agent_name, 0)
    for seed in seeds:
        sim = CodeRedSim(task_id, seed)
        agent.reset(task_id, seed)
        actions: list[dict[str, Any]] = []
        while not sim.done:
            obs = sim.observation()
            rec.text_lengths.append(len(render_text(obs)))
            action = agent.act(obs)
            actions.append(action)
            sim.step(action)
        rec.text_lengths.append(len(sim.render_text()))  # the final (done) observation
        rec.actions[seed] = actions
        rec.scores.append(sim.grade()["score"])
        rec.minutes.append(sim.clock)
    return rec


# ---------------------------------------------------------------------------- timing
def _summarise(samples_ns: list[int]) -> ModeResult:
    total_ns = sum(samples_ns)
    ordered = sorted(samples_ns)
    n = len(ordered)
    p99 = ordered[min(n - 1, int(0.99 * n))]
    return ModeResult(
        steps=n,
        total_s=total_ns / 1e9,
        us_per_step=total_ns / n / 1e3,
        steps_per_s=n / (total_ns / 1e9),
        p50_us=statistics.median(ordered) / 1e3,
        p99_us=p99 / 1e3,
        max_us=ordered[-1] / 1e3,
    )


def replay_core(rec: Recording) -> tuple[list[int], list[int]]:
    """Per-step ns of ``step`` alone, and per-episode ns of construction (reset)."""
    steps: list[int] = []
    resets: list[int] = []
    clock = time.perf_counter_ns
    for seed, actions in rec.actions.items():
        t0 = clock()
        sim = CodeRedSim(rec.task_id, seed)
        resets.append(clock() - t0)
        step = sim.step
        for action in actions:
            t0 = clock()
            step(action)
            steps.append(clock() - t0)
    return steps, resets


def replay_core_obs(rec: Recording) -> tuple[list[int], list[int]]:
    """Per-step ns of ``step`` + ``observation()``; also the render_text ns of every observation."""
    steps: list[int] = []
    renders: list[int] = []
    clock = time.perf_counter_ns
    for seed, actions in rec.actions.items():
        sim = CodeRedSim(rec.task_id, seed)
        sim.observation()
        for action in actions:
            t0 = clock()
            sim.step(action)
            obs = sim.observation()
            steps.append(clock() - t0)
            t0 = clock()
            render_text(obs)
            renders.append(clock() - t0)
    return steps, renders


def best_of(repeats: int, fn: Any, rec: Recording) -> tuple[Any, ...]:
    """Run ``fn(rec)`` ``repeats`` times and keep the run with the smallest total of its first output."""
    best: tuple[Any, ...] | None = None
    for _ in range(repeats):
        gc.collect()
        out = fn(rec)
        if best is None or sum(out[0]) < sum(best[0]):
            best = out
    assert best is not None
    return best


def bench_pair(rec: Recording, repeats: int) -> PairResult:
    core_ns, reset_ns = best_of(repeats, replay_core, rec)
    obs_ns, render_ns = best_of(repeats, replay_core_obs, rec)
    core = _summarise(core_ns)
    minutes = sum(rec.minutes)
    return PairResult(
        task_id=rec.task_id,
        agent=rec.agent,
        episodes=len(rec.actions),
        steps=rec.steps,
        sim_minutes=minutes,
        mean_score=round(statistics.fmean(rec.scores), 4),
        reset_us=statistics.median(reset_ns) / 1e3,
        core=core,
        core_obs=_summarise(obs_ns),
        render=_summarise(render_ns),
        us_per_sim_minute=core.total_s * 1e6 / minutes if minutes else 0.0,
    )


def bench_cartpole(steps: int, repeats: int) -> dict[str, Any]:
    """Gymnasium CartPole-v1 ``step`` (default wrappers, fixed action), resets excluded."""
    try:
        import gymnasium as gym
    except ImportError:  # gymnasium is in the dev dependency group only
        return {"available": False}
    env = gym.make("CartPole-v1")
    best = float("inf")
    for _ in range(repeats):
        env.reset(seed=0)
        gc.collect()
        spent = 0
        clock = time.perf_counter_ns
        done = 0
        while done < steps:
            t0 = clock()
            _, _, terminated, truncated, _ = env.step(1)
            spent += clock() - t0
            done += 1
            if terminated or truncated:
                env.reset()
        best = min(best, spent)
    env.close()
    us = best / steps / 1e3
    return {
        "available": True,
        "version": gym.__version__,
        "steps": steps,
        "us_per_step": us,
        "steps_per_s": 1e6 / us,
    }


# ---------------------------------------------------------------------------- reporting
def memory_per_episode(rec: Recording, live: int = 50) -> dict[str, float]:
    """Heap bytes one live episode holds mid-way (tracemalloc over ``live`` episodes at once)."""
    import tracemalloc

    episodes = list(rec.actions.items())[:live]
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    sims = []
    for seed, actions in episodes:
        sim = CodeRedSim(rec.task_id, seed)
        for action in actions[: len(actions) // 2]:
            sim.step(action)
        sims.append(sim)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    total = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    return {"episodes": len(sims), "kib_per_episode": round(total / len(sims) / 1024, 1)}


def _pct(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])


def text_stats(recs: list[Recording]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for task_id in TASK_IDS:
        lengths = [n for r in recs if r.task_id == task_id for n in r.text_lengths]
        if not lengths:
            continue
        out[task_id] = {
            "observations": len(lengths),
            "median": float(statistics.median(lengths)),
            "p95": _pct(lengths, 0.95),
            "max": float(max(lengths)),
        }
        for agent in AGENTS:
            per = [n for r in recs if r.task_id == task_id and r.agent == agent for n in r.text_lengths]
            if per:
                out[task_id][f"median_{agent}"] = float(statistics.median(per))
                out[task_id][f"p95_{agent}"] = _pct(per, 0.95)
    return out


def overall(results: list[PairResult], mode: str) -> dict[str, float]:
    """Step-weighted aggregate over every (task, agent) pair."""
    modes = [getattr(r, mode) for r in results]
    steps = sum(m.steps for m in modes)
    total = sum(m.total_s for m in modes)
    return {"steps": steps, "us_per_step": total / steps * 1e6, "steps_per_s": steps / total}


def _loadavg() -> float | None:
    """1-minute load average (other processes competing for the CPUs skew every number)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def markdown(report: dict[str, Any], results: list[PairResult]) -> str:
    load = report["machine"]["loadavg_1min_before_after"]
    lines = [
        f"Run {report['date']} on {report['machine']['cpus']} CPU(s), "
        f"{report['machine']['processor']}, Python {report['machine']['python']}; "
        f"{report['config']['seeds']} seeds per task and agent, "
        f"best of {report['config']['repeats']} repeats; 1-min load average {load[0]} before, "
        f"{load[1]} after.",
        "",
        "| task | agent | episodes | steps | sim min | score | reset µs | core µs/step | core steps/s "
        "| core p50 / p99 µs | +obs µs/step | +obs steps/s | render µs | µs per sim min |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.task_id} | {r.agent} | {r.episodes} | {r.steps} | {r.sim_minutes} | {r.mean_score:.3f} "
            f"| {r.reset_us:.0f} | {r.core.us_per_step:.1f} | {r.core.steps_per_s:,.0f} "
            f"| {r.core.p50_us:.0f} / {r.core.p99_us:.0f} | {r.core_obs.us_per_step:.1f} "
            f"| {r.core_obs.steps_per_s:,.0f} | {r.render.us_per_step:.1f} | {r.us_per_sim_minute:.2f} |"
        )
    core, obs = report["overall"]["core"], report["overall"]["core_obs"]
    render = report["overall"]["render"]
    lines += [
        "",
        "| all tasks and agents (step-weighted) | µs/step | steps/s |",
        "|---|---|---|",
        f"| core `step` | {core['us_per_step']:.1f} | {core['steps_per_s']:,.0f} |",
        f"| `step` + `observation()` | {obs['us_per_step']:.1f} | {obs['steps_per_s']:,.0f} |",
        f"| `render_text(obs)` alone | {render['us_per_step']:.1f} | {render['steps_per_s']:,.0f} |",
    ]
    cp = report["cartpole"]
    if cp.get("available"):
        lines.append(
            f"| Gymnasium {cp['version']} CartPole-v1 `step` | {cp['us_per_step']:.2f} "
            f"| {cp['steps_per_s']:,.0f} |"
        )
        lines += [
            "",
            f"CartPole / CodeRedEnv core: {report['ratios']['cartpole_vs_core']:.1f}x faster per step; "
            f"vs step+observation: {report['ratios']['cartpole_vs_core_obs']:.1f}x.",
        ]
    verdict = "met" if core["us_per_step"] <= STEP_TARGET_US else "NOT met"
    lines.append(
        f"Target <= {STEP_TARGET_US:.0f} µs per core step (>= 10,000 steps/s): {verdict} "
        f"({core['us_per_step']:.1f} µs, {core['steps_per_s']:,.0f} steps/s)."
    )
    lines += [
        "",
        "| task | observations | render_text chars median | p95 | max | median random / heuristic |",
        "|---|---|---|---|---|---|",
    ]
    for task_id, s in report["text"].items():
        lines.append(
            f"| {task_id} | {s['observations']:.0f} | {s['median']:.0f} | {s['p95']:.0f} | {s['max']:.0f} "
            f"| {s.get('median_random', 0):.0f} / {s.get('median_heuristic', 0):.0f} |"
        )
    t5 = report["text"].get(TEXT_TARGET_TASK)
    if t5:
        ok = "met" if t5["median"] <= TEXT_TARGET_MEDIAN else "NOT met"
        lines.append(
            f"\nText target (median <= {TEXT_TARGET_MEDIAN:,} chars on {TEXT_TARGET_TASK}): {ok} "
            f"({t5['median']:.0f})."
        )
    if report.get("memory"):
        lines += [
            "",
            "| task | live episodes | heap KiB per episode (half-way, heuristic actions) |",
            "|---|---|---|",
        ]
        for task_id, m in report["memory"].items():
            lines.append(f"| {task_id} | {m['episodes']} | {m['kib_per_episode']:.1f} |")
    return "\n".join(lines)


def profile(task_id: str, seeds: int, top: int) -> str:
    """cProfile of the core replay (random + heuristic recordings) of one task."""
    recs = [record(task_id, agent, range(seeds)) for agent in AGENTS]
    prof = cProfile.Profile()
    prof.enable()
    for rec in recs:
        replay_core(rec)
    prof.disable()
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20, help="episodes per task and agent (seeds 0..N-1)")
    parser.add_argument("--repeats", type=int, default=5, help="timing repeats; the fastest is kept")
    parser.add_argument("--tasks", default=",".join(TASK_IDS), help="comma-separated task ids")
    parser.add_argument("--cartpole-steps", type=int, default=200_000)
    parser.add_argument("--json", type=Path, default=None, help="also write the raw results here")
    parser.add_argument("--profile", metavar="TASK", default=None, help="print a cProfile of one task")
    parser.add_argument("--top", type=int, default=25, help="rows of the profile")
    args = parser.parse_args(argv)

    if args.profile:
        print(profile(args.profile, args.seeds, args.top))
        return 0
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in TASK_IDS]
    if unknown:
        parser.error(f"unknown task(s) {unknown}; valid: {', '.join(TASK_IDS)}")

    started = time.perf_counter()
    load_before = _loadavg()
    recs: list[Recording] = []
    results: list[PairResult] = []
    for task_id in tasks:
        for agent in AGENTS:
            rec = record(task_id, agent, range(args.seeds))
            recs.append(rec)
            results.append(bench_pair(rec, args.repeats))
            print(f"  {task_id} {agent}: {rec.steps} steps timed", file=sys.stderr)
    cartpole = bench_cartpole(args.cartpole_steps, args.repeats)
    report: dict[str, Any] = {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "uv run python bench/bench_sim.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": {
            "cpus": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "loadavg_1min_before_after": [load_before, _loadavg()],
        },
        "config": {"seeds": args.seeds, "repeats": args.repeats, "tasks": tasks},
        "pairs": [asdict(r) for r in results],
        "overall": {m: overall(results, m) for m in ("core", "core_obs", "render")},
        "text": text_stats(recs),
        "cartpole": cartpole,
        "memory": {r.task_id: memory_per_episode(r) for r in recs if r.agent == "heuristic"},
        "wall_s": 0.0,
    }
    if cartpole.get("available"):
        report["ratios"] = {
            "cartpole_vs_core": report["overall"]["core"]["us_per_step"] / cartpole["us_per_step"],
            "cartpole_vs_core_obs": report["overall"]["core_obs"]["us_per_step"] / cartpole["us_per_step"],
        }
    report["wall_s"] = round(time.perf_counter() - started, 1)
    print(markdown(report, results))
    print(f"\n(benchmark wall time {report['wall_s']} s)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
