"""The CPU-heavy work behind /grader (agent mode), /baseline and the console's /web routes.

These functions run in the server's worker processes (``jobs.HeavyJobs``), never on the event
loop's process, so an agent run or a replay cannot starve WebSocket sessions of the GIL. They import only
the simulation, the built-in agents and the viewer. Their arguments are hashable (the pool
caches by them: action lists travel as canonical JSON text), and the console's answers come
back as JSON text, so a cached replay costs its size in bytes, not a tree of Python objects.
"""

from __future__ import annotations

import contextlib
import json
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


WORKER_NICENESS = 15  # replays and agent runs yield the CPU to the sessions when busy (design choice)


def worker_init() -> None:
    """In a forked worker: forget the server's signal handlers and event-loop wakeup fd, run
    at a lower priority than the server, and exit as soon as the server process is gone."""
    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICENESS)
    parent = os.getppid()
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()


@lru_cache(maxsize=512)
def _builtin_episode(agent_name: str, task_id: str, seed: int,
                     city: str = "prakashnagar") -> tuple[dict[str, Any], list[Any]]:
    from codered_env.agents import make_agent
    from codered_env.runner import run_episode

    result = run_episode(task_id, seed, make_agent(agent_name, seed=seed), city=city)
    return result.grade, list(result.actions)


def builtin_episode(agent_name: str, task_id: str, seed: int, city: str = "prakashnagar") -> dict[str, Any]:
    """Grade (and actions) of a built-in agent's episode; deterministic, hence cached."""
    grade, actions = _builtin_episode(agent_name, task_id, seed, city)
    return {**grade, "actions": actions}


def reference_outcomes(task_id: str, seed: int, city: str = "prakashnagar") -> dict[str, Any]:
    """Clinical outcomes (``grade["outcomes"]``) of noop and the heuristic on (task, seed) in
    ``city``: the references ``/grader`` shows beside any graded episode. Cached like the episodes."""
    return {agent: _builtin_episode(agent, task_id, seed, city)[0]["outcomes"]
            for agent in ("noop", "heuristic")}


def builtin_scores(agent: str, tasks: tuple[str, ...], seeds: tuple[int, ...]) -> dict[str, list[float]]:
    return {
        task: [float(_builtin_episode(agent, task, seed)[0]["score"]) for seed in seeds] for task in tasks
    }


def graded_actions(task_id: str, seed: int, actions_json: str, city: str = "prakashnagar") -> dict[str, Any]:
    """``/grader`` replay mode: the grade of an action list played from the reset in ``city``."""
    from codered_env.evaluation.trajectory import regrade

    return dict(regrade(task_id, seed, city, json.loads(actions_json)))


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def web_advice(task_id: str, seed: int, actions_json: str, agent: str, city: str = "prakashnagar") -> str:
    """``/web/advice``: running grade after the actions and ``agent``'s next action (JSON)."""
    from codered_env.web.advice import advice

    return _json(advice(task_id, seed, json.loads(actions_json), agent, city))


def web_frames(task_id: str, seed: int, actions_json: str, city: str = "prakashnagar") -> str:
    """``/web/frames``: replay frames of an action list (JSON)."""
    from codered_env.web.advice import replay_frames

    return _json({"frames": replay_frames(task_id, seed, json.loads(actions_json), city)})


def web_episode(task_id: str, seed: int, agent: str, city: str = "prakashnagar") -> str:
    """``/web/episode``: replay frames of a built-in agent's episode (JSON)."""
    from codered_env.viewer import record_frames

    return _json({"frames": record_frames(task_id, seed, agent, city), "agent": agent})


def warm_up() -> bool:
    """Imports the simulation and agents in a fresh worker (first requests are then fast)."""
    import codered_env.agents
    import codered_env.runner
    import codered_env.viewer
    import codered_env.web.advice  # noqa: F401

    return True
