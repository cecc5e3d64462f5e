"""What the console's first screen says about a task: its goal and, in plain words, what scores.

The goal is the task's own description (``sim.tasks``). The scoring lines come from the grade
itself: a fresh episode's ``grade()`` names the components that count in that task and their
weights (components a task does not have weigh 0), so the text follows the rubric; the words
for each component are here, and a component without words is shown by its name.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from codered_env.sim import TASKS, CodeRedSim

#: What each grade component rewards, in a visitor's words: (short, for the first screen; full).
COMPONENT_WORDS: dict[str, tuple[str, str]] = {
    "time_score": (
        "how fast each patient starts the right treatment (the sickest count most)",
        "How soon each patient starts the treatment they need, against their condition's own clock: "
        "minutes cost most where they cost lives (haemorrhage, STEMI), and the most urgent patients "
        "weigh most.",
    ),
    "efficiency": (
        "no wasted actions",
        "The share of patients a crew reached, less deductions for wasted or refused actions.",
    ),
    "prep_ready": (
        "the hospital being ready on arrival",
        "Whether the operating room, the specialist and blood were ready when a patient who needs "
        "them reached the hospital.",
    ),
    "vitals_score_avg": (
        "patients' condition at treatment",
        "How stable patients still were when their treatment started.",
    ),
    "secondary_harm": (
        "secondary casualties' outcomes",
        "How the secondary casualties of the incident fare.",
    ),
    "cascade_score": (
        "containing knock-on effects",
        "Secondary casualties reached fast, hospitals kept out of overcrowding, and calls triaged right.",
    ),
}
PENALTY_WORDS = (
    "Points come off for refused actions, pages or room preparations that go unused, blood "
    "reserved for nobody, the wrong unit or triage level for a call, and mutual aid that was not needed."
)


def component_words(name: str) -> tuple[str, str]:
    """(short, full) words for a grade component; its name for one without words."""
    plain = name.replace("_", " ")
    return COMPONENT_WORDS.get(name, (plain, plain))


def scoring_components(task_id: str) -> list[dict[str, Any]]:
    """The grade components that count in ``task_id``, heaviest first, with their words."""
    weights = CodeRedSim(task_id, 0).grade()["weights"]
    counted = sorted(((w, name) for name, w in weights.items() if w > 0), key=lambda item: -item[0])
    return [
        {"name": name, "weight": w, "short": component_words(name)[0], "what": component_words(name)[1]}
        for w, name in counted
    ]


def scoring_summary(components: list[dict[str, Any]]) -> str:
    """One or two sentences: the biggest part of the score and what else counts."""
    top, rest = components[0], [c["short"] for c in components[1:]]
    text = f"Scored from 0 to 1 at the end. {round(100 * top['weight'])}% is {top['short']}"
    if len(rest) > 1:
        rest = [", ".join(rest[:-1]) + " and " + rest[-1]]
    return text + "".join(f"; the rest rewards {part}" for part in rest) + "."


@cache
def task_briefs() -> tuple[dict[str, Any], ...]:
    """Every task as the console's task menu and first screen show it."""
    briefs = []
    for task in TASKS.values():
        components = scoring_components(task.task_id)
        briefs.append({
            "task_id": task.task_id,
            "name": task.name,
            "difficulty": task.difficulty,
            "phase": task.phase,
            "max_steps": task.max_steps,
            "horizon_min": task.horizon_min,
            "goal": task.description,
            "scoring": scoring_summary(components),
            "components": components,
            "penalties": PENALTY_WORDS,
        })
    return tuple(briefs)
