"""``GET /view``: watch a built-in agent's episode. It is a mode of the browser console: the
route redirects to ``/web?mode=replay&...``, whose page loads the frames from ``/web/episode``
(one viewer, and no inline script, so a strict Content-Security-Policy holds). ``codered view``
still writes the same console as one self-contained file (``codered_env.viewer``)."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import FastAPI, Query
from fastapi.responses import RedirectResponse

from codered_env.server.schemas import BuiltinAgent, TaskId
from codered_env.sim import TASKS

assert set(TaskId.__args__) == set(TASKS)  # type: ignore[attr-defined]


def register_viewer_routes(app: FastAPI) -> None:
    @app.get(
        "/view",
        tags=["Viewer"],
        summary="Replay of a built-in agent's episode (redirects to the /web console)",
        status_code=307,
        response_class=RedirectResponse,
        responses={
            307: {"description": "Redirect to /web?mode=replay with the same parameters."},
            422: {"description": "Unknown task or agent, or a seed out of range."},
        },
    )
    async def view(
        task_id: Annotated[TaskId, Query()] = "task5",
        seed: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
        agent: Annotated[BuiltinAgent, Query()] = "heuristic",
    ) -> RedirectResponse:
        """Open the console's replay mode on (task_id, seed) played by ``agent``."""
        query = urlencode({"mode": "replay", "task_id": task_id, "seed": seed, "agent": agent})
        return RedirectResponse(f"/web?{query}", status_code=307)
