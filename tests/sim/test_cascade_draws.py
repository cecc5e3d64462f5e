"""Cascade events draw from streams keyed by the event: two policies that meet the same event
(a death that may make the news, the news cycle's surge, the incident's bystander) meet the same
draw, whenever it comes and whatever was drawn before it (common random numbers: paired policy
comparisons are not drowned in noise the policies did not cause)."""

from __future__ import annotations

from codered_env.sim import CodeRedSim
from codered_env.sim.dynamics.cascades import news_cycle

WAIT = {"action_type": "maintain_plan"}
AID = {"action_type": "request_mutual_aid"}


def surge(sim: CodeRedSim) -> list[tuple[int, str, str, float]]:
    start = sim.world.clock
    return [
        (s.at - start, s.patient.condition, s.patient.node, s.patient.reserve)
        for s in sim.world.spawns
        if s.reason == "news-cycle surge"
    ]


def test_the_surge_is_the_same_whenever_the_news_cycle_starts() -> None:
    early, late = CodeRedSim("task5", 3), CodeRedSim("task5", 3)
    assert late.step(AID).error is None  # a narrative draw made before the news cycle
    while late.world.clock < 20:
        late.step(WAIT)
    assert late.world.news_cycle_at is None
    news_cycle(early.world, "test")
    news_cycle(late.world, "test")
    assert surge(early) and surge(early) == surge(late)


def test_whether_a_death_makes_the_news_is_drawn_for_that_death() -> None:
    sim = CodeRedSim("task5", 3)
    first = sim.world.narrative_draw("news:P4").random()
    sim.step(AID)
    assert sim.world.narrative_draw("news:P4").random() == first
    assert sim.world.narrative_draw("news:P5").random() != first


def test_the_bystander_does_not_depend_on_an_earlier_mutual_aid_request() -> None:
    def bystander(opening: list[dict[str, str]]) -> tuple[object, ...]:
        sim = CodeRedSim("task3", 0)
        for action in opening:
            assert sim.step(action).error is None
        while sim.world.escalation_casualty not in sim.world.patients and not sim.done:
            sim.step(WAIT)
        p = sim.world.patients[sim.world.escalation_casualty or ""]
        return p.condition, p.reserve, p.hr0, p.sbp0, p.blood_type, p.appeared_at

    assert bystander([]) == bystander([AID, AID])


def test_mutual_aid_delays_follow_the_order_of_the_requests() -> None:
    def delays(waits: int) -> list[int]:
        sim = CodeRedSim("task3", 0)
        for _ in range(waits):
            sim.step(WAIT)
        for _ in range(2):
            assert sim.step(AID).error is None
        return [r.arrives_at - r.requested_at for r in sim.world.mutual_aid]

    early = delays(0)
    assert len(early) == 2 and early == delays(3)


def test_a_private_copy_carries_no_keyed_stream() -> None:
    sim = CodeRedSim("task5", 3)
    assert sim.world.narrative_seed is not None
    assert sim.private_copy().world.narrative_seed is None
    assert sim.snapshot().copy().world.narrative_seed == sim.world.narrative_seed
