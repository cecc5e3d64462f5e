"""``CodeRedSim``: one episode of CodeRedEnv, the pure-Python core every adapter wraps.

Observation
    ``observation()`` returns a JSON-serialisable dict (view.py): clock, step budget,
    visible patients (status, node, displayed vitals, ETA, destination, what they wait for),
    ambulances (status, position, ETA), hospitals (OR states, specialists, ICU, blood, crowding,
    diversion), open calls (caller reports only -- never the true condition), roads, alerts,
    events since the last step, mutual aid, the result of a query, the running score preview,
    ``last_action_error`` and the legal actions now. ``render_text()`` renders it compactly for
    LLM prompts (render.py).
Action
    A wire dict ``{"action_type": name, **params}`` for one of the 14 actions in actions.py.
    Anything invalid is answered with ``last_action_error``; the world is unchanged, except that
    the decision minute still passes and the efficiency component counts an invalid action.
Time
    A decision costs 1 simulated minute. ``maintain_plan`` advances minute by minute to the next
    event (arrival, call, disruption, resource ready, vitals band, death...), at most 10 minutes.
    ``StepResult.minutes`` (and the observation's ``minutes``) is what the decision took, so a
    discount meant per minute is ``gamma_minute ** minutes`` per decision.
Reward
    The change of a potential: the running score preview (rubric.py) times the task's pace factor
    at the clock minute (pace.py), the final score once the episode is over; so an episode's
    rewards add up to its final score, which lies in [0.01, 0.99]. The preview charges benefit
    lost minute by minute and values callers no crew has seen by the posterior given their
    reports; the pace factor takes out the fall an expert's preview shows anyway, so the number
    of decisions a policy takes does not buy discounted return. ``sim.rewards = False`` (a rollout
    that reads only the final grade, as the planner's) skips it: each step's reward is 0.0 and
    the preview is computed only when read; the episode is the same.
Termination
    When every patient is in treatment, treated, released or dead and no call is still to come
    (``end_reason`` "resolved"); when the clock reaches the task's horizon ("horizon"); or when the
    step budget is spent ("step_budget", a truncation). In the last case the world plays on
    without new decisions until it resolves or reaches the horizon (plans in motion finish), and
    the final grade is taken then. ``finish()`` ends an episode early the same way ("stopped").
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Mapping
from random import Random
from typing import Any, NamedTuple

from pydantic import BaseModel

from .actions import parse_action
from .city import City
from .citygen import resolve_city
from .fork import fork_rng, fork_world, hidden_future_detached, secondary_pending
from .handlers import apply_action
from .pace import potential
from .params import DECISION_COST_MIN, MAINTAIN_PLAN_CAP_MIN
from .render import render_text
from .rubric import final_score, grade, preview_score
from .tasks import TASK_IDS, TASKS, TaskSpec
from .tick import new_world, tick
from .view import ObservationView, StepContext, build_observation


class StepResult(NamedTuple):
    """What ``CodeRedSim.step`` returns (a named tuple: built at C speed, read by name)."""

    reward: float
    done: bool
    error: str | None
    minutes: int  # simulated minutes the decision took (the play-on to the end included)


def _as_logged(action: object) -> Any:
    """The action as received, in a JSON-friendly form for the trajectory log."""
    if type(action) is dict:
        return dict(action)
    if isinstance(action, BaseModel):
        return action.model_dump(exclude_none=True)
    if isinstance(action, Mapping):
        return dict(action)
    if action is None or isinstance(action, (str, int, float, bool, list)):
        return action
    return repr(action)


class CodeRedSim:
    """One CodeRedEnv episode. See the module docstring for the full contract.

    ``fork(seed)`` returns an independent copy for planning that holds only what the agent could
    know: it keeps the observable state (clock, roads and active disruptions, hospitals, units
    and their announced timers, visible patients, received calls and their reports, the agent's
    own triage, reservations, queries and requests, the episode's ledger) and redraws every
    hidden part from ``seed``: unreached callers' true conditions from
    ``triage.condition_posterior`` (and with them reserve replayed since the call, so possibly
    death, blood type, baseline vitals, stroke onset, telephone CPR, true priority), callbacks
    still to come (``triage.callback_plan``), untyped blood types, page delays, cath-lab preparation
    time, elective cases' remaining minutes, the traffic noise of trips under way, calls and
    casualties not yet announced (fresh draws of the task's generator), disruptions not yet
    started, and the travel and narrative random streams. The exact list is in
    ``codered_env/sim/fork.py`` and docs/MODEL.md. The parent episode is never changed, and the
    same (episode state, seed) always gives the same fork.
    """

    def __init__(
        self, task_id: str = "task1", seed: int = 0, city: str | int | City = "prakashnagar"
    ) -> None:
        """``city``: ``"prakashnagar"`` (the fixed city), a city seed (``citygen.generate_city``)
        or a ``City``."""
        if task_id not in TASKS:
            raise ValueError(f"unknown task_id {task_id!r}; valid: {', '.join(TASK_IDS)}")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        self.task: TaskSpec = TASKS[task_id]
        self.seed = seed
        self.city: City = resolve_city(city)
        self.world = new_world(self.task, seed, self.city)
        self.max_steps = self.task.max_steps
        self.step_count = 0
        self.done = False
        # False: steps skip the step reward (0.0) and the preview is computed only when read (a
        # rollout that reads just the final grade: the preview is most of a step's cost)
        self.rewards = True
        self._preview: float | None = 0.0  # the running score preview now (None: not computed yet)
        self._potential: float | None = 0.0  # what the step reward is the change of
        self.last_error: str | None = None
        self.action_log: list[Any] = []
        self._events: list[str] = list(self.world.events)
        self.world.events = []
        # the final grade: its score taken when the episode ends, its breakdown (per-patient
        # records, clinical outcomes) built when first asked for; the world no longer changes
        self._final_score: float | None = None
        self._final: dict[str, Any] | None = None
        self.end_reason: str | None = None  # resolved | horizon | step_budget | stopped
        self.last_minutes = 0  # simulated minutes the last decision took
        self._view_memo: dict[str, Any] = {}  # observation_view's reusable parts
        self._score_memo: dict[str, Any] = {}  # the preview's reusable terms

    def __getstate__(self) -> dict[str, Any]:
        """A copy (``private_copy``) starts with no reusable observation or score parts."""
        self._final_breakdown()  # a fork redraws the copy's world: the grade is of this one
        return self.__dict__ | self._fresh_parts()

    @property
    def clock(self) -> int:
        return self.world.clock

    # ------------------------------------------------------------------ stepping
    def step(self, action: object) -> StepResult:
        if self.done:
            return StepResult(0.0, True, "the episode is over; reset to start a new one", 0)
        previous = self.potential if self.rewards else None  # read before the world moves
        world = self.world
        clock_before = world.clock
        world.events, world.notable, world.query_result = [], False, None
        self.action_log.append(_as_logged(action))
        parsed, error = parse_action(action)
        if parsed is not None:
            error = apply_action(world, parsed)
        if error is not None:
            world.count("invalid_action")
        waiting = parsed is not None and error is None and parsed.action_type == "maintain_plan"
        self._advance(waiting)
        self.step_count += 1
        self.last_error = error
        reason = self._end_reason()
        if reason is not None:
            self.end_reason = reason
            self._finish()
        self._events = world.events
        self._preview = self._potential = self._final_score
        self.last_minutes = world.clock - clock_before
        reward = 0.0 if previous is None else self.potential - previous
        return StepResult(reward, self.done, error, self.last_minutes)

    @property
    def score_preview(self) -> float:
        """The running score preview (rubric.py) of the world now; the final score once done."""
        if self._preview is None:
            self._preview = preview_score(self.world, self._score_memo)
        return self._preview

    @property
    def potential(self) -> float:
        """What the step reward is the change of: the preview times the pace factor (pace.py)."""
        if self._potential is None:
            self._potential = potential(self.task.task_id, self.world.clock, self.score_preview)
        return self._potential

    def _end_reason(self) -> str | None:
        if self.world.resolved():
            return "resolved"
        if self.world.clock >= self.task.horizon_min:
            return "horizon"
        if self.step_count >= self.max_steps:
            return "step_budget"
        return None

    def _advance(self, waiting: bool) -> None:
        world = self.world
        if not waiting:
            for _ in range(DECISION_COST_MIN):
                tick(world)
            return
        world.notable = False
        for _ in range(MAINTAIN_PLAN_CAP_MIN):
            tick(world)
            if world.notable or world.clock >= self.task.horizon_min:
                return

    def finish(self) -> None:
        """End the episode now: the world plays on without decisions, then the final grade."""
        if not self.done:
            self.end_reason = "stopped"
            self._preview = self._potential = self._finish()
            self._events = self.world.events

    def _finish(self) -> float:
        """Play the world on to its end; the final score."""
        world = self.world
        while not world.resolved() and world.clock < self.task.horizon_min:
            tick(world)
        self.done = True
        self._final_score = score = final_score(world)
        return score

    def _final_breakdown(self) -> dict[str, Any] | None:
        if self.done and self._final is None:
            self._final = grade(self.world, final=True) | {"steps": self.step_count}
        return self._final

    def fork(self, seed: int) -> CodeRedSim:
        """A planning copy with every hidden part redrawn from ``seed`` (see the class docstring)."""
        _check_fork_seed(seed)
        return Snapshot(self, exact=False).fork(seed)

    def private_copy(self) -> CodeRedSim:
        """A deep copy of this episode without the parts a fork redraws anyway (random streams,
        calls still to come): pickling copies every field, including fields added later, and
        keeps shared objects shared; several times faster than ``copy.deepcopy``
        (bench/bench_fork.py). This episode is unchanged afterwards.

        Shared with this episode instead of copied: the task (a frozen record) and the entries
        of the action log (what was sent; nothing changes them once logged): the copy gets a list
        of its own."""
        return Snapshot(self, exact=False).private_copy()

    def snapshot(self) -> Snapshot:
        """This episode's state now, frozen: fork it (``Snapshot.fork``, equal to ``fork`` now) or
        copy it (``Snapshot.copy``) as often as needed for the cost of unpickling each time. The
        episode may step on afterwards; the snapshot does not change."""
        return Snapshot(self, exact=True)

    @staticmethod
    def _fresh_parts() -> dict[str, Any]:
        """What a copy starts without: reusable observation and score parts."""
        return {"_view_memo": {}, "_score_memo": {}}

    # ------------------------------------------------------------------ views
    def grade(self) -> dict[str, Any]:
        """Score breakdown: final once done, else the running preview."""
        final = self._final_breakdown()
        if final is not None:
            return final
        return grade(self.world, final=False) | {"steps": self.step_count}

    def observation(self) -> dict[str, Any]:
        return build_observation(
            self.world,
            step=self.step_count,
            max_steps=self.max_steps,
            done=self.done,
            preview=lambda: self.score_preview,
            last_error=self.last_error,
            events=self._events,
            minutes=self.last_minutes,
        )

    def observation_view(self) -> ObservationView:
        """The observation as a read-only mapping whose parts are built when first read; equal
        to ``observation()`` when read whole, valid until the next step."""
        ctx = StepContext(self.step_count, self.max_steps, self.done, lambda: self.score_preview,
                          self.last_error, self._events, self.last_minutes)
        return ObservationView(self.world, ctx, self._view_memo)

    def render_text(self) -> str:
        return render_text(self.observation())


def _check_fork_seed(seed: object) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"fork seed must be a non-negative integer, got {seed!r}")


def _stream_state(rng: Random | None) -> tuple[type[Random], Any] | None:
    return None if rng is None else (type(rng), rng.getstate())


def _restored_stream(saved: tuple[type[Random], Any] | None) -> Random | None:
    if saved is None:
        return None
    cls, state = saved
    rng = cls.__new__(cls, 0)  # a cheap throwaway seed: setstate replaces it
    rng.setstate(state)
    return rng


class Snapshot:
    """An episode's state at one moment, frozen as bytes: a planner takes one per decision and
    forks or copies it once per rollout instead of pickling the live episode every time.

    ``fork(seed)`` is what ``CodeRedSim.fork(seed)`` returned when the snapshot was taken (the
    same fair redraw from the same stream: task, episode seed, step and fork seed); ``copy()`` is
    an exact, independent copy of the episode then, hidden truth, future and random streams
    included (so a copy of a fork is that fork again). The snapshot holds no live object of the
    episode (only bytes, the frozen task and the logged actions, which nothing changes), so the
    episode stepping or being edited afterwards never changes what it hands out.

    Layout: one pickle stream of two parts sharing a memo. The first is the episode without
    what a fork redraws anyway (random streams, future arrivals the agent does not know of:
    ``fork.hidden_future_detached``), all a fork unpickles; the second holds the future arrivals,
    whose objects may refer to the first part's (a callback's caller), and is read by ``copy``.
    The random streams are kept as their ``getstate()`` tuples: restoring one with ``setstate``
    costs a fifth of unpickling it (which seeds a new generator from the OS first).
    """

    __slots__ = (
        "_action_log", "_blob", "_cls", "_exact", "_narrative_seed", "_pending", "_seed", "_step",
        "_streams", "_task",
    )

    def __init__(self, sim: CodeRedSim, exact: bool = True) -> None:
        sim._final_breakdown()  # a fork redraws the copy's world: the grade is of this one
        world = sim.world
        fresh = tuple(sim._fresh_parts())  # made anew for every copy, not pickled
        state = sim.__dict__ | dict.fromkeys(fresh) | {"action_log": None, "task": None}
        future = world.spawns
        buffer = io.BytesIO()
        pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
        with hidden_future_detached(world):
            world.task = None  # type: ignore[assignment]
            try:
                pickler.dump(state)
                if exact:  # memo shared: the hidden parts refer to the objects of the first part
                    pickler.dump(future)
            finally:
                world.task = sim.task
        init = object.__setattr__
        init(self, "_blob", buffer.getvalue())
        init(self, "_cls", type(sim))
        init(self, "_task", sim.task)
        init(self, "_seed", sim.seed)
        init(self, "_step", sim.step_count)
        init(self, "_action_log", tuple(sim.action_log))
        init(self, "_pending", secondary_pending(world))
        init(self, "_exact", exact)
        streams = (world.travel_rng, world.narrative_rng) if exact else (None, None)
        init(self, "_streams", tuple(_stream_state(rng) for rng in streams))
        init(self, "_narrative_seed", world.narrative_seed if exact else None)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("a Snapshot is immutable; take a new one with CodeRedSim.snapshot()")

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Picklable (to hand to another process): rebuilt field by field, past ``__setattr__``."""
        return _unpickled_snapshot, tuple(getattr(self, name) for name in Snapshot.__slots__)

    def __repr__(self) -> str:
        kind = "" if self._exact else ", fork only"
        return f"<Snapshot {self._task.task_id} seed {self._seed} step {self._step}{kind}>"

    @property
    def step_count(self) -> int:
        return self._step

    def fork(self, seed: int) -> CodeRedSim:
        """``CodeRedSim.fork(seed)`` of the episode as it was when the snapshot was taken."""
        _check_fork_seed(seed)
        twin = self.private_copy()
        rng = fork_rng(self._task.task_id, self._seed, self._step, seed)
        fork_world(twin.world, rng, self._pending)
        return twin

    def copy(self) -> CodeRedSim:
        """An exact, independent copy of the episode as it was when the snapshot was taken."""
        if not self._exact:
            raise ValueError("this snapshot holds no hidden state; take one with CodeRedSim.snapshot()")
        unpickler = pickle.Unpickler(io.BytesIO(self._blob))
        twin = self._rebuilt(unpickler.load())
        world = twin.world
        world.spawns = unpickler.load()
        world.travel_rng, world.narrative_rng = (_restored_stream(state) for state in self._streams)
        world.narrative_seed = self._narrative_seed
        return twin

    def private_copy(self) -> CodeRedSim:
        """``CodeRedSim.private_copy`` then: the episode without its random streams and unknown future."""
        return self._rebuilt(pickle.loads(self._blob))  # reads the first part only

    def _rebuilt(self, state: dict[str, Any]) -> CodeRedSim:
        twin = self._cls.__new__(self._cls)
        twin.__dict__ = state
        state.update(twin._fresh_parts())
        twin.task = twin.world.task = self._task
        twin.action_log = list(self._action_log)
        return twin


def _unpickled_snapshot(*values: Any) -> Snapshot:
    snapshot = object.__new__(Snapshot)
    for name, value in zip(Snapshot.__slots__, values, strict=True):
        object.__setattr__(snapshot, name, value)
    return snapshot


def grade_episode(
    task_id: str, seed: int, actions: list[Any], city: str | int | City = "prakashnagar"
) -> dict[str, Any]:
    """Replay ``actions`` from reset (in ``city``) and return the final grade (a pure function).

    Actions past the end of the episode are ignored; a list that ends before the episode does
    is graded as if the agent stopped deciding there (the world plays on, as at the budget).
    """
    sim = CodeRedSim(task_id, seed, city=city)
    for action in actions:
        if sim.done:
            break
        sim.step(action)
    sim.finish()
    return sim.grade()
