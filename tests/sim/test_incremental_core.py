"""The event-driven core never changes an answer: every incremental piece of state equals a full
rebuild, at every step, for random, heuristic and planner play on every task.

Checked after every ``CodeRedSim.step`` of every simulation alive (so also the planner's forks
and rollouts, through a wrapper around ``step``):

- the running score preview the episode reports (settled patients' terms reused) equals a fresh
  ``rubric.preview_score`` of its world;
- the travel-time and edge tables, shared per road state, equal a fresh Floyd-Warshall and fresh
  edge costs over the roads;
- the lazy observation view, read whole, equals ``observation()`` (its patient, hospital and
  unit rows are reused from earlier steps while what they show is unchanged), and a view handed
  out at one step still reads the same after later steps (reused rows are never changed in
  place); the heuristic given the view plays exactly the actions it plays given the dict;
- the calendar's minute of the next blood-type result (``World.calendar["labs"]``) equals a scan
  of the patients, with no result overdue; no running OR or specialist timer falls due before
  the "timers" minute, nor a unit's arrival, scene or handover before the "units" minute, nor a
  disruption's start or end before the "disruptions" minute, nor a mutual-aid unit's arrival
  before the "aid" minute; calls come in the order of their minute and none before
  ``World.first_pending`` is pending;
- each of ``World``'s change versions moved whenever what its readers read differs from the
  last step checked (``_VERSIONED``: a room's state, procedure or elective flag or a
  specialist's state for "rooms"; a call's arrival, status, triage, unit or report and whether
  its caller has been seen for "calls"; the blood stock for "stock"): the legal actions, the
  Gymnasium rows and the preview's unseen callers and triage mean built from those records are
  reused while it stays.
"""

from __future__ import annotations

import copy
import itertools
import math
import random
import weakref
from collections.abc import Callable
from typing import Any

import pytest

from codered_env.agents import make_agent
from codered_env.sim import TASK_IDS, CodeRedSim, rubric
from codered_env.sim.city import NODE_IDS, RoadNetwork, _shortest_paths
from codered_env.sim.conditions import CONDITIONS
from codered_env.sim.dynamics.travel import MOVING
from codered_env.sim.state import CHANGE_KINDS, World
from codered_env.sim.triage import caller_report, drawn_report, parse_report

PLANNER_STEPS = 12  # the planner's rollouts run whole episodes; its own play is capped


# per simulation: the last view checked and a deep copy of what it read then
_LAST_VIEW: weakref.WeakKeyDictionary[CodeRedSim, tuple[Any, dict[str, Any]]] = weakref.WeakKeyDictionary()


def _rooms_read(world: World) -> Any:
    return tuple((tuple((r.state, r.procedure, r.elective) for r in h.ors),
                  tuple(s.state for s in h.specialists.values())) for h in world.hospitals.values())


def _calls_read(world: World) -> Any:
    patients = world.patients
    return tuple((c.call_id, c.status, c.priority, c.ambulance_id, c.report, c.callback_of,
                  patients[c.patient_id].visible) for c in world.calls.values())


def _stock_read(world: World) -> Any:
    return tuple(tuple(h.blood.items()) for h in world.hospitals.values())


# a kind of the change record -> what its readers read (equal while the version stays)
_VERSIONED: dict[str, Callable[[World], Any]] = {
    "rooms": _rooms_read, "calls": _calls_read, "stock": _stock_read,
}


# per simulation: (the versions, what their readers read) at the last step checked
_LAST_READ: weakref.WeakKeyDictionary[CodeRedSim, dict[str, tuple[int, Any]]] = weakref.WeakKeyDictionary()


def _check_versions(sim: CodeRedSim) -> None:
    assert set(_VERSIONED) == set(CHANGE_KINDS)
    now = {name: (sim.world.version(name), read(sim.world)) for name, read in _VERSIONED.items()}
    last = _LAST_READ.get(sim)
    for name, (version, read) in now.items():
        if last is not None and last[name][1] != read:
            assert version != last[name][0], f"what World.version({name!r}) versions changed without it"
    _LAST_READ[sim] = now


def _check(sim: CodeRedSim) -> None:
    world = sim.world
    _check_versions(sim)
    if not sim.done and sim.step_count:  # the preview starts at 0 (the rewards add up to the final score)
        assert sim.score_preview == rubric.preview_score(world), "reported preview is stale"
    calls = list(world.calls.values())  # World.oldest_pending_call's premises
    assert all(a.received_at <= b.received_at for a, b in itertools.pairwise(calls))
    assert all(c.status != "pending" for c in calls[: world.first_pending])
    hospitals = world.hospitals.values()
    running = [r.until for h in hospitals for r in h.ors if r.state in ("preparing", "ready", "in_use")]
    running += [s.until for h in hospitals for s in h.specialists.values() if s.state in ("paged", "present")]
    assert world.calendar["timers"] <= min(running, default=math.inf), "a running timer would be skipped"
    units = world.ambulances.values()
    ends = [u.trip.times[-1] for u in units if u.status in MOVING and u.trip is not None]
    ends += [u.busy_until for u in units if u.status in ("on_scene", "at_hospital")]
    assert world.calendar["units"] <= min(ends, default=math.inf), "a unit's arrival or timer is skipped"
    changes = [d.end if d.active else d.start for d in world.disruptions if d.active or d.end > world.clock]
    assert world.calendar["disruptions"] <= min(changes, default=math.inf), "a disruption would be skipped"
    coming = [r.arrives_at for r in world.mutual_aid if not r.arrived]
    assert world.calendar["aid"] <= min(coming, default=math.inf), "a mutual-aid arrival would be skipped"
    pending = [p.blood_type_ready_at for p in world.patients.values()
               if p.blood_type_ready_at is not None and not p.blood_type_known]
    assert world.calendar["labs"] == min(pending, default=math.inf)
    assert all(at > world.clock for at in pending), "a blood-type result is overdue"
    net = world.net
    fresh = RoadNetwork(world.peak_hour)
    fresh.closed, fresh.congestion = set(net.closed), dict(net.congestion)
    dist, nxt, edges = _shortest_paths(fresh)
    for i, a in enumerate(NODE_IDS):
        for j, b in enumerate(NODE_IDS):
            assert net.minutes(a, b) == dist[i][j], (a, b)
    net.path(NODE_IDS[0], NODE_IDS[-1])
    assert net._next == nxt
    for a in NODE_IDS:  # the per-state edge table equals the costs computed afresh
        for b in NODE_IDS:
            assert net.edge_minutes(a, b) == fresh._edge_cost(a, b) == edges.get((a, b), math.inf)
    view = sim.observation_view()
    assert dict(view) == sim.observation()
    last = _LAST_VIEW.get(sim)
    if last is not None:
        assert dict(last[0]) == last[1], "a view handed out earlier changed"
    _LAST_VIEW[sim] = (view, copy.deepcopy(dict(view)))


@pytest.fixture()
def checked(check_every_step: Callable[[Callable[[CodeRedSim], None]], list[int]]) -> list[int]:
    """Every step of every simulation is checked (tests/sim/conftest.py); a counter of them."""
    return check_every_step(_check)


def _play(task_id: str, seed: int, agent_name: str, max_steps: int | None = None,
          **kwargs: Any) -> CodeRedSim:
    sim = CodeRedSim(task_id, seed)
    agent = make_agent(agent_name, seed, **kwargs)
    agent.reset(task_id, seed)
    _check(sim)
    while not sim.done and (max_steps is None or sim.step_count < max_steps):
        sim.step(agent.act(sim.observation()))
    return sim


@pytest.mark.parametrize("task_id", TASK_IDS)
@pytest.mark.parametrize("agent_name", ["random", "heuristic"])
def test_incremental_state_equals_a_rebuild(task_id: str, agent_name: str, checked: list[int]) -> None:
    for seed in (3, 8):
        sim = _play(task_id, seed, agent_name)
        assert sim.done
    assert checked[0] > 0


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_incremental_state_equals_a_rebuild_in_planner_play(task_id: str, checked: list[int]) -> None:
    """The planner's forks and rollouts step many simulations; each is checked."""
    _play(task_id, 5, "planner", max_steps=PLANNER_STEPS, forks=2, max_candidates=2)
    assert checked[0] > PLANNER_STEPS  # rollouts ran on forks too


@pytest.mark.parametrize("task_id", ["task2", "task5"])
def test_heuristic_acts_the_same_on_the_view(task_id: str) -> None:
    sim = CodeRedSim(task_id, 4)
    on_dict, on_view = make_agent("heuristic", 4), make_agent("heuristic", 4)
    on_dict.reset(task_id, 4)
    on_view.reset(task_id, 4)
    while not sim.done:
        action = on_dict.act(sim.observation())
        assert on_view.act(sim.observation_view()) == action
        sim.step(action)


def test_preview_follows_a_fork_and_its_parent_alone() -> None:
    """A fork copies the cache with the world; stepping one never changes the other's preview."""
    sim = _play("task5", 2, "heuristic", max_steps=20)
    before = sim.score_preview
    twin = sim.fork(7)
    for _ in range(15):
        if twin.done:
            break
        twin.step({"action_type": "maintain_plan"})
        assert twin.done or twin.score_preview == rubric.preview_score(twin.world)
    assert sim.score_preview == before == rubric.preview_score(sim.world)


def test_view_is_a_read_only_mapping_of_the_observation_keys() -> None:
    sim = CodeRedSim("task3", 1)
    view = sim.observation_view()
    assert list(view) == list(sim.observation())
    assert "patients" in view and "no_such_key" not in view
    assert view.get("no_such_key") is None
    with pytest.raises(KeyError):
        view["no_such_key"]
    with pytest.raises(TypeError):
        view["clock_min"] = 5  # type: ignore[index]


def test_road_tables_are_shared_per_road_state_and_never_stale() -> None:
    a, b = RoadNetwork(False), RoadNetwork(False)
    assert a.minutes("N0", "N3") == b.minutes("N0", "N3")
    assert a._dist is b._dist  # one table per road state in the process
    a.close("N1", "N3")
    assert a.minutes("N1", "N3") > b.minutes("N1", "N3")
    a.reopen("N1", "N3")
    assert a.minutes("N1", "N3") == b.minutes("N1", "N3")
    a.set_congestion("N0", "N1", 2.5)  # 4 min -> 10: the detour through N8 (3 + 3) wins
    assert (a.minutes("N0", "N1"), a.path("N0", "N1")) == (6.0, ["N0", "N8", "N1"])
    assert (b.minutes("N0", "N1"), b.path("N0", "N1")) == (4.0, ["N0", "N1"])


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_gym_legal_parts_equal_a_rebuild(task_id: str) -> None:
    """The legal actions the Gymnasium env reads from the observation view (which reuses unchanged
    parts between steps) are never stale: they equal a rebuild from the world."""
    np = pytest.importorskip("numpy")
    gym_env = pytest.importorskip("codered_env.gym_env")
    from codered_env.sim.legal import legal_actions

    env = gym_env.CodeRedGymEnv(task_id)
    rng = np.random.default_rng(1)
    env.reset(seed=6)
    done = False
    while not done:
        _, _, terminated, truncated, _ = env.step(int(rng.integers(int(env.action_masks().sum()))))
        done = terminated or truncated
        if not env.sim.done:
            assert env.sim.observation_view()["legal_actions"] == legal_actions(env.sim.world)


@pytest.mark.parametrize("condition", sorted(CONDITIONS))
def test_the_drawn_sex_and_age_are_what_the_report_says(condition: str) -> None:
    """The generator gives a caller's patient the sex and age ``drawn_report`` returns instead of
    parsing them back out of the report; both ways agree, and ``caller_report`` draws the same."""
    a, b = random.Random(condition), random.Random(condition)
    for _ in range(200):
        report, sex, age = drawn_report(condition, "Koramangala", a)
        facts = parse_report(report)
        assert facts is not None and (facts.sex, facts.age) == (sex, age)
        assert caller_report(condition, "Koramangala", b) == report


def test_a_lab_result_requested_in_a_copy_arrives_on_time() -> None:
    """The calendar's "labs" minute travels with a fork: results due there still arrive."""
    sim = _play("task3", 2, "heuristic", max_steps=6)
    pid = next(p.patient_id for p in sim.world.patients.values() if p.visible and not p.blood_type_known)
    sim.step({"action_type": "query_blood_type", "patient_id": pid})
    due = sim.world.patients[pid].blood_type_ready_at
    for twin in (sim.fork(3), sim.fork(4), sim):
        while twin.world.clock < due and not twin.done:
            twin.step({"action_type": "maintain_plan"})
        assert twin.world.patients[pid].blood_type_known


def test_the_shortcuts_premises_hold() -> None:
    """``care._maybe_start_treatment`` skips the crowding check while the uncrowded door time
    has not passed, which is exact only if crowding never shortens it."""
    from codered_env.sim.params import CROWDED_DOOR_FACTOR

    assert CROWDED_DOOR_FACTOR >= 1.0
