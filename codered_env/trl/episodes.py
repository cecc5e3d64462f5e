"""Where a ``CodeRedToolEnv`` episode runs: in this process (``LocalEpisode`` over ``CodeRedSim``) or
on a CodeRedEnv server (``RemoteEpisode`` over the OpenEnv WebSocket client, ``codered_env.client``).

Both give the same view after every decision: a ``View`` with the observation fields the tool replies
use and the state text. The server's text is ``render_text`` of the same observation the simulation
renders in-process, so the replies agree byte for byte (tests/training/test_trl_remote.py).
"""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass
from typing import Any, Protocol

from ..sim import CodeRedSim, parse_action
from ..sim.catalogue import MAINTAIN_PLAN
from ..sim.types import FINAL_PATIENT_STATES


@dataclass(frozen=True)
class View:
    """What a tool reply is built from, after a reset or a decision."""

    clock_min: int
    horizon_min: int
    step: int
    max_steps: int
    score_preview: float
    done: bool
    events: tuple[str, ...]
    text: str
    patients_open: bool  # a known patient not yet in a final state, or an open call
    observation: dict[str, Any]  # the observation dict the text renders (its keyed lines)

    @classmethod
    def of(cls, obs: dict[str, Any], text: str) -> View:
        return cls(
            clock_min=obs["clock_min"], horizon_min=obs["horizon_min"], step=obs["step"],
            max_steps=obs["max_steps"], score_preview=float(obs["score_preview"]), done=bool(obs["done"]),
            events=tuple(obs["events"]), text=text, patients_open=_anything_open(obs), observation=obs,
        )


def _anything_open(obs: dict[str, Any]) -> bool:
    if any(c.get("status") in ("pending", "dispatched") for c in obs.get("calls", [])):
        return True
    return any(p.get("status") not in FINAL_PATIENT_STATES for p in obs.get("patients", []))


@dataclass(frozen=True)
class Outcome:
    reward: float
    error: str | None
    view: View


class Episode(Protocol):
    task_id: str
    view: View

    def step(self, action: dict[str, Any]) -> Outcome: ...
    def finish(self) -> float: ...
    def end_reason(self) -> str: ...
    def close(self) -> None: ...


class LocalEpisode:
    """The episode in this process, in ``city`` (a canonical city name)."""

    def __init__(self, task_id: str, seed: int, city: str = "prakashnagar") -> None:
        self.task_id = task_id
        self.sim = CodeRedSim(task_id, seed, city=city)
        self.view = self._view()

    def _view(self) -> View:
        return View.of(self.sim.observation(), self.sim.render_text())

    def step(self, action: dict[str, Any]) -> Outcome:
        result = self.sim.step(action)
        self.view = self._view()
        return Outcome(result.reward, result.error, self.view)

    def finish(self) -> float:
        """The final grade; an unfinished episode first plays on without decisions."""
        self.sim.finish()
        return float(self.sim.grade()["score"])

    def end_reason(self) -> str:
        return str(self.sim.end_reason)

    def close(self) -> None:
        return None


def _close_client(client: Any) -> None:
    with contextlib.suppress(Exception):  # the server may already be gone; nothing is left to release
        client.close()


class RemoteEpisode:
    """The episode on a CodeRedEnv server: one WebSocket session, opened at reset and closed by
    ``close()``, at garbage collection or at interpreter exit (``weakref.finalize``)."""

    def __init__(self, base_url: str, task_id: str, seed: int, timeout_s: float = 60.0,
                 city: str = "prakashnagar") -> None:
        from ..client import CodeRedEnv

        self.task_id, self.seed, self.city = task_id, seed, city
        self.client = CodeRedEnv(base_url=base_url, message_timeout_s=timeout_s).sync()
        self._finalizer = weakref.finalize(self, _close_client, self.client)
        self.actions: list[dict[str, Any]] = []
        self.view = self._reset()

    def _reset(self) -> View:
        options: dict[str, Any] = {"task_id": self.task_id, "seed": self.seed}
        if self.city != "prakashnagar":
            options["city"] = self.city
        result = self.client.reset(**options)
        return self._view_of(result.observation)

    @staticmethod
    def _view_of(observation: Any) -> View:
        return View.of(observation.model_dump(), observation.text)

    def step(self, action: dict[str, Any]) -> Outcome:
        _, error = parse_action(action)
        if error is not None:
            # The server's protocol refuses a malformed action outright (no step is played), so it is
            # refused here with the simulation's own message; no minute passes.
            return Outcome(0.0, error, self.view)
        try:
            result = self.client.step(action)
        except (ConnectionError, RuntimeError, OSError):
            # The session was lost (idle timeout, server restart): replay the episode on a new one.
            # The simulation is deterministic, so the replay reaches the same state.
            result = self._replay_then_step(action)
        self.actions.append(action)
        self.view = self._view_of(result.observation)
        return Outcome(float(result.reward or 0.0), result.observation.last_action_error, self.view)

    def _replay_then_step(self, action: dict[str, Any]) -> Any:
        _close_client(self.client)
        self._reset()
        for earlier in self.actions:
            self.client.step(earlier)
        return self.client.step(action)

    def finish(self) -> float:
        """The final grade; an unfinished episode first plays on without decisions (waits until the
        server ends it: the world evolves exactly as ``CodeRedSim.finish`` lets it)."""
        while not self.view.done:
            self.step(dict(MAINTAIN_PLAN))
        return self.view.score_preview

    def end_reason(self) -> str:
        """Why the episode ended, from what the observation shows (the server does not send the
        simulation's ``end_reason``): nothing open -> resolved, else the horizon or the budget."""
        view = self.view
        if not view.patients_open:
            return "resolved"
        if view.clock_min >= view.horizon_min:
            return "horizon"
        return "step_budget"

    def close(self) -> None:
        self._finalizer()
