"""Waiting is charged where it starts (docs/MODEL.md §8.1, §8.5).

``dispatch_wait``: every minute a caller is left without a crew while one that could answer them
stands free costs the chance, given what the dispatcher knows, that it could (ALS for a P1, any
crew for P2/P3); nothing while no such crew is free. The running preview's value of a patient no
crew has reached falls to 0 over ``UNREACHED_PATIENT_WINDOW_MIN``, of an unseen caller over
``UNSEEN_CALLER_WINDOW_MIN`` after the first call, which a callback does not restart; while no
crew has been sent to them, times the dispatcher's answer rate so far for callers like them
(``plan.answer_rates``).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from codered_env.agents import make_agent
from codered_env.sim import CodeRedSim, rubric
from codered_env.sim.dynamics.dispatch import charge_waiting
from codered_env.sim.params import (
    ANSWER_RATE_PRIOR,
    PENALTY,
    UNANSWERED_AFTER_MIN,
    UNREACHED_PATIENT_WINDOW_MIN,
    UNSEEN_CALLER_WINDOW_MIN,
)
from codered_env.sim.plan import UNTRIAGED, answer_group, answer_rate, answer_rates, hope_share
from codered_env.sim.rubric import preview_score
from codered_env.sim.state import World
from codered_env.sim.triage import report_priority_posterior
from codered_env.sim.types import Call

QUERY: dict[str, Any] = {"action_type": "query_or_status", "hospital_id": "H1"}  # one minute, no effect
DISPATCH: dict[str, Any] = {"action_type": "dispatch_ambulance", "ambulance_id": "ALS1", "patient_id": "P1"}


def _charged(world: World) -> float:
    return world.ledger.get("dispatch_wait", 0.0)


def _busy(world: World, kind: str) -> None:
    for amb in world.ambulances.values():
        if amb.kind == kind:
            amb.status = "en_route"


def test_a_patient_left_waiting_with_a_crew_free_is_charged_each_minute() -> None:
    sim = CodeRedSim("task1", 0)
    for minute in range(1, 4):
        assert sim.step(QUERY).minutes == 1
        assert _charged(sim.world) == pytest.approx(minute)
    assert sim.grade()["penalties"]["dispatch_wait"] == pytest.approx(3)
    assert PENALTY["dispatch_wait"] > 0
    out = sim.step(DISPATCH)
    assert out.error is None
    sim.step(QUERY)
    sim.step(QUERY)
    assert _charged(sim.world) == pytest.approx(3), "a dispatched patient is no longer waiting"


def test_holding_a_dispatch_lowers_the_running_score_from_its_first_minute() -> None:
    held, prompt = CodeRedSim("task1", 0), CodeRedSim("task1", 0)
    prompt.step(DISPATCH)
    held.step(QUERY)
    charge = held.grade()["waste_per_patient"]
    assert charge == pytest.approx(PENALTY["dispatch_wait"])
    assert prompt.grade()["penalties"].get("dispatch_wait", 0) == 0


def test_nothing_is_charged_while_no_crew_that_could_answer_is_free() -> None:
    world = copy.deepcopy(CodeRedSim("task1", 0).world)  # one P1 STEMI awaiting a unit
    _busy(world, "ALS")
    charge_waiting(world)
    assert _charged(world) == 0.0, "holding a P1 for an ALS crew while only BLS is free costs nothing"
    _busy(world, "BLS")
    charge_waiting(world)
    assert _charged(world) == 0.0
    world.ambulances["ALS2"].status = "returning"  # a returning crew can be sent
    charge_waiting(world)
    assert _charged(world) == pytest.approx(1.0)


@pytest.mark.parametrize(("task_id", "window"), [("task1", UNREACHED_PATIENT_WINDOW_MIN),
                                                  ("task4", UNSEEN_CALLER_WINDOW_MIN)])
def test_a_caller_counts_only_while_a_response_could_keep_their_value(task_id: str, window: int) -> None:
    """Past the preview's window the abandonment is charged by the caller's outcome alone: a
    process charge that ran the whole horizon outweighed more than one expected death per 100."""
    world = copy.deepcopy(CodeRedSim(task_id, 0).world)
    first = min(p.appeared_at for p in world.patients.values() if p.visible or task_id == "task4")
    world.clock = first + window - 1
    charge_waiting(world)
    inside = _charged(world)
    assert inside > 0.0
    world.ledger.clear()
    world.clock = first + window
    charge_waiting(world)
    assert _charged(world) < inside, "the first caller no longer counts past their window"


def test_a_pending_call_counts_the_chance_a_free_crew_could_answer_it() -> None:
    world = copy.deepcopy(CodeRedSim("task4", 0).world)
    (call,) = [c for c in world.calls.values() if c.status == "pending"]
    chances = report_priority_posterior(call.report)
    charge_waiting(world)
    assert _charged(world) == pytest.approx(1.0 - chances.get("P4", 0.0))
    world.ledger.clear()
    _busy(world, "ALS")
    charge_waiting(world)
    assert _charged(world) == pytest.approx(chances.get("P2", 0.0) + chances.get("P3", 0.0))
    world.ledger.clear()
    call.status = "closed_advice"
    world.ambulances["ALS1"].status = "available"
    charge_waiting(world)
    assert _charged(world) == 0.0, "a call closed with advice is not waiting"


def test_the_preview_share_of_an_unreached_patient_falls_over_its_window() -> None:
    caller, known = UNSEEN_CALLER_WINDOW_MIN, UNREACHED_PATIENT_WINDOW_MIN
    assert caller < known
    assert hope_share(10, 10, 180, caller) == 1.0
    assert hope_share(10, 10 + caller // 2, 180, caller) == pytest.approx(0.5)
    assert hope_share(10, 10 + caller, 180, caller) == 0.0
    assert hope_share(10, 10 + caller, 180, known) == pytest.approx(1 - caller / known)
    assert hope_share(170, 175, 180, caller) == pytest.approx(0.5), "by the horizon when that comes first"
    assert hope_share(200, 200, 180, caller) == 1.0


def test_a_callback_does_not_restart_the_callers_wait() -> None:
    sim = CodeRedSim("task4", 0)
    for _ in range(20):
        sim.step(QUERY)
    world = sim.world
    first = world.calls["C1"]
    assert not world.patients[first.patient_id].visible

    def with_call(received_at: int, callback: bool) -> rubric._Entry:
        w = copy.deepcopy(world)
        if callback:
            w.calls[first.call_id].status = "closed_advice"
            w.calls["CB"] = Call("CB", received_at, first.node, first.report, first.patient_id,
                                 first.true_priority, callback_of=first.call_id)
        else:
            w.calls[first.call_id].received_at = received_at
        mine = [(c, f) for c, f in rubric._unseen_callers(w) if c.patient_id == first.patient_id]
        (call, first_ring), *_ = mine
        return rubric._caller_entry(w, call, first_ring)

    now = world.clock
    assert with_call(now, callback=True) == with_call(first.received_at, callback=False)
    assert with_call(now, callback=False) > with_call(now, callback=True), "a fresh call is worth more"


def test_minutes_left_waiting_with_a_crew_free_are_kept_per_caller() -> None:
    world = copy.deepcopy(CodeRedSim("task4", 0).world)
    (call,) = [c for c in world.calls.values() if c.status == "pending"]
    chance = 1.0 - report_priority_posterior(call.report).get("P4", 0.0)
    for _ in range(3):
        charge_waiting(world)
    assert call.left_waiting == pytest.approx(3 * chance), "the chance dispatch_wait charges, per minute"
    _busy(world, "ALS")
    _busy(world, "BLS")
    charge_waiting(world)
    assert call.left_waiting == pytest.approx(3 * chance), "nothing while no crew that could answer is free"


def test_a_caller_left_unanswered_lowers_the_hope_of_every_caller_like_them_no_crew_was_sent_to() -> None:
    world = copy.deepcopy(CodeRedSim("task4", 0).world)
    (call,) = [c for c in world.calls.values() if c.status == "pending"]
    assert answer_rate(answer_rates(world), call) == 1.0
    fresh = preview_score(world)
    call.left_waiting = UNANSWERED_AFTER_MIN
    one_left = ANSWER_RATE_PRIOR / (ANSWER_RATE_PRIOR + 1)
    assert answer_rate(answer_rates(world), call) == pytest.approx(one_left)
    assert preview_score(world) < fresh
    call.status = "closed_advice"
    chance = 1.0 - report_priority_posterior(call.report).get("P4", 0.0)
    assert answer_rate(answer_rates(world), call) == pytest.approx(
        ANSWER_RATE_PRIOR / (ANSWER_RATE_PRIOR + chance))
    call.status, call.ambulance_id = "dispatched", "ALS1"
    assert answer_rate(answer_rates(world), call) == 1.0, "a crew sent answers the caller"
    assert hope_share(10, 12, 180, UNSEEN_CALLER_WINDOW_MIN, 0.5) == pytest.approx(
        0.5 * (1 - 2 / UNSEEN_CALLER_WINDOW_MIN))


def test_callers_are_judged_with_those_given_the_same_code() -> None:
    """A dispatcher who answers every P1 but leaves P3 calls waiting keeps the value of a P1 caller
    not yet sent to; callers not triaged yet are judged with the other untriaged calls."""
    world = copy.deepcopy(CodeRedSim("task4", 0).world)
    (template,) = [c for c in world.calls.values() if c.status == "pending"]
    world.calls.clear()

    def add(call_id: str, code: str | None, **fields: Any) -> Call:
        call = copy.copy(template)
        call.call_id, call.priority = call_id, code
        for name, value in fields.items():
            setattr(call, name, value)
        world.calls[call_id] = call
        return call

    for i in range(3):
        add(f"A{i}", "P1", status="dispatched", ambulance_id="ALS1")
        add(f"L{i}", "P3", left_waiting=UNANSWERED_AFTER_MIN)
    fresh = add("F", "P1")
    rates = answer_rates(world)
    assert rates is not None
    prior = ANSWER_RATE_PRIOR
    assert answer_rate(rates, fresh) == 1.0
    assert rates["P3"] == pytest.approx(prior / (prior + 3))
    fresh.priority = None
    assert answer_group(fresh) == UNTRIAGED and answer_rate(rates, fresh) == 1.0
    add("U", None, left_waiting=UNANSWERED_AFTER_MIN)
    assert answer_rate(answer_rates(world), fresh) == pytest.approx(prior / (prior + 1))


def test_known_patients_keep_their_value_whoever_waits() -> None:
    """Where every patient is known from the start there is no stream of fresh callers to buy the
    early minutes of: the answer rate is 1 (docs/MODEL.md §8.5)."""
    sim = CodeRedSim("task3", 0)
    for _ in range(15):
        sim.step(QUERY)
    assert sim.world.ledger.get("dispatch_wait", 0.0) > UNANSWERED_AFTER_MIN
    assert answer_rates(sim.world) is None


@pytest.mark.parametrize("task_id", ["task4", "task5"])
def test_the_heuristic_leaves_no_caller_unanswered(task_id: str) -> None:
    """Good play barely meets the answer rate: no caller is left waiting unanswered through the
    heuristic's episodes, and its advice to low-acuity callers counts only their small chance of a need."""
    for seed in (3, 4):
        sim, agent = CodeRedSim(task_id, seed), make_agent("heuristic", seed)
        agent.reset(task_id, seed)
        while not sim.done:
            sim.step(agent.act(sim.observation()))
            pending = [c for c in sim.world.calls.values() if c.status == "pending"]
            assert all(c.left_waiting < UNANSWERED_AFTER_MIN for c in pending), f"{seed} t{sim.clock}"
            rates = answer_rates(sim.world)
            assert rates is not None and min(rates.values()) > 0.95, f"{task_id} {seed} t{sim.clock}"
