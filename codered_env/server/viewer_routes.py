"""``GET /view``: the self-contained HTML replay of a built-in agent's episode, so a visitor of
the Space (or anyone with a browser) can watch the city under load without installing anything.
The episode runs through the same bounded job pool as the other agent runs."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import FastAPI, Query
from fastapi.responses import HTMLResponse

from codered_env.server.benchmark_routes import HeavyJobs
from codered_env.sim import TASKS
from codered_env.viewer import record_frames, render_html

TaskId = Literal["task1", "task2", "task3", "task4", "task5"]
BuiltinAgent = Literal["heuristic", "random", "noop"]
assert set(TaskId.__args__) == set(TASKS)  # type: ignore[attr-defined]


def replay_page(task_id: str, seed: int, agent: str) -> str:
    frames = record_frames(task_id, seed, agent)
    return render_html(frames, f"{TASKS[task_id].name}: {task_id}, seed {seed}, {agent} agent")


def register_viewer_routes(app: FastAPI, jobs: HeavyJobs) -> None:
    @app.get(
        "/view",
        tags=["Viewer"],
        summary="HTML replay of a built-in agent's episode",
        response_class=HTMLResponse,
        responses={
            422: {"description": "Unknown task or agent, or a seed out of range."},
            503: {"description": "Too many agent runs at once."},
        },
    )
    async def view(
        task_id: Annotated[TaskId, Query()] = "task5",
        seed: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
        agent: Annotated[BuiltinAgent, Query()] = "heuristic",
    ) -> HTMLResponse:
        """Play (task_id, seed) with a built-in agent and return the replay page."""
        return HTMLResponse(await jobs.run(replay_page, task_id, seed, agent))
