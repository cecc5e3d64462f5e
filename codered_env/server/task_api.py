"""OpenEnv's Task API over CodeRedEnv's (task, seed) episodes: a training split and an evaluation
split of held-out seeds.

* ``train``: seeds ``0 .. 9999`` of every task; ``eval``: seeds ``10000 .. 10999`` of every task
  (``codered_env.train.EVAL_SEED_BASE``: evaluation is always on seeds training never saw).
* Index ``i`` of a split is task ``TASK_IDS[i % 5]`` with seed ``base + i // 5``, so any prefix
  of a split covers the five tasks evenly.
* ``reset(split="eval", index=7)`` plays that task; the generator is deterministic, so a task
  spec is fully described by ``(task_id, seed)``.

The HTTP routes keep OpenEnv's paths and shapes (``GET /list_environments``,
``GET /codered_env/splits``, ``POST /codered_env/{tasks,num_tasks,task,task_range}``). A task
spec carries RFC 013's sampling keys: ``difficulty`` (integer tier, 0 = easiest),
``difficulty_name`` and ``group``. ``POST /codered_env/sample`` draws task specs of a split with
a seeded uniform or tier sampler (codered_env/sim/sampling.py; the curriculum keeps state, so it
runs beside the trainer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Body, FastAPI, HTTPException
from pydantic import BaseModel, ConfigDict, Field

from codered_env.sim import TASK_IDS, TASKS
from codered_env.sim.citygen import list_city_splits
from codered_env.sim.sampling import Episode, TierSampler, UniformSampler
from codered_env.train import EVAL_SEED_BASE

TRAIN_SEEDS = range(0, EVAL_SEED_BASE)
EVAL_SEEDS = range(EVAL_SEED_BASE, EVAL_SEED_BASE + 1000)
LIST_PREVIEW = 100  # list_tasks returns the first tasks of a split; num_tasks the true total
MAX_RANGE = 1000


@dataclass(frozen=True)
class Split:
    name: str
    type: str  # OpenEnv's split type: train | validation | test
    seeds: range

    @property
    def size(self) -> int:
        return len(self.seeds) * len(TASK_IDS)


SPLITS = {"train": Split("train", "train", TRAIN_SEEDS), "eval": Split("eval", "test", EVAL_SEEDS)}


class UnknownSplit(ValueError):
    pass


def _split(name: Any) -> Split:
    if name not in SPLITS:
        raise UnknownSplit(f"unknown split {str(name)[:40]!r}; splits: {', '.join(SPLITS)}")
    return SPLITS[name]


def list_splits() -> list[dict[str, Any]]:
    return [{"name": s.name, "type": s.type, "num_tasks": s.size,
             "seeds": [s.seeds.start, s.seeds.stop - 1]} for s in SPLITS.values()]


def num_tasks(split: str) -> int:
    return _split(split).size


def get_task(split: str, index: int) -> dict[str, Any]:
    """The task spec at ``index`` (raises IndexError out of range, ValueError for a bad split)."""
    chosen = _split(split)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < chosen.size:
        raise IndexError(f"index must be an integer in [0, {chosen.size - 1}] for split {split!r}")
    task_id = TASK_IDS[index % len(TASK_IDS)]
    task = TASKS[task_id]
    return {
        "id": f"{split}-{index}",
        "split": split,
        "index": index,
        "task_id": task_id,
        "seed": chosen.seeds.start + index // len(TASK_IDS),
        "difficulty": task.difficulty,
        "difficulty_name": task.difficulty_name,
        "group": task.group,
        "phase": task.phase,
        "max_steps": task.max_steps,
    }


def get_task_range(split: str, start: int, stop: int) -> list[dict[str, Any]]:
    size = num_tasks(split)
    stop = min(stop, size, start + MAX_RANGE)
    return [get_task(split, i) for i in range(max(0, start), stop)]


def index_of(split: str, episode: Episode) -> int:
    """The split index of a sampled episode (ValueError when its seed is outside the split)."""
    seeds = _split(split).seeds
    if episode.seed not in seeds:
        raise ValueError(f"seed {episode.seed} is not in split {split!r} "
                         f"(seeds {seeds.start}-{seeds.stop - 1})")
    return (episode.seed - seeds.start) * len(TASK_IDS) + TASK_IDS.index(episode.task_id)


def sample_tasks(split: str, n: int, rng_seed: int = 0,
                 tiers: list[int] | None = None) -> list[dict[str, Any]]:
    """``n`` task specs of ``split`` drawn by a seeded sampler: uniform, or over ``tiers``."""
    seeds = _split(split).seeds
    sampler = UniformSampler(seeds, rng_seed) if tiers is None else TierSampler(seeds, tiers, rng_seed)
    return [get_task(split, index_of(split, e)) for e in sampler.sample(n)]


def list_tasks(split: str) -> list[dict[str, Any]]:
    """A bounded preview (the first ``LIST_PREVIEW`` tasks); ``num_tasks`` gives the total."""
    return get_task_range(split, 0, LIST_PREVIEW)


class TaskProviderMixin:
    """OpenEnv's ``TaskProvider`` methods, for the environment class."""

    def list_splits(self) -> list[dict[str, Any]]:
        return list_splits()

    def list_tasks(self, split: str) -> list[dict[str, Any]]:
        return list_tasks(split)

    def num_tasks(self, split: str) -> int:
        return num_tasks(split)

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        return get_task(split, index)

    def get_task_range(self, split: str, start: int, stop: int) -> list[dict[str, Any]]:
        return get_task_range(split, start, stop)


class _SplitBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    split: str = Field(max_length=40)


class _TaskBody(_SplitBody):
    index: int = Field(ge=0, le=10**9)


class _SampleBody(_SplitBody):
    n: int = Field(ge=0, le=MAX_RANGE)
    rng_seed: int = Field(default=0, ge=0, le=2**32 - 1)
    tiers: list[int] | None = Field(default=None, min_length=1, max_length=10)


class _RangeBody(_SplitBody):
    start: int = Field(ge=0, le=10**9)
    stop: int = Field(ge=0, le=10**9)


def _answer(call: Any, *args: Any) -> Any:
    try:
        return call(*args)
    except UnknownSplit as exc:
        raise HTTPException(404, str(exc)) from None
    except (IndexError, ValueError) as exc:
        raise HTTPException(400, str(exc)) from None


_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "An index outside the split, or a tier no task has."},
    404: {"description": "An unknown split."},
}


def register_task_routes(app: FastAPI, env_name: str) -> None:
    tags = ["Task API"]

    @app.get("/list_environments", tags=tags, summary="Environments served here")
    async def environments() -> list[str]:
        return [env_name]

    @app.get(f"/{env_name}/splits", tags=tags, summary="Task splits (train seeds, held-out eval seeds)")
    async def splits() -> list[dict[str, Any]]:
        return list_splits()

    @app.get(f"/{env_name}/city_splits", tags=tags,
             summary="City-seed splits (train cities, held-out test cities) for reset(city=)")
    async def city_splits() -> dict[str, dict[str, object]]:
        return list_city_splits()

    @app.post(f"/{env_name}/tasks", tags=tags, responses=_ERRORS, summary="The first tasks of a split")
    async def tasks(body: Annotated[_SplitBody, Body()]) -> dict[str, Any]:
        return {"tasks": _answer(list_tasks, body.split), "env_name": env_name}

    @app.post(f"/{env_name}/num_tasks", tags=tags, responses=_ERRORS, summary="Number of tasks in a split")
    async def count(body: Annotated[_SplitBody, Body()]) -> dict[str, Any]:
        return {"num_tasks": _answer(num_tasks, body.split)}

    @app.post(f"/{env_name}/task", tags=tags, responses=_ERRORS, summary="One task of a split")
    async def task(body: Annotated[_TaskBody, Body()]) -> dict[str, Any]:
        return {"task": _answer(get_task, body.split, body.index)}

    @app.post(f"/{env_name}/task_range", tags=tags, responses=_ERRORS,
              summary=f"Tasks [start, stop) (at most {MAX_RANGE})")
    async def task_range(body: Annotated[_RangeBody, Body()]) -> dict[str, Any]:
        return {"tasks": _answer(get_task_range, body.split, body.start, body.stop)}

    @app.post(f"/{env_name}/sample", tags=tags, responses=_ERRORS,
              summary=f"Task specs drawn by a seeded uniform or tier sampler (at most {MAX_RANGE})")
    async def sample(body: Annotated[_SampleBody, Body()]) -> dict[str, Any]:
        return {"tasks": _answer(sample_tasks, body.split, body.n, body.rng_seed, body.tiers)}
