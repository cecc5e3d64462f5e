"""The five benchmark tasks (docs/MODEL.md#tasks). What varies with the seed is in generator.py."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TaskSpec:
    task_id: str
    name: str
    difficulty: str
    phase: int  # 1: patients known at the start; 2: patients arrive as 108/112 calls
    max_steps: int
    horizon_min: int  # the world stops at this clock minute
    disruptions: int
    mutual_aid_limit: int
    cascades: bool  # secondary casualties, crowding -> diversion (and a news cycle in phase 2)
    description: str

    def as_dict(self) -> dict[str, object]:
        return {
            "task_id": self.task_id,
            "name": self.name,
            "difficulty": self.difficulty,
            "phase": self.phase,
            "max_steps": self.max_steps,
            "horizon_min": self.horizon_min,
            "disruptions": self.disruptions,
            "mutual_aid_limit": self.mutual_aid_limit,
            "cascades": self.cascades,
            "description": self.description,
        }


TASKS: dict[str, TaskSpec] = {
    t.task_id: t
    for t in (
        TaskSpec(
            "task1",
            "Cardiac Emergency",
            "beginner",
            phase=1,
            max_steps=30,
            horizon_min=150,
            disruptions=0,
            mutual_aid_limit=0,
            cascades=False,
            description=(
                "One STEMI patient somewhere in the city. Dispatch a unit, choose a PCI-capable "
                "hospital, and have the cath lab and cardiologist ready when the patient arrives."
            ),
        ),
        TaskSpec(
            "task2",
            "Multi-Patient Emergency",
            "intermediate",
            phase=1,
            max_steps=45,
            horizon_min=160,
            disruptions=1,
            mutual_aid_limit=1,
            cascades=False,
            description=(
                "A STEMI and a stroke at the same time, competing for one cath lab and for the "
                "ALS units, with one disruption (road closure, congestion, equipment failure or "
                "an unavailable specialist)."
            ),
        ),
        TaskSpec(
            "task3",
            "Crisis Surge",
            "advanced",
            phase=1,
            max_steps=90,  # heuristic needs 48-71 decisions (60 cut 16 of 30 episodes short)
            horizon_min=180,
            disruptions=2,
            mutual_aid_limit=2,
            cascades=True,
            description=(
                "A mass-casualty crash plus a medical emergency: five patients for five units, "
                "haemorrhaging casualties who need blood and surgeons, secondary casualties, "
                "two disruptions and the risk of overcrowding a hospital into diversion."
            ),
        ),
        TaskSpec(
            "task4",
            "Call Queue - Triage",
            "advanced",
            phase=2,
            max_steps=90,  # heuristic needs 58-77 decisions: every caller reachable
            horizon_min=150,
            disruptions=1,
            mutual_aid_limit=1,
            cascades=False,
            description=(
                "108/112 calls arrive over time. Read each caller's report, triage P1-P4, send "
                "ALS or BLS, and pick hospitals once crews find out what is really wrong."
            ),
        ),
        TaskSpec(
            "task5",
            "Cascade Crisis",
            "expert",
            phase=2,
            max_steps=150,  # heuristic needs 88-131 decisions
            horizon_min=180,
            disruptions=2,
            mutual_aid_limit=2,
            cascades=True,
            description=(
                "A busy call queue with an unfolding incident: secondary casualties, hospitals "
                "tipping into diversion, and a news cycle that floods the lines with low-acuity "
                "calls after a death or a long delay. Two disruptions."
            ),
        ),
    )
}
TASK_IDS: tuple[str, ...] = tuple(TASKS)
