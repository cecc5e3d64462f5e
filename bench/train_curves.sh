#!/usr/bin/env bash
# Learning curves for docs/TRAINING.md: MaskablePPO on task1-task3, fixed seeds, a stated budget
# (40,000 environment steps or 10 wall-clock minutes, whichever comes first), evaluated on the
# held-out seeds 10000-10009 next to random and heuristic on the same seeds.
# Needs the `rl` extra and a CPU PyTorch (docs/TRAINING.md). Results: runs/train/<task>/.
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${STEPS:-40000}
MINUTES=${MINUTES:-10}
for task in ${TASKS:-task1 task2 task3}; do
  nice -n 10 uv run codered train --task "$task" --steps "$STEPS" --minutes "$MINUTES" --envs 4 \
    --eval-every 4096 --eval-seeds 10000-10009 --seed 0 --out "runs/train/$task"
done
uv run python bench/train_table.py runs/train
