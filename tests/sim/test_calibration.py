"""The model against the literature it cites, at the same delays (docs/MODEL.md#calibration).

Each row: what is compared, the literature value, the model value computed here, the tolerance
stated in the docs table, and the reference. ``python tests/sim/test_calibration.py`` prints the
table in the docs' markdown form."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from codered_env.sim import CodeRedSim
from codered_env.sim import params as P
from codered_env.sim.conditions import CONDITIONS, expected_outcome


@dataclass(frozen=True)
class Row:
    quantity: str
    at: str
    literature: float
    tolerance: float
    model: Callable[[], float]
    reference: str
    unit: str = ""


def _stemi_mortality(door_to_balloon: float, therapy: str = "pci", quality: float = 1.0) -> float:
    delay = door_to_balloon + P.STEMI_CALL_TO_DOOR_MIN
    return 100 * (1 - expected_outcome(CONDITIONS["stemi"], delay, quality, 0, therapy))


def _stroke_good(onset_to_treatment: float, therapy: str) -> float:
    return expected_outcome(CONDITIONS["stroke"], onset_to_treatment, 1.0, 0, therapy)


def _lysis_odds_ratio(hours: float) -> float:
    treated = _stroke_good(hours * 60, "lysis")
    base = P.STROKE_UNTREATED_GOOD
    return (treated / (1 - treated)) / (base / (1 - base))


def _haemorrhage_death(delay: float) -> float:
    return 100 * (1 - expected_outcome(CONDITIONS["trauma_haemorrhage"], delay, 1.0, 0))


def _trauma_odds_ratio_per_min(delay: float = 30.0) -> float:
    def odds(d: float) -> float:
        death = 1 - expected_outcome(CONDITIONS["trauma_major"], d, 1.0, 0)
        return death / (1 - death)

    return odds(delay + 1) / odds(delay)


def _arrest_decline_per_min(cpr: bool) -> float:
    cond = CONDITIONS["cardiac_arrest"]
    d = 5.0
    s0 = expected_outcome(cond, d, 1.0, 0, cpr_min=d if cpr else 0.0)
    s1 = expected_outcome(cond, d + 1, 1.0, 0, cpr_min=d + 1 if cpr else 0.0)
    return 100 * (1 - s1 / s0)


# ------------------------------------------------------------------ simulated in-hospital intervals
def _door_to_treatment(procedure: str, specialty: str, condition_seed_task: str, pre_activate: bool) -> float:
    """Median door-to-treatment over seeds with the room idle, measured in the simulation."""
    times = []
    for seed in range(40):
        sim = CodeRedSim(condition_seed_task, seed)
        world = sim.world
        pid = next(
            p.patient_id
            for p in world.patients.values()
            if CONDITIONS[p.condition].best_care and CONDITIONS[p.condition].best_care.procedure == procedure
        )
        room = world.hospitals["H1"].or_by_id("OR1")
        if room.state != "idle" or any(d.active for d in world.disruptions):
            continue
        world.disruptions = []  # the interval is measured without disruptions
        # only this patient: the other one (task2) is taken out of the picture
        for other in world.patients.values():
            if other.patient_id != pid:
                other.status = "released"
        plan: list[dict[str, Any]] = [
            {"action_type": "dispatch_ambulance", "ambulance_id": "ALS1", "patient_id": pid},
            {"action_type": "assign_hospital", "patient_id": pid, "hospital_id": "H1"},
        ]
        if pre_activate:
            plan += [
                {"action_type": "prepare_or", "hospital_id": "H1", "procedure": procedure},
                {"action_type": "page_specialist", "hospital_id": "H1", "specialty": specialty},
            ]
        for action in plan:
            assert sim.step(action).error is None
        p = world.patients[pid]
        while p.treatment_start is None and not sim.done:
            sim.step({"action_type": "maintain_plan"})
        if p.treatment_start is not None and p.first_hospital_arrival is not None:
            times.append(p.treatment_start - p.first_hospital_arrival)
    assert len(times) >= 5
    return statistics.median(times)


ROWS: list[Row] = [
    *[
        Row(
            "STEMI in-hospital mortality, primary PCI",
            f"door-to-balloon {d2b} min",
            lit,
            0.4,
            lambda d2b=d2b: _stemi_mortality(d2b),
            "Rathore 2009, BMJ 338:b1807",
            " %",
        )
        for d2b, lit in ((30, 3.0), (60, 3.5), (90, 4.3), (120, 5.6), (150, 7.0), (180, 8.4))
    ],
    Row(
        "STEMI mortality, fibrinolysis / primary PCI",
        "same delay (60 min door-to-needle/balloon)",
        9.0 / 7.0,
        0.05,
        lambda: _stemi_mortality(60, "lysis", P.STEMI_LYSIS_QUALITY) / _stemi_mortality(60),
        "Keeley 2003, Lancet 361:13 (9 % vs 7 %)",
    ),
    Row(
        "STEMI mortality without reperfusion",
        "any delay",
        13.0,
        0.5,
        lambda: _stemi_mortality(600),
        "GISSI-1 1986 control arm (21-day)",
        " %",
    ),
    Row(
        "Stroke IV thrombolysis, odds ratio for good outcome",
        "onset-to-needle 2.5 h (inside the <= 3 h group)",
        1.75,
        0.15,
        lambda: _lysis_odds_ratio(2.5),
        "Emberson 2014, Lancet 384:1929",
    ),
    Row(
        "Stroke IV thrombolysis, odds ratio for good outcome",
        "onset-to-needle 3.75 h (3-4.5 h group)",
        1.26,
        0.15,
        lambda: _lysis_odds_ratio(3.75),
        "Emberson 2014",
    ),
    Row(
        "Stroke IV thrombolysis, odds ratio for good outcome",
        "onset-to-needle 5 h (> 4.5 h: no benefit)",
        1.0,
        0.15,
        lambda: _lysis_odds_ratio(5.0),
        "Emberson 2014 (1.15, 95 % CI 0.95-1.40); product brief: none after 4.5 h",
    ),
    Row(
        "Stroke thrombectomy, mRS 0-2 at 90 days",
        "onset-to-puncture 238 min (HERMES median)",
        46.0,
        2.0,
        lambda: 100 * _stroke_good(238, "evt"),
        "Goyal 2016, Lancet 387:1723; Saver 2016, JAMA 316:1279",
        " %",
    ),
    Row(
        "Stroke thrombectomy, loss of mRS 0-2 per hour of delay",
        "from 4 h to 5 h after onset",
        5.2,
        0.5,
        lambda: 100 * (_stroke_good(240, "evt") - _stroke_good(300, "evt")),
        "HERMES / Dundee registry (product brief section 7)",
        " pp",
    ),
    Row(
        "Stroke, mRS 0-2 without reperfusion",
        "any delay",
        13.0,
        1.0,
        lambda: 100 * _stroke_good(900, "evt"),
        "DAWN 2018 control arm",
        " %",
    ),
    Row(
        "Haemorrhage needing laparotomy, added mortality",
        "delay 0 -> 90 min (1 % per 3 min)",
        30.0,
        2.0,
        lambda: _haemorrhage_death(90) - _haemorrhage_death(0),
        "Clarke 2002, J Trauma 52:420",
        " pp",
    ),
    Row(
        "Major trauma without shock, odds ratio of death per minute",
        "total EMS time 30 min",
        1.00,
        0.01,
        _trauma_odds_ratio_per_min,
        "Newgard 2010, Ann Emerg Med 55:235 (95 % CI 0.99-1.01)",
    ),
    Row(
        "Cardiac arrest, relative loss of survival per minute without CPR",
        "minute 5 -> 6 after collapse",
        8.5,
        1.5,
        lambda: _arrest_decline_per_min(cpr=False),
        "Larsen 1993; Valenzuela 1997; AHA (7-10 %/min)",
        " %",
    ),
    Row(
        "Cardiac arrest, relative loss of survival per minute with (telephone) CPR",
        "minute 5 -> 6 after collapse",
        3.5,
        0.5,
        lambda: _arrest_decline_per_min(cpr=True),
        "Larsen 1993; Valenzuela 1997; AHA (3-4 %/min)",
        " %",
    ),
    Row(
        "Door-to-device (PCI), field pre-activation",
        "simulated, median over seeds",
        40.0,
        5.0,
        lambda: _door_to_treatment("cath_lab", "cardiology", "task1", True),
        "ACTION Registry-GWTG / D2B Alliance medians (as cited in issue 8)",
        " min",
    ),
    Row(
        "Door-to-device (PCI), no pre-activation",
        "simulated, median over seeds",
        52.0,
        5.0,
        lambda: _door_to_treatment("cath_lab", "cardiology", "task1", False),
        "ACTION Registry-GWTG; Bradley 2006 (pre-activation saves ~12 min)",
        " min",
    ),
    Row(
        "Door-to-puncture (thrombectomy), pre-activation",
        "simulated, median over seeds",
        75.0,
        15.0,
        lambda: _door_to_treatment("stroke_intervention", "neurology", "task2", True),
        "registries: 60-90 min (e.g. STRATIS, GWTG-Stroke)",
        " min",
    ),
    Row(
        "Door-to-puncture (thrombectomy), no pre-activation",
        "simulated, median over seeds",
        75.0,
        15.0,
        lambda: _door_to_treatment("stroke_intervention", "neurology", "task2", False),
        "registries: 60-90 min (e.g. STRATIS, GWTG-Stroke)",
        " min",
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.quantity} @ {r.at}" for r in ROWS])
def test_model_matches_its_literature_table(row: Row) -> None:
    value = row.model()
    assert math.isfinite(value)
    assert abs(value - row.literature) <= row.tolerance, (
        f"{row.quantity} at {row.at}: model {value:.3f}, literature {row.literature} +/- {row.tolerance}"
    )


def markdown_table() -> str:
    lines = [
        "| quantity | at | literature | model | tolerance | reference |",
        "|---|---|---|---|---|---|",
    ]
    for r in ROWS:
        fmt = ".3f" if abs(r.literature) < 10 else ".1f"
        lines.append(
            f"| {r.quantity} | {r.at} | {r.literature:{fmt}}{r.unit} | {r.model():{fmt}}{r.unit} | "
            f"± {r.tolerance:g}{r.unit} | {r.reference} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown_table())
