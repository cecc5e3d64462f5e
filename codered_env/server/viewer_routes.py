"""``GET /view``: the self-contained HTML replay of a built-in agent's episode, so a visitor of
the Space (or anyone with a browser) can watch the city under load without installing anything.
The episode runs through the bounded agent-run pool and is cached by (task, seed, agent).

The page is self-contained (inline style and script), so its Content Security Policy allows
exactly those two blocks by hash and nothing else.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Annotated, Literal

from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse

from codered_env import viewer
from codered_env.server.benchmark_routes import client_of
from codered_env.server.heavy import replay_page
from codered_env.server.jobs import HeavyJobs
from codered_env.sim import TASKS

TaskId = Literal["task1", "task2", "task3", "task4", "task5"]
BuiltinAgent = Literal["heuristic", "random", "noop"]
assert set(TaskId.__args__) == set(TASKS)  # type: ignore[attr-defined]


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


REPLAY_CSP = (
    f"default-src 'none'; script-src {_sha256(viewer._JS)}; style-src {_sha256(viewer._CSS)}; "
    "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'self'"
)


def register_viewer_routes(app: FastAPI, jobs: HeavyJobs) -> None:
    @app.get(
        "/view",
        tags=["Viewer"],
        summary="HTML replay of a built-in agent's episode",
        response_class=HTMLResponse,
        responses={
            422: {"description": "Unknown task or agent, or a seed out of range."},
            429: {"description": "Too many uncached agent runs from this client."},
            503: {"description": "Every agent worker is busy and the queue is full."},
        },
    )
    async def view(
        request: Request,
        task_id: Annotated[TaskId, Query()] = "task5",
        seed: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
        agent: Annotated[BuiltinAgent, Query()] = "heuristic",
    ) -> HTMLResponse:
        """Play (task_id, seed) with a built-in agent and return the replay page."""
        page = await jobs.run(client_of(request), replay_page, task_id, seed, agent)
        return HTMLResponse(page, headers={"Content-Security-Policy": REPLAY_CSP})
