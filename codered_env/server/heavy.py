"""The CPU-heavy work behind /grader (agent mode), /baseline and /view.

These functions run in the server's worker processes (``jobs.HeavyJobs``), never on the event
loop's process, so an agent run cannot starve WebSocket sessions of the GIL. They import only
the simulation, the built-in agents and the viewer.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from functools import lru_cache
from typing import Any


def _exit_with_parent(parent: int) -> None:
    # A forked worker inherits both ends of its task pipe, so it never sees EOF when the
    # server dies; without this it would linger (holding the listening socket) forever.
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def worker_init() -> None:
    """In a forked worker: forget the server's signal handlers and event-loop wakeup fd, and
    exit as soon as the server process is gone."""
    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
    parent = os.getppid()
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()


@lru_cache(maxsize=512)
def _builtin_episode(agent_name: str, task_id: str, seed: int) -> tuple[dict[str, Any], list[Any]]:
    from codered_env.agents import make_agent
    from codered_env.runner import run_episode

    result = run_episode(task_id, seed, make_agent(agent_name, seed=seed))
    return result.grade, list(result.actions)


def builtin_episode(agent_name: str, task_id: str, seed: int) -> dict[str, Any]:
    """Grade (and actions) of a built-in agent's episode; deterministic, hence cached."""
    grade, actions = _builtin_episode(agent_name, task_id, seed)
    return {**grade, "actions": actions}


def builtin_scores(agent: str, tasks: tuple[str, ...], seeds: tuple[int, ...]) -> dict[str, list[float]]:
    return {
        task: [float(_builtin_episode(agent, task, seed)[0]["score"]) for seed in seeds] for task in tasks
    }


def replay_page(task_id: str, seed: int, agent: str) -> str:
    from codered_env.sim import TASKS
    from codered_env.viewer import record_frames, render_html

    frames = record_frames(task_id, seed, agent)
    return render_html(frames, f"{TASKS[task_id].name}: {task_id}, seed {seed}, {agent} agent")


def warm_up() -> bool:
    """Imports the simulation and agents in a fresh worker (first requests are then fast)."""
    import codered_env.agents
    import codered_env.runner  # noqa: F401

    return True
