"""The lazy observation view's incremental parts equal a rebuild from scratch at every step,
for random, heuristic and planner play on every task, the planner's forks and
rollouts included (every ``CodeRedSim.step`` of every simulation alive is checked):

- ``LegalActionsView``: each action type asked alone (``in``, ``[]``, ``get``), in a random
  order on a fresh view, answers what ``legal_actions`` built from scratch holds, and the
  whole mapping equals it key by key, in its order;
- the view's brief rows (``ObservationView.brief``) are the full rows of ``observation()`` in
  the asked statuses, restricted to the brief fields, in the same order, and a hospital's row
  read alone (``ObservationView.hospital``) is its full row, so is an open call's
  (``ObservationView.call``; a call not shown is a KeyError), ``ObservationView.alert_count``
  is the number of alerts, and the open calls the view keeps from step to step
  (``open_calls``) are those a scan of every call finds;
- the heuristic acts the same on the view (brief rows, lazy legal actions) as on the dict.

tests/sim/test_incremental_core.py checks the rest of the view (read whole, it equals
``observation()``; a view handed out earlier never changes).
"""

from __future__ import annotations

import copy
import math
import pickle
import random
import struct
from collections.abc import Callable
from typing import Any

import pytest

from codered_env.agents import make_agent
from codered_env.agents.heuristic import BRIEF_READS, EN_ROUTE
from codered_env.sim import TASK_IDS, CodeRedSim
from codered_env.sim.legal import _SECTION_OF, LegalActionsView, legal_actions
from codered_env.sim.obs_rows import open_calls, visible_calls
from codered_env.sim.rounding import round2
from codered_env.sim.types import AMBULANCE_STATES, CALL_STATES, PATIENT_STATES

PLANNER_STEPS = 10
_ASKED = [*_SECTION_OF, "no_such_action", "maintain_plan"]
_RNG = random.Random(23)


def _check_legal(sim: CodeRedSim) -> None:
    truth = legal_actions(sim.world)
    if sim.done:
        assert sim.observation_view()["legal_actions"] == {}
        return
    lazy = sim.observation_view()["legal_actions"]
    assert isinstance(lazy, LegalActionsView) and lazy
    for key in _RNG.sample(_ASKED, len(_ASKED)):
        how = _RNG.choice(("in", "get", "item"))
        if how == "in":
            assert (key in lazy) == (key in truth), key
        elif how == "get":
            assert lazy.get(key) == truth.get(key), key
        elif key in truth:
            assert lazy[key] == truth[key], key
        else:
            with pytest.raises(KeyError):
                lazy[key]
    assert list(lazy) == list(truth)
    assert lazy.whole() == truth and lazy == truth and len(lazy) == len(truth)
    fresh = sim.observation_view()["legal_actions"]
    assert dict(fresh.items()) == truth  # built whole first, then read by key
    assert all(fresh[k] == truth[k] for k in truth)


def _restricted(row: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    out = {k: row[k] for k in fields}
    if "vitals" in out:
        out["vitals"] = {"score": row["vitals"]["score"]}
    return out


def _check_brief(sim: CodeRedSim) -> None:
    from codered_env.sim.obs_rows import BRIEF_FIELDS

    full = sim.observation()
    view = sim.observation_view()
    every_state = {"patients": PATIENT_STATES, "ambulances": AMBULANCE_STATES, "calls": CALL_STATES}
    for key, states in every_state.items():
        statuses = frozenset(_RNG.sample(states, _RNG.randint(1, len(states))))
        for asked in (statuses, *(mine for part, mine in BRIEF_READS if part == key)):
            expected = [_restricted(r, BRIEF_FIELDS[key]) for r in full[key] if r["status"] in asked]
            assert view.brief(key, asked) == expected, (key, sorted(asked))
            assert [list(r) for r in view.brief(key, asked)] == [list(r) for r in expected]


def _check_hospital_rows(sim: CodeRedSim) -> None:
    """``ObservationView.hospital`` is the row of ``observation()``'s hospitals, read one by one
    in a random order on a fresh view, and again after the whole part was read."""
    full = {h["hospital_id"]: h for h in sim.observation()["hospitals"]}
    view = sim.observation_view()
    ids = _RNG.sample(list(full), len(full))
    for hid in ids[: _RNG.randint(1, len(ids))]:
        assert view.hospital(hid) == full[hid], hid
    assert view["hospitals"] == list(full.values())
    for hid in ids:
        assert view.hospital(hid) == full[hid], hid
    for fresh in (False, True):  # an unknown id is a KeyError before and after the part was read
        with pytest.raises(KeyError):
            (sim.observation_view() if fresh else view).hospital("no_such_hospital")


def _check_call_rows(sim: CodeRedSim) -> None:
    """``ObservationView.call`` is the row of ``observation()``'s calls, read alone on a fresh
    view and after the whole part was read; a call not shown (closed or not yet made) is a
    KeyError, like an id that does not exist."""
    full = {c["call_id"]: c for c in sim.observation()["calls"]}
    view = sim.observation_view()
    for cid in _RNG.sample(list(full), len(full)):
        assert view.call(cid) == full[cid], cid
    assert view["calls"] == list(full.values())
    for cid in full:
        assert view.call(cid) == full[cid], cid
    for cid in [*(c for c in sim.world.calls if c not in full), "no_such_call"]:
        with pytest.raises(KeyError):
            sim.observation_view().call(cid)
        with pytest.raises(KeyError):  # the same once the whole part was read
            view.call(cid)


def _check_alert_count(sim: CodeRedSim) -> None:
    """``ObservationView.alert_count`` is the number of ``observation()``'s alerts, asked before
    and after the alerts were read."""
    alerts = sim.observation()["alerts"]
    view = sim.observation_view()
    assert view.alert_count() == len(alerts)
    assert view["alerts"] == alerts
    assert view.alert_count() == len(alerts)


def _check(sim: CodeRedSim) -> None:
    # the open calls kept from step to step are those a scan of every call finds, in its order
    assert open_calls(sim.world, sim._view_memo) == visible_calls(sim.world)
    _check_legal(sim)
    _check_brief(sim)
    _check_hospital_rows(sim)
    _check_call_rows(sim)
    _check_alert_count(sim)


@pytest.fixture()
def checked(check_every_step: Callable[[Callable[[CodeRedSim], None]], list[int]]) -> list[int]:
    """Every step of every simulation is checked (tests/sim/conftest.py); a counter of them."""
    return check_every_step(_check)


def _play(task_id: str, seed: int, agent_name: str, on_view: bool, max_steps: int | None = None,
          **kwargs: Any) -> CodeRedSim:
    sim = CodeRedSim(task_id, seed)
    agent = make_agent(agent_name, seed, **kwargs)
    agent.reset(task_id, seed)
    _check(sim)
    while not sim.done and (max_steps is None or sim.step_count < max_steps):
        sim.step(agent.act(sim.observation_view() if on_view else sim.observation()))
    return sim


@pytest.mark.parametrize("task_id", TASK_IDS)
@pytest.mark.parametrize("agent_name", ["random", "heuristic"])
def test_view_parts_equal_a_rebuild(task_id: str, agent_name: str, checked: list[int]) -> None:
    for seed, on_view in ((3, True), (8, False)):
        assert _play(task_id, seed, agent_name, on_view).done
    assert checked[0] > 0


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_view_parts_equal_a_rebuild_in_planner_play(task_id: str, checked: list[int]) -> None:
    """The planner's rollouts act on views of forks; each step of each is checked."""
    _play(task_id, 5, "planner", False, max_steps=PLANNER_STEPS, forks=2, max_candidates=2)
    assert checked[0] > PLANNER_STEPS


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_heuristic_acts_the_same_on_the_view_and_the_dict(task_id: str) -> None:
    for seed in (1, 6):
        sim = CodeRedSim(task_id, seed)
        on_dict, on_view = make_agent("heuristic", seed), make_agent("heuristic", seed)
        on_dict.reset(task_id, seed)
        on_view.reset(task_id, seed)
        while not sim.done:
            action = on_dict.act(sim.observation())
            assert on_view.act(sim.observation_view()) == action
            assert on_view.last_rule == on_dict.last_rule
            sim.step(action)


def test_legal_view_copies_and_pickles_as_the_plain_dict() -> None:
    sim = CodeRedSim("task5", 2)
    agent = make_agent("heuristic", 2)
    agent.reset("task5", 2)
    for _ in range(15):
        sim.step(agent.act(sim.observation()))
    lazy = sim.observation_view()["legal_actions"]
    truth = legal_actions(sim.world)
    for copied in (copy.deepcopy(lazy), pickle.loads(pickle.dumps(lazy)), copy.copy(lazy)):
        assert type(copied) is dict and copied == truth
    assert repr(lazy) == repr(truth)
    assert lazy.get("no_such_action", "x") == "x" and 5 not in lazy  # type: ignore[comparison-overlap]


def test_a_read_view_keeps_its_answers_after_later_steps() -> None:
    """Sections and brief rows read before a step are not changed by it (reused read only)."""
    sim = CodeRedSim("task5", 3)
    agent = make_agent("heuristic", 3)
    agent.reset("task5", 3)
    kept: list[tuple[Any, Any, Any]] = []
    while not sim.done:
        view = sim.observation_view()
        legal = view["legal_actions"]
        rows = view.brief("patients", EN_ROUTE)
        snapshot = (copy.deepcopy(legal), copy.deepcopy(rows))
        kept.append((legal, view, snapshot))
        sim.step(agent.act(view))
    for legal, view, (legal_then, rows_then) in kept[-40:]:
        assert legal == legal_then
        assert view.brief("patients", EN_ROUTE) == rows_then


def test_round2_is_round_to_hundredths_bit_for_bit() -> None:
    """Every tie k/200, its neighbours either side, random values in and out of range, signed
    zeros and infinities: the same float (sign included) as ``round(x, 2)``."""
    rng = random.Random(5)
    ties = [k / 200 for k in range(-400, 40_001)]
    xs = ties + [math.nextafter(t, math.inf) for t in ties] + [math.nextafter(t, -math.inf) for t in ties]
    xs += [rng.random() for _ in range(50_000)] + [rng.uniform(-3.0, 1e10) for _ in range(20_000)]
    xs += [0.0, -0.0, 5e-324, -5e-324, 0.005, 2.675, 1.005, 1e9, math.inf, -math.inf]
    for x in xs:
        assert struct.pack("d", round2(x)) == struct.pack("d", round(x, 2)), x
    assert math.isnan(round2(math.nan))
