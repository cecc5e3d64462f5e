"""Where calls come from (``call_sources``), and the news-cycle callers in the running preview.

The final grade counts a caller a news cycle brought as a casualty the play caused (their loss
alone, no place in the bases); the preview cannot tell who they are, so each caller first
calling in the surge window counts as caused at the chance the surge brought them, read from
what the dispatcher knows: the minute, the report, the condition once a crew has seen them.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from codered_env.agents import make_agent
from codered_env.sim import CodeRedSim, rubric
from codered_env.sim.call_sources import (
    call_prior,
    news_cycle_shares,
    source_key,
    surge_chance,
    surge_share,
)
from codered_env.sim.dynamics.cascades import news_cycle
from codered_env.sim.params import CALL_MIX, NEWS_CYCLE_SURGE_SPREAD_MIN, PHASE2_CALLS, SURGE_MIX
from codered_env.sim.plan import answer_rate, answer_rates

QUERY: dict[str, Any] = {"action_type": "query_or_status", "hospital_id": "H1"}
SEED = 5


def _played_to(task_id: str, minute: int) -> CodeRedSim:
    sim = CodeRedSim(task_id, SEED)
    agent = make_agent("heuristic", SEED)
    while sim.world.clock < minute and not sim.done:
        sim.step(agent.act(sim.observation()))
    return sim


def _news_cycle_after_schedule() -> CodeRedSim:
    """task5 past its last scheduled call, a news cycle started, its surge calls all in."""
    sim = _played_to("task5", PHASE2_CALLS["task5"][1] + 2)
    news_cycle(sim.world, "a test")
    start = sim.world.clock
    while sim.world.clock <= start + NEWS_CYCLE_SURGE_SPREAD_MIN:
        sim.step(QUERY)
    return sim


def _surge_callers(sim: CodeRedSim) -> list[str]:
    return [c.patient_id for c in sim.world.calls.values() if c.surge]


def test_no_news_cycle_no_share() -> None:
    sim = _played_to("task5", 30)
    assert sim.world.news_cycle_at is None
    assert news_cycle_shares(sim.world) == {}


def test_after_the_schedule_every_caller_in_the_window_came_with_the_surge() -> None:
    sim = _news_cycle_after_schedule()
    surge = _surge_callers(sim)
    assert surge, "a news cycle brings 4-6 calls"
    shares = news_cycle_shares(sim.world)
    assert set(shares) == set(surge)  # nobody else called first in the window
    assert all(share == pytest.approx(1.0) for share in shares.values())


def test_a_surge_caller_enters_the_preview_by_loss_alone() -> None:
    sim = _news_cycle_after_schedule()
    world = sim.world
    unseen = {c.patient_id for c, _ in rubric._unseen_callers(world)}
    waiting = [pid for pid in _surge_callers(sim) if pid in unseen]
    assert waiting, "the heuristic has not reached every surge caller in a query's minute"
    _, entries = rubric._entries(world, False)
    callers = rubric._unseen_callers(world)
    tail = entries[len(entries) - len(callers):]
    for (call, first), entry in zip(callers, tail, strict=True):
        if call.patient_id in waiting:
            assert entry.n == pytest.approx(0.0) and entry.w == pytest.approx(0.0)
            plain = rubric._caller_entry(world, call, first, answer_rate(answer_rates(world), call))
            assert entry.wk == pytest.approx(plain.wk - plain.w)  # what they lost, never a credit


def test_during_the_schedule_the_share_follows_the_condition() -> None:
    sim = _played_to("task5", 10)
    world = sim.world
    world.news_cycle_at = 5
    call = copy.copy(next(iter(world.calls.values())))
    call.received_at, call.node = 8, "nowhere"  # in the window, during the schedule, no incident
    key = source_key(world, call, False)
    assert key.in_surge
    assert surge_share("labour", key) == 0.0  # a news cycle brings no labour
    assert 0.0 < surge_share("stemi", key) < surge_share("anxiety", key) <= 1.0
    assert 0.0 < surge_chance(call.report, key) < 1.0
    prior = call_prior(key)
    assert sum(prior.values()) == pytest.approx(1.0)
    assert prior["anxiety"] > CALL_MIX["anxiety"] / sum(CALL_MIX.values())
    assert set(SURGE_MIX) <= set(prior)


def test_an_unseen_callers_share_never_reads_their_condition() -> None:
    sim = _news_cycle_after_schedule()
    world = sim.world
    unseen = [pid for pid in _surge_callers(sim) if not world.patients[pid].visible]
    assert unseen
    before = news_cycle_shares(world)
    twisted = copy.deepcopy(world)
    for pid in unseen:
        p = twisted.patients[pid]
        p.condition = "labour" if p.condition != "labour" else "stemi"
    assert news_cycle_shares(twisted) == before


def test_as_loss_blends_linearly() -> None:
    sim = _played_to("task4", 20)
    _, entries = rubric._entries(sim.world, False)
    entry = next(e for e in entries if e.w > 0)
    assert rubric._as_loss(entry, 0.0) == entry
    full = rubric._as_loss(entry)
    assert full.n == 0.0 and full.w == 0.0 and full.wk == entry.wk - entry.w
    half = rubric._as_loss(entry, 0.5)
    for name, value in half._asdict().items():
        assert value == pytest.approx((getattr(entry, name) + getattr(full, name)) / 2)
