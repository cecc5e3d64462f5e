"""``CodeRedSim.fork``: a planning copy that knows only what the agent could know."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from random import Random

import pytest

from codered_env.agents import HeuristicAgent
from codered_env.sim import TASK_IDS, CodeRedSim, Snapshot
from codered_env.sim.call_sources import call_prior, source_key
from codered_env.sim.params import CALL_MIX, SURGE_MIX
from codered_env.sim.triage import callback_report

SEED = 1003


def advance(task_id: str, seed: int, steps: int, city: object = "prakashnagar") -> CodeRedSim:
    sim = CodeRedSim(task_id, seed, city=city)
    agent = HeuristicAgent(seed)
    agent.reset(task_id, seed)
    while not sim.done and sim.step_count < steps:
        sim.step(agent.act(sim.observation()))
    return sim


def finish_with_heuristic(sim: CodeRedSim) -> CodeRedSim:
    agent = HeuristicAgent()
    while not sim.done:
        sim.step(agent.act(sim.observation()))
    return sim


def canonical(obj: object) -> object:
    """Plain nested data for any state object (object identity and pickle memos left out)."""
    if isinstance(obj, Random):
        return ["Random", canonical(obj.getstate())]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = {f.name: canonical(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        return [type(obj).__name__, fields]
    if isinstance(obj, dict):
        return [[canonical(k), canonical(v)] for k, v in obj.items()]
    if isinstance(obj, (list, tuple)):
        return [canonical(x) for x in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted((canonical(x) for x in obj), key=repr)
    if hasattr(obj, "__dict__"):
        return [type(obj).__name__, canonical(vars(obj))]
    return obj


def state_bytes(sim: CodeRedSim) -> bytes:
    """The full episode state, byte for byte (with the route cache brought up to date: it is a
    function of the roads, filled lazily by whoever asks first)."""
    twin = copy.deepcopy(sim)
    twin.world.net._refresh()
    return repr(canonical(twin)).encode()


def snapshot(sim: CodeRedSim) -> tuple[str, str, bytes]:
    """Observation, grade and the full state."""
    return json.dumps(sim.observation(), sort_keys=True), json.dumps(sim.grade()), state_bytes(sim)


def future_reports(sim: CodeRedSim) -> set[tuple[int, str]]:
    """(minute, report) of every call still to come (a report alone may recur by chance), except
    callbacks: their words follow from the report the agent knows (their timing is redrawn)."""
    return {(s.at, s.call.report) for s in sim.world.spawns if s.call is not None and not s.call.callback_of}


def hidden_truth(sim: CodeRedSim) -> list[tuple]:
    w = sim.world
    callers = [
        (p.patient_id, p.condition, p.reserve, p.blood_type, p.hr0, p.sbp0, p.status, p.cpr_from)
        for p in w.patients.values()
        if not p.visible or not p.blood_type_known
    ]
    future = [(s.at, s.patient.condition, s.call.report if s.call else "") for s in w.spawns]
    return callers + future + [repr(w.travel_rng.getstate()[1][:4])]


@pytest.mark.parametrize("task_id", TASK_IDS)
@pytest.mark.parametrize("steps", [0, 6, 15])
def test_fork_never_changes_the_parent(task_id: str, steps: int) -> None:
    sim = advance(task_id, SEED, steps)
    before = snapshot(sim)
    for fork_seed in range(3):
        finish_with_heuristic(sim.fork(fork_seed))
    assert snapshot(sim) == before
    # ... and the parent plays on exactly as an episode that was never forked
    finish_with_heuristic(sim)
    twin = CodeRedSim(task_id, SEED)
    for action in sim.action_log:
        twin.step(action)
    assert snapshot(twin) == snapshot(sim)


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_same_fork_seed_same_fork(task_id: str) -> None:
    sim = advance(task_id, SEED, 8)
    assert state_bytes(sim.fork(5)) == state_bytes(sim.fork(5))
    assert state_bytes(sim.fork(5)) != state_bytes(sim.fork(6))
    a, b = finish_with_heuristic(sim.fork(5)), finish_with_heuristic(sim.fork(5))
    assert snapshot(a) == snapshot(b)


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_forks_with_different_seeds_differ_in_hidden_truth(task_id: str) -> None:
    sim = advance(task_id, SEED, 4)
    truths = [hidden_truth(sim.fork(s)) for s in range(3)]
    assert truths[0] != truths[1] != truths[2]


@pytest.mark.parametrize("task_id", ["task3", "task4", "task5"])
@pytest.mark.parametrize("steps", [0, 5, 12, 25])
def test_forks_never_contain_a_future_call(task_id: str, steps: int) -> None:
    sim = advance(task_id, SEED, steps)
    real_future = future_reports(sim)
    real_secondary = {(s.at, s.patient.reserve) for s in sim.world.spawns if s.call is None}
    seen = {(c.received_at, c.report) for c in sim.world.calls.values()}
    for fork_seed in range(4):
        fork = sim.fork(fork_seed)
        assert not future_reports(fork) & real_future
        assert not {(s.at, s.patient.reserve) for s in fork.world.spawns if s.call is None} & real_secondary
        finish_with_heuristic(fork)
        received = {(c.received_at, c.report) for c in fork.world.calls.values()}
        assert not (received - seen) & real_future


@pytest.mark.parametrize("task_id", TASK_IDS)
@pytest.mark.parametrize("city", ["prakashnagar", 100_001])  # a held-out generated city too
def test_a_fork_shows_the_agent_what_the_parent_shows(task_id: str, city: object) -> None:
    sim = advance(task_id, SEED, 10, city)

    def visible(s: CodeRedSim) -> dict:
        obs = s.observation()
        for item in obs["ambulances"] + obs["patients"]:
            item.pop("eta_min")  # the noise-free ETA: equal up to rounding after the redraw
        return obs

    for fork_seed in range(3):
        assert visible(sim.fork(fork_seed)) == visible(sim)


@pytest.mark.parametrize("task_id", ["task3", "task4", "task5"])
@pytest.mark.parametrize("steps", [3, 14])
@pytest.mark.parametrize("city", ["prakashnagar", 100_001])  # a held-out generated city too
def test_a_fork_depends_only_on_what_the_agent_knows(task_id: str, steps: int, city: object) -> None:
    """Rewrite the parent's hidden parts; the fork must not change."""
    sim = advance(task_id, SEED, steps, city)
    other = copy.deepcopy(sim)
    w = other.world
    for p in w.patients.values():
        if not p.visible:
            p.condition, p.reserve, p.hr0, p.sbp0 = "fever", 0.5, 70, 130
            p.onset_min, p.cpr_from, p.band = 33, 2, 0
            p.status, p.died_at = ("deceased", 5) if p.status != "deceased" else ("awaiting_unit", None)
        if not p.blood_type_known:
            p.blood_type = "AB-"
    for call in w.calls.values():
        if not w.patients[call.patient_id].visible:
            call.true_priority = "P3"
    w.spawns = [s for s in w.spawns if s.reason not in ("call", "incident call", "callback")]
    for s in w.spawns:
        s.at += 3
        s.patient.reserve, s.patient.blood_type = 0.42, "B-"
    for d in w.disruptions:
        if d.start > w.clock:
            d.start, d.end, d.kind = d.start + 2, d.end + 30, "hospital_diversion"
    w.travel_rng.seed(99)
    w.narrative_rng.seed(98)
    w.narrative_seed = "rewritten"  # the keyed cascade draws
    for h in w.hospitals.values():
        for spec in h.specialists.values():
            if spec.state == "on_call":
                spec.page_delay = 99
        for room in h.ors:
            if room.elective and room.state == "in_use":
                room.until += 17
    if w.task.cascades and not any(pid in w.patients for pid in w.mci):  # task5 before the incident
        w.incident_node, w.incident_start = "N1", 44
    assert state_bytes(other.fork(7)) == state_bytes(sim.fork(7))


def test_fork_rejects_a_bad_seed() -> None:
    sim = CodeRedSim("task1", 0)
    for bad in (-1, True, 1.5, "3"):
        with pytest.raises(ValueError, match="fork seed"):
            sim.fork(bad)  # type: ignore[arg-type]


def test_call_prior_follows_the_sources_of_calls_at_that_minute() -> None:
    sim = advance("task5", SEED, 0)
    w = sim.world
    first = w.calls["C1"]
    prior = call_prior(source_key(w, first))
    assert sum(prior.values()) == pytest.approx(1.0)
    assert prior.keys() == CALL_MIX.keys()
    assert prior["stemi"] > CALL_MIX["stemi"]  # one call of the task's schedule is always a STEMI
    late = copy.copy(first)
    late.received_at = 60  # after the schedule's last call, before any surge: nothing expected
    assert call_prior(source_key(w, late)) == CALL_MIX
    w.news_cycle_at = 55
    assert call_prior(source_key(w, late)).keys() == SURGE_MIX.keys()


def advised_episode(task_id: str, steps: int) -> CodeRedSim:
    """Every call gets P4 advice as soon as it comes in: released or rings back later."""
    sim = CodeRedSim(task_id, SEED)
    while not sim.done and sim.step_count < steps:
        pending = [c for c in sim.world.calls.values() if c.status == "pending" and c.priority is None]
        action = {"action_type": "maintain_plan"}
        if pending:
            action = {"action_type": "triage_call", "call_id": pending[0].call_id, "priority": "P4"}
        sim.step(action)
    return sim


@pytest.mark.parametrize("steps", [4, 12, 20])
def test_p4_advised_callers_in_a_fork(steps: int) -> None:
    sim = advised_episode("task4", steps)
    assert any(c.status == "closed_advice" for c in sim.world.calls.values())
    for fork_seed in range(4):
        fork = sim.fork(fork_seed)
        w = fork.world
        rung_back = {c.callback_of for c in w.calls.values() if c.callback_of}
        pending = {s.call.callback_of: s for s in w.spawns if s.call is not None and s.call.callback_of}
        for call in w.calls.values():
            if call.status != "closed_advice" or call.call_id in rung_back:
                continue
            p = w.patients[call.patient_id]
            if call.true_priority == "P4":
                assert p.status == "released"
            else:
                assert p.status in ("awaiting_unit", "deceased")
            if call.call_id in pending:  # a callback comes from the report alone, later than now
                spawn = pending[call.call_id]
                assert spawn.at > w.clock and spawn.call.report == callback_report(call.report, call.call_id)
        finish_with_heuristic(fork)
    # whether the real caller was released or will ring back is hidden: the fork does not depend on it
    other = copy.deepcopy(sim)
    ow = other.world
    ow.spawns = [s for s in ow.spawns if not (s.call is not None and s.call.callback_of)]
    for call in ow.calls.values():
        p = ow.patients[call.patient_id]
        if call.status == "closed_advice" and p.status in ("released", "awaiting_unit") and not p.visible:
            p.status = "released" if p.status == "awaiting_unit" else "awaiting_unit"
    assert state_bytes(other.fork(3)) == state_bytes(sim.fork(3))


# ------------------------------------------------------------------ snapshots
def episode_bytes(sim: CodeRedSim) -> bytes:
    """``state_bytes`` without what every copy starts afresh (reusable observation parts: caches
    of values the episode's state determines)."""
    twin = copy.copy(sim)
    twin._view_memo = {}
    return state_bytes(twin)


@pytest.mark.parametrize("task_id", TASK_IDS)
@pytest.mark.parametrize("steps", [0, 9, 20])
def test_a_snapshot_forks_and_copies_as_the_episode_did_then(task_id: str, steps: int) -> None:
    sim = advance(task_id, SEED, steps)
    before = snapshot(sim)
    frozen = sim.snapshot()
    assert snapshot(sim) == before  # taking it changes nothing
    assert frozen.step_count == sim.step_count
    for fork_seed in (0, 3, 2**40 + 1):
        assert state_bytes(frozen.fork(fork_seed)) == state_bytes(sim.fork(fork_seed))
    twin = frozen.copy()
    assert episode_bytes(twin) == episode_bytes(sim)  # the hidden truth and the streams included
    assert twin.task is sim.task and twin.action_log is not sim.action_log
    immutable = (int, float, str, bool, type(None), tuple)
    shared = [name for name, value in vars(sim.world).items()
              if name not in ("task", "city") and not isinstance(value, immutable)
              and value is getattr(twin.world, name)]
    assert shared == [] and twin.world.city is sim.world.city  # the city: immutable, shared
    assert all(twin.world.patients[k] is not p for k, p in sim.world.patients.items())
    # ... and it plays on exactly as the episode does
    finish_with_heuristic(twin)
    finish_with_heuristic(sim)
    assert snapshot(twin) == snapshot(sim)


@pytest.mark.parametrize("task_id", ["task3", "task5"])
def test_a_snapshot_does_not_change_when_the_episode_steps_on(task_id: str) -> None:
    sim = advance(task_id, SEED, 10)
    frozen = sim.snapshot()
    fork_then, copy_then = state_bytes(frozen.fork(4)), episode_bytes(frozen.copy())
    advance_more = HeuristicAgent(SEED)
    for _ in range(6):
        sim.step(advance_more.act(sim.observation()))
    world = sim.world  # edited by hand as well
    next(iter(world.patients.values())).reserve = 0.5
    world.spawns.clear()
    world.travel_rng.random()
    sim.action_log.append({"action_type": "maintain_plan"})
    assert state_bytes(frozen.fork(4)) == fork_then
    assert episode_bytes(frozen.copy()) == copy_then
    assert frozen.step_count == 10 and state_bytes(sim.fork(4)) != fork_then


@pytest.mark.parametrize("task_id", ["task2", "task5"])
def test_copies_of_a_snapshot_are_independent(task_id: str) -> None:
    """What one candidate's rollout does to its copy never reaches another's (a planner hands
    every candidate a copy of the same fork)."""
    start = advance(task_id, SEED, 12).fork(1).snapshot()
    pristine = episode_bytes(start.copy())
    first, second = start.copy(), start.copy()
    first.world.patients[next(iter(first.world.patients))].reserve = 0.0
    first.world.spawns.clear()
    first.world.travel_rng.random()
    finish_with_heuristic(first)
    assert episode_bytes(second) == pristine
    assert second.action_log is not first.action_log
    assert snapshot(finish_with_heuristic(second)) == snapshot(finish_with_heuristic(start.copy()))


def test_a_snapshot_rejects_a_bad_seed_and_edits() -> None:
    frozen = advance("task2", 0, 3).snapshot()
    for bad in (-1, True, 1.5, "3", None):
        with pytest.raises(ValueError, match="fork seed must be a non-negative integer"):
            frozen.fork(bad)  # type: ignore[arg-type]
    with pytest.raises(AttributeError, match="immutable"):
        frozen._blob = b""  # type: ignore[misc]
    with pytest.raises(AttributeError):
        frozen.extra = 1  # type: ignore[attr-defined]
    assert state_bytes(frozen.fork(0)) == state_bytes(frozen.fork(0))  # still whole
    assert repr(frozen) == "<Snapshot task2 seed 0 step 3>"


def test_a_snapshot_pickles_whole() -> None:
    """A snapshot may be sent to another process: the same forks and copies come out."""
    sim = advance("task5", SEED, 14)
    frozen = sim.snapshot()
    again = pickle.loads(pickle.dumps(frozen))
    assert again is not frozen and again.step_count == 14
    assert state_bytes(again.fork(6)) == state_bytes(frozen.fork(6)) == state_bytes(sim.fork(6))
    assert episode_bytes(again.copy()) == episode_bytes(sim)
    with pytest.raises(AttributeError, match="immutable"):
        again._step = 0  # type: ignore[misc]


def test_a_fork_only_snapshot_holds_no_hidden_state() -> None:
    """The snapshot ``fork`` takes for itself carries no random stream or unknown future, so it
    cannot hand out an exact copy."""
    sim = advance("task5", SEED, 5)
    partial = Snapshot(sim, exact=False)
    assert state_bytes(partial.fork(2)) == state_bytes(sim.fork(2))
    with pytest.raises(ValueError, match="no hidden state"):
        partial.copy()


def test_a_fork_names_the_announced_bystander_under_its_new_id() -> None:
    """A fork renumbers the future's patients: the escalation's bystander keeps its place among
    the patients the play caused (the outcome figures' base leaves it out)."""
    sim = CodeRedSim("task3", 0)
    while sim.world.escalation_casualty is None:
        sim.step({"action_type": "maintain_plan"})
    for fork_seed in (3, 4):
        world = sim.fork(fork_seed).world
        escalations = [s.patient.patient_id for s in world.spawns
                       if s.reason.startswith("incident escalated")]
        assert escalations == [world.escalation_casualty]
