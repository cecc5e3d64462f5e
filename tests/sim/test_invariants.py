"""Property tests: random and malformed play never breaks the world's invariants.

Each example plays one episode of a task to the end. Every step picks one of: a legal action
sampled from ``observation()["legal_actions"]`` (which must then be accepted), the heuristic
agent's move (so that episodes reach treatment, transfers and cascades), ``maintain_plan``, or
garbage (wrong shapes, unknown types, plausible actions with random ids and values). After
every step the world and the grader are checked; at the end the episode is replayed with
``grade_episode`` and must grade identically. Examples are derandomized, so CI is reproducible.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codered_env.agents import make_agent
from codered_env.sim import ACTION_TYPES, TASK_IDS, CodeRedSim, grade_episode, parse_action
from codered_env.sim.dynamics.blood import in_circulation
from codered_env.sim.types import (
    AMBULANCE_STATES,
    CALL_STATES,
    OR_STATES,
    PATIENT_STATES,
    SPECIALIST_STATES,
)

WAIT: dict[str, Any] = {"action_type": "maintain_plan"}
NULLABLE = ("secondary_harm", "cascade_score")
ONBOARD = {"en_route": "unit_en_route", "on_scene": "on_scene", "transporting": "transporting"}

IDS = st.sampled_from(
    [
        "P1",
        "P2",
        "P5",
        "P9",
        "C1",
        "C2",
        "C30",
        "H1",
        "H2",
        "H3",
        "H9",
        "ALS1",
        "BLS2",
        "MA1",
        "OR1",
        "OR2",
        "",
    ]
)
VALUES = st.one_of(
    IDS,
    st.integers(-3, 10),
    st.booleans(),
    st.none(),
    st.sampled_from(["O-", "AB+", "X", "P1", "P4", "cath_lab", "general", "cardiology", "obstetrics"]),
    st.text(max_size=4),
    st.lists(st.integers(), max_size=2),
)
PARAM_NAMES = st.sampled_from(
    [
        "ambulance_id",
        "patient_id",
        "call_id",
        "hospital_id",
        "from_hospital_id",
        "to_hospital_id",
        "or_id",
        "procedure",
        "specialty",
        "priority",
        "blood_type",
        "units",
        "target_id",
        "bogus",
    ]
)
GARBAGE = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), VALUES, max_size=3),
    st.fixed_dictionaries(
        {"action_type": st.sampled_from([*ACTION_TYPES, "fly", "", "MAINTAIN_PLAN"])},
        optional={
            "ambulance_id": VALUES,
            "patient_id": VALUES,
            "call_id": VALUES,
            "hospital_id": VALUES,
            "priority": VALUES,
            "units": VALUES,
            "blood_type": VALUES,
        },
    ),
    st.builds(
        lambda t, extra: {"action_type": t, **extra},
        st.sampled_from(ACTION_TYPES),
        st.dictionaries(PARAM_NAMES, VALUES, max_size=4),
    ),
)

# legal random moves, the heuristic's move (reaches treatment, cascades...), waiting, garbage
KINDS = ["legal"] * 4 + ["expert"] * 3 + ["wait"] + ["garbage"] * 2
MALFORMED = GARBAGE.filter(lambda raw: parse_action(raw)[1] is not None)


def legal_action(data: st.DataObject, legal: dict[str, list[dict[str, list[Any]]]]) -> dict[str, Any]:
    """One action drawn from the compact legal-action listing (every combination is legal)."""
    action_type = data.draw(st.sampled_from(sorted(legal)), label="legal type")
    option = data.draw(st.sampled_from(legal[action_type]), label="option")
    action: dict[str, Any] = {"action_type": action_type}
    for name in sorted(option):
        action[name] = data.draw(st.sampled_from(option[name]), label=name)
    return action


# ------------------------------------------------------------------------------ invariants
def check_world(sim: CodeRedSim) -> None:
    w = sim.world
    # blood: never negative, conserved per type
    for h in w.hospitals.values():
        for t, n in h.blood.items():
            assert n >= 0, (h.hospital_id, t, n)
    assert all(a.units > 0 for a in w.allocations)
    assert all(tr.units > 0 for tr in w.transfers)
    circulating = {t: n for t, n in in_circulation(w).items() if n}
    assert circulating == {t: n for t, n in w.initial_blood.items() if n}

    # every entity in exactly one valid state
    for p in w.patients.values():
        assert p.status in PATIENT_STATES, p
        if p.status in ("in_treatment", "treated"):
            assert p.treatment_start is not None and p.treatment_end is not None, p
            assert p.treatment_start <= w.clock
        if p.status == "deceased":
            assert p.died_at is not None and p.died_at <= w.clock
            assert p.reserve <= 0.0
        if p.status == "at_hospital":
            assert p.hospital in w.hospitals and p.patient_id in w.hospitals[p.hospital].ed_patients
        if p.status in ONBOARD.values():
            amb = w.ambulances[p.ambulance_id or ""]
            assert amb.patient_id == p.patient_id, (p, amb)
            assert ONBOARD[amb.status] == p.status, (p.status, amb.status)
    for c in w.calls.values():
        assert c.status in CALL_STATES, c
        assert c.patient_id in w.patients
        if c.status in ("dispatched", "on_scene"):
            assert c.ambulance_id is not None
    for amb in w.ambulances.values():
        assert amb.status in AMBULANCE_STATES, amb
        if amb.status in ONBOARD:
            assert amb.trip is not None or amb.status == "on_scene"
            assert amb.patient_id is not None, amb
            p = w.patients[amb.patient_id]
            assert p.ambulance_id == amb.ambulance_id, (amb, p)
        if amb.status == "available":
            assert amb.patient_id is None and amb.trip is None, amb
    for h in w.hospitals.values():
        assert len(h.ed_patients) == len(set(h.ed_patients))
        for pid in h.ed_patients:
            assert w.patients[pid].hospital == h.hospital_id
        for room in h.ors:
            assert room.state in OR_STATES, room
            if room.state in ("in_use", "preparing", "ready"):
                assert room.procedure in room.procedures, room
            if room.state == "idle":
                assert room.procedure is None and room.patient_id is None, room
            if room.state == "in_use" and not room.elective:
                assert room.patient_id is not None, room
                assert w.patients[room.patient_id].status in ("in_treatment", "deceased"), room
        for spec in h.specialists.values():
            assert spec.state in SPECIALIST_STATES, spec


def check_grade(sim: CodeRedSim) -> None:
    g = sim.grade()
    assert 0.0 <= sim.score_preview <= 1.0
    assert g["score"] == sim.score_preview
    for key, value in g["components"].items():
        if value is None:
            assert key in NULLABLE and not sim.task.cascades, (key, sim.task.task_id)
        else:
            assert 0.0 <= value <= 1.0, (key, value)
    if sim.task.cascades:
        assert all(v is not None for v in g["components"].values())
    for rec in g["patients"]:
        died_untreated = rec["status"] == "deceased" and rec["delay_min"] is None
        assert rec["time_score"] <= 1.0 and (rec["time_score"] >= 0.0 or died_untreated), rec
        assert 0.0 <= rec["vitals_at_treatment"] <= 1.0
        assert rec["prep"] is None or 0.0 <= rec["prep"] <= 1.0


def check_observation(sim: CodeRedSim) -> dict[str, Any]:
    obs = sim.observation()
    json.dumps(obs, allow_nan=False)
    text = sim.render_text()
    assert isinstance(text, str) and text.strip()
    assert obs["clock_min"] == sim.clock
    assert obs["done"] == sim.done
    if sim.done:
        assert obs["legal_actions"] == {}
    else:
        assert "maintain_plan" in obs["legal_actions"]
    return obs


def play_random_episode(task_id: str, seed: int, data: st.DataObject) -> None:
    sim = CodeRedSim(task_id, seed)
    expert = make_agent("heuristic")
    expert.reset(task_id, seed)
    check_world(sim)
    obs = check_observation(sim)
    actions: list[Any] = []
    rewards: list[float] = []
    last_clock = sim.clock
    while not sim.done:
        kind = data.draw(st.sampled_from(KINDS), label="kind")
        if kind == "legal":
            action = legal_action(data, obs["legal_actions"])
        elif kind == "expert":
            action = expert.act(obs)
        elif kind == "wait":
            action = dict(WAIT)
        else:
            action = data.draw(GARBAGE, label="garbage")
        out = sim.step(action)
        actions.append(action)
        rewards.append(out.reward)
        if kind in ("legal", "wait"):
            assert out.error is None, f"legal action {action} refused: {out.error}"
        assert math.isfinite(out.reward)
        assert out.done == sim.done
        assert last_clock <= sim.clock <= sim.task.horizon_min
        assert sim.step_count <= sim.max_steps
        last_clock = sim.clock
        check_world(sim)
        check_grade(sim)
        obs = check_observation(sim)

    final = sim.grade()
    assert final["final"] is True
    assert 0.01 <= final["score"] <= 0.99
    assert final["score"] == round(final["score"], 4)
    assert math.fsum(rewards) == pytest.approx(final["score"], abs=1e-9)
    assert grade_episode(task_id, seed, actions) == final


@pytest.mark.parametrize("task_id", TASK_IDS)
@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(seed=st.integers(0, 10_000), data=st.data())
def test_random_play_keeps_invariants(task_id: str, seed: int, data: st.DataObject) -> None:
    play_random_episode(task_id, seed, data)


@pytest.mark.parametrize("task_id", TASK_IDS)
@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), actions=st.lists(MALFORMED, min_size=5, max_size=70))
def test_garbage_only_episode(task_id: str, seed: int, actions: list[Any]) -> None:
    """Only malformed input: nothing is ever accepted, and the world behaves like a noop run."""
    sim, noop = CodeRedSim(task_id, seed), CodeRedSim(task_id, seed)
    for action in actions:
        if sim.done:
            break
        out = sim.step(action)
        noop.step({"action_type": "query_or_status", "hospital_id": "H3"})
        assert out.error
        check_world(sim)
        assert sim.clock == noop.clock
    assert sim.world.ledger.get("invalid_action", 0) == sim.step_count
    assert {k: v for k, v in sim.world.ledger.items() if k != "invalid_action"} == noop.world.ledger
    assert [p.status for p in sim.world.patients.values()] == [p.status for p in noop.world.patients.values()]
