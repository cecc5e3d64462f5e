"""Patient conditions: what each needs, how fast it worsens, and how outcome falls with delay.

Every condition states its true dispatch priority (MPDS-style, see triage.py), the target time
from the 108 call to definitive treatment, the care each hospital tier can give (procedure,
specialist, quality, therapy, in-hospital intervals), whether it needs blood, its deterioration
rate and its outcome curve. Every number comes from ``clinical.py`` or ``params.py`` with its source.

Outcome curves (expected survival or good-outcome probability as a function of the delay ``d``
in minutes from the call to definitive treatment, the therapy and the care quality ``q``):

* STEMI, primary PCI: in-hospital mortality ``m = 3.0 % x exp(0.00686 (d - 30 - 30)) / q``
  (Rathore 2009 against door-to-balloon time, the door ~30 min after the call), capped at the
  untreated 13 % (GISSI-1); fibrinolysis multiplies mortality by ~1.94 at the same delay
  (Keeley 2003's 1.34 was measured with PCI ~54 min later than lysis).
* Stroke (large-vessel occlusion), thrombectomy: good outcome (mRS 0-2)
  ``0.46 - 0.052 x (h - 238/60)`` with ``h`` hours from symptom onset (HERMES); IV
  thrombolysis: the untreated 13 % with odds x ``exp(0.28 (4.5 - h))`` up to 4.5 h, none after
  (Emberson 2014).
* Haemorrhagic trauma: death ``0.10 + e / 300 + 0.5 x p / 300`` with ``e`` minutes from hospital
  arrival (Clarke 2002, an ED-time slope, up to 90 ED minutes, then +0.5 pp/min) and ``p``
  prehospital minutes (half the slope: Newgard 2010 / 2015).
* Cardiac arrest: Larsen 1993's linear model, ``S0 x max(0, 1 - (5.5 T - 2.3 c) / 67)``.
* Major trauma without shock: weakly time-dependent, death ``0.05 x exp(0.002 d)`` (Newgard 2010).
* Labour and low-acuity conditions: nearly flat.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from . import clinical as C
from . import params as P
from .clinical import (
    OHCA_LARSEN_CPR_PER_MIN,
    OHCA_LARSEN_INTERCEPT_PCT,
    OHCA_LOSS_PER_MIN_NO_CPR,
    OHCA_SURVIVAL_AT_COLLAPSE,
)
from .params import PROCEDURE_DURATION_MIN, TIER_CHC, TIER_DISTRICT, TIER_TERTIARY

MINUTES_PER_HOUR = 60.0


@dataclass(frozen=True)
class Care:
    """Definitive care a hospital tier gives for a condition.

    Door-to-treatment is at least ``door_min``; a room the hospital itself has to ready is
    activated ``activation_min`` after arrival, and treatment starts ``room_min`` after the
    room is ready (clinical.py, in-hospital intervals)."""

    procedure: str | None  # OR procedure needed (None: no operating room)
    specialist: str | None  # specialist who must be present (None: ED team suffices)
    quality: float  # 1.0 full definitive care; < 1 partial (e.g. thrombolysis instead of PCI)
    door_min: int  # door-to-treatment when everything is ready
    label: str
    therapy: str = "definitive"  # selects the outcome curve: pci, lysis, evt, surgery, ...
    activation_min: int = 0
    room_min: int = 0


@dataclass(frozen=True)
class Condition:
    key: str
    label: str
    true_priority: str  # P1..P4
    target_min: int  # call -> definitive treatment target
    deterioration_per_min: float
    initial_reserve: tuple[float, float]
    scene_min: int
    untreated_outcome: float
    care_by_tier: dict[int, Care] = field(default_factory=dict)
    needs_blood: bool = False
    transport: bool = True
    transfer_target_min: int | None = None  # target when no capable hospital could take the patient
    fallback_care: Care | None = None  # given at a capable hospital whose lab is unavailable
    treated_on_scene: bool = False  # the crew's arrival starts definitive care (no transport)

    def target_for(self, relaxed: bool) -> int:
        return self.transfer_target_min if relaxed and self.transfer_target_min else self.target_min

    def care_at(self, tier: int) -> Care | None:
        return self.care_by_tier.get(tier)

    def diversion_waived(self, hospitals: Iterable[tuple[int, bool]]) -> bool:
        """Diversion does not turn away this patient: of ``hospitals`` (tier, on diversion now)
        some can treat them and every one that can is diverted (docs/MODEL.md §4.5)."""
        able = [diverted for tier, diverted in hospitals if tier in self.care_by_tier]
        return bool(able) and all(able)

    # cached: a condition never changes, and the rubric asks for these for every patient every step
    @functools.cached_property
    def best_care(self) -> Care | None:
        return self.care_by_tier.get(min(self.care_by_tier)) if self.care_by_tier else None

    @functools.cached_property
    def needs_prep(self) -> bool:
        """Does definitive care at the best tier need an OR, a specialist or blood?"""
        best = self.best_care
        return bool(best and (best.procedure or best.specialist)) or self.needs_blood

    def treatment_minutes(self, care: Care) -> int:
        return PROCEDURE_DURATION_MIN.get(care.procedure or "", C.DEFAULT_TREATMENT_MIN)


_STEMI_LYSIS = Care(None, None, C.STEMI_LYSIS_QUALITY, C.STEMI_LYSIS_DOOR_MIN, "thrombolysis", "lysis")
_STROKE_LYSIS = Care(None, None, 1.0, C.STROKE_LYSIS_DOOR_MIN, "IV thrombolysis", "lysis")


def _numbers(key: str) -> dict:
    n = C.CONDITION_NUMBERS[key]
    return {
        "target_min": n.target_min,
        "deterioration_per_min": n.deterioration_per_min,
        "initial_reserve": n.initial_reserve,
        "scene_min": n.scene_min,
        "transfer_target_min": n.transfer_target_min,
    }


def _low(key: str, label: str, priority: str) -> Condition:
    any_tier = Care(None, None, 1.0, C.ED_CARE_DOOR_MIN, "ED care")
    return Condition(
        key=key,
        label=label,
        true_priority=priority,
        care_by_tier={TIER_TERTIARY: any_tier, TIER_DISTRICT: any_tier, TIER_CHC: any_tier},
        untreated_outcome=C.LOW_ACUITY_UNTREATED_GOOD,
        **_numbers(key),
    )


_PCI = Care(
    "cath_lab",
    "cardiology",
    1.0,
    C.PCI_DOOR_MIN,
    "primary PCI",
    "pci",
    C.PCI_ACTIVATION_MIN,
    C.PCI_ROOM_TO_DEVICE_MIN,
)
_EVT = Care(
    "stroke_intervention",
    "neurology",
    1.0,
    C.EVT_DOOR_MIN,
    "thrombectomy",
    "evt",
    C.EVT_ACTIVATION_MIN,
    C.EVT_ROOM_TO_PUNCTURE_MIN,
)


def _surgery(quality: float, door: int, label: str) -> Care:
    return Care(
        "trauma_surgery", "trauma_surgery", quality, door, label, "surgery", 0, C.TRAUMA_ROOM_TO_INCISION_MIN
    )


CONDITIONS: dict[str, Condition] = {
    c.key: c
    for c in (
        Condition(
            key="stemi",
            label="STEMI",
            true_priority="P1",
            care_by_tier={TIER_TERTIARY: _PCI, TIER_DISTRICT: _STEMI_LYSIS},
            untreated_outcome=1.0 - C.STEMI_UNTREATED_MORTALITY,
            fallback_care=Care(
                None,
                None,
                C.STEMI_LYSIS_QUALITY,
                C.STEMI_LYSIS_DOOR_MIN,
                "thrombolysis (cath lab unavailable)",
                "lysis",
            ),
            **_numbers("stemi"),
        ),
        Condition(
            key="stroke",
            label="Stroke",
            true_priority="P1",
            care_by_tier={TIER_TERTIARY: _EVT, TIER_DISTRICT: _STROKE_LYSIS},
            untreated_outcome=C.STROKE_UNTREATED_GOOD,
            fallback_care=Care(
                None, None, 1.0, C.STROKE_LYSIS_DOOR_MIN, "IV thrombolysis (angio suite unavailable)", "lysis"
            ),
            **_numbers("stroke"),
        ),
        Condition(
            key="trauma_haemorrhage",
            label="Major trauma with haemorrhage",
            true_priority="P1",
            care_by_tier={
                TIER_TERTIARY: _surgery(1.0, C.TRAUMA_SURGERY_DOOR_MIN, "damage-control surgery"),
                TIER_DISTRICT: _surgery(
                    C.TIER2_TRAUMA_QUALITY, C.TRAUMA_SURGERY_DOOR_MIN, "damage-control surgery"
                ),
            },
            needs_blood=True,
            untreated_outcome=C.HAEMORRHAGE_UNTREATED_SURVIVAL,
            **_numbers("trauma_haemorrhage"),
        ),
        Condition(
            key="trauma_major",
            label="Major trauma",
            true_priority="P2",
            care_by_tier={
                TIER_TERTIARY: _surgery(1.0, C.TRAUMA_MAJOR_DOOR_MIN, "trauma surgery"),
                TIER_DISTRICT: _surgery(C.TIER2_TRAUMA_QUALITY, C.TRAUMA_MAJOR_DOOR_MIN, "trauma surgery"),
            },
            untreated_outcome=C.TRAUMA_UNTREATED_SURVIVAL,
            **_numbers("trauma_major"),
        ),
        Condition(
            key="labour",
            label="Labour",
            true_priority="P2",
            care_by_tier={
                TIER_TERTIARY: Care(
                    None, "obstetrics", 1.0, C.OBSTETRIC_DOOR_MIN, "obstetric care", "delivery"
                ),
                TIER_DISTRICT: Care(
                    None, "obstetrics", 1.0, C.OBSTETRIC_DOOR_MIN, "obstetric care", "delivery"
                ),
                TIER_CHC: Care(
                    None, None, C.CHC_DELIVERY_QUALITY, C.MIDWIFE_DOOR_MIN, "midwife delivery", "delivery"
                ),
            },
            untreated_outcome=C.LABOUR_UNTREATED_GOOD,
            **_numbers("labour"),
        ),
        _low("minor_injury", "Minor injury", "P3"),
        _low("fever", "Fever", "P3"),
        _low("gastritis", "Gastritis", "P3"),
        Condition(  # MPDS Alpha-level chest pain / breathing problem: a unit, cold
            key="anxiety",
            label="Anxiety / panic attack",
            true_priority="P3",
            transport=False,
            untreated_outcome=C.LOW_ACUITY_UNTREATED_GOOD,
            treated_on_scene=True,
            **_numbers("anxiety"),
        ),
        Condition(  # MPDS Echo; parameters and sources in clinical.py ("Cardiac arrest")
            key="cardiac_arrest",
            label="Cardiac arrest",
            true_priority="P1",
            transport=False,
            untreated_outcome=0.0,
            treated_on_scene=True,
            **_numbers("cardiac_arrest"),
        ),
        Condition(  # MPDS Omega: advice only, no unit needed
            key="minor_ailment",
            label="Minor ailment (advice only)",
            true_priority="P4",
            transport=False,
            untreated_outcome=1.0,
            treated_on_scene=True,
            **_numbers("minor_ailment"),
        ),
    )
}


def _stemi(d: float, q: float, therapy: str | None) -> float:
    door_to_balloon = d - C.STEMI_CALL_TO_DOOR_MIN
    m = C.STEMI_MORTALITY_AT_D2B_30 * math.exp(
        C.STEMI_MORTALITY_GROWTH_PER_MIN * (door_to_balloon - C.STEMI_RATHORE_REF_D2B_MIN)
    )
    return 1.0 - min(C.STEMI_UNTREATED_MORTALITY, m / q)


def _stroke(d: float, q: float, therapy: str | None, onset_min: int) -> float:
    onset_to_treatment = onset_min + d
    if therapy == "lysis":
        if onset_to_treatment >= C.STROKE_LYSIS_WINDOW_MIN:
            return C.STROKE_UNTREATED_GOOD
        hours_left = (C.STROKE_LYSIS_WINDOW_MIN - onset_to_treatment) / MINUTES_PER_HOUR
        base = C.STROKE_UNTREATED_GOOD
        odds = base / (1.0 - base) * math.exp(C.STROKE_LYSIS_LOG_OR_PER_HOUR * hours_left)
        return odds / (1.0 + odds)
    hours_late = (onset_to_treatment - C.STROKE_EVT_REF_ONSET_MIN) / MINUTES_PER_HOUR
    good = (C.STROKE_EVT_GOOD_AT_REF - C.STROKE_EVT_LOSS_PER_HOUR * hours_late) * q
    return max(C.STROKE_UNTREATED_GOOD, good)


def _haemorrhage(d: float, q: float, door_min: float | None) -> float:
    """``door_min``: minutes from the call to the first hospital door (None: unknown, the whole
    delay is counted at the ED slope -- the conservative estimate planners use)."""
    prehospital = 0.0 if door_min is None else min(d, max(0.0, door_min))
    in_hospital = d - prehospital
    linear = min(in_hospital, C.HAEMORRHAGE_LINEAR_UNTIL_MIN)
    late = max(0.0, in_hospital - C.HAEMORRHAGE_LINEAR_UNTIL_MIN)
    death = (
        C.HAEMORRHAGE_DEATH_AT_0
        + C.HAEMORRHAGE_DEATH_PER_MIN * (linear + C.HAEMORRHAGE_PREHOSPITAL_SHARE * prehospital)
        + C.HAEMORRHAGE_DEATH_PER_MIN_AFTER * late
    )
    return max(C.HAEMORRHAGE_UNTREATED_SURVIVAL, 1.0 - min(1.0, death / q))


def cardiac_arrest_survival(no_cpr_min: float, cpr_min: float) -> float:
    """Survival after an arrest reached by a crew after ``no_cpr_min`` minutes without CPR and
    ``cpr_min`` minutes with (telephone-assisted) CPR: Larsen 1993's linear model scaled to
    ``OHCA_SURVIVAL_AT_COLLAPSE`` (clinical.py, "Cardiac arrest")."""
    no_cpr, cpr = max(0.0, no_cpr_min), max(0.0, cpr_min)
    lost = OHCA_LOSS_PER_MIN_NO_CPR * (no_cpr + cpr) - OHCA_LARSEN_CPR_PER_MIN * cpr
    return OHCA_SURVIVAL_AT_COLLAPSE * max(0.0, 1.0 - lost / OHCA_LARSEN_INTERCEPT_PCT)


def expected_outcome(
    condition: Condition,
    delay_min: float,
    quality: float,
    onset_min: int,
    therapy: str | None = "definitive",
    cpr_min: float = 0.0,
    door_min: float | None = None,
) -> float:
    """Expected survival / good-outcome probability when ``therapy`` begins ``delay_min`` after
    the call; ``onset_min`` is the stroke symptom-onset lead before the call; ``cpr_min`` the
    part of the delay a cardiac arrest spent under telephone CPR; ``door_min`` the minutes from
    the call to the first hospital door (used by haemorrhage; None when not known)."""
    q = max(quality, C.MIN_CARE_QUALITY)
    d = max(0.0, delay_min)
    key = condition.key
    if key == "cardiac_arrest":
        cpr = min(d, max(0.0, cpr_min))
        return cardiac_arrest_survival(d - cpr, cpr) * q
    if key == "stemi":
        return _stemi(d, q, therapy)
    if key == "stroke":
        return _stroke(d, q, therapy, onset_min)
    if key == "trauma_haemorrhage":
        return _haemorrhage(d, q, door_min)
    if key == "trauma_major":
        death = C.TRAUMA_DEATH_AT_0 * math.exp(C.TRAUMA_DEATH_GROWTH_PER_MIN * d)
        return max(condition.untreated_outcome, 1.0 - death / q)
    if key == "labour":
        full = (C.LABOUR_GOOD_AT_0 - C.LABOUR_LOSS_PER_MIN * d) * q
        return max(condition.untreated_outcome, full + (1 - q) * C.LABOUR_PARTIAL_CARE_OUTCOME)
    return max(condition.untreated_outcome, C.LOW_ACUITY_GOOD_AT_0 - C.LOW_ACUITY_LOSS_PER_MIN * d)


SURVIVAL_CURVES = ("stemi", "trauma_haemorrhage", "trauma_major", "cardiac_arrest")


# thrombectomy at the reference delay against no treatment: good outcomes gained, deaths averted
_STROKE_GOOD_SPAN = C.STROKE_EVT_GOOD_AT_REF - C.STROKE_UNTREATED_GOOD
_STROKE_DEATHS_AVERTED = C.STROKE_DEATH_UNTREATED - C.STROKE_DEATH_EVT


def expected_death(condition: Condition, outcome: float, died: bool = False) -> float:
    """Probability of death behind an expected ``outcome``. Where the curve is survival (STEMI,
    trauma, cardiac arrest) it is ``1 - outcome``. The stroke curve is a good functional outcome,
    so its deaths follow HERMES mortality (18.9 % untreated, 15.3 % after thrombectomy at the
    reference delay), in proportion to the good-outcome gain achieved. Labour and low-acuity
    curves are not survival curves: no death unless the patient died in the episode."""
    if died:
        return 1.0
    if condition.key in SURVIVAL_CURVES:
        return min(1.0, max(0.0, 1.0 - outcome))
    if condition.key == "stroke":
        share = min(1.0, max(0.0, (outcome - C.STROKE_UNTREATED_GOOD) / _STROKE_GOOD_SPAN))
        return C.STROKE_DEATH_UNTREATED - share * _STROKE_DEATHS_AVERTED
    return 0.0


def death_slope(condition: Condition) -> float:
    """Expected deaths averted per unit of expected outcome gained (``expected_death``'s slope):
    1 on a survival curve, the HERMES mortality gain over the good-outcome gain for stroke, else 0."""
    if condition.key in SURVIVAL_CURVES:
        return 1.0
    if condition.key == "stroke":
        return _STROKE_DEATHS_AVERTED / _STROKE_GOOD_SPAN
    return 0.0


def best_outcome(condition: Condition, onset_min: int) -> float:
    """Outcome had full definitive care begun at ``SECONDARY_BEST_DELAY_FRACTION`` of the target."""
    best = condition.best_care
    therapy = best.therapy if best else "definitive"
    delay = P.SECONDARY_BEST_DELAY_FRACTION * condition.target_min
    return expected_outcome(condition, delay, 1.0, onset_min, therapy)


def benefit_kept(
    condition: Condition,
    delay_min: float,
    quality: float,
    onset_min: int,
    therapy: str | None,
    cpr_min: float = 0.0,
    door_min: float | None = None,
) -> float:
    """Share of the achievable benefit still obtained: the time score of one treated patient.

    ``(outcome(d, care given) - untreated) / (outcome(0, best care) - untreated)``, clipped to
    0..1. It falls as steeply as the condition's own outcome curve does. For a cardiac arrest
    (untreated survival 0) this is the survival ratio S(d, CPR minutes) / S(0): each minute
    without CPR costs 5.5/67 of it, each minute under telephone CPR 3.2/67 (Larsen 1993)."""
    best = condition.best_care
    best_therapy = best.therapy if best else "definitive"
    ceiling = expected_outcome(condition, 0.0, 1.0, onset_min, best_therapy)
    span = ceiling - condition.untreated_outcome
    if span <= 0:
        return 1.0
    got = expected_outcome(condition, delay_min, quality, onset_min, therapy, cpr_min, door_min)
    got -= condition.untreated_outcome
    return min(1.0, max(0.0, got / span))
