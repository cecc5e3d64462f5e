"""Markdown table of ``codered train`` runs (``run.json`` under a folder), for docs/TRAINING.md.

Usage: ``uv run python bench/train_table.py runs/train [--copy docs/training]`` -- with ``--copy``
each run's curve.csv, curve.png and run.json are copied to ``<dest>/<task>/`` (checkpoints are
not: they are large and reproducible).
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
    print("| task | steps | wall (min) | PPO best (greedy) | PPO final | random | heuristic |"
          " best / heuristic | commit | load avg at end |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for run in sorted(args.root.glob("*/run.json")):
        r = json.loads(run.read_text())
        best, final, base = r["best"], r["final"], r["baselines"]
        ratio = best["mean"] / base["heuristic"] if base["heuristic"] else float("nan")
        load = ", ".join(f"{x:.1f}" for x in r["machine"]["load_avg"] or [])
        print(f"| {r['config']['task_id']} | {final['steps']:,} | {r['wall_s'] / 60:.1f} | "
              f"{best['mean']:.3f} ± {best['std']:.3f} (at {best['steps']:,}) | {final['mean']:.3f} ± "
              f"{final['std']:.3f} | {base['random']:.3f} | {base['heuristic']:.3f} | {ratio:.2f} | "
              f"{r['machine']['commit']} | {load} |")
        if args.copy:
            dest = args.copy / run.parent.name
            dest.mkdir(parents=True, exist_ok=True)
            for name in ("curve.csv", "curve.png", "run.json"):
                shutil.copy(run.parent / name, dest / name)


if __name__ == "__main__":
    main()
