"""Trajectory files: one episode as JSON Lines, re-gradable from its actions alone.

Format ``codered-trajectory/1`` (one JSON object per line, UTF-8):

1. a header ``{"type": "header", "format": "codered-trajectory/1", "task_id", "seed", "agent",
   "model", "package_version", "max_steps", "created_at"}``, with ``"city"`` (``"gen-<seed>"``)
   for an episode outside Prakashnagar (no ``city``: Prakashnagar);
2. one record per step ``{"type": "step", "step": n, "action": {wire dict}, "reward", "done",
   "error": str | null, "score_preview": float | null}`` with ``step`` = 1, 2, 3 ...;
3. optionally an ``{"type": "end", "score", "components", "interrupted", "reason"}`` record.

``[r["action"] for r in steps]`` is exactly the list of wire actions the environment received,
so it is what the server's ``/grader`` accepts as ``actions`` (for Prakashnagar) and what
:func:`replay` re-grades.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

FORMAT = "codered-trajectory/1"


class TrajectoryError(ValueError):
    """A trajectory file or text that cannot be read."""


def package_version() -> str:
    """The installed ``openenv-codered`` version (``0+unknown`` when not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("openenv-codered")
    except PackageNotFoundError:
        return "0+unknown"


def utc_now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


@dataclass
class StepRecord:
    """One step as recorded: the wire action sent, its reward and any error."""

    step: int
    action: dict[str, Any]
    reward: float
    done: bool
    error: str | None = None
    score_preview: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"type": "step", "step": self.step, "action": self.action, "reward": self.reward,
                "done": self.done, "error": self.error, "score_preview": self.score_preview}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> StepRecord:
        action = obj.get("action")
        step = obj.get("step")
        if not isinstance(action, dict) or not isinstance(step, int):
            raise TrajectoryError("step record needs an integer 'step' and an 'action' object")
        error = obj.get("error")
        return cls(step=step, action=action, reward=_finite(obj.get("reward")) or 0.0,
                   done=bool(obj.get("done")), error=None if error is None else str(error),
                   score_preview=_finite(obj.get("score_preview")))


@dataclass
class Trajectory:
    """A whole episode: header fields, step records and an optional end record."""

    task_id: str
    seed: int
    agent: str
    model: str
    max_steps: int | None = None
    package_version: str = field(default_factory=package_version)
    created_at: str = field(default_factory=utc_now)
    steps: list[StepRecord] = field(default_factory=list)
    end: dict[str, Any] | None = None
    city: str = "prakashnagar"

    def header(self) -> dict[str, Any]:
        head = {"type": "header", "format": FORMAT, "task_id": self.task_id, "seed": self.seed,
                "agent": self.agent, "model": self.model,
                "package_version": self.package_version, "max_steps": self.max_steps,
                "created_at": self.created_at}
        if self.city != "prakashnagar":
            head["city"] = self.city
        return head

    def actions(self) -> list[dict[str, Any]]:
        """The wire actions in order (the ``/grader`` ``actions`` list)."""
        return [dict(record.action) for record in self.steps]

    def to_jsonl(self) -> str:
        records = [self.header(), *(s.to_json() for s in self.steps)]
        if self.end is not None:
            records.append({"type": "end", **self.end})
        return "".join(json.dumps(r, separators=(",", ":"), sort_keys=True) + "\n"
                       for r in records)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_jsonl(), encoding="utf-8")

    @classmethod
    def from_jsonl(cls, text: str) -> Trajectory:
        records = _parse_lines(text)
        header = records[0]
        if header.get("type") != "header" or header.get("format") != FORMAT:
            raise TrajectoryError(f"first line must be a {FORMAT} header record")
        trajectory = cls._from_header(header)
        for record in records[1:]:
            kind = record.get("type")
            if kind == "step":
                trajectory.steps.append(StepRecord.from_json(record))
            elif kind == "end":
                trajectory.end = {k: v for k, v in record.items() if k != "type"}
            else:
                raise TrajectoryError(f"unknown record type {kind!r}")
        _check_numbering(trajectory.steps)
        return trajectory

    @classmethod
    def _from_header(cls, header: dict[str, Any]) -> Trajectory:
        task_id, seed = header.get("task_id"), header.get("seed")
        if not isinstance(task_id, str) or not isinstance(seed, int) or isinstance(seed, bool):
            raise TrajectoryError("header needs a string 'task_id' and an integer 'seed'")
        max_steps = header.get("max_steps")
        city = header.get("city", "prakashnagar")
        if not isinstance(city, str):
            raise TrajectoryError("header 'city' must be a string such as 'gen-100000'")
        return cls(task_id=task_id, seed=seed, agent=str(header.get("agent", "unknown")), city=city,
                   model=str(header.get("model", "unknown")),
                   max_steps=max_steps if isinstance(max_steps, int) else None,
                   package_version=str(header.get("package_version", "unknown")),
                   created_at=str(header.get("created_at", "")))

    @classmethod
    def load(cls, path: str | Path) -> Trajectory:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TrajectoryError(f"cannot read {path}: {exc}") from exc
        return cls.from_jsonl(text)


def _parse_lines(text: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TrajectoryError(f"line {number} is not JSON: {exc.msg}") from exc
        if not isinstance(record, dict):
            raise TrajectoryError(f"line {number} is not a JSON object")
        records.append(record)
    if not records:
        raise TrajectoryError("empty trajectory")
    return records


def _check_numbering(steps: list[StepRecord]) -> None:
    for expected, record in enumerate(steps, start=1):
        if record.step != expected:
            raise TrajectoryError(f"step records must be numbered 1, 2, ...; got {record.step} "
                                  f"where {expected} was expected")


@dataclass(frozen=True)
class ReplayResult:
    """The outcome of re-grading a trajectory from its actions."""

    trajectory: Trajectory
    grade: dict[str, Any]
    recorded_score: float | None

    @property
    def score(self) -> float:
        return float(self.grade["score"])

    @property
    def matches(self) -> bool | None:
        """Whether the re-graded score equals the recorded one (``None`` if none recorded)."""
        if self.recorded_score is None:
            return None
        return abs(self.score - self.recorded_score) < 5e-4


def regrade(task_id: str, seed: int, city: str, actions: list[dict[str, Any]]) -> dict[str, Any]:
    """The final grade of ``actions`` replayed from reset on (task, seed) in ``city``
    (``codered_env.sim.grade_episode``). ValueError on a bad task or city."""
    from codered_env.city_choice import city_key
    from codered_env.sim import grade_episode

    return grade_episode(task_id, seed, actions, city=city_key(city))


def replay(source: str | Path | Trajectory) -> ReplayResult:
    """Re-grade a trajectory deterministically: its actions replayed from reset in its city."""
    trajectory = source if isinstance(source, Trajectory) else Trajectory.load(source)
    try:
        grade = regrade(trajectory.task_id, trajectory.seed, trajectory.city, trajectory.actions())
    except ValueError as exc:
        raise TrajectoryError(str(exc)) from exc
    recorded = _finite((trajectory.end or {}).get("score"))
    return ReplayResult(trajectory=trajectory, grade=grade, recorded_score=recorded)
