"""The reference pace the running preview expects care at (``params.PREVIEW_PACE_MIN``), measured.

Plays the expert heuristic on ``--seeds`` of every task and prints, per condition, the mean
minutes from the call, from the first crew on scene and from the first hospital door to the
start of definitive care (treated patients only), beside the values ``params.py`` holds. The
preview values a patient not yet treated at the benefit they would keep if care began at that
pace from the furthest stage they reached, or now if that is past (``rubric.care_minute``).

Usage::

    uv run python bench/preview_pace.py --seeds 0-11
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codered_env.agents import make_agent
from codered_env.sim import CodeRedSim
from codered_env.sim.params import PREVIEW_PACE_MIN
from codered_env.sim.tasks import TASK_IDS

STAGES = ("from call", "from crew", "from door")


def parse_seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def stage_minutes(seeds: list[int]) -> dict[str, list[list[int]]]:
    """Per condition, the minutes to care from each stage, over the heuristic's treated patients."""
    minutes: dict[str, list[list[int]]] = defaultdict(lambda: [[], [], []])
    for task_id in TASK_IDS:
        for seed in seeds:
            sim = CodeRedSim(task_id, seed)
            agent = make_agent("heuristic")
            agent.reset(task_id, seed)
            while not sim.done:
                sim.step(agent.act(sim.observation()))
            for p in sim.world.patients.values():
                if p.treatment_start is None:
                    continue
                starts = (p.appeared_at, p.first_unit_at, p.first_hospital_arrival)
                for stage, start in zip(minutes[p.condition], starts, strict=True):
                    if start is not None:
                        stage.append(p.treatment_start - start)
    return minutes


def measured_pace(seeds: list[int]) -> dict[str, tuple[int, int, int]]:
    """The table ``params.PREVIEW_PACE_MIN`` holds: rounded means, 0 for a stage never reached."""
    return {
        condition: tuple(round(statistics.fmean(xs)) if xs else 0 for xs in stages)  # type: ignore[misc]
        for condition, stages in sorted(stage_minutes(seeds).items())
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-11", help="lo-hi (default 0-11, the seeds params.py used)")
    seeds = parse_seeds(parser.parse_args().seeds)
    measured = measured_pace(seeds)
    tasks = ", ".join(TASK_IDS)
    print(f"Heuristic on seeds {seeds[0]}-{seeds[-1]} of {tasks}: mean minutes to definitive care")
    print()
    print("| condition | " + " | ".join(f"{s} (measured / params)" for s in STAGES) + " |")
    print("|---|" + "---|" * len(STAGES))
    for condition, pace in measured.items():
        held = PREVIEW_PACE_MIN.get(condition, (None,) * len(STAGES))
        cells = " | ".join(f"{m} / {h}" for m, h in zip(pace, held, strict=True))
        print(f"| {condition} | {cells} |")


if __name__ == "__main__":
    main()
