"""CodeRedEnv simulation core: pure Python, no I/O, no web stack.

Start with ``CodeRedSim`` (env.py). The episode's state is in state.py and the order of a minute
in tick.py; the city map is in city.py, the parameters with their sources in params.py,
clinical.py and facilities.py, conditions and outcome curves in conditions.py, the caller reports
and triage levels in triage.py, the tasks in tasks.py, the rubric in rubric.py, what the agent
sees in view.py (rows in obs_rows.py, legal actions in legal.py), and the 14 actions (names,
phases, help, parameters: every action surface derives from it) in catalogue.py.
"""

from .actions import ACTION_TYPES, parse_action
from .env import CodeRedSim, Snapshot, grade_episode
from .render import render_text
from .tasks import TASK_IDS, TASKS

__all__ = [
    "ACTION_TYPES",
    "TASKS",
    "TASK_IDS",
    "CodeRedSim",
    "Snapshot",
    "grade_episode",
    "parse_action",
    "render_text",
]
