"""Task sampling for training loops and curricula (OpenEnv RFC 013's ``TaskSampler`` shape).

A sampled episode is ``(task_id, seed, city)`` (the generator is deterministic). The city is
Prakashnagar unless the sampler is given ``cities``, a range of city seeds (a split of
``citygen.CITY_SPLITS``, e.g. ``split_seeds("train")``): each draw then also picks a generated
city uniformly from it. A sampler draws such episodes from a range of seeds:

* ``UniformSampler``: every (task, seed) equally likely, tasks in shuffled rounds so any
  ``5 k`` draws cover each task ``k`` times;
* ``TierSampler``: the same over the tasks of chosen difficulty tiers (``TaskSpec.difficulty``);
* ``CurriculumSampler``: starts at the lowest tier and moves up one tier when the recent
  episodes of the current tier reach a success rate (reported through ``update``); a share of
  draws reviews the tiers already passed.

Every sampler is seeded (``rng_seed``) and deterministic: the same calls give the same episodes.
``state_dict``/``load_state_dict`` let a trainer checkpoint and resume a sampler with its model.
Pure Python: the Task API (server/task_api.py) serves the stateless samplers over HTTP.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .citygen import GENERATED_PREFIX
from .tasks import TASK_IDS, TASKS

# Design choices of the curriculum's defaults.
CURRICULUM_WINDOW = 20  # recent episodes of the current tier that decide promotion
CURRICULUM_ADVANCE_RATE = 0.7  # success rate over the window that moves to the next tier
CURRICULUM_REVIEW_SHARE = 0.2  # share of draws from the tiers already passed
MAX_DRAWS = 10_000  # one sample() call


@dataclass(frozen=True)
class Episode:
    """One sampled episode: what ``reset`` needs, plus the task's sampling keys."""

    task_id: str
    seed: int
    city: str = "prakashnagar"  # or "gen-<city seed>"

    @property
    def difficulty(self) -> int:
        return TASKS[self.task_id].difficulty

    @property
    def group(self) -> str:
        return TASKS[self.task_id].group

    def reset_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"task_id": self.task_id, "seed": self.seed}
        if self.city != "prakashnagar":
            kwargs["city"] = self.city
        return kwargs

    def as_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "seed": self.seed, "city": self.city,
                "difficulty": self.difficulty, "group": self.group}


def tasks_of_tiers(tiers: Iterable[int]) -> tuple[str, ...]:
    """The task ids whose difficulty tier is one of ``tiers`` (ValueError when none is)."""
    wanted = set(_check_tiers(tiers))
    chosen = tuple(t for t in TASK_IDS if TASKS[t].difficulty in wanted)
    if not chosen:
        raise ValueError(f"no task has tier {sorted(wanted)}; tiers: {', '.join(map(str, all_tiers()))}")
    return chosen


def all_tiers() -> tuple[int, ...]:
    return tuple(sorted({t.difficulty for t in TASKS.values()}))


def _check_tiers(tiers: Iterable[int]) -> list[int]:
    values = list(tiers)
    if not values or any(isinstance(t, bool) or not isinstance(t, int) for t in values):
        raise ValueError(f"tiers must be a non-empty list of integers, got {values!r}"[:200])
    return values


def _check_seeds(seeds: range) -> range:
    if not isinstance(seeds, range) or len(seeds) == 0 or seeds.start < 0 or seeds.step != 1:
        raise ValueError(f"seeds must be a non-empty range of non-negative integers, got {seeds!r}")
    return seeds


def _check_cities(cities: range | None) -> range | None:
    if cities is None:
        return None
    if not isinstance(cities, range) or len(cities) == 0 or cities.start < 0 or cities.step != 1:
        raise ValueError(f"cities must be a non-empty range of city seeds, got {cities!r}"[:200])
    return cities


def _draw_city(rng: random.Random, cities: range | None) -> str:
    """A generated city from ``cities`` (no draw at all, so no change to the stream, for None)."""
    return "prakashnagar" if cities is None else f"{GENERATED_PREFIX}{rng.choice(cities)}"


def _check_count(n: object) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_DRAWS:
        raise ValueError(f"n must be an integer in [0, {MAX_DRAWS}], got {n!r}"[:200])
    return n


class UniformSampler:
    """Uniform over ``tasks`` x ``seeds``; tasks come in shuffled rounds (each round has every
    task once), seeds uniformly at random."""

    def __init__(self, seeds: range, rng_seed: int = 0, tasks: Sequence[str] = TASK_IDS,
                 cities: range | None = None) -> None:
        unknown = [t for t in tasks if t not in TASKS]
        if not tasks or unknown:
            raise ValueError(f"tasks must be task ids from {', '.join(TASK_IDS)}, got {list(tasks)!r}"[:200])
        self.seeds = _check_seeds(seeds)
        self.cities = _check_cities(cities)
        self.tasks = tuple(tasks)
        self.rng_seed = rng_seed
        self._rng = random.Random(rng_seed)
        self._round: list[str] = []
        self.draws = 0

    def sample(self, n: int) -> list[Episode]:
        return [self._draw() for _ in range(_check_count(n))]

    def _draw(self) -> Episode:
        if not self._round:
            self._round = list(self.tasks)
            self._rng.shuffle(self._round)
        task_id = self._round.pop()
        self.draws += 1
        seed = self._rng.choice(self.seeds)
        return Episode(task_id, seed, _draw_city(self._rng, self.cities))

    def update(self, episode: Episode, rewards: Sequence[float]) -> None:
        """Uniform sampling ignores outcomes (the RFC's protocol has every sampler take them)."""

    def state_dict(self) -> dict[str, Any]:
        return {"rng": _rng_state(self._rng), "round": list(self._round), "draws": self.draws}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._rng.setstate(_rng_from(state["rng"]))
        self._round = list(state["round"])
        self.draws = int(state["draws"])


class TierSampler(UniformSampler):
    """Uniform over the tasks of the given difficulty tiers."""

    def __init__(self, seeds: range, tiers: Iterable[int], rng_seed: int = 0,
                 cities: range | None = None) -> None:
        super().__init__(seeds, rng_seed, tasks_of_tiers(tiers), cities)


class CurriculumSampler:
    """Tier by tier: draws from the current tier (and, ``review_share`` of the time, from a tier
    already passed) until the last ``window`` episodes of the current tier reach
    ``advance_rate`` successes, where a success is an episode score at or above
    ``success_threshold``; then the next tier. The last tier is kept once reached."""

    def __init__(self, seeds: range, success_threshold: float, rng_seed: int = 0,
                 window: int = CURRICULUM_WINDOW, advance_rate: float = CURRICULUM_ADVANCE_RATE,
                 review_share: float = CURRICULUM_REVIEW_SHARE, cities: range | None = None) -> None:
        if not 0.0 <= review_share < 1.0 or not 0.0 < advance_rate <= 1.0 or window < 1:
            raise ValueError("need 0 <= review_share < 1, 0 < advance_rate <= 1 and window >= 1")
        self.seeds = _check_seeds(seeds)
        self.cities = _check_cities(cities)
        self.success_threshold = float(success_threshold)
        self.window, self.advance_rate, self.review_share = window, advance_rate, review_share
        self.tiers = all_tiers()
        self.level = 0  # index into self.tiers
        self._rng = random.Random(rng_seed)
        self._recent: deque[bool] = deque(maxlen=window)
        self.reported = 0  # episodes reported through update
        self.history: list[tuple[int, int]] = []  # (episodes reported when promoted, tier reached)

    @property
    def tier(self) -> int:
        return self.tiers[self.level]

    def sample(self, n: int) -> list[Episode]:
        return [self._draw() for _ in range(_check_count(n))]

    def _draw(self) -> Episode:
        level = self.level
        if level > 0 and self._rng.random() < self.review_share:
            level = self._rng.randrange(level)
        task_id = self._rng.choice(tasks_of_tiers([self.tiers[level]]))
        seed = self._rng.choice(self.seeds)
        return Episode(task_id, seed, _draw_city(self._rng, self.cities))

    def update(self, episode: Episode, rewards: Sequence[float]) -> None:
        """Report the score(s) of one sampled episode (several for repeated rollouts of it);
        only episodes of the current tier count towards promotion."""
        self.reported += 1
        if episode.difficulty != self.tier:
            return
        for score in rewards:
            self._recent.append(float(score) >= self.success_threshold)
        full = len(self._recent) == self.window
        if full and sum(self._recent) / self.window >= self.advance_rate and self.level + 1 < len(self.tiers):
            self.level += 1
            self._recent.clear()
            self.history.append((self.reported, self.tier))

    def state_dict(self) -> dict[str, Any]:
        return {"rng": _rng_state(self._rng), "level": self.level, "recent": list(self._recent),
                "reported": self.reported, "history": [list(h) for h in self.history]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._rng.setstate(_rng_from(state["rng"]))
        self.level = int(state["level"])
        self._recent = deque((bool(x) for x in state["recent"]), maxlen=self.window)
        self.reported = int(state["reported"])
        self.history = [(int(a), int(b)) for a, b in state["history"]]


def _rng_state(rng: random.Random) -> list[Any]:
    version, internal, gauss = rng.getstate()
    return [version, list(internal), gauss]


def _rng_from(state: list[Any]) -> tuple[Any, ...]:
    version, internal, gauss = state
    return (version, tuple(internal), gauss)
