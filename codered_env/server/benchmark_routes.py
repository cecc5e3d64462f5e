"""Benchmark routes: ``GET /tasks``, ``POST /grader``, ``POST /baseline``.

Grading is a pure function of (task, seed, actions) (``codered_env.sim.grade_episode``), so
``/grader`` answers are deterministic. Everything that plays an episode (agent runs, action
replays, the reference outcomes) goes through :class:`jobs.HeavyJobs` (worker processes, bounded
queue, cache, per-client rate limit); the action list and the seed list are capped by the request
schemas, and replayed actions must pass the same schema as a live step.
"""

from __future__ import annotations

import hmac
import json
import statistics
from typing import Annotated, Any

from fastapi import Body, FastAPI, HTTPException, Request
from starlette.concurrency import run_in_threadpool

from codered_env.city_choice import DEFAULT_CITY
from codered_env.server.config import ServerSettings
from codered_env.server.environment import DEFAULT_SEED, DEFAULT_TASK_ID
from codered_env.server.heavy import builtin_episode, builtin_scores, graded_actions, reference_outcomes
from codered_env.server.http_sessions import HttpSessionStore
from codered_env.server.jobs import HeavyJobs
from codered_env.server.limits import client_address
from codered_env.server.schemas import BaselineBody, GraderBody
from codered_env.sim import TASKS
from codered_env.sim.actions import PHASE_OF, action_json_schemas

TAGS = ["Benchmark"]
BODY_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "The body is not strict JSON (NaN, Infinity, lone surrogates, ...)."},
    413: {"description": "Request body over the size limit."},
    422: {"description": "The body does not match the schema."},
    429: {"description": "Too many uncached agent runs from this client."},
    503: {"description": "Every agent worker is busy and the queue is full."},
}
LLM_DISABLED = (
    "the LLM baseline is disabled on this server: start it with CODERED_ENABLE_LLM_BASELINE=1, "
    "CODERED_BASELINE_TOKEN and an API key (HF_TOKEN, API_KEY or OPENAI_API_KEY) in its "
    "environment; optionally API_BASE_URL and MODEL_NAME"
)


def client_of(request: Request) -> str:
    """The client address rate limits and quotas count by (``limits.client_address``)."""
    settings: ServerSettings | None = getattr(request.app.state, "settings", None)
    proxies = settings.trusted_proxies if settings is not None else ()
    peer = request.client.host if request.client else None
    return client_address(peer, request.headers.get("x-forwarded-for"), proxies)


def task_listing() -> dict[str, Any]:
    """The five tasks and the JSON schema of every action type."""
    tasks = []
    for spec in TASKS.values():
        entry = spec.as_dict()
        entry["action_types"] = [name for name, phase in PHASE_OF.items() if phase in (None, spec.phase)]
        tasks.append(entry)
    return {"tasks": tasks, "action_schemas": action_json_schemas()}


class ModelFailed(Exception):
    """The LLM did not answer (unreachable, auth refused, budget, ...)."""


def _model_failure(agent: Any) -> str | None:
    reason = getattr(agent, "disabled_reason", None)
    if reason:
        return str(reason)
    stats = getattr(agent, "stats", None)
    if stats is not None and getattr(stats, "unanswered", 0) > 0:
        return f"{stats.unanswered} step(s) without a model answer"
    return None


def _llm_episodes(tasks: list[str], seeds: list[int]) -> dict[str, list[float]]:
    from codered_env.agents.llm import LLMAgent, LLMConfig
    from codered_env.runner import run_episode

    config = LLMConfig.from_env()
    if config is None:
        raise HTTPException(403, LLM_DISABLED)
    scores: dict[str, list[float]] = {}
    for task in tasks:
        for seed in seeds:
            agent = LLMAgent(config)
            score = float(run_episode(task, seed, agent).score)
            failure = _model_failure(agent)
            if failure is not None:
                raise ModelFailed(f"{task} seed {seed}: {failure}"[:300])
            scores.setdefault(task, []).append(score)
    return scores


def _check_llm_allowed(settings: ServerSettings, request: Request) -> None:
    if not settings.enable_llm_baseline or settings.baseline_token is None:
        raise HTTPException(403, LLM_DISABLED)
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(
        token.strip().encode(), settings.baseline_token.encode()
    ):
        raise HTTPException(
            401,
            "the LLM baseline needs 'Authorization: Bearer <CODERED_BASELINE_TOKEN>'",
            {"WWW-Authenticate": "Bearer"},
        )
    try:
        from codered_env.agents.llm import api_key_from_env
    except ImportError as exc:
        raise HTTPException(501, "the LLM agent is not available in this build") from exc
    if api_key_from_env() is None:
        raise HTTPException(403, LLM_DISABLED)


def register_benchmark_routes(
    app: FastAPI, settings: ServerSettings, store: HttpSessionStore[Any]
) -> HeavyJobs:
    """Add /tasks, /grader and /baseline to ``app``; returns the shared agent-run pool."""
    jobs = HeavyJobs(
        settings.heavy_jobs,
        settings.heavy_queue,
        settings.heavy_wait_s,
        settings.heavy_per_minute,
        settings.console_per_minute,
    )
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
            404: {"description": "An episode_id this server never issued."},
            410: {"description": "The episode expired or was evicted."},
        },
    )
    async def grader(request: Request, body: Annotated[GraderBody | None, Body()] = None) -> dict[str, Any]:
        """Three modes: ``actions`` replays them from the start of (task_id, seed) and grades
        the result; ``episode_id`` grades that HTTP episode so far (reading does not renew
        it; a WebSocket session grades its own episode with a ``grade`` frame); neither runs
        the built-in ``agent`` (default heuristic) on (task_id, seed), in ``city`` (default
        Prakashnagar; a generated city's answer names it). Every answer carries the
        episode's clinical ``outcomes`` (weighted expected good outcome, expected deaths
        per 100 patients; never part of the score) and ``reference_outcomes``: the same for
        noop and the heuristic on that task and seed."""
        body = body or GraderBody()
        if body.episode_id is not None:
            env = store.get(body.episode_id).env
            grade = await run_in_threadpool(env.grade)
            answer = {"source": "episode", "episode_id": body.episode_id, **grade}
            city = env.city
        else:
            task_id = body.task_id or DEFAULT_TASK_ID
            seed = DEFAULT_SEED if body.seed is None else body.seed
            city = body.city or DEFAULT_CITY
            if body.actions is not None:
                actions = json.dumps([action.to_wire() for action in body.actions], separators=(",", ":"))
                grade = await jobs.run(client_of(request), graded_actions, task_id, seed, actions, city)
                answer = {"source": "actions", **grade}
            else:
                agent = body.agent or "heuristic"
                result = await jobs.run(client_of(request), builtin_episode, agent, task_id, seed, city)
                answer = {"source": "agent", "agent": agent, **result}
        if city != DEFAULT_CITY:
            answer["city"] = city
        references = await jobs.run_free(reference_outcomes, answer["task_id"], answer["seed"], city)
        return {**answer, "reference_outcomes": references}

    @app.post(
        "/baseline",
        tags=TAGS,
        summary="Mean score of a built-in agent on every task",
        responses={
            **BODY_ERRORS,
            401: {"description": "LLM baseline without the right bearer token."},
            403: {"description": "LLM baseline not enabled on this server."},
            501: {"description": "LLM agent not available in this build."},
            502: {"description": "The LLM did not answer."},
        },
    )
    async def baseline(
        request: Request, body: Annotated[BaselineBody | None, Body()] = None
    ) -> dict[str, Any]:
        """Run ``agent`` (heuristic, random, noop; llm only when the server enables it and the
        request carries its token) on ``seeds`` (default 0, 1, 2) of every task and return the
        mean score per task."""
        body = body or BaselineBody()
        task_ids = tuple(dict.fromkeys(body.tasks or list(TASKS)))
        seeds = tuple(dict.fromkeys(body.seeds))
        if body.agent == "llm":
            _check_llm_allowed(settings, request)
            try:
                per_seed = await jobs.run_in_thread(
                    client_of(request), _llm_episodes, list(task_ids), list(seeds)
                )
            except ModelFailed as exc:
                raise HTTPException(
                    502, f"the LLM baseline failed: the model did not answer ({exc})"
                ) from exc
        else:
            per_seed = await jobs.run(client_of(request), builtin_scores, body.agent, task_ids, seeds)
        scores = {task: round(statistics.fmean(values), 4) for task, values in per_seed.items()}
        return {
            "agent": body.agent,
            "seeds": list(seeds),
            "scores": scores,
            "per_seed": per_seed,
            "mean_score": round(statistics.fmean(scores.values()), 4),
        }

    return jobs
