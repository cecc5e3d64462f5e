"""Regenerate the published results in ``docs/results/`` (one command per file).

Usage::

    uv run python bench/results.py baselines   # docs/results/baselines.md (+ the README's table)
    uv run python bench/results.py training    # docs/results/training.md from docs/results/training/
                                               # and docs/results/training_factored.md

``baselines`` plays every agent of the ladder (noop, random, heuristic, planner, oracle) on the
held-out seeds of every task with ``codered eval`` into ``runs/results/baselines.db`` (an
interrupted run resumes: stored episodes with matching fingerprints are reused), renders it with
``codered report`` and writes ``docs/results/baselines.md``: a header (command, commit, machine,
date), the score table, then the full report (rubric components, clinical outcomes,
provenance). The score table is also copied into README.md between its ``results:baselines``
markers; ``tests/test_docs.py`` fails when the two differ.

``training`` turns the ``run.json`` of every ``codered train`` run kept under
``docs/results/training/<run>/`` into ``docs/results/training.md`` (each run's own commit,
machine and load are in its ``run.json``; the command that produced it is in the table), and
the runs of the factored interface's learner kept under ``docs/results/training_factored/``
(``bench/factored_runs.py keep``) into ``docs/results/training_factored.md``: a behaviour-cloning
table (one row per task) and a PPO table (one row per run of several training seeds).

``bench NAME`` runs one benchmark of :data:`BENCHES` (a benchmark prints markdown on stdout) and
keeps its output as ``docs/results/bench_NAME.md`` under the same header. Benchmarks measure time
on a shared machine: the header's load average says how quiet it was.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
README = ROOT / "README.md"
LADDER = ("noop", "random", "heuristic", "planner", "oracle")
HELD_OUT_SEEDS = "20000-20009"
# name -> (what it measures, the benchmark's command line); each writes docs/results/bench_<name>.md
BENCHES: dict[str, tuple[str, tuple[str, ...]]] = {
    "sim": ("Simulation core in-process: step, observation, text, memory",
            ("bench/bench_sim.py", "--repeats", "3")),
    "targets": ("Rollout speed as ratios to CartPole-v1 in one process (task5)",
                ("bench/bench_targets.py", "--rounds", "9")),
    "gym": ("Gymnasium adapter through gymnasium.make, next to CartPole-v1",
            ("bench/bench_gym.py", "--repeats", "3")),
    "fork": ("Cost of CodeRedSim.fork against a core step",
             ("bench/bench_fork.py", "--seeds", "3", "--repeats", "3")),
    "planner": ("Planner against the heuristic on held-out seeds: paired gain and time per decision",
                ("bench/bench_planner.py", "--tasks", "task1,task2,task3,task4,task5",
                 "--seeds", HELD_OUT_SEEDS, "--per-seed")),
    "triage": ("Triage from the caller's report: accuracy of the rules, and what triage is worth",
               ("bench/probe_triage.py", "--seeds", "3000-3049")),
    "ws": ("WebSocket step latency and throughput against a trivial OpenEnv environment",
           ("bench/bench_ws.py",)),
    "mcp": ("MCP tools/call latency against a /ws step, and the tool list's size",
            ("bench/bench_mcp.py", "--calls", "200")),
    "hostile": ("The server under hostile clients, next to a quiet run",
                ("bench/bench_hostile.py",)),
    "scaling": ("codered eval serial, in worker processes and on Ray; concurrent LLM episodes",
                ("bench/bench_eval_scaling.py",)),
    "cities": ("Baselines on held-out generated cities beside Prakashnagar: noop, random, heuristic",
               ("bench/bench_cities.py", "--split", "test", "--cities", "50", "--seeds", "2")),
    "open_loop": ("What memorising buys: the heuristic's action list replayed blind, fixed city "
                  "against held-out cities",
                  ("bench/open_loop_cities.py", "--sources", "5", "--targets", "7")),
    "core_ab": ("Core step A/B: the state/tick layout (B) against the layout before it (A)",
                ("bench/bench_core_ab.py", "--baseline", "1306a78", "--seeds", "4", "--rounds", "4",
                 "--repeats", "3")),
}
TRAINING_DOC = ROOT / "docs" / "TRAINING.md"
PERFORMANCE_DOC = ROOT / "docs" / "PERFORMANCE.md"
# which markdown table of a benchmark's output docs/PERFORMANCE.md shows (the file keeps them all)
SHOWN_TABLE = {"sim": 1, "ws": 1}


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip()


def commit_label() -> str:
    """Short commit of the checkout, marked ``+changes`` when tracked files differ from it."""
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    return (_git("rev-parse", "--short", "HEAD") or "unknown") + (" +changes" if dirty else "")


def machine_label(load_before: float) -> str:
    load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{platform.machine()}, {os.cpu_count()} CPUs, CPython {platform.python_version()}, "
            f"{platform.system()}; 1-minute load average {load_before:.1f} at start, "
            f"{load_after:.1f} at end")


def header(title: str, command: str, load_before: float, extra: str = "", commit: str | None = None) -> str:
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"<!-- generated by `{command}`; do not edit by hand -->", f"# {title}", "",
             f"- Command: `{command}`", f"- Commit: {commit or f'`{commit_label()}`'}",
             f"- Machine: {machine_label(load_before)}", f"- Generated: {now}"]
    if extra:
        lines.append(f"- {extra}")
    return "\n".join(lines) + "\n"


def _codered(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "codered_env.cli", *args], cwd=ROOT, check=True)


def score_table(db: Path, agents: tuple[str, ...]) -> str:
    """Task x agent: mean ± sample std of the final score over the stored seeds."""
    from codered_env.evaluation.report import summarize
    from codered_env.evaluation.store import EpisodeStore
    from codered_env.sim import TASK_IDS

    with EpisodeStore(db) as store:
        rows = summarize(store.records())
    cell = {(r.task_id, r.agent): f"{r.mean:.3f} ± {r.std:.3f}" for r in rows}
    shown = [a for a in agents if any((t, a) in cell for t in TASK_IDS)]
    lines = ["| task | " + " | ".join(shown) + " |", "|---|" + "---|" * len(shown)]
    lines += [f"| {t} | " + " | ".join(cell.get((t, a), "—") for a in shown) + " |"
              for t in TASK_IDS]
    return "\n".join(lines)


def markers(name: str) -> tuple[str, str]:
    """The comment lines around a generated table inside a hand-written document."""
    return f"<!-- results:{name} begin -->", f"<!-- results:{name} end -->"


def fill(doc: Path, name: str, table: str) -> None:
    """Put ``table`` between the ``results:<name>`` markers of ``doc`` (tests compare the two)."""
    begin, end = markers(name)
    text = doc.read_text(encoding="utf-8")
    if begin not in text or end not in text:
        print(f"{doc.name} has no {begin} block to update")
        return
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    doc.write_text(f"{head}{begin}\n{table}\n{end}{tail}", encoding="utf-8")
    print(f"updated the {name} table in {doc.name}")


def played_at(db: Path) -> str:
    """The commits the stored episodes were played at (the header's commit)."""
    from codered_env.evaluation.store import EpisodeStore

    with EpisodeStore(db) as store:
        commits = sorted({r.git_commit[:7] for r in store.records() if r.git_commit})
    return ", ".join(f"`{c}`" for c in commits) + f" (episodes played; rendered at `{commit_label()}`)"


def baselines(agents: tuple[str, ...], seeds: str, workers: int, play: bool = True) -> None:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    db = ROOT / "runs" / "results" / "baselines.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    for agent in agents if play else ():  # one agent at a time: a later failure keeps the rest
        _codered("eval", "--agents", agent, "--tasks", "all", "--seeds", seeds, "--db", str(db),
                 "--workers", str(workers))
    with tempfile.TemporaryDirectory() as tmp:
        _codered("report", "--db", str(db), "--out", tmp)
        report = (Path(tmp) / "report.md").read_text(encoding="utf-8")
        RESULTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(tmp) / "scores.png", RESULTS / "baselines_scores.png")
    command = "uv run python bench/results.py baselines"
    if (agents, seeds) != (LADDER, HELD_OUT_SEEDS):
        command += f" --agents {','.join(agents)} --seeds {seeds}"
    table = score_table(db, agents)
    text = (header("Baselines: every built-in agent on held-out seeds", command, load,
                   f"Seeds {seeds} of every task; score = mean ± sample std (n − 1)", played_at(db))
            + f"\n## Scores\n\n{table}\n\n![score per task and agent](baselines_scores.png)\n\n"
            + f"## Full report (`codered report`)\n\n{report}")
    (RESULTS / "baselines.md").write_text(text, encoding="utf-8")
    print(f"wrote {RESULTS / 'baselines.md'}")
    fill(README, "baselines", table)


def training_table(root: Path) -> str:
    lines = ["| run | task | actions | γ | steps | CPU (min) | PPO best (greedy) | PPO final | random"
             " | heuristic | best / heuristic | commit | load avg start / end |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for run in sorted(root.glob("*/run.json")):
        r = json.loads(run.read_text(encoding="utf-8"))
        cfg, best, final, base = r["config"], r["best"], r["final"], r["baselines"]
        ratio = best["mean"] / base["heuristic"] if base["heuristic"] else float("nan")
        load = " / ".join(f"{r['machine'].get(k, [float('nan')])[0]:.1f}"
                          for k in ("load_avg", "load_avg_end"))
        # runs recorded before `codered train` switched to the sample std carry no "spread"
        pop = "" if "spread" in r else " (population std)"
        lines.append(
            f"| `{run.parent.name}` | {cfg['task_id']} | {cfg.get('actions', 'full')} | "
            f"{cfg['gamma']} | {final['steps']:,} | {r['cpu_s'] / 60:.1f} | "
            f"{best['mean']:.3f} ± {best['std']:.3f}{pop} (at {best['steps']:,}) | "
            f"{final['mean']:.3f} ± {final['std']:.3f}{pop} | {base['random']:.3f} | "
            f"{base['heuristic']:.3f} | {ratio:.2f} | {r['machine']['commit']} | {load} |")
    return "\n".join(lines)


def training() -> None:
    from codered_env.gym_env.registration import FLAT_VERSION

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    root = RESULTS / "training"
    command = "uv run python bench/results.py training"
    table = training_table(root)
    text = (header("MaskablePPO runs (`codered train`)", command, load,
                   "Each run's own commit, machine and load are in its `run.json`; the machine "
                   "above only rendered the table")
            + "\nEvery run: `codered train --task T --steps N --envs 4 --eval-every E "
              "--eval-seeds 10000-10009 --seed 0 --actions A --gamma G` (the values in the row "
              "and in `run.json`); grades are mean ± sample std over the held-out seeds "
              "10000-10009, \"best\" is the best of the periodic greedy evaluations (an optimistic "
              "pick), \"final\" the policy at the end.\n\n"
            + ("" if table.count("\n") > 1 else "No run is kept for the current Gymnasium ids "
               f"(`CodeRedEnv-taskN-v{FLAT_VERSION}`).\n\n")
            + table + "\n")
    (RESULTS / "training.md").write_text(text, encoding="utf-8")
    print(f"wrote {RESULTS / 'training.md'}")
    fill(TRAINING_DOC, "training", table)
    factored_training(load)


def _bc_row(name: str, r: dict) -> str:
    bc, cfg = r["bc"], r["config"]
    seeds = cfg["eval_seeds"]
    return (f"| `{name}` | {cfg['task_id']} | {cfg['bc_episodes']} + {cfg['bc_dagger_rounds']} x "
            f"{cfg['bc_dagger_episodes']} | {bc['train_samples'] + bc['held_out_samples']:,} | "
            f"{bc['accuracy_waits']:.2f} / {bc['accuracy_decisions']:.2f} | {bc['grade']:.3f} | "
            f"{r['heuristic']:.3f} | **{bc['ratio_to_heuristic']:.2f}** | {seeds[0]}-{seeds[-1]} | "
            f"{bc['cpu_s'] / 60:.1f} | {r['machine']['commit']} |")


def _kept_steps(runs: list[dict]) -> str:
    """The steps at which each training seed's kept policy was evaluated, in thousands."""
    return ", ".join(f"{r['final']['steps'] // 1000}k" for r in runs)


def _ppo_row(name: str, runs: list[dict]) -> str:
    cfg, first = runs[0]["config"], runs[0]
    # the heuristic the run's own process graded under the same rubric as its policy
    reference = sum(r["heuristic"] for r in runs) / len(runs)
    finals = [r["final"]["mean"] for r in runs]
    mean = sum(finals) / len(finals)
    std = (sum((f - mean) ** 2 for f in finals) / (len(finals) - 1)) ** 0.5 if len(finals) > 1 else 0.0
    start = [r["curve"][0]["mean"] for r in runs]
    warm = (f"BC {cfg['bc_episodes']} episodes" if cfg["bc_episodes"] else
            f"`{Path(cfg['init_from']).parent.name}`'s policy" if cfg.get("init_from") else "none")
    seeds = cfg["eval_seeds"]
    # runs before the per-minute discount carry no gamma_minute: they discounted per decision
    discount = (f"{cfg['gamma_minute']} / min" if cfg.get("gamma_minute") else f"{cfg['gamma']} / decision")
    scale = cfg.get("reward_scale", 1.0)  # runs before the option saw the rewards as they are
    discount += f", rewards x{scale:g}" if scale != 1.0 else ""
    commits = ", ".join(dict.fromkeys(r["machine"]["commit"] for r in runs))  # seeds run at several
    steps = f"{first['curve'][-1]['steps']:,}"
    select = cfg.get("select_seeds") or []
    kept = (f"best on validation {select[0]}-{select[-1]} (at {_kept_steps(runs)})" if select else "last")
    lr = "linear to 0" if cfg.get("anneal_lr") else "constant"
    head = "type, then vector" if cfg.get("type_first") else "one over vectors"
    return (f"| `{name}` | {cfg['task_id']} | {warm} | {head} | {discount} | {lr} | {len(runs)} | {steps} | "
            f"{kept} | "
            f"{sum(start) / len(start):.3f} | {mean:.3f} ± {std:.3f} | "
            f"{min(finals):.3f} / {max(finals):.3f} | "
            f"{reference:.3f} | **{mean / reference:.2f}** | {seeds[0]}-{seeds[-1]} | "
            f"{sum(r['wall_s'] for r in runs) / 60:.0f} | {commits} |")


def factored_tables(root: Path) -> tuple[str, str]:
    """The behaviour-cloning table and the PPO table of the kept factored runs."""
    bc = ["| run | task | demonstration episodes (+ relabelling rounds x episodes) | samples | held-out "
          "accuracy waits / decisions | BC grade (greedy) | heuristic | BC / heuristic | evaluation "
          "seeds | CPU (min) | commit |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    ppo = ["| run | task | warm start | softmax | discount | learning rate | training seeds | steps per "
           "seed | policy kept | grade at step 0 | grade of the policy kept (mean ± sample std over seeds) | "
           "worst / best seed | heuristic | kept / heuristic | evaluation seeds | wall (min, all seeds) | "
           "commit |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for run in sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []:
        if (run / "run.json").exists():
            bc.append(_bc_row(run.name, json.loads((run / "run.json").read_text(encoding="utf-8"))))
        else:
            seeds = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(run.glob("seed*/run.json"))]
            if seeds:
                ppo.append(_ppo_row(run.name, seeds))
    return "\n".join(bc), "\n".join(ppo)


def factored_training(load: float) -> None:
    command = "uv run python bench/results.py training"
    bc, ppo = factored_tables(RESULTS / "training_factored")
    text = (header("Factored-interface learner (`codered_env.factored_ppo`)", command, load,
                   "Each run's own commit, machine and configuration are in its `run.json`; the "
                   "machine above only rendered the tables")
            + "\nRuns: `uv run python bench/factored_runs.py bc|ppo ...` (the values in the rows and "
              "in `run.json`), kept with `bench/factored_runs.py keep`. Grades are final grades of the "
              "greedy policy, mean over the held-out evaluation seeds (never used in training: "
              "demonstrations use seeds below 10000, PPO episodes draw theirs from the vector env's "
              "seeded RNG). A PPO row's heuristic is this checkout's on the same seeds."
              "\n\n## Behaviour cloning of the heuristic\n\n" + bc
            + "\n\n## PPO\n\n" + ppo + "\n")
    (RESULTS / "training_factored.md").write_text(text, encoding="utf-8")
    print(f"wrote {RESULTS / 'training_factored.md'}")
    fill(TRAINING_DOC, "training_factored_bc", bc)
    fill(TRAINING_DOC, "training_factored_ppo", ppo)


def tables(text: str) -> list[str]:
    """The markdown tables of ``text``, in order."""
    found, current = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            found.append("\n".join(current))
            current = []
    return found


def show_in_performance(name: str) -> None:
    """Copy the shown table of ``docs/results/bench_<name>.md`` into docs/PERFORMANCE.md."""
    shown = tables((RESULTS / f"bench_{name}.md").read_text(encoding="utf-8"))
    if shown:
        fill(PERFORMANCE_DOC, f"bench_{name}", shown[min(SHOWN_TABLE.get(name, 0), len(shown) - 1)])


def bench(name: str) -> bool:
    """Run one benchmark and keep its output; False (and its error on stderr) if it failed."""
    title, argv = BENCHES[name]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    done = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        print(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}", file=sys.stderr)
        return False
    command = f"uv run python bench/results.py bench {name}"
    body = done.stdout.strip()
    if not tables(body):  # plain text output: keep its lines as they are
        body = f"```text\n{body}\n```"
    text = header(title, command, load, f"Runs: `python {' '.join(argv)}`") + "\n" + body + "\n"
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"bench_{name}.md").write_text(text, encoding="utf-8")
    print(f"wrote {RESULTS / f'bench_{name}.md'}")
    show_in_performance(name)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    base = sub.add_parser("baselines", help="play the ladder, write docs/results/baselines.md")
    base.add_argument("--agents", default=",".join(LADDER))
    base.add_argument("--seeds", default=HELD_OUT_SEEDS)
    base.add_argument("--workers", type=int, default=1)
    base.add_argument("--no-play", action="store_true",
                      help="render the stored episodes only (after an interrupted or partial run)")
    sub.add_parser("training", help="write docs/results/training.md from the kept runs")
    one = sub.add_parser("bench", help="run a benchmark, write docs/results/bench_<name>.md")
    one.add_argument("name", choices=(*BENCHES, "all"))
    args = parser.parse_args()
    if args.what == "baselines":
        baselines(tuple(args.agents.split(",")), args.seeds, args.workers, play=not args.no_play)
    elif args.what == "training":
        training()
    else:
        failed = [name for name in (BENCHES if args.name == "all" else (args.name,)) if not bench(name)]
        if failed:
            sys.exit(f"failed: {', '.join(failed)} (their results files were left as they were)")


if __name__ == "__main__":
    main()
