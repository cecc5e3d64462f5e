"""The grade as an OpenEnv RFC 004 ``Rubric`` tree: a pure wrap of ``codered_env/sim/rubric.py``.

::

    CodeRedRubric                 final_score (= grade()["score"], clamped as the grade is)
    ├── time_score                each component as grade()["components"] reports it (None: 0.0),
    ├── efficiency                with ``weight`` = its effective weight in this task
    ├── secondary_harm            (grade()["weights"]: the weights of components that do not apply
    ├── prep_ready                are shared out over the others)
    ├── vitals_score_avg
    ├── cascade_score
    └── mutual_aid_penalty        subtracted (grade()["mutual_aid_penalty"])

Nothing is recomputed here: every number comes from one ``grade()`` call, so the tree always
equals the grader. ``rubric(action, observation)`` accepts as ``observation`` a grade dict, or
anything with a ``grade()`` method (``CodeRedSim``, ``CodeRedEnvironment``); otherwise it asks
the grade source it was built with (``CodeRedEnvironment.rubric`` is bound to its own episode).
After a call, ``named_rubrics()`` gives every node with its ``last_score``, e.g. for logging
component scores in a training run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from openenv.core.rubrics.base import Rubric

from codered_env.sim.params import RUBRIC_WEIGHTS

Grade = Mapping[str, Any]
PENALTY_NODE = "mutual_aid_penalty"


class GradeComponent(Rubric):
    """One weighted component of the grade (0.0 where it does not apply: weight 0 then)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.weight: float | None = None

    def forward(self, action: Any, observation: Grade) -> float:
        self.weight = float(observation["weights"][self.name])
        value = observation["components"][self.name]
        return 0.0 if value is None else float(value)


class MutualAidPenalty(Rubric):
    """The mutual-aid penalty, subtracted from the weighted sum."""

    def forward(self, action: Any, observation: Grade) -> float:
        return float(observation[PENALTY_NODE])


class CodeRedRubric(Rubric):
    """The CodeRedEnv grade as a rubric tree (see the module docstring)."""

    def __init__(self, grade_source: Callable[[], Grade] | None = None) -> None:
        super().__init__()
        self._grade_source = grade_source
        for name in RUBRIC_WEIGHTS:
            setattr(self, name, GradeComponent(name))
        self.mutual_aid_penalty = MutualAidPenalty()

    def forward(self, action: Any, observation: Any) -> float:
        grade = self._grade_of(observation)
        for child in self.children():
            child(action, grade)
        return float(grade["score"])

    def weighted_sum(self) -> float:
        """Sum of weight x component minus the penalty, from the last call's (rounded) values."""
        parts = [c for c in self.children() if isinstance(c, GradeComponent)]
        total = sum((c.weight or 0.0) * (c.last_score or 0.0) for c in parts)
        return total - (self.mutual_aid_penalty.last_score or 0.0)

    def _grade_of(self, observation: Any) -> Grade:
        if isinstance(observation, Mapping) and "components" in observation:
            return observation
        grade = getattr(observation, "grade", None)
        if callable(grade):
            return grade()  # type: ignore[no-any-return]
        if self._grade_source is None:
            raise ValueError("no grade: pass a grade dict or an object with grade(), or bind a source")
        return self._grade_source()
