"""Measure the step reward's pace table (codered_env/sim/pace.py) from the expert heuristic.

    python bench/calibrate_pace.py            # print the table measured now
    python bench/calibrate_pace.py --write    # rewrite the table in codered_env/sim/pace.py

For every task: the heuristic on ``PACE_SEEDS`` (Prakashnagar), the preview at every grid minute
(the value after the last decision at or before it), and per grid minute the mean final score
over the mean preview, capped at 1; 1 at the horizon. Deterministic: the same code gives the same
table, which tests/sim/test_pace.py checks.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from codered_env.agents import make_agent  # noqa: E402
from codered_env.sim import TASK_IDS, CodeRedSim  # noqa: E402
from codered_env.sim.pace import PACE_SEEDS, PACE_STEP_MIN  # noqa: E402

PACE_MODULE = ROOT / "codered_env" / "sim" / "pace.py"


def preview_path(task_id: str, seed: int) -> tuple[list[tuple[int, float]], float, int]:
    """The heuristic's (clock, preview) after every decision (the final score once over: what the
    potential is then), its final score and the horizon."""
    sim = CodeRedSim(task_id, seed)
    agent = make_agent("heuristic", seed)
    agent.reset(task_id, seed)
    path: list[tuple[int, float]] = []
    while not sim.done:
        sim.step(agent.act(sim.observation()))
        path.append((sim.clock, sim.score_preview))
    return path, sim.grade()["score"], sim.task.horizon_min


def _preview_at(path: list[tuple[int, float]], minute: int) -> float:
    value = 0.0
    for clock, preview in path:
        if clock > minute:
            break
        value = preview
    return value


def pace_table(task_id: str, seeds: range = PACE_SEEDS) -> tuple[float, ...]:
    """The task's pace factors on the grid (see the module docstring)."""
    episodes = [preview_path(task_id, seed) for seed in seeds]
    horizon = episodes[0][2]
    final = statistics.fmean(score for _, score, _ in episodes)
    factors: list[float | None] = []
    for minute in range(0, horizon, PACE_STEP_MIN):
        preview = statistics.fmean(_preview_at(path, minute) for path, _, _ in episodes)
        factors.append(min(1.0, final / preview) if preview > 0 else None)
    held = next((f for f in factors if f is not None), 1.0)  # before any preview: the first factor
    table = []
    for factor in factors:  # a gap later on keeps the factor before it
        held = held if factor is None else factor
        table.append(round(held, 4))
    return (*table, 1.0)


def render(tables: dict[str, tuple[float, ...]]) -> str:
    lines = ["PACE: dict[str, tuple[float, ...]] = {"]
    for task_id, table in tables.items():
        lines.append(f'    "{task_id}": (')
        values = [f"{v:.4f}" for v in table]
        for i in range(0, len(values), 10):
            lines.append("        " + ", ".join(values[i:i + 10]) + ",")
        lines.append("    ),")
    lines.append("}")
    return "\n".join(lines)


def write(tables: dict[str, tuple[float, ...]]) -> None:
    text = PACE_MODULE.read_text()
    pattern = re.compile(r"^PACE: dict\[str, tuple\[float, \.\.\.\]\] = \{.*?^\}$", re.S | re.M)
    updated, count = pattern.subn(lambda _: render(tables), text)
    if count != 1:
        raise SystemExit(f"no PACE table found in {PACE_MODULE}")
    PACE_MODULE.write_text(updated)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the table in the pace module")
    args = parser.parse_args(argv)
    tables = {task_id: pace_table(task_id) for task_id in TASK_IDS}
    if args.write:
        write(tables)
        print(f"wrote {PACE_MODULE.relative_to(ROOT)}")
    else:
        print(render(tables))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
