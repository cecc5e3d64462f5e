"""The five benchmark tasks (docs/MODEL.md#tasks). What varies with the seed is in generator.py.

Each task has an integer difficulty tier (0 = easiest; the keys task samplers and curricula
read, sampling.py), the tier's name, and a group: the family of tasks that share a way of
playing (``known_patients``: phase 1, every patient known at the start; ``call_queue``: phase 2,
108/112 calls to triage).
"""

from __future__ import annotations

from dataclasses import dataclass

# The tiers in order, named as docs/MODEL.md#tasks labels the tasks (design choice: task3 and task4
# share a tier).
DIFFICULTY_NAMES: tuple[str, ...] = ("beginner", "intermediate", "advanced", "expert")
PHASE_GROUPS = {1: "known_patients", 2: "call_queue"}


@dataclass(frozen=True)
class TaskSpec:
    task_id: str
    name: str
    difficulty: int  # tier 0..3, higher is harder (DIFFICULTY_NAMES)
    group: str
    phase: int  # 1: patients known at the start; 2: patients arrive as 108/112 calls
    max_steps: int
    horizon_min: int  # the world stops at this clock minute
    disruptions: int
    mutual_aid_limit: int
    cascades: bool  # secondary casualties, crowding -> diversion (and a news cycle in phase 2)
    description: str

    @property
    def difficulty_name(self) -> str:
        return DIFFICULTY_NAMES[self.difficulty]

    def as_dict(self) -> dict[str, object]:
        return {
            "task_id": self.task_id,
            "name": self.name,
            "difficulty": self.difficulty,
            "difficulty_name": self.difficulty_name,
            "group": self.group,
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
            difficulty=0,
            group=PHASE_GROUPS[1],
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
            difficulty=1,
            group=PHASE_GROUPS[1],
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
            difficulty=2,
            group=PHASE_GROUPS[1],
            phase=1,
            max_steps=90,  # heuristic needs 48-71 decisions (60 cut 16 of 30 episodes short)
            horizon_min=180,
            disruptions=2,
            mutual_aid_limit=2,
            cascades=True,
            description=(
                "A mass-casualty crash plus a medical emergency: five patients for the city's fleet "
                "(five units in Prakashnagar), haemorrhaging casualties who need blood and surgeons, "
                "secondary casualties, two disruptions and the risk of overcrowding a hospital into "
                "diversion."
            ),
        ),
        TaskSpec(
            "task4",
            "Call Queue - Triage",
            difficulty=2,
            group=PHASE_GROUPS[2],
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
            difficulty=3,
            group=PHASE_GROUPS[2],
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
