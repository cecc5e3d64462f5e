"""A trivial OpenEnv environment (a counter), the latency baseline for bench_ws.py.

It is served exactly like CodeRedEnv (``create_app``, same concurrency settings, uvicorn
with the same WebSocket frame limit), so the difference between the two measures the cost
of the CodeRedEnv simulation and its observation, not the transport.

Run: ``python bench/trivial_env.py --host 127.0.0.1 --port 8100``.
"""

from __future__ import annotations

import argparse
import os
import uuid

import uvicorn
from openenv.core.env_server import Action, Environment, Observation, State, create_app
from openenv.core.env_server.types import ConcurrencyConfig


class CounterAction(Action):
    increment: int = 1


class CounterObservation(Observation):
    count: int = 0


class CounterEnvironment(Environment[CounterAction, CounterObservation, State]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=None, step_count=0)
        self._count = 0

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: object
    ) -> CounterObservation:
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        self._count = 0
        return CounterObservation(count=0, reward=0.0, done=False)

    def step(
        self, action: CounterAction, timeout_s: float | None = None, **kwargs: object
    ) -> CounterObservation:
        self._state.step_count += 1
        self._count += action.increment
        return CounterObservation(count=self._count, reward=0.0, done=False)

    @property
    def state(self) -> State:
        return self._state


app = create_app(
    CounterEnvironment,
    CounterAction,
    CounterObservation,
    env_name="trivial_counter",
    concurrency_config=ConcurrencyConfig(
        max_concurrent_envs=int(os.environ.get("MAX_CONCURRENT_ENVS", "64")),
        session_timeout=300.0,
    ),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100)
    args = parser.parse_args()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", ws_max_size=1 << 20)


if __name__ == "__main__":
    main()
