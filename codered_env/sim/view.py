"""What the agent sees: the structured observation, as a dict or as a lazy view.

``build_observation`` makes the whole dict; ``ObservationView`` (``CodeRedSim.observation_view``)
gives the same, each part built on first access and the parts that rarely change reused from
earlier steps. The rows are made in obs_rows.py, the legal actions in legal.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from .city import PRAKASHNAGAR
from .legal import LegalActionsView, legal_actions
from .obs_rows import (
    BRIEF_ROWS,
    alert_count,
    alert_texts,
    ambulance_row,
    call_row,
    hospital_row,
    hospital_row_reused,
    hospital_rows_reused,
    mutual_aid_state,
    open_calls,
    patient_row,
    patient_rows_reused,
    road_state,
    visible_calls,
)
from .state import World
from .types import OPEN_CALL_STATES


class StepContext(NamedTuple):
    """What the observation shows beside the world: the episode's own bookkeeping (a named tuple:
    made at every step, and a frozen dataclass is several times slower to make)."""

    step: int
    max_steps: int
    done: bool
    preview: Callable[[], float]  # the running score preview, computed when the part is read
    last_error: str | None
    events: list[str]
    minutes: int = 0  # simulated minutes the last decision took


# key -> how it is built, in the observation's key order (one source for the dict and the view)
_PARTS: dict[str, Callable[[World, StepContext], Any]] = {
    "task_id": lambda w, c: w.task.task_id,
    "seed": lambda w, c: w.seed,
    "step": lambda w, c: c.step,
    "max_steps": lambda w, c: c.max_steps,
    "clock_min": lambda w, c: w.clock,
    "minutes": lambda w, c: c.minutes,
    "horizon_min": lambda w, c: w.task.horizon_min,
    "phase": lambda w, c: w.task.phase,
    "done": lambda w, c: c.done,
    "patients": lambda w, c: [patient_row(w, p) for p in w.patients.values() if p.visible],
    "ambulances": lambda w, c: [ambulance_row(w, a) for a in w.ambulances.values()],
    "hospitals": lambda w, c: [hospital_row(w, h) for h in w.hospitals.values()],
    "calls": lambda w, c: [call_row(w, x) for x in visible_calls(w)],
    "roads": lambda w, c: road_state(w),
    "alerts": lambda w, c: alert_texts(w),
    "events": lambda w, c: list(c.events),
    "mutual_aid": lambda w, c: mutual_aid_state(w),
    "query_result": lambda w, c: w.query_result,
    "score_preview": lambda w, c: c.preview(),
    "last_action_error": lambda w, c: c.last_error,
    "legal_actions": lambda w, c: {} if c.done else legal_actions(w),
}
# Every city but Prakashnagar (whose map is documented) shows its public map as well
# (``City.public_map``: nodes, roads and base minutes, riverside roads, hub, entry, stations).
_PARTS_WITH_MAP: dict[str, Callable[[World, StepContext], Any]] = _PARTS | {
    "city": lambda w, c: w.city.public_map,
}


def _parts_of(world: World) -> dict[str, Callable[[World, StepContext], Any]]:
    return _PARTS if world.city is PRAKASHNAGAR else _PARTS_WITH_MAP


def build_observation(
    world: World,
    *,
    step: int,
    max_steps: int,
    done: bool,
    preview: Callable[[], float],
    last_error: str | None,
    events: list[str],
    minutes: int = 0,
) -> dict[str, Any]:
    ctx = StepContext(step, max_steps, done, preview, last_error, events, minutes)
    return {key: part(world, ctx) for key, part in _parts_of(world).items()}



REUSED_ROWS: dict[str, Callable[[World, dict[str, Any]], list[dict[str, Any]]]] = {
    "patients": patient_rows_reused,
    "hospitals": hospital_rows_reused,
    "calls": lambda world, memo: [call_row(world, c) for c in open_calls(world, memo)],
}



def _row_of(rows: list[dict[str, Any]], id_field: str, wanted: str) -> dict[str, Any]:
    """The row whose ``id_field`` is ``wanted`` (a KeyError if none is)."""
    for row in rows:
        if row[id_field] == wanted:
            return row
    raise KeyError(wanted)


class ObservationView(Mapping[str, Any]):
    """The observation, each top-level part built on first access (``CodeRedSim.observation_view``).

    Reading every key gives exactly ``build_observation``'s dict (tests/sim/test_incremental_core.py);
    an agent that reads only what it needs (the heuristic skips alerts, events, the query result)
    pays only for that: ``legal_actions`` is a ``LegalActionsView`` (only the sections asked
    about are built), ``brief`` gives the rows in some states restricted to the fields a
    rule-based agent reads, ``hospital`` one hospital's row and ``call`` one open call's
    (tests/sim/test_incremental_view.py).
    Parts that rarely change are reused from earlier views (``memo``, kept by the episode): the
    dicts of patients in a final state and of unchanged hospitals, the open calls, the blood
    options while the blood state behind them is the same. A view describes the world when it
    was made: read it before the next step, and never change what it returns."""

    __slots__ = ("_briefs", "_built", "_ctx", "_hospitals", "_memo", "_parts", "_world")

    def __init__(self, world: World, ctx: StepContext, memo: dict[str, Any]) -> None:
        self._world, self._ctx, self._memo = world, ctx, memo
        self._parts = _parts_of(world)
        self._built: dict[str, Any] = {}
        self._briefs: dict[tuple[str, frozenset[str]], list[dict[str, Any]]] = {}
        self._hospitals: dict[str, dict[str, Any]] = {}  # rows read one by one (``hospital``)

    def brief(self, key: str, statuses: frozenset[str]) -> list[dict[str, Any]]:
        """The rows of ``self[key]`` ("patients", "ambulances" or "calls") whose status is in ``statuses``,
        in order, each restricted to ``BRIEF_FIELDS[key]`` (a patient's vitals to their score):
        what a rule-based agent reads, at a fraction of the full rows' cost (no vitals, waiting
        list or rows of patients in other states are built). Built once per view."""
        rows = self._briefs.get((key, statuses))
        if rows is None:
            rows = self._briefs[key, statuses] = BRIEF_ROWS[key](self._world, statuses, self._memo)
        return rows

    def __getitem__(self, key: str) -> Any:
        built = self._built
        if key in built:
            return built[key]
        if key in REUSED_ROWS:
            value = built[key] = REUSED_ROWS[key](self._world, self._memo)
        elif key == "legal_actions":
            value = built[key] = {} if self._ctx.done else LegalActionsView(self._world, self._memo)
        else:
            value = built[key] = self._parts[key](self._world, self._ctx)
        return value

    def change_marks(self) -> tuple[object, int, int, int]:
        """``(episode, calls, rooms, stock)``: an identity of the episode (compare it with ``is``)
        and the change record's counts of call, room and blood-stock changes (each moves on such a
        change), for adapters that cache rows between steps. Counts only, nothing hidden."""
        world = self._world
        return world, world.version("calls"), world.version("rooms"), world.version("stock")

    def hospital(self, hospital_id: str) -> dict[str, Any]:
        """The row of ``self["hospitals"]`` of this hospital, without building the others'."""
        row = self._hospitals.get(hospital_id)
        if row is None:
            rows = self._built.get("hospitals")
            if rows is not None:
                row = _row_of(rows, "hospital_id", hospital_id)
            else:
                row = hospital_row_reused(self._world, self._world.hospitals[hospital_id], self._memo)
            self._hospitals[hospital_id] = row
        return row

    def call(self, call_id: str) -> dict[str, Any]:
        """The row of ``self["calls"]`` of this open call, without building the others'."""
        rows = self._built.get("calls")
        if rows is not None:
            return _row_of(rows, "call_id", call_id)
        call = self._world.calls.get(call_id)
        if call is None or call.status not in OPEN_CALL_STATES:  # a closed or future call: not shown
            raise KeyError(call_id)
        return call_row(self._world, call)

    def travel_minutes(self) -> list[list[float]]:
        """Travel minutes by road now between every pair of nodes (``city.NODE_IDS`` order; inf:
        cut off), from what ``roads`` shows (closures, congestion, peak hour). Read only; the
        same table object while the road state is the same."""
        return self._world.net.minutes_table()

    def alert_count(self) -> int:
        """``len(self["alerts"])``, without formatting the texts."""
        alerts = self._built.get("alerts")
        return alert_count(self._world) if alerts is None else len(alerts)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self._parts else default

    def __contains__(self, key: object) -> bool:
        return key in self._parts

    def __iter__(self) -> Iterator[str]:
        return iter(self._parts)

    def __len__(self) -> int:
        return len(self._parts)
