#!/usr/bin/env bash
# Learning curves for docs/TRAINING.md: MaskablePPO on all five tasks, fixed seeds (--seed 0),
# evaluated every 5,000 steps on the held-out seeds 10000-10009 next to random and heuristic on the
# same seeds.
# Budgets (environment steps, load-independent): 100,000 for the phase-1 tasks and task3
# (STEPS=), 300,000 for the phase-2 tasks task4 and task5 (STEPS_PHASE2=), each with a wall-clock
# cap as a safety net on a loaded machine (MINUTES=, 0: no cap; a run cut by it says so in its
# run.json and in the table's steps column). TASKS= picks tasks (default: all five, task4 and
# task5 first), OUT= the folder (default runs/train), EVAL_EVERY= the evaluation interval (default
# 5000), ACTIONS= the adapter's action set (default full; focused: docs/GYM.md) and GAMMA= the
# discount (default 0.995). One thread, nice 10, one task at a time.
# Needs the `rl` extra and a CPU PyTorch (docs/TRAINING.md).
# Results: $OUT/<task>/ and the table on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${STEPS:-100000}
STEPS_PHASE2=${STEPS_PHASE2:-300000}
MINUTES=${MINUTES:-90}
OUT=${OUT:-runs/train}
EVAL_EVERY=${EVAL_EVERY:-5000}
ACTIONS=${ACTIONS:-full}
GAMMA=${GAMMA:-0.995}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
for task in ${TASKS:-task4 task5 task1 task2 task3}; do
  case "$task" in task4|task5) budget=$STEPS_PHASE2 ;; *) budget=$STEPS ;; esac
  nice -n 10 uv run codered train --task "$task" --steps "$budget" --minutes "$MINUTES" --envs 4 \
    --eval-every "$EVAL_EVERY" --eval-seeds 10000-10009 --seed 0 --actions "$ACTIONS" --gamma "$GAMMA" \
    --out "$OUT/$task"
done
uv run python bench/train_table.py "$OUT"
