"""The OpenEnv ``Environment`` over the CodeRedEnv simulation.

One instance is one session: OpenEnv builds one per WebSocket connection (and the stateful
HTTP routes keep one per HTTP episode). Every method takes the instance lock, so the
``/grader`` route may read an HTTP episode while another request is stepping it.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata
from openenv.core.rubrics.base import Rubric

from codered_env.city_choice import DEFAULT_CITY, city_key
from codered_env.models import CodeRedAction, CodeRedObservation, CodeRedState, WireObservation
from codered_env.server.rubric_tree import CodeRedRubric
from codered_env.server.task_api import TaskProviderMixin, get_task
from codered_env.sim import TASK_IDS, CodeRedSim, render_text
from codered_env.sim.actions import parse_action
from codered_env.sim.derived import Derived

ENV_NAME = "codered_env"
DEFAULT_TASK_ID = "task1"
DEFAULT_SEED = 0
MAX_SEED = 2**32 - 1
MAX_EPISODE_ID_CHARS = 255
DESCRIPTION = (
    "CodeRedEnv: an RL benchmark of emergency medical coordination in a fictional Indian city. "
    "The agent is the dispatcher and hospital coordinator: it sends ambulances, triages calls, "
    "chooses hospitals, readies operating rooms and specialists, and moves blood, under road "
    "closures, diversions and cascades. Five tasks (beginner to expert); every step reward is "
    "the change of a running score in [0, 1] whose breakdown is published by /grader."
)


@dataclass
class _Episode:
    """Per-episode counters (plain attributes: cheaper than a validating model per step)."""

    episode_id: str | None = None
    task_id: str | None = None
    seed: int | None = None
    city: str = DEFAULT_CITY
    step_count: int = 0
    total_reward: float = 0.0
    invalid_actions: int = 0
    last_reward: float = 0.0
    last_error: str | None = None
    last_action: Any = None

    def record(self, reward: float, error: str | None, action: Any) -> None:
        self.step_count += 1
        self.total_reward += reward
        self.invalid_actions += error is not None
        self.last_reward, self.last_error, self.last_action = reward, error, action

    def state(self, sim: CodeRedSim | None) -> CodeRedState:
        return CodeRedState(
            episode_id=self.episode_id,
            step_count=self.step_count,
            task_id=self.task_id,
            seed=self.seed,
            city=self.city,
            clock_min=int(sim.clock) if sim else 0,
            max_steps=int(sim.max_steps) if sim else 0,
            score=float(sim.score_preview) if sim else 0.0,
            total_reward=round(self.total_reward, 6),
            invalid_actions=self.invalid_actions,
            done=bool(sim.done) if sim else False,
        )


class SessionClosedError(RuntimeError):
    """The session was closed (expired, evicted, closed by its owner or at shutdown) and
    cannot be used again; the message says which."""


Recorder = Callable[[dict[str, Any]], None]


def wire_form(raw: Any) -> Any:
    """A wire action as the journal keeps it: ``units`` of 2.0 is 2 (JSON Schema's integers)."""
    if isinstance(raw, dict):
        units = raw.get("units")
        if isinstance(units, float) and units.is_integer():
            return {**raw, "units": int(units)}
    return raw


def validate_action(raw: Any) -> tuple[Any | None, str | None]:
    """The simulation's own check of a wire action (in :func:`wire_form`), once: ``(parsed
    action, None)`` or ``(None, why it is not a valid action)``. The parsed action goes to the
    simulation as is."""
    return parse_action(wire_form(raw))


def _check_reset_args(seed: Any, episode_id: Any, task_id: Any, extra: Mapping[str, Any]) -> None:
    if extra:
        raise ValueError(
            f"unknown reset option(s): {', '.join(sorted(map(str, extra)))}; "
            "accepted: task_id, seed, city, episode_id (or split, index)"
        )
    if task_id not in TASK_IDS:
        raise ValueError(f"unknown task_id {task_id!r}; valid task ids: {', '.join(TASK_IDS)}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed must be an integer in [0, {MAX_SEED}], got {seed!r}")
    if episode_id is not None and (
        not isinstance(episode_id, str) or not 1 <= len(episode_id) <= MAX_EPISODE_ID_CHARS
    ):
        raise ValueError(f"episode_id must be a string of 1..{MAX_EPISODE_ID_CHARS} characters")


def _from_split(
    task_id: str | None, seed: int | None, extra: Mapping[str, Any]
) -> tuple[str, int, dict[str, Any]]:
    """task_id and seed of ``extra["split"]``/``["index"]``, and the options left over."""
    if task_id is not None or seed is not None:
        raise ValueError("give either task_id/seed or split/index, not both")
    rest = {k: v for k, v in extra.items() if k not in ("split", "index")}
    try:
        spec = get_task(extra.get("split", "train"), extra.get("index", 0))
    except IndexError as exc:
        raise ValueError(str(exc)) from None
    return spec["task_id"], spec["seed"], rest


class CodeRedEnvironment(TaskProviderMixin, Environment[CodeRedAction, CodeRedObservation, CodeRedState]):
    """CodeRedEnv as an OpenEnv environment (concurrent sessions are independent), with OpenEnv's
    Task API (task_api.py: ``reset(split="eval", index=3)``)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        self._rubric: Rubric | None = None
        super().__init__()
        self._lock = threading.RLock()
        self._sim: CodeRedSim | None = None
        self._episode = _Episode()
        self._derived = Derived()  # the episode's text lines of reused parts (sim/derived.py)
        self._closed: str | None = None
        # Called with every reset and step (journal.py persists them); None: not recorded.
        self.recorder: Recorder | None = None

    # ------------------------------------------------------------------ OpenEnv API

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | None = None,
        **kwargs: Any,
    ) -> CodeRedObservation:
        """Start an episode of ``task_id`` (default task1) with ``seed`` (default 0), or task
        ``index`` of ``split`` (OpenEnv's Task API: ``split="train"|"eval"``), in ``city``
        (``"prakashnagar"`` by default, or a city seed: an integer or ``"gen-<seed>"``).

        ``episode_id`` is echoed by ``state``; a fresh UUID is used when it is not given.
        Raises ValueError (a clear message) on an unknown task, seed or city, or an unknown option.
        """
        return self._reset(seed, episode_id, task_id, kwargs, wire=False)

    def step(
        self,
        action: CodeRedAction | Mapping[str, Any],
        timeout_s: float | None = None,
        **kwargs: Any,
    ) -> CodeRedObservation:
        """Apply one action. Semantically invalid actions come back as ``last_action_error``."""
        return self._step(action, wire=False)

    # The WebSocket server awaits these twins. A step costs a fraction of a millisecond of
    # pure-Python work, less than handing it to a worker thread and back (and nothing in it
    # blocks), so it runs inline on the event loop; and it returns a WireObservation, which
    # serialises the simulation's dict as is instead of re-validating it on every step.

    async def reset_async(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | None = None,
        **kwargs: Any,
    ) -> CodeRedObservation:
        return self._reset(seed, episode_id, task_id, kwargs, wire=True)

    async def step_async(
        self,
        action: CodeRedAction | Mapping[str, Any],
        timeout_s: float | None = None,
        **kwargs: Any,
    ) -> CodeRedObservation:
        return self._step(action, wire=True)

    @property
    def state(self) -> CodeRedState:
        with self._lock:
            return self._episode.state(self._sim)

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=ENV_NAME,
            description=DESCRIPTION,
            readme_content=readme_text(),
            version=package_version(),
            author="CodeRedEnv developers",
        )

    def close(self, reason: str | None = None) -> None:
        """End the session; later calls raise :class:`SessionClosedError` with ``reason``
        (a phrase such as "was evicted: ...")."""
        with self._lock:
            self._closed = reason or "was closed"
            self._sim = None

    @property
    def rubric(self) -> Rubric:
        """The RFC 004 tree of this episode's grade (rubric_tree.py), built on first use and
        evaluated on demand (``env.rubric(None, None)``), never per step."""
        if self._rubric is None:
            self._rubric = CodeRedRubric(self.grade)
        return self._rubric

    @rubric.setter
    def rubric(self, value: Rubric | None) -> None:
        self._rubric = value

    # ------------------------------------------------------------------ extras for the app

    @property
    def episode_id(self) -> str | None:
        return self._episode.episode_id

    @property
    def city(self) -> str:
        """The canonical name of the episode's city (``"prakashnagar"`` before any reset)."""
        return self._episode.city

    @property
    def finished(self) -> bool:
        """True when no episode is running (never reset, done, or closed)."""
        with self._lock:
            return self._sim is None or bool(self._sim.done)

    def step_wire(self, action: Any, logged: Mapping[str, Any] | None = None) -> CodeRedObservation:
        """``step_async`` as a plain call (for callers that hold their own lock); ``action``
        may be already parsed by :func:`validate_action`, ``logged`` is then its wire dict."""
        return self._step(action, wire=True, logged=logged)

    @property
    def step_count(self) -> int:
        return self._episode.step_count

    def _step_recorded(self, action: Any, logged: Mapping[str, Any]) -> tuple[Any, Any]:
        """One step of the live episode, recorded with its wire form (caller holds the lock)."""
        sim = self._require_sim()
        result = sim.step(action)
        wire_action = dict(logged)
        self._episode.record(float(result.reward), result.error, wire_action)
        if self.recorder is not None:
            self.recorder({"op": "step", "action": wire_action})
        return sim, result

    def step_summary(self, action: Any, logged: Mapping[str, Any]) -> dict[str, Any]:
        """A step answered without building the observation: reward, done, the step's error, the
        running score and the clock (``/ws?observation=none``)."""
        with self._lock:
            sim, result = self._step_recorded(action, logged)
            return {
                "observation": {
                    "last_action_error": result.error,
                    "score_preview": float(sim.score_preview),
                    "clock_min": int(sim.clock),
                },
                "reward": float(result.reward),
                "done": bool(result.done),
            }

    def step_reply(self, action: Any, logged: Mapping[str, Any], text: bool = True) -> dict[str, Any]:
        """``step_wire``'s result as the JSON-ready dict OpenEnv's ``serialize_observation``
        would make of it (``observation``, ``reward``, ``done``), built straight from the
        simulation's observation view: no observation model is made or dumped. For immediate
        encoding only: its rows are shared with the episode's memo and must not be changed."""
        with self._lock:
            sim, result = self._step_recorded(action, logged)
            data = plain_observation(sim.observation_view())
            data["last_action_error"] = result.error
            rendered = render_text(data, self._derived) if text else ""
            done = bool(data.pop("done"))
            data["text"] = rendered
            data["metadata"] = {}
            return {"observation": data, "reward": float(result.reward), "done": done}

    def last_step_matches(self, action: Mapping[str, Any]) -> bool:
        """Whether ``action`` is the episode's last step (a retried request after a restart)."""
        with self._lock:
            return self._episode.step_count > 0 and self._episode.last_action == dict(action)

    def last_step_observation(self) -> CodeRedObservation:
        """The observation the last step returned (same reward and error), without stepping:
        the answer to a step retried after its reply was lost."""
        with self._lock:
            episode = self._episode
            return self._observe(reward=episode.last_reward, error=episode.last_error, wire=True)

    def replay(self, events: Iterable[Mapping[str, Any]]) -> None:
        """Re-play a recorded log (``{"op": "reset", ...}`` and ``{"op": "step", "action"}``
        events) without building observations: the episode ends exactly where it was."""
        with self._lock:
            self._ensure_open()
            for event in events:
                if event["op"] == "reset":
                    city = event.get("city", DEFAULT_CITY)
                    self._sim = CodeRedSim(task_id=event["task_id"], seed=event["seed"], city=city)
                    self._episode = _Episode(event["episode_id"], event["task_id"], event["seed"], city)
                elif event["op"] == "step":
                    action = event["action"]
                    result = self._require_sim().step(action)
                    self._episode.record(float(result.reward), result.error, action)

    def current_observation(self) -> CodeRedObservation:
        """The observation now, without a step (reward None; no error shown)."""
        with self._lock:
            return self._observe(reward=None, error=None, wire=True)

    def grade(self) -> dict[str, Any]:
        """The grade of the episode so far (the final grade once it is done)."""
        with self._lock:
            return self._require_sim().grade()

    # ------------------------------------------------------------------ internals

    def _reset(
        self,
        seed: int | None,
        episode_id: str | None,
        task_id: str | None,
        extra: Mapping[str, Any],
        wire: bool,
    ) -> CodeRedObservation:
        if "split" in extra or "index" in extra:
            task_id, seed, extra = _from_split(task_id, seed, extra)
        seed = DEFAULT_SEED if seed is None else seed
        task_id = DEFAULT_TASK_ID if task_id is None else task_id
        extra = dict(extra)
        city = city_key(extra.pop("city", None))
        _check_reset_args(seed, episode_id, task_id, extra)
        with self._lock:
            self._ensure_open()
            self._sim = CodeRedSim(task_id=task_id, seed=seed, city=city)
            self._episode = _Episode(episode_id or str(uuid.uuid4()), task_id, seed, city)
            self._derived = Derived()
            if self.recorder is not None:
                event = {"op": "reset", "task_id": task_id, "seed": seed,
                         "episode_id": self._episode.episode_id}
                if city != DEFAULT_CITY:
                    event["city"] = city
                self.recorder(event)
            return self._observe(reward=None, error=None, wire=wire)

    def _step(self, action: Any, wire: bool, logged: Mapping[str, Any] | None = None) -> CodeRedObservation:
        raw = action.to_wire() if isinstance(action, CodeRedAction) else action
        with self._lock:
            sim = self._require_sim()
            result = sim.step(raw)
            wire_action = dict(logged) if logged is not None else _loggable(raw)
            self._episode.record(float(result.reward), result.error, wire_action)
            if self.recorder is not None:
                self.recorder({"op": "step", "action": wire_action})
            return self._observe(reward=float(result.reward), error=result.error, wire=wire)

    def _ensure_open(self) -> None:
        if self._closed is not None:
            raise SessionClosedError(f"this session {self._closed}; start a new one")

    def _require_sim(self) -> CodeRedSim:
        self._ensure_open()
        if self._sim is None:
            raise RuntimeError("no episode: send reset before step")
        return self._sim

    def _observe(self, reward: float | None, error: str | None, wire: bool) -> CodeRedObservation:
        sim = self._require_sim()
        data = sim.observation()
        data["last_action_error"] = error
        build = WireObservation.from_sim if wire else CodeRedObservation.from_sim
        return build(data, render_text(data, self._derived), reward=reward)


def plain_observation(view: Mapping[str, Any]) -> dict[str, Any]:
    """An observation view read whole, as the plain dict ``CodeRedSim.observation()`` returns
    (its legal actions are a mapping built on demand; the whole of it is one plain dict)."""
    data = {key: view[key] for key in view}
    legal = data.get("legal_actions")
    if legal is not None and not isinstance(legal, dict):
        data["legal_actions"] = legal.whole()
    return data


def _loggable(raw: Any) -> Any:
    """A step's action as JSON data (what the journal stores and a replay feeds back)."""
    if isinstance(raw, Mapping):
        return dict(raw)
    dump = getattr(raw, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else raw


@lru_cache(maxsize=1)
def readme_text() -> str | None:
    """The project README (from the source tree, else from the installed package metadata)."""
    path = Path(__file__).resolve().parents[2] / "README.md"
    if path.is_file():
        return path.read_text(encoding="utf-8")
    try:
        return importlib_metadata.metadata("openenv-codered").get_payload() or None  # type: ignore[attr-defined]
    except importlib_metadata.PackageNotFoundError:
        return None


@lru_cache(maxsize=1)
def package_version() -> str:
    try:
        return importlib_metadata.version("openenv-codered")
    except importlib_metadata.PackageNotFoundError:
        return "0.0.0"
