"""``GET /agents``: the agent roster (``codered_env.agents.roster.AGENTS``) as served data.

The server's own agent parameters (``/grader``, ``/view``, ``/web/*``) accept exactly the agents
marked ``served`` here, and the browser console's menus list the same ones."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from codered_env.agents.roster import AGENTS, DEFAULT_AGENT, SERVED_AGENTS


def agent_listing() -> dict[str, Any]:
    return {"agents": [spec.as_dict() for spec in AGENTS], "served": list(SERVED_AGENTS),
            "default": DEFAULT_AGENT}


def register_agent_routes(app: FastAPI) -> None:
    @app.get("/agents", tags=["Environment Info"], summary="Every agent, and which ones this server runs")
    async def agents() -> dict[str, Any]:
        return agent_listing()
