"""Every way an action can be invalid is answered, never raised, and changes nothing.

docs/MODEL.md#actions: an invalid action returns an observation whose ``last_action_error`` says
what was wrong and what would be valid; the world is unchanged except that the decision minute
passes and the efficiency component counts one invalid action.

Method: each case drives two fresh ``CodeRedSim``s through the same prefix, then steps one with
the invalid action and the other with ``query_or_status`` (harmless, also one minute). The two
must then agree on the whole internal world (every entity, the random streams, the road state,
the ledger except one extra ``invalid_action``), on the observation (minus the per-step fields)
and on the grade (except the efficiency it costs).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from codered_env.agents import make_agent
from codered_env.sim import ACTION_TYPES, CodeRedSim
from codered_env.sim.actions import MODEL_BY_TYPE
from codered_env.sim.dynamics.blood import COMPATIBLE_DONORS
from codered_env.sim.params import DECISION_COST_MIN, PENALTY

WAIT: dict[str, Any] = {"action_type": "maintain_plan"}
HARMLESS: dict[str, Any] = {"action_type": "query_or_status", "hospital_id": "H1"}
PER_STEP_KEYS = ("step", "last_action_error", "query_result", "events", "score_preview", "legal_actions")
BLOOD_TYPES = ("O-", "O+", "A-", "A+", "B-", "B+", "AB-", "AB+")

# A well-formed example of every action type (used to build malformed variants).
VALID_PARAMS: dict[str, dict[str, Any]] = {
    "dispatch_ambulance": {"ambulance_id": "ALS1", "patient_id": "P1"},
    "dispatch_als": {"ambulance_id": "ALS1", "call_id": "C1"},
    "dispatch_bls": {"ambulance_id": "BLS1", "call_id": "C1"},
    "triage_call": {"call_id": "C1", "priority": "P1"},
    "assign_hospital": {"patient_id": "P1", "hospital_id": "H1"},
    "prepare_or": {"hospital_id": "H1", "procedure": "cath_lab"},
    "page_specialist": {"hospital_id": "H1", "specialty": "cardiology"},
    "preempt_or": {"hospital_id": "H1", "or_id": "OR1"},
    "allocate_blood": {"patient_id": "P1", "hospital_id": "H1", "blood_type": "O-", "units": 2},
    "transfer_blood": {"from_hospital_id": "H1", "to_hospital_id": "H2", "blood_type": "O-", "units": 1},
    "request_mutual_aid": {},
    "query_blood_type": {"patient_id": "P1"},
    "query_or_status": {"hospital_id": "H1"},
    "maintain_plan": {},
}
REQUIRED = [
    (t, name)
    for t, model in MODEL_BY_TYPE.items()
    for name, info in model.model_fields.items()
    if name != "action_type" and info.is_required()
]


# ------------------------------------------------------------------------------ helpers
def act(action_type: str, **params: Any) -> dict[str, Any]:
    return {"action_type": action_type, **params}


def world_state(sim: CodeRedSim) -> dict[str, Any]:
    """Everything that can evolve inside the world (no per-step scratch fields)."""
    w = sim.world
    asdict = dataclasses.asdict
    return {
        "clock": w.clock,
        "patients": {k: asdict(v) for k, v in w.patients.items()},
        "ambulances": {k: asdict(v) for k, v in w.ambulances.items()},
        "hospitals": {k: asdict(v) for k, v in w.hospitals.items()},
        "calls": {k: asdict(v) for k, v in w.calls.items()},
        "spawns": [asdict(s) for s in w.spawns],
        "disruptions": [asdict(d) for d in w.disruptions],
        "allocations": [asdict(a) for a in w.allocations],
        "transfers": [asdict(t) for t in w.transfers],
        "mutual_aid": [asdict(m) for m in w.mutual_aid],
        "ledger": dict(w.ledger),
        "travel_rng": w.travel_rng.getstate(),
        "narrative_rng": w.narrative_rng.getstate(),
        "closed": sorted(w.net.closed),
        "congestion": sorted(w.net.congestion.items()),
        "news_cycle": (w.news_cycle_at, w.news_cycle_reason),
        "escalated": w.escalated,
        "id_counters": list(w.id_counters),
        "mci": sorted(w.mci),
    }


def wait_until(sim: CodeRedSim, pred: Callable[[CodeRedSim], bool], limit: int = 40) -> None:
    for _ in range(limit):
        if pred(sim):
            return
        assert not sim.done, "episode ended before the scenario was reached"
        sim.step(WAIT)
    assert pred(sim), "scenario not reached"


def play(sim: CodeRedSim, actions: list[dict[str, Any]]) -> None:
    for action in actions:
        out = sim.step(action)
        assert out.error is None, (action, out.error)


def pending_calls(sim: CodeRedSim) -> list[str]:
    return [c["call_id"] for c in sim.observation()["calls"] if c["status"] == "pending"]


def free_units(sim: CodeRedSim, kind: str) -> list[str]:
    return [
        a["ambulance_id"]
        for a in sim.observation()["ambulances"]
        if a["kind"] == kind and a["status"] in ("available", "returning")
    ]


@functools.cache
def seed_where(task_id: str, key: str) -> int:
    """The first seed (0..299) of ``task_id`` whose fresh world satisfies SEED_PREDICATES[key]."""
    pred = SEED_PREDICATES[key]
    for seed in range(300):
        if pred(CodeRedSim(task_id, seed)):
            return seed
    raise AssertionError(f"no {task_id} seed with {key}")


def _has_disruption(kind: str) -> Callable[[CodeRedSim], bool]:
    return lambda sim: any(d.kind == kind and d.start <= 20 for d in sim.world.disruptions)


SEED_PREDICATES: dict[str, Callable[[CodeRedSim], bool]] = {
    "cath_idle": lambda s: s.world.hospitals["H1"].or_by_id("OR1").state == "idle",
    "cath_elective": lambda s: s.world.hospitals["H1"].or_by_id("OR1").state == "in_use",
    "h1_or2_idle": lambda s: s.world.hospitals["H1"].or_by_id("OR2").state == "idle",
    "h2_or_idle": lambda s: any(r.state == "idle" for r in s.world.hospitals["H2"].ors),
    "typed_not_ab_pos": lambda s: s.world.patients["P1"].blood_type != "AB+",
    "diversion": _has_disruption("hospital_diversion"),
    "specialist_unavailable": _has_disruption("specialist_unavailable"),
}


# ------------------------------------------------------------------------------ the check
@dataclass(frozen=True)
class Case:
    """``build(sim)`` drives a fresh sim to the scenario and returns (invalid action, expected
    fragments of the error message -- what was wrong and what would be valid)."""

    name: str
    task_id: str
    seed: int | tuple[str, str]  # a seed, or (task, predicate key) for seed_where
    build: Callable[[CodeRedSim], tuple[Any, list[str]]]


def _seed(case: Case) -> int:
    return case.seed if isinstance(case.seed, int) else seed_where(*case.seed)


def assert_refused(task_id: str, seed: int, build: Callable[[CodeRedSim], tuple[Any, list[str]]]) -> str:
    bad, ref = CodeRedSim(task_id, seed), CodeRedSim(task_id, seed)
    action, expect = build(bad)
    action_ref, _ = build(ref)
    assert action == action_ref, "scenario builders must be deterministic"
    assert world_state(bad) == world_state(ref)
    assert not bad.done
    clock, steps = bad.clock, bad.step_count
    ledger_before = dict(bad.world.ledger)

    out = bad.step(action)
    ok = ref.step(HARMLESS)
    assert ok.error is None

    # answered with a readable error that names the problem and what would be valid
    assert isinstance(out.error, str) and out.error.strip(), f"no error for {action!r}"
    for fragment in expect:
        assert fragment in out.error, f"{fragment!r} not in error {out.error!r}"
    obs = bad.observation()
    assert obs["last_action_error"] == out.error
    assert bad.last_error == out.error

    # the decision minute passes, nothing else happens
    assert bad.clock == clock + DECISION_COST_MIN
    assert bad.step_count == steps + 1
    assert out.done == ref.done
    expected_world = world_state(ref)
    got_world = world_state(bad)
    assert got_world["ledger"].get("invalid_action", 0) == ledger_before.get("invalid_action", 0) + 1
    got_world["ledger"]["invalid_action"] -= 1
    if not got_world["ledger"]["invalid_action"]:
        del got_world["ledger"]["invalid_action"]
    assert got_world == expected_world

    obs_ref = ref.observation()
    strip = {k: v for k, v in obs.items() if k not in PER_STEP_KEYS}
    assert strip == {k: v for k, v in obs_ref.items() if k not in PER_STEP_KEYS}
    assert obs["legal_actions"] == obs_ref["legal_actions"]

    g_bad, g_ref = bad.grade(), ref.grade()
    pen_bad, pen_ref = dict(g_bad["penalties"]), dict(g_ref["penalties"])
    assert pen_bad.pop("invalid_action", 0) == pen_ref.pop("invalid_action", 0) + 1
    assert pen_bad == pen_ref
    # efficiency = time_score x exp(-waste per patient): exactly one invalid-action penalty more
    eff_bad, eff_ref = g_bad["components"]["efficiency"], g_ref["components"]["efficiency"]
    assert eff_bad <= eff_ref
    extra = g_bad["waste_per_patient"] - g_ref["waste_per_patient"]
    assert 0 < extra <= PENALTY["invalid_action"] + 1e-4
    if eff_ref and eff_bad:
        assert eff_bad == pytest.approx(eff_ref * math.exp(-extra), abs=2e-4)
    assert g_bad["score"] <= g_ref["score"]
    g_bad["components"].pop("efficiency")
    g_ref["components"].pop("efficiency")
    for key in ("score", "raw_score", "penalties", "waste_per_patient"):
        g_bad.pop(key)
        g_ref.pop(key)
    assert g_bad == g_ref
    return out.error


# ------------------------------------------------------------------------------ malformed input
NON_DICTS: list[Any] = [
    None,
    [],
    [{"action_type": "maintain_plan"}],
    "maintain_plan",
    '{"action_type": "maintain_plan"}',
    42,
    3.5,
    True,
    ("action_type", "maintain_plan"),
    object(),
]


@pytest.mark.parametrize("raw", NON_DICTS, ids=lambda r: type(r).__name__)
@pytest.mark.parametrize("task_id", ["task1", "task4"])
def test_non_dict_actions_are_refused(task_id: str, raw: Any) -> None:
    error = assert_refused(task_id, 0, lambda sim: (raw, ["JSON object", type(raw).__name__]))
    assert '"action_type"' in error


@pytest.mark.parametrize(
    "raw",
    [
        {"action_type": "fly_helicopter"},
        {"action_type": "Maintain_Plan"},
        {"action_type": " maintain_plan"},
        {"action_type": 7},
        {"action_type": None},
        {"action_type": ["maintain_plan"]},
        {},
        {"type": "maintain_plan"},
        {"ambulance_id": "ALS1", "patient_id": "P1"},
    ],
    ids=repr,
)
def test_unknown_action_type_lists_the_valid_ones(raw: dict[str, Any]) -> None:
    error = assert_refused("task1", 0, lambda sim: (raw, ["unknown action_type"]))
    for action_type in ACTION_TYPES:
        assert action_type in error


@pytest.mark.parametrize(("action_type", "field"), REQUIRED, ids=[f"{t}-{f}" for t, f in REQUIRED])
def test_missing_parameter(action_type: str, field: str) -> None:
    raw = {k: v for k, v in VALID_PARAMS[action_type].items() if k != field}
    task_id = "task4" if action_type in ("dispatch_als", "dispatch_bls", "triage_call") else "task1"
    assert_refused(
        task_id,
        0,
        lambda sim: (act(action_type, **raw), [f"invalid {action_type}", field, f"Expected {action_type}("]),
    )


@pytest.mark.parametrize("action_type", ACTION_TYPES)
def test_extra_unknown_field(action_type: str) -> None:
    raw = act(action_type, **VALID_PARAMS[action_type], bogus_field=1)
    task_id = "task4" if action_type in ("dispatch_als", "dispatch_bls", "triage_call") else "task1"
    assert_refused(task_id, 0, lambda sim: (raw, ["bogus_field", f"Expected {action_type}("]))


def test_extra_field_on_maintain_plan_does_not_wait() -> None:
    """An invalid maintain_plan costs one minute, not the jump to the next event."""
    assert_refused("task1", 0, lambda sim: (act("maintain_plan", minutes=10), ["minutes"]))


WRONG_TYPES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("allocate_blood", {"units": "2"}, ["units"]),
    ("allocate_blood", {"units": 0}, ["units", "greater than or equal to 1"]),
    ("allocate_blood", {"units": 7}, ["units", "less than or equal to 6"]),
    ("allocate_blood", {"units": -1}, ["units"]),
    ("allocate_blood", {"units": True}, ["units"]),
    ("allocate_blood", {"units": 2.0}, ["units"]),
    ("allocate_blood", {"units": None}, ["units"]),
    ("allocate_blood", {"blood_type": "Z+"}, ["blood_type", "O-"]),
    ("allocate_blood", {"blood_type": "o-"}, ["blood_type", "AB+"]),
    ("allocate_blood", {"patient_id": 1}, ["patient_id"]),
    ("transfer_blood", {"units": "1"}, ["units"]),
    ("transfer_blood", {"units": 100}, ["units"]),
    ("transfer_blood", {"blood_type": "O"}, ["blood_type"]),
    ("dispatch_ambulance", {"ambulance_id": 1}, ["ambulance_id"]),
    ("dispatch_ambulance", {"patient_id": ""}, ["patient_id"]),
    ("dispatch_ambulance", {"ambulance_id": "A" * 40}, ["ambulance_id"]),
    ("dispatch_ambulance", {"patient_id": ["P1"]}, ["patient_id"]),
    ("assign_hospital", {"hospital_id": None}, ["hospital_id"]),
    ("assign_hospital", {"hospital_id": {"id": "H1"}}, ["hospital_id"]),
    ("prepare_or", {"procedure": "heart_transplant"}, ["procedure", "cath_lab", "trauma_surgery"]),
    ("prepare_or", {"procedure": 1}, ["procedure"]),
    ("page_specialist", {"specialty": "dermatology"}, ["specialty", "cardiology", "obstetrics"]),
    ("preempt_or", {"or_id": 1}, ["or_id"]),
    ("query_or_status", {"hospital_id": ["H1"]}, ["hospital_id"]),
    ("query_blood_type", {"patient_id": 3.0}, ["patient_id"]),
    ("request_mutual_aid", {"target_id": 5}, ["target_id"]),
    ("request_mutual_aid", {"patient_id": "P1", "call_id": "C1"}, ["at most one"]),
    ("request_mutual_aid", {"target_id": "P1", "patient_id": "P1"}, ["at most one"]),
]
PHASE2_WRONG_TYPES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("triage_call", {"priority": "P5"}, ["priority", "P1", "P4"]),
    ("triage_call", {"priority": "p1"}, ["priority"]),
    ("triage_call", {"priority": 1}, ["priority"]),
    ("dispatch_als", {"call_id": 1}, ["call_id"]),
    ("dispatch_bls", {"ambulance_id": None}, ["ambulance_id"]),
]


@pytest.mark.parametrize(
    ("action_type", "override", "expect"),
    WRONG_TYPES + PHASE2_WRONG_TYPES,
    ids=[f"{t}-{o}" for t, o, _ in WRONG_TYPES + PHASE2_WRONG_TYPES],
)
def test_wrong_parameter_type_or_value(action_type: str, override: dict[str, Any], expect: list[str]) -> None:
    raw = act(action_type, **(VALID_PARAMS[action_type] | override))
    task_id = "task4" if action_type in ("dispatch_als", "dispatch_bls", "triage_call") else "task1"
    assert_refused(task_id, 0, lambda sim: (raw, [f"invalid {action_type}", *expect]))


# ------------------------------------------------------------------------------ wrong phase
@pytest.mark.parametrize("task_id", ["task4", "task5"])
def test_phase1_dispatch_in_phase2(task_id: str) -> None:
    def build(sim: CodeRedSim) -> tuple[Any, list[str]]:
        wait_until(sim, lambda s: bool(pending_calls(s)))
        return act("dispatch_ambulance", ambulance_id="ALS1", patient_id="P1"), [
            "phase-1 action",
            "dispatch_als",
            "dispatch_bls",
        ]

    assert_refused(task_id, 0, build)


@pytest.mark.parametrize("task_id", ["task1", "task2", "task3"])
@pytest.mark.parametrize("action_type", ["dispatch_als", "dispatch_bls", "triage_call"])
def test_phase2_actions_in_phase1(task_id: str, action_type: str) -> None:
    raw = act(action_type, **VALID_PARAMS[action_type])
    assert_refused(task_id, 0, lambda sim: (raw, ["phase-2 action", "dispatch_ambulance"]))


# ------------------------------------------------------------------------------ unknown ids
def _phase2_ready(sim: CodeRedSim) -> None:
    wait_until(sim, lambda s: bool(pending_calls(s)))


def _unknown_call_cases() -> list[Case]:
    def dispatch(kind: str) -> Callable[[CodeRedSim], tuple[Any, list[str]]]:
        def build(sim: CodeRedSim) -> tuple[Any, list[str]]:
            _phase2_ready(sim)
            unit = free_units(sim, kind)[0]
            return act(f"dispatch_{kind.lower()}", ambulance_id=unit, call_id="C99"), [
                "'C99'",
                *pending_calls(sim),
            ]

        return build

    def triage(sim: CodeRedSim) -> tuple[Any, list[str]]:
        _phase2_ready(sim)
        return act("triage_call", call_id="C99", priority="P2"), ["'C99'", *pending_calls(sim)]

    def unit(action_type: str, amb: str) -> Callable[[CodeRedSim], tuple[Any, list[str]]]:
        def build(sim: CodeRedSim) -> tuple[Any, list[str]]:
            _phase2_ready(sim)
            return act(action_type, ambulance_id=amb, call_id=pending_calls(sim)[0]), [
                f"{amb!r}",
                "ALS1",
                "BLS3",
            ]

        return build

    def hidden_patient(action_type: str, **params: Any) -> Callable[[CodeRedSim], tuple[Any, list[str]]]:
        """A caller's patient record exists but no crew has seen it: it must stay unknown."""

        def build(sim: CodeRedSim) -> tuple[Any, list[str]]:
            _phase2_ready(sim)
            hidden = next(p for p in sim.world.patients.values() if not p.visible)
            return act(action_type, patient_id=hidden.patient_id, **params), [
                f"no known patient {hidden.patient_id!r}",
                "known patients: none",
            ]

        return build

    return [
        Case("dispatch_als-unknown-call", "task4", 0, dispatch("ALS")),
        Case("dispatch_bls-unknown-call", "task5", 0, dispatch("BLS")),
        Case("triage-unknown-call", "task4", 0, triage),
        Case("dispatch_als-unknown-unit", "task4", 0, unit("dispatch_als", "ALS7")),
        Case("dispatch_bls-mutual-aid-not-arrived", "task5", 0, unit("dispatch_bls", "MA1")),
        Case("assign-hidden-patient", "task4", 0, hidden_patient("assign_hospital", hospital_id="H1")),
        Case("query-blood-hidden-patient", "task5", 0, hidden_patient("query_blood_type")),
        Case(
            "allocate-hidden-patient",
            "task4",
            0,
            hidden_patient("allocate_blood", hospital_id="H1", blood_type="O-", units=1),
        ),
    ]


def _fixed(action: dict[str, Any], expect: list[str]) -> Callable[[CodeRedSim], tuple[Any, list[str]]]:
    return lambda sim: (action, expect)


UNKNOWN_ID_CASES: list[Case] = [
    Case(
        "dispatch-unknown-unit",
        "task1",
        0,
        _fixed(act("dispatch_ambulance", ambulance_id="ALS9", patient_id="P1"), ["'ALS9'", "ALS1", "BLS3"]),
    ),
    Case(
        "dispatch-unknown-patient",
        "task1",
        0,
        _fixed(
            act("dispatch_ambulance", ambulance_id="ALS1", patient_id="P9"), ["'P9'", "known patients: P1"]
        ),
    ),
    Case(
        "assign-unknown-hospital",
        "task2",
        0,
        _fixed(act("assign_hospital", patient_id="P1", hospital_id="H9"), ["'H9'", "H1, H2, H3"]),
    ),
    Case(
        "assign-unknown-patient",
        "task2",
        0,
        _fixed(act("assign_hospital", patient_id="P3", hospital_id="H1"), ["'P3'", "P1, P2"]),
    ),
    Case(
        "prepare-unknown-hospital",
        "task1",
        0,
        _fixed(act("prepare_or", hospital_id="AIIMS", procedure="cath_lab"), ["'AIIMS'", "H1, H2, H3"]),
    ),
    Case(
        "page-unknown-hospital",
        "task1",
        0,
        _fixed(act("page_specialist", hospital_id="h1", specialty="cardiology"), ["'h1'", "H1, H2, H3"]),
    ),
    Case(
        "preempt-unknown-hospital",
        "task1",
        0,
        _fixed(act("preempt_or", hospital_id="H4", or_id="OR1"), ["'H4'", "H1, H2, H3"]),
    ),
    Case(
        "preempt-unknown-or",
        "task1",
        0,
        _fixed(act("preempt_or", hospital_id="H1", or_id="OR9"), ["'OR9'", "OR1, OR2, OR3"]),
    ),
    Case(
        "preempt-or-at-hospital-without-ors",
        "task1",
        0,
        _fixed(act("preempt_or", hospital_id="H3", or_id="OR1"), ["'OR1'", "its ORs: none"]),
    ),
    Case(
        "allocate-unknown-patient",
        "task3",
        0,
        _fixed(
            act("allocate_blood", patient_id="P42", hospital_id="H1", blood_type="O-", units=1),
            ["'P42'", "P1, P2, P3, P4, P5"],
        ),
    ),
    Case(
        "allocate-unknown-hospital",
        "task3",
        0,
        _fixed(
            act("allocate_blood", patient_id="P1", hospital_id="H0", blood_type="O-", units=1),
            ["'H0'", "H1, H2, H3"],
        ),
    ),
    Case(
        "transfer-unknown-source",
        "task3",
        0,
        _fixed(
            act("transfer_blood", from_hospital_id="BANK", to_hospital_id="H1", blood_type="O-", units=1),
            ["'BANK'", "H1, H2, H3"],
        ),
    ),
    Case(
        "transfer-unknown-destination",
        "task3",
        0,
        _fixed(
            act("transfer_blood", from_hospital_id="H1", to_hospital_id="H5", blood_type="O-", units=1),
            ["'H5'", "H1, H2, H3"],
        ),
    ),
    Case(
        "query-blood-unknown-patient",
        "task1",
        0,
        _fixed(act("query_blood_type", patient_id="P2"), ["'P2'", "known patients: P1"]),
    ),
    Case(
        "query-or-unknown-hospital",
        "task1",
        0,
        _fixed(act("query_or_status", hospital_id="H9"), ["'H9'", "H1, H2, H3"]),
    ),
    Case(
        "specialist-absent-at-district-hospital",
        "task1",
        0,
        _fixed(
            act("page_specialist", hospital_id="H2", specialty="cardiology"),
            ["H2 has no cardiology", "trauma_surgery", "obstetrics"],
        ),
    ),
    Case(
        "specialist-absent-at-chc",
        "task2",
        0,
        _fixed(
            act("page_specialist", hospital_id="H3", specialty="neurology"), ["H3 has no neurology", "none"]
        ),
    ),
    Case(
        "no-cath-lab-at-district-hospital",
        "task1",
        0,
        _fixed(
            act("prepare_or", hospital_id="H2", procedure="cath_lab"),
            ["H2 has no OR for cath_lab", "general"],
        ),
    ),
    Case(
        "no-or-at-chc",
        "task3",
        0,
        _fixed(
            act("prepare_or", hospital_id="H3", procedure="trauma_surgery"),
            ["H3 has no OR for trauma_surgery", "offers: none"],
        ),
    ),
    *_unknown_call_cases(),
]


@pytest.mark.parametrize("case", UNKNOWN_ID_CASES, ids=lambda c: c.name)
def test_unknown_ids(case: Case) -> None:
    assert_refused(case.task_id, _seed(case), case.build)


# ------------------------------------------------------------------------------ impossible now
def _busy_unit(sim: CodeRedSim) -> tuple[Any, list[str]]:
    play(sim, [act("dispatch_ambulance", ambulance_id="ALS1", patient_id="P1")])
    return act("dispatch_ambulance", ambulance_id="ALS1", patient_id="P2"), [
        "ALS1 is en_route (P1)",
        "free units now: ALS2, BLS1, BLS2, BLS3",
    ]


def _patient_served(sim: CodeRedSim) -> tuple[Any, list[str]]:
    play(sim, [act("dispatch_ambulance", ambulance_id="ALS1", patient_id="P1")])
    return act("dispatch_ambulance", ambulance_id="ALS2", patient_id="P1"), [
        "P1 is unit_en_route",
        "patients waiting: none",
    ]


def _heuristic_until(sim: CodeRedSim, status: tuple[str, ...]) -> str:
    """Play the heuristic agent until some patient reaches one of ``status``; return its id."""
    agent = make_agent("heuristic")
    agent.reset(sim.task.task_id, sim.seed)
    for _ in range(sim.max_steps - 2):
        for p in sim.world.patients.values():
            if p.visible and p.status in status:
                return p.patient_id
        assert not sim.done
        sim.step(agent.act(sim.observation()))
    raise AssertionError(f"no patient reached {status}")


def _blood_after_treatment(sim: CodeRedSim) -> tuple[Any, list[str]]:
    # task2: the first patient in treatment does not end the episode (the second is still open)
    pid = _heuristic_until(sim, ("in_treatment", "treated"))
    status = sim.world.patients[pid].status
    return act("allocate_blood", patient_id=pid, hospital_id="H1", blood_type="O-", units=1), [
        f"{pid} is {status}",
        "only before treatment",
    ]


def _assign_after_arrival(sim: CodeRedSim) -> tuple[Any, list[str]]:
    pid = _heuristic_until(sim, ("at_hospital",))
    return act("assign_hospital", patient_id=pid, hospital_id="H2"), [
        f"{pid} is at_hospital",
        "before arrival",
    ]


def _dispatch_treated(sim: CodeRedSim) -> tuple[Any, list[str]]:
    pid = _heuristic_until(sim, ("at_hospital",))
    return act("dispatch_ambulance", ambulance_id="BLS3", patient_id=pid), [
        f"{pid} is at_hospital",
        "needs no unit",
    ]


def _with_dispatched_call(sim: CodeRedSim) -> str:
    """Dispatch the farthest free ALS unit to the first pending call (so it stays dispatched)."""
    _phase2_ready(sim)
    call = pending_calls(sim)[0]
    w = sim.world
    patient = w.patients[w.calls[call].patient_id]

    def minutes(unit: str) -> float:
        return w.net.minutes(w.ambulances[unit].node, patient.node)

    unit = max(free_units(sim, "ALS"), key=minutes)
    play(sim, [act("dispatch_als", ambulance_id=unit, call_id=call)])
    assert w.calls[call].status == "dispatched"
    return call


def _call_dispatched_twice(sim: CodeRedSim) -> tuple[Any, list[str]]:
    call = _with_dispatched_call(sim)
    return act("dispatch_bls", ambulance_id=free_units(sim, "BLS")[0], call_id=call), [
        f"call {call} is dispatched",
        "pending calls:",
    ]


def _p4_on_dispatched(sim: CodeRedSim) -> tuple[Any, list[str]]:
    call = _with_dispatched_call(sim)
    return act("triage_call", call_id=call, priority="P4"), [call, "P4", "without a unit"]


def _busy_unit_phase2(sim: CodeRedSim) -> tuple[Any, list[str]]:
    call = _with_dispatched_call(sim)
    unit = sim.world.calls[call].ambulance_id
    wait_until(sim, lambda s: any(c != call for c in pending_calls(s)))
    other = next(c for c in pending_calls(sim) if c != call)
    assert sim.world.ambulances[unit].status in ("en_route", "on_scene", "transporting", "at_hospital")
    return act("dispatch_als", ambulance_id=unit, call_id=other), [
        f"{unit} is",
        "cannot take a job",
        *free_units(sim, "ALS"),
    ]


def _closed_call(action_type: str) -> Callable[[CodeRedSim], tuple[Any, list[str]]]:
    def build(sim: CodeRedSim) -> tuple[Any, list[str]]:
        _phase2_ready(sim)
        call = pending_calls(sim)[0]
        play(sim, [act("triage_call", call_id=call, priority="P4")])
        if action_type == "triage_call":
            return act("triage_call", call_id=call, priority="P1"), [
                f"call {call} is closed_advice",
                "calls open for triage",
            ]
        kind = "ALS" if action_type == "dispatch_als" else "BLS"
        return act(action_type, ambulance_id=free_units(sim, kind)[0], call_id=call), [
            f"call {call} is closed_advice",
            "pending calls",
        ]

    return build


def _wrong_kind(action_type: str, unit: str, kind: str) -> Callable[[CodeRedSim], tuple[Any, list[str]]]:
    def build(sim: CodeRedSim) -> tuple[Any, list[str]]:
        _phase2_ready(sim)
        free = free_units(sim, kind)
        return act(action_type, ambulance_id=unit, call_id=pending_calls(sim)[0]), [
            f"{unit} is a",
            f"free {kind} units now: {', '.join(free)}",
        ]

    return build


def _diverted(sim: CodeRedSim) -> tuple[Any, list[str]]:
    d = next(d for d in sim.world.disruptions if d.kind == "hospital_diversion")
    wait_until(sim, lambda s: d.active)
    others = [h for h in ("H1", "H2", "H3") if h != d.hospital_id]
    return act("assign_hospital", patient_id="P5", hospital_id=d.hospital_id), [
        f"{d.hospital_id} is on diversion",
        f"open hospitals: {', '.join(others)}",
    ]


def _second_prep(sim: CodeRedSim) -> tuple[Any, list[str]]:
    play(sim, [act("prepare_or", hospital_id="H1", procedure="cath_lab")])
    return act("prepare_or", hospital_id="H1", procedure="stroke_intervention"), [
        "no idle OR for stroke_intervention at H1",
        "OR1 preparing",
        "preempt_or",
    ]


def _cath_lab_busy(sim: CodeRedSim) -> tuple[Any, list[str]]:
    return act("prepare_or", hospital_id="H1", procedure="cath_lab"), [
        "no idle OR for cath_lab at H1",
        "OR1 in_use",
        "preempt_or",
    ]


def _paged_twice(sim: CodeRedSim) -> tuple[Any, list[str]]:
    play(sim, [act("page_specialist", hospital_id="H1", specialty="cardiology")])
    until = sim.world.hospitals["H1"].specialists["cardiology"].until
    return act("page_specialist", hospital_id="H1", specialty="cardiology"), [
        "cardiology is already paged",
        f"arrives t{until}",
    ]


def _paged_present(sim: CodeRedSim) -> tuple[Any, list[str]]:
    play(sim, [act("page_specialist", hospital_id="H2", specialty="obstetrics")])
    spec = sim.world.hospitals["H2"].specialists["obstetrics"]
    wait_until(sim, lambda s: spec.state == "present")
    return act("page_specialist", hospital_id="H2", specialty="obstetrics"), [
        "obstetrics is already present",
        f"t{spec.until}",
    ]


def _specialist_unavailable(sim: CodeRedSim) -> tuple[Any, list[str]]:
    d = next(d for d in sim.world.disruptions if d.kind == "specialist_unavailable")
    wait_until(sim, lambda s: d.active)
    return act("page_specialist", hospital_id="H1", specialty=d.specialty), [
        f"{d.specialty} is already unavailable",
        f"unavailable until t{d.end}",
    ]


def _preempt_idle(sim: CodeRedSim) -> tuple[Any, list[str]]:
    h1 = sim.world.hospitals["H1"]
    electives = [r.or_id for r in h1.ors if r.state == "in_use" and r.elective]
    return act("preempt_or", hospital_id="H1", or_id="OR2"), [
        "OR2 is idle, not running an elective case",
        f"elective cases there: {', '.join(electives) or 'none'}",
    ]


def _preempt_prepared(sim: CodeRedSim) -> tuple[Any, list[str]]:
    play(sim, [act("prepare_or", hospital_id="H1", procedure="cath_lab")])
    return act("preempt_or", hospital_id="H1", or_id="OR1"), ["OR1 is preparing", "elective cases there"]


def _typed(sim: CodeRedSim) -> str:
    play(sim, [act("query_blood_type", patient_id="P1")])
    wait_until(sim, lambda s: s.world.patients["P1"].blood_type_known)
    return sim.world.patients["P1"].blood_type


def _incompatible(sim: CodeRedSim) -> tuple[Any, list[str]]:
    btype = _typed(sim)
    bad = next(t for t in BLOOD_TYPES if t not in COMPATIBLE_DONORS[btype])
    return act("allocate_blood", patient_id="P1", hospital_id="H1", blood_type=bad, units=1), [
        f"{bad} is incompatible",
        f"type {btype}",
        f"compatible: {', '.join(COMPATIBLE_DONORS[btype])}",
    ]


def _untyped_non_group_o(sim: CodeRedSim) -> tuple[Any, list[str]]:
    p = sim.world.patients["P1"]
    p.sex, p.age = "M", 60
    return act("allocate_blood", patient_id="P1", hospital_id="H1", blood_type="A+", units=2), [
        "unknown",
        "only O+, O- can be given uncross-matched",
        "query_blood_type",
    ]


def _untyped_o_pos_for_a_young_woman(sim: CodeRedSim) -> tuple[Any, list[str]]:
    p = sim.world.patients["P1"]
    p.sex, p.age = "F", 30
    return act("allocate_blood", patient_id="P1", hospital_id="H1", blood_type="O+", units=2), [
        "only O- can be given uncross-matched",
        "child-bearing age",
    ]


def _insufficient_allocate(sim: CodeRedSim) -> tuple[Any, list[str]]:
    stock = sim.world.hospitals["H3"].blood["O-"]
    assert stock < 6
    return act("allocate_blood", patient_id="P1", hospital_id="H3", blood_type="O-", units=stock + 1), [
        f"H3 has {stock} unit(s) of O-",
        f"asked for {stock + 1}",
    ]


def _insufficient_transfer(sim: CodeRedSim) -> tuple[Any, list[str]]:
    assert sim.world.hospitals["H2"].blood["AB-"] == 0
    return act("transfer_blood", from_hospital_id="H2", to_hospital_id="H1", blood_type="AB-", units=1), [
        "H2 has 0 unit(s) of AB-",
        "asked for 1",
    ]


def _transfer_from_chc(sim: CodeRedSim) -> tuple[Any, list[str]]:
    stock = sim.world.hospitals["H3"].blood["O-"]
    return act(
        "transfer_blood", from_hospital_id="H3", to_hospital_id="H1", blood_type="O-", units=stock + 1
    ), [
        f"H3 has {stock} unit(s) of O-",
    ]


def _after_reserving_all(sim: CodeRedSim) -> tuple[Any, list[str]]:
    """Stock reserved by an allocation is no longer available to a transfer."""
    stock = sim.world.hospitals["H3"].blood["O-"]
    play(sim, [act("allocate_blood", patient_id="P1", hospital_id="H3", blood_type="O-", units=stock)])
    return act("transfer_blood", from_hospital_id="H3", to_hospital_id="H1", blood_type="O-", units=1), [
        "H3 has 0 unit(s) of O-"
    ]


def _mutual_aid_twice(sim: CodeRedSim) -> tuple[Any, list[str]]:
    play(sim, [act("request_mutual_aid")])
    return act("request_mutual_aid"), ["all 1 mutual-aid request(s)", "used"]


def _mutual_aid_served_target(sim: CodeRedSim) -> tuple[Any, list[str]]:
    play(sim, [act("dispatch_ambulance", ambulance_id="ALS1", patient_id="P1")])
    # what would be valid: the patient still waiting for a unit
    return act("request_mutual_aid", patient_id="P1"), ["'P1' is not a patient or call waiting", "P2"]


def _mutual_aid_closed_call(sim: CodeRedSim) -> tuple[Any, list[str]]:
    call = _with_dispatched_call(sim)
    return act("request_mutual_aid", call_id=call), [f"{call!r} is not a patient or call waiting"]


def _query_known(sim: CodeRedSim) -> tuple[Any, list[str]]:
    btype = _typed(sim)
    return act("query_blood_type", patient_id="P1"), [f"P1's blood type is already known: {btype}"]


def _query_pending(sim: CodeRedSim) -> tuple[Any, list[str]]:
    play(sim, [act("query_blood_type", patient_id="P1")])
    due = sim.world.patients["P1"].blood_type_ready_at
    return act("query_blood_type", patient_id="P1"), [f"result is due at t{due}"]


def _query_dead(sim: CodeRedSim) -> tuple[Any, list[str]]:
    wait_until(sim, lambda s: any(p.status == "deceased" for p in s.world.patients.values()), limit=25)
    dead = next(p.patient_id for p in sim.world.patients.values() if p.status == "deceased")
    return act("query_blood_type", patient_id=dead), [f"{dead} has died"]


def _allocate_dead(sim: CodeRedSim) -> tuple[Any, list[str]]:
    wait_until(sim, lambda s: any(p.status == "deceased" for p in s.world.patients.values()), limit=25)
    dead = next(p.patient_id for p in sim.world.patients.values() if p.status == "deceased")
    return act("allocate_blood", patient_id=dead, hospital_id="H1", blood_type="O-", units=1), [
        f"{dead} is deceased"
    ]


def _triage_on_scene(sim: CodeRedSim) -> tuple[Any, list[str]]:
    call = _with_dispatched_call(sim)
    wait_until(sim, lambda s: s.world.calls[call].status == "on_scene")
    return act("triage_call", call_id=call, priority="P2"), [
        f"call {call} is on_scene",
        "calls open for triage",
    ]


IMPOSSIBLE_CASES: list[Case] = [
    Case("busy-unit", "task3", 0, _busy_unit),
    Case("busy-unit-phase2", "task4", 0, _busy_unit_phase2),
    Case("patient-already-served", "task1", 0, _patient_served),
    Case("dispatch-to-treated-patient", "task1", 0, _dispatch_treated),
    Case("call-already-dispatched", "task4", 0, _call_dispatched_twice),
    Case("p4-on-dispatched-call", "task4", 0, _p4_on_dispatched),
    Case("triage-closed-call", "task4", 0, _closed_call("triage_call")),
    Case("dispatch-als-closed-call", "task5", 0, _closed_call("dispatch_als")),
    Case("dispatch-bls-closed-call", "task4", 0, _closed_call("dispatch_bls")),
    Case("triage-call-on-scene", "task4", 0, _triage_on_scene),
    Case("dispatch_als-with-bls-unit", "task4", 0, _wrong_kind("dispatch_als", "BLS1", "ALS")),
    Case("dispatch_bls-with-als-unit", "task5", 0, _wrong_kind("dispatch_bls", "ALS2", "BLS")),
    Case("assign-diverted-hospital", "task3", ("task3", "diversion"), _diverted),
    Case("no-idle-or-after-prep", "task1", ("task1", "cath_idle"), _second_prep),
    Case("no-idle-or-elective", "task1", ("task1", "cath_elective"), _cath_lab_busy),
    Case("specialist-already-paged", "task1", 0, _paged_twice),
    Case("specialist-already-present", "task1", 0, _paged_present),
    Case("specialist-unavailable", "task2", ("task2", "specialist_unavailable"), _specialist_unavailable),
    Case("preempt-idle-or", "task1", ("task1", "h1_or2_idle"), _preempt_idle),
    Case("preempt-prepared-or", "task1", ("task1", "cath_idle"), _preempt_prepared),
    Case("incompatible-blood", "task1", ("task1", "typed_not_ab_pos"), _incompatible),
    Case("untyped-non-group-o", "task1", 0, _untyped_non_group_o),
    Case("untyped-o-pos-young-woman", "task1", 0, _untyped_o_pos_for_a_young_woman),
    Case("insufficient-stock-allocate", "task1", 0, _insufficient_allocate),
    Case("insufficient-stock-transfer", "task3", 0, _insufficient_transfer),
    Case("insufficient-stock-transfer-chc", "task1", 0, _transfer_from_chc),
    Case("stock-already-reserved", "task3", 0, _after_reserving_all),
    Case(
        "transfer-same-hospital",
        "task3",
        0,
        _fixed(
            act("transfer_blood", from_hospital_id="H1", to_hospital_id="H1", blood_type="O-", units=1),
            ["must differ"],
        ),
    ),
    Case("blood-after-treatment", "task2", 0, _blood_after_treatment),
    Case("assign-after-arrival", "task1", 0, _assign_after_arrival),
    Case(
        "mutual-aid-task1",
        "task1",
        0,
        _fixed(act("request_mutual_aid"), ["task1 has no mutual-aid agreement"]),
    ),
    Case(
        "mutual-aid-task1-with-target",
        "task1",
        0,
        _fixed(act("request_mutual_aid", patient_id="P1"), ["task1 has no mutual-aid agreement"]),
    ),
    Case("mutual-aid-beyond-limit", "task2", 0, _mutual_aid_twice),
    Case("mutual-aid-closed-call", "task4", 0, _mutual_aid_closed_call),
    Case("query-blood-type-known", "task1", 0, _query_known),
    Case("query-blood-type-pending", "task1", 0, _query_pending),
    Case("query-blood-type-dead", "task3", 0, _query_dead),
    Case("allocate-blood-dead", "task3", 0, _allocate_dead),
]


@pytest.mark.parametrize("case", IMPOSSIBLE_CASES, ids=lambda c: c.name)
def test_impossible_now(case: Case) -> None:
    assert_refused(case.task_id, _seed(case), case.build)


@pytest.mark.parametrize(
    "build",
    [_fixed(act("request_mutual_aid", target_id="P9"), ["'P9'", "P1", "P2"]), _mutual_aid_served_target],
    ids=["unknown-target", "served-target"],
)
def test_mutual_aid_bad_target_lists_the_waiting_ones(
    build: Callable[[CodeRedSim], tuple[Any, list[str]]],
) -> None:
    """docs/MODEL.md#actions: the error says what would be valid -- here, who is waiting for a unit."""
    assert_refused("task2", 0, build)


def test_mutual_aid_beyond_limit_task5() -> None:
    def build(sim: CodeRedSim) -> tuple[Any, list[str]]:
        play(sim, [act("request_mutual_aid"), act("request_mutual_aid")])
        return act("request_mutual_aid"), ["all 2 mutual-aid request(s)"]

    assert_refused("task5", 0, build)


# ------------------------------------------------------------------------------ around the error
def test_error_is_cleared_by_the_next_valid_action() -> None:
    sim = CodeRedSim("task1", 0)
    out = sim.step({"action_type": "nope"})
    assert out.error and sim.observation()["last_action_error"] == out.error
    out = sim.step(act("query_or_status", hospital_id="H2"))
    assert out.error is None
    assert sim.observation()["last_action_error"] is None


def test_invalid_actions_never_raise_and_keep_counting() -> None:
    sim = CodeRedSim("task2", 3)
    garbage: list[Any] = [None, "x", 1, [], {}, {"action_type": "dispatch_ambulance"}, {"action_type": 0}]
    for i, raw in enumerate(garbage, start=1):
        out = sim.step(raw)
        assert out.error
        assert sim.world.ledger["invalid_action"] == i
        assert sim.clock == i * DECISION_COST_MIN
    assert sim.action_log == garbage


@pytest.mark.parametrize("task_id", ["task1", "task4"])
def test_step_after_done_is_refused_and_changes_nothing(task_id: str) -> None:
    sim = CodeRedSim(task_id, 1)
    while not sim.done:
        sim.step(WAIT)
    obs, grade = sim.observation(), sim.grade()
    state, log, steps, preview = world_state(sim), list(sim.action_log), sim.step_count, sim.score_preview
    for raw in (WAIT, act("dispatch_ambulance", ambulance_id="ALS1", patient_id="P1"), None, "garbage"):
        out = sim.step(raw)
        assert out.done is True
        assert out.reward == 0.0
        assert isinstance(out.error, str) and "over" in out.error
        assert sim.observation() == obs
        assert sim.grade() == grade
        assert world_state(sim) == state
        assert sim.action_log == log
        assert sim.step_count == steps
        assert sim.score_preview == preview
    assert obs["legal_actions"] == {}


def test_finish_then_step_is_refused() -> None:
    sim = CodeRedSim("task3", 2)
    play(sim, [act("dispatch_ambulance", ambulance_id="ALS1", patient_id="P1")])
    sim.finish()
    assert sim.done
    grade = sim.grade()
    out = sim.step(act("dispatch_ambulance", ambulance_id="ALS2", patient_id="P2"))
    assert out.error and out.done and out.reward == 0.0
    assert sim.grade() == grade
