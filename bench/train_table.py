"""Markdown table of ``codered train`` runs (``run.json`` under a folder), to read a fresh run.

Usage: ``uv run python bench/train_table.py runs/train [--copy DEST]`` -- with ``--copy`` each
run's curve.csv, curve.png and run.json are copied to ``DEST/<task>/`` (checkpoints are not: they
are large and reproducible). The published table is ``bench/results.py training``, over the runs
kept under docs/results/training/. CPU minutes are the training process's CPU time
(``cpu_s``: baselines, training and evaluations), independent of other load on the machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("--copy", type=Path, default=None)
    args = parser.parse_args()
    print("| task | steps | CPU (min) | wall (min) | PPO best (greedy, mean ± sample std) | PPO final |"
          " random | heuristic | best / heuristic | commit | load avg at start / end |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for run in sorted(args.root.glob("*/run.json")):
        r = json.loads(run.read_text())
        best, final, base = r["best"], r["final"], r["baselines"]
        ratio = best["mean"] / base["heuristic"] if base["heuristic"] else float("nan")
        load = " / ".join(_load(r["machine"].get(key)) for key in ("load_avg", "load_avg_end"))
        cpu = f"{r['cpu_s'] / 60:.1f}" if "cpu_s" in r else "n/a"
        # runs recorded before train.py used the sample std carry no "spread": theirs is the
        # population std, labelled as such rather than mixed in silently
        pop = "" if "spread" in r else " (population std)"
        print(f"| {r['config']['task_id']} | {final['steps']:,} | {cpu} | {r['wall_s'] / 60:.1f} | "
              f"{best['mean']:.3f} ± {best['std']:.3f}{pop} (at {best['steps']:,}) | {final['mean']:.3f} ± "
              f"{final['std']:.3f}{pop} | {base['random']:.3f} | {base['heuristic']:.3f} | {ratio:.2f} | "
              f"{r['machine']['commit']} | {load} |")
        if args.copy:
            dest = args.copy / run.parent.name
            dest.mkdir(parents=True, exist_ok=True)
            for name in ("curve.csv", "curve.png", "run.json"):
                shutil.copy(run.parent / name, dest / name)


def _load(avg: list[float] | None) -> str:
    return ", ".join(f"{x:.1f}" for x in avg) if avg else "n/a"


if __name__ == "__main__":
    main()
