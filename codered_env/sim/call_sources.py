"""Where a call comes from, as far as the dispatcher can tell: the sources of calls a minute and
place may hold (the task's schedule, a running news-cycle surge, a known incident), each weighted
by the calls it is expected to bring to one place in that minute, times its condition mix.

Used by the planner's forks (``fork``: the prior a hidden caller's condition is redrawn from)
and by the running preview (``rubric``: the chance that a caller was brought by a news cycle,
which the final grade counts as a casualty the play caused). Everything read here is public:
the task's schedule size, the minute, the announced news cycle, the known incident's place.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from .generator import INCIDENT_INJURIES, SCHEDULED_CALLS
from .params import (
    CALL_MIX,
    INCIDENT_SECONDARY_DELAY_RANGE,
    MEMO_ENTRIES,
    NEWS_CYCLE_SURGE_CALLS,
    NEWS_CYCLE_SURGE_SPREAD_MIN,
    PHASE2_CALLS,
    SURGE_MIX,
)
from .state import World
from .triage import condition_posterior
from .types import Call

_INCIDENT_INJURIES = {injury: 1.0 / len(INCIDENT_INJURIES) for injury in INCIDENT_INJURIES}


class SourceKey(NamedTuple):
    """What the sources of a call depend on."""

    task_id: str
    minute: int
    in_surge: bool  # a news cycle's surge window holds the minute
    since_incident: int | None  # minutes since a known incident began, if the call is at its place
    places: int  # how many places in the city calls come from


class _Source(NamedTuple):
    rate: float  # calls expected at one place in the minute
    mix: tuple[tuple[str, float], ...]  # condition weights
    norm: float  # their sum
    surge: bool


def known_incident(world: World) -> bool:
    """The task5 incident has begun: its first calls (two from one place in one minute) are in."""
    return world.incident_node is not None and any(pid in world.patients for pid in world.mci)


def source_key(world: World, call: Call, incident_known: bool | None = None) -> SourceKey:
    """The sources ``call`` may have come from (``incident_known``: ``known_incident(world)``,
    passed when asked of many calls)."""
    t = call.received_at
    surge = world.news_cycle_at
    in_surge = surge is not None and surge < t <= surge + NEWS_CYCLE_SURGE_SPREAD_MIN
    incident_known = known_incident(world) if incident_known is None else incident_known
    since = t - world.incident_start if incident_known and call.node == world.incident_node else None
    return SourceKey(world.task.task_id, t, in_surge, since, len(world.city.patient_nodes))


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _sources(key: SourceKey) -> tuple[_Source, ...]:
    if key.task_id not in PHASE2_CALLS:
        return ()
    n_calls, last_call = PHASE2_CALLS[key.task_id]
    t, places = key.minute, key.places
    sources: list[tuple[float, dict[str, float], bool]] = []
    if t == 0:
        sources.append((1.0 / places, _schedule_mix(n_calls), False))
    elif t <= last_call:
        sources.append(((n_calls - 1) / last_call / places, _schedule_mix(n_calls), False))
    if key.in_surge:
        expected = sum(NEWS_CYCLE_SURGE_CALLS) / 2 / NEWS_CYCLE_SURGE_SPREAD_MIN
        sources.append((expected / places, SURGE_MIX, True))
    if key.since_incident is not None:
        if key.since_incident == 0:
            sources.append((2.0, _INCIDENT_INJURIES, False))  # the incident's first two calls
        lo, hi = INCIDENT_SECONDARY_DELAY_RANGE
        if lo <= key.since_incident <= hi:
            sources.append((1.0 / (hi - lo + 1), _INCIDENT_INJURIES, False))
    return tuple(_Source(rate, tuple(mix.items()), sum(mix.values()), surge) for rate, mix, surge in sources)


def _schedule_mix(n_calls: int) -> dict[str, float]:
    """The condition of one scheduled call: some always come (``generator.SCHEDULED_CALLS``), the
    rest are drawn from the call mix, in shuffled order (generator.draw_arrivals)."""
    fixed: dict[str, float] = {}
    for either in SCHEDULED_CALLS:
        for c in either:
            fixed[c] = fixed.get(c, 0.0) + 1.0 / len(either)
    norm = sum(CALL_MIX.values())
    mix = {c: (n_calls - len(SCHEDULED_CALLS)) / n_calls * w / norm for c, w in CALL_MIX.items()}
    for c, w in fixed.items():
        mix[c] = mix.get(c, 0.0) + w / n_calls
    return mix


def _rates(key: SourceKey) -> tuple[dict[str, float], dict[str, float]]:
    """Per condition: the calls expected from every source, and from a news-cycle surge."""
    every: dict[str, float] = {}
    surge: dict[str, float] = {}
    for source in _sources(key):
        for condition, w in source.mix:
            expected = source.rate * w / source.norm
            every[condition] = every.get(condition, 0.0) + expected
            if source.surge:
                surge[condition] = surge.get(condition, 0.0) + expected
    return every, surge


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def call_prior(key: SourceKey) -> dict[str, float]:
    """P(condition) of a call before its report is read (the call mix where no source applies).
    Read only."""
    every, _ = _rates(key)
    total = sum(every.values())
    return {c: w / total for c, w in every.items()} if total > 0 else CALL_MIX


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def call_posterior(report: str, key: SourceKey) -> dict[str, float]:
    """``triage.condition_posterior`` of ``report`` under ``call_prior(key)``. Read only."""
    return condition_posterior({"report": report}, call_prior(key))


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def surge_share(condition: str, key: SourceKey) -> float:
    """The chance that a caller with ``condition`` calling first at ``key`` was brought by a
    news cycle: the surge's expected calls with that condition over every source's."""
    every, surge = _rates(key)
    return surge.get(condition, 0.0) / every[condition] if surge.get(condition) else 0.0


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def surge_chance(report: str, key: SourceKey) -> float:
    """``surge_share`` of a caller nobody has seen, over their condition's posterior given ``report``."""
    if not key.in_surge:
        return 0.0
    return min(1.0, sum(chance * surge_share(c, key) for c, chance in call_posterior(report, key).items()))


def news_cycle_shares(world: World) -> dict[str, float]:
    """Per caller whose first call came in a news cycle's surge window, the chance the news cycle
    brought them: from their condition once a crew has seen them, else from their latest report."""
    if world.news_cycle_at is None:
        return {}
    first: dict[str, Call] = {}
    latest: dict[str, Call] = {}
    for call in world.calls.values():  # in arrival order
        first.setdefault(call.patient_id, call)
        latest[call.patient_id] = call
    incident_known = known_incident(world)
    shares = {}
    for patient_id, call in first.items():
        key = source_key(world, call, incident_known)
        if not key.in_surge:
            continue
        p = world.patients[patient_id]
        share = surge_share(p.condition, key) if p.visible else surge_chance(latest[patient_id].report, key)
        if share > 0.0:
            shares[patient_id] = share
    return shares
