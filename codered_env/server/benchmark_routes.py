"""Benchmark routes: ``GET /tasks``, ``POST /grader``, ``POST /baseline``.

Grading is a pure function of (task, seed, actions) (``codered_env.sim.grade_episode``), so
``/grader`` answers are deterministic. Agent runs are bounded: at most ``heavy_jobs`` run at
once (others wait up to ``heavy_wait_s``, then get 503), the seed list and the action list
are capped by the request schemas, and built-in agent episodes are cached.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Callable
from functools import lru_cache
from typing import Annotated, Any, TypeVar

from fastapi import Body, FastAPI, HTTPException
from starlette.concurrency import run_in_threadpool

from codered_env.server.config import ServerSettings
from codered_env.server.environment import DEFAULT_SEED, DEFAULT_TASK_ID, LIVE_EPISODES
from codered_env.server.http_sessions import HttpSessionStore, SessionNotFound
from codered_env.server.schemas import BaselineBody, GraderBody
from codered_env.sim import TASKS, grade_episode
from codered_env.sim.actions import PHASE_OF, action_json_schemas

T = TypeVar("T")
TAGS = ["Benchmark"]
BODY_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "The body could not be read (not UTF-8 JSON)."},
    413: {"description": "Request body over the size limit."},
    422: {"description": "Malformed JSON or a body that does not match the schema."},
}
LLM_DISABLED = (
    "the LLM baseline is disabled on this server: start it with CODERED_ENABLE_LLM_BASELINE=1 "
    "and an API key (HF_TOKEN, API_KEY or OPENAI_API_KEY) in its environment; optionally "
    "API_BASE_URL and MODEL_NAME"
)


def task_listing() -> dict[str, Any]:
    """The five tasks and the JSON schema of every action type."""
    tasks = []
    for spec in TASKS.values():
        entry = spec.as_dict()
        entry["action_types"] = [name for name, phase in PHASE_OF.items() if phase in (None, spec.phase)]
        tasks.append(entry)
    return {"tasks": tasks, "action_schemas": action_json_schemas()}


@lru_cache(maxsize=512)
def _builtin_episode(agent_name: str, task_id: str, seed: int) -> tuple[dict[str, Any], list]:
    from codered_env.agents import make_agent
    from codered_env.runner import run_episode

    result = run_episode(task_id, seed, make_agent(agent_name, seed=seed))
    return result.grade, list(result.actions)


def builtin_episode(agent_name: str, task_id: str, seed: int) -> dict[str, Any]:
    """Grade (and actions) of a built-in agent's episode; deterministic, hence cached."""
    grade, actions = _builtin_episode(agent_name, task_id, seed)
    return {**grade, "actions": actions}


def _llm_episodes(tasks: list[str], seeds: list[int]) -> dict[str, list[float]]:
    from codered_env.agents.llm import LLMAgent, LLMConfig
    from codered_env.runner import run_episode

    config = LLMConfig.from_env()
    if config is None:
        raise HTTPException(403, LLM_DISABLED)
    return {
        task: [float(run_episode(task, seed, LLMAgent(config)).score) for seed in seeds] for task in tasks
    }


def _builtin_scores(agent: str, tasks: list[str], seeds: list[int]) -> dict[str, list[float]]:
    return {task: [float(builtin_episode(agent, task, seed)["score"]) for seed in seeds] for task in tasks}


def _check_llm_allowed(settings: ServerSettings) -> None:
    if not settings.enable_llm_baseline:
        raise HTTPException(403, LLM_DISABLED)
    try:
        from codered_env.agents.llm import api_key_from_env
    except ImportError as exc:
        raise HTTPException(501, "the LLM agent is not available in this build") from exc
    if api_key_from_env() is None:
        raise HTTPException(403, LLM_DISABLED)


class HeavyJobs:
    """Bounds the agent runs executing at once; waits a while, then answers 503."""

    def __init__(self, slots: int, wait_s: float) -> None:
        self._semaphore = asyncio.Semaphore(slots)
        self._wait_s = wait_s

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        try:
            await asyncio.wait_for(self._semaphore.acquire(), self._wait_s)
        except asyncio.TimeoutError as exc:
            raise HTTPException(
                503, "server busy with other agent runs; retry shortly", {"Retry-After": "10"}
            ) from exc
        try:
            return await run_in_threadpool(fn, *args)
        finally:
            self._semaphore.release()


def register_benchmark_routes(
    app: FastAPI, settings: ServerSettings, store: HttpSessionStore[Any]
) -> HeavyJobs:
    """Add /tasks, /grader and /baseline to ``app``; returns the shared agent-run limiter."""
    jobs = HeavyJobs(settings.heavy_jobs, settings.heavy_wait_s)
    listing = task_listing()

    @app.get("/tasks", tags=TAGS, summary="The five tasks and every action's JSON schema")
    async def tasks() -> dict[str, Any]:
        return listing

    @app.post(
        "/grader",
        tags=TAGS,
        summary="Score an episode with its full breakdown",
        responses={
            **BODY_ERRORS,
            404: {"description": "Unknown or expired episode_id."},
            503: {"description": "Too many agent runs at once."},
        },
    )
    async def grader(body: Annotated[GraderBody | None, Body()] = None) -> dict[str, Any]:
        """Three modes: ``actions`` replays them from the start of (task_id, seed) and grades
        the result; ``episode_id`` grades that live episode (HTTP or WebSocket) so far;
        neither runs the built-in ``agent`` (default heuristic) on (task_id, seed)."""
        body = body or GraderBody()
        if body.episode_id is not None:
            return await _grade_live(body.episode_id, store)
        task_id = body.task_id or DEFAULT_TASK_ID
        seed = DEFAULT_SEED if body.seed is None else body.seed
        if body.actions is not None:
            grade = await run_in_threadpool(grade_episode, task_id, seed, body.actions)
            return {"source": "actions", **grade}
        agent = body.agent or "heuristic"
        result = await jobs.run(builtin_episode, agent, task_id, seed)
        return {"source": "agent", "agent": agent, **result}

    @app.post(
        "/baseline",
        tags=TAGS,
        summary="Mean score of a built-in agent on every task",
        responses={
            **BODY_ERRORS,
            403: {"description": "LLM baseline not enabled on this server."},
            501: {"description": "LLM agent not available in this build."},
            503: {"description": "Too many agent runs at once."},
        },
    )
    async def baseline(body: Annotated[BaselineBody | None, Body()] = None) -> dict[str, Any]:
        """Run ``agent`` (heuristic, random, noop; llm only when the server enables it) on
        ``seeds`` (default 0, 1, 2) of every task and return the mean score per task."""
        body = body or BaselineBody()
        task_ids = list(dict.fromkeys(body.tasks or list(TASKS)))
        seeds = list(dict.fromkeys(body.seeds))
        if body.agent == "llm":
            _check_llm_allowed(settings)
            per_seed = await jobs.run(_llm_episodes, task_ids, seeds)
        else:
            per_seed = await jobs.run(_builtin_scores, body.agent, task_ids, seeds)
        scores = {task: round(statistics.fmean(values), 4) for task, values in per_seed.items()}
        return {
            "agent": body.agent,
            "seeds": seeds,
            "scores": scores,
            "per_seed": per_seed,
            "mean_score": round(statistics.fmean(scores.values()), 4),
        }

    return jobs


async def _grade_live(episode_id: str, store: HttpSessionStore[Any]) -> dict[str, Any]:
    try:
        env = store.get(episode_id).env
    except SessionNotFound as exc:
        env = LIVE_EPISODES.get(episode_id)
        if env is None:
            raise SessionNotFound(f"{exc.message}; no live WebSocket episode has this id either") from exc
    grade = await run_in_threadpool(env.grade)
    return {"source": "episode", "episode_id": episode_id, **grade}
