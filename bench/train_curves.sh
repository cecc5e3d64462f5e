#!/usr/bin/env bash
# Learning curves for docs/TRAINING.md: MaskablePPO on task1-task3, fixed seeds (--seed 0), evaluated
# on the held-out seeds 10000-10009 next to random and heuristic on the same seeds.
# Budget: 100,000 environment steps per task (load-independent; 5.2-5.9 CPU-minutes of process
# CPU time per task on the dev machine, inside the issue's 20 CPU-minute target), with a 90
# wall-clock-minute cap only as a safety net on a loaded machine. Override with STEPS=, MINUTES=
# (0: no cap), TASKS= and OUT= (default runs/train).
# Needs the `rl` extra and a CPU PyTorch (docs/TRAINING.md).
# Results: $OUT/<task>/ and the table on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${STEPS:-100000}
MINUTES=${MINUTES:-90}
OUT=${OUT:-runs/train}
for task in ${TASKS:-task1 task2 task3}; do
  nice -n 10 uv run codered train --task "$task" --steps "$STEPS" --minutes "$MINUTES" --envs 4 \
    --eval-every 5000 --eval-seeds 10000-10009 --seed 0 --out "$OUT/$task"
done
uv run python bench/train_table.py "$OUT"
