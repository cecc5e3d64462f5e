"""Patient conditions: what each needs, how fast it worsens, and how outcome falls with delay.

Every condition states its true dispatch priority (MPDS-style, see triage.py), the target time
from the 108 call to definitive treatment, the care each hospital tier can give (procedure,
specialist, quality), whether it needs blood, its deterioration rate and its outcome curve.

Outcome curves (expected survival or good-outcome probability as a function of the delay ``d``
in minutes from the call to definitive treatment, and the care quality ``q``):

* STEMI: 1-year mortality ``m = 0.06 x 1.075^(d/30) / q`` (De Luca 2004; Rathore 2009 slope of
  ~+1 pp per 10 min), capped at the untreated 30 %.
* Stroke: good outcome ``(0.49 - 0.052 x (h - 1)) x q`` where ``h`` is hours from symptom onset
  (HERMES / Dundee registry), floored at the untreated 13 % (DAWN control arm).
* Haemorrhagic trauma: death ``0.10 + 0.0035 x min(d, 90)`` then +0.5 pp/min (Clarke 2002).
* Major trauma without shock: weakly time-dependent, ``0.05 + 0.0005 d`` (Newgard 2010).
* Labour and low-acuity conditions: nearly flat.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .params import (
    ADVICE_SCENE_MIN,
    OHCA_DECLINE_PER_MIN_CPR,
    OHCA_DECLINE_PER_MIN_NO_CPR,
    OHCA_DETERIORATION_PER_MIN,
    OHCA_INITIAL_RESERVE,
    OHCA_SCENE_MIN,
    OHCA_SURVIVAL_AT_COLLAPSE,
    OHCA_TARGET_MIN,
    PROCEDURE_DURATION_MIN,
)


@dataclass(frozen=True)
class Care:
    """Definitive care a hospital tier gives for a condition."""

    procedure: str | None  # OR procedure needed (None: no operating room)
    specialist: str | None  # specialist who must be present (None: ED team suffices)
    quality: float  # 1.0 full definitive care; < 1 partial (e.g. thrombolysis instead of PCI)
    door_min: int  # door-to-treatment when everything is ready
    label: str


@dataclass(frozen=True)
class Condition:
    key: str
    label: str
    true_priority: str  # P1..P4
    target_min: int  # call -> definitive treatment target
    care_by_tier: dict[int, Care] = field(default_factory=dict)
    needs_blood: bool = False
    transport: bool = True
    deterioration_per_min: float = 0.0
    initial_reserve: tuple[float, float] = (0.9, 1.0)
    scene_min: int = 12
    untreated_outcome: float = 0.9
    transfer_target_min: int | None = None  # target when the patient needed an inter-facility transfer
    treated_on_scene: bool = False  # the crew's arrival starts definitive care (no transport)

    def target_for(self, transferred: bool) -> int:
        return self.transfer_target_min if transferred and self.transfer_target_min else self.target_min

    def care_at(self, tier: int) -> Care | None:
        return self.care_by_tier.get(tier)

    @property
    def needs_prep(self) -> bool:
        """Does definitive care at the best tier need an OR, a specialist or blood?"""
        best = self.care_by_tier.get(min(self.care_by_tier)) if self.care_by_tier else None
        return bool(best and (best.procedure or best.specialist)) or self.needs_blood

    def treatment_minutes(self, care: Care) -> int:
        return PROCEDURE_DURATION_MIN.get(care.procedure or "", 30)


def _low(key: str, label: str, priority: str, deterioration: float, scene: int) -> Condition:
    any_tier = Care(None, None, 1.0, 15, "ED care")
    return Condition(
        key=key,
        label=label,
        true_priority=priority,
        target_min=120,
        care_by_tier={1: any_tier, 2: any_tier, 3: any_tier},
        deterioration_per_min=deterioration,
        initial_reserve=(0.88, 0.98),
        scene_min=scene,
        untreated_outcome=0.97,
    )


CONDITIONS: dict[str, Condition] = {
    c.key: c
    for c in (
        Condition(
            key="stemi",
            label="STEMI",
            true_priority="P1",
            target_min=90,  # FMC-to-device 90 min (ACC/AHA 2025)
            transfer_target_min=120,  # 120 min when first taken to a non-PCI hospital (ACC/AHA, ESC)
            care_by_tier={
                1: Care("cath_lab", "cardiology", 1.0, 10, "primary PCI"),
                2: Care(None, None, 0.8, 30, "thrombolysis"),  # door-to-needle 30 min
            },
            deterioration_per_min=0.0035,
            initial_reserve=(0.68, 0.84),
            scene_min=12,
            untreated_outcome=0.70,
        ),
        Condition(
            key="stroke",
            label="Stroke",
            true_priority="P1",
            target_min=80,
            care_by_tier={
                1: Care("stroke_intervention", "neurology", 1.0, 15, "thrombectomy"),
                2: Care(None, None, 0.75, 45, "thrombolysis"),  # door-to-needle <= 45 good
            },
            deterioration_per_min=0.003,
            initial_reserve=(0.68, 0.84),
            scene_min=12,
            untreated_outcome=0.13,
        ),
        Condition(
            key="trauma_haemorrhage",
            label="Major trauma with haemorrhage",
            true_priority="P1",
            target_min=60,  # golden hour (Motor Vehicles Act s.2(12-A))
            care_by_tier={
                1: Care("trauma_surgery", "trauma_surgery", 1.0, 10, "damage-control surgery"),
                2: Care("trauma_surgery", "trauma_surgery", 0.9, 10, "damage-control surgery"),
            },
            needs_blood=True,
            deterioration_per_min=0.008,
            initial_reserve=(0.56, 0.72),
            scene_min=10,
            untreated_outcome=0.35,
        ),
        Condition(
            key="trauma_major",
            label="Major trauma",
            true_priority="P2",
            target_min=90,
            care_by_tier={
                1: Care("trauma_surgery", "trauma_surgery", 1.0, 15, "trauma surgery"),
                2: Care("trauma_surgery", "trauma_surgery", 0.9, 15, "trauma surgery"),
            },
            deterioration_per_min=0.002,
            initial_reserve=(0.66, 0.8),
            scene_min=14,
            untreated_outcome=0.85,
        ),
        Condition(
            key="labour",
            label="Labour",
            true_priority="P2",
            target_min=60,
            care_by_tier={
                1: Care(None, "obstetrics", 1.0, 10, "obstetric care"),
                2: Care(None, "obstetrics", 1.0, 10, "obstetric care"),
                3: Care(None, None, 0.7, 15, "midwife delivery"),
            },
            deterioration_per_min=0.0008,
            initial_reserve=(0.85, 0.95),
            scene_min=10,
            untreated_outcome=0.93,
        ),
        _low("minor_injury", "Minor injury", "P3", 0.0002, 10),
        _low("fever", "Fever", "P3", 0.0003, 10),
        _low("gastritis", "Gastritis", "P3", 0.0002, 10),
        Condition(  # MPDS Alpha-level chest pain / breathing problem: a unit, cold
            key="anxiety",
            label="Anxiety / panic attack",
            true_priority="P3",
            target_min=120,
            transport=False,
            initial_reserve=(0.95, 1.0),
            scene_min=10,
            untreated_outcome=1.0,
            treated_on_scene=True,
        ),
        Condition(  # MPDS Echo; parameters and sources in params.py ("Cardiac arrest")
            key="cardiac_arrest",
            label="Cardiac arrest",
            true_priority="P1",
            target_min=OHCA_TARGET_MIN,
            transport=False,
            deterioration_per_min=OHCA_DETERIORATION_PER_MIN,
            initial_reserve=OHCA_INITIAL_RESERVE,
            scene_min=OHCA_SCENE_MIN,
            untreated_outcome=0.0,
            treated_on_scene=True,
        ),
        Condition(  # MPDS Omega: advice only, no unit needed
            key="minor_ailment",
            label="Minor ailment (advice only)",
            true_priority="P4",
            target_min=120,
            transport=False,
            initial_reserve=(0.95, 1.0),
            scene_min=ADVICE_SCENE_MIN,
            untreated_outcome=1.0,
            treated_on_scene=True,
        ),
    )
}


def cardiac_arrest_survival(no_cpr_min: float, cpr_min: float) -> float:
    """Survival after an arrest reached by a crew after ``no_cpr_min`` minutes without CPR and
    ``cpr_min`` minutes with (telephone-assisted) CPR (params.py, "Cardiac arrest")."""
    return (
        OHCA_SURVIVAL_AT_COLLAPSE
        * (1.0 - OHCA_DECLINE_PER_MIN_NO_CPR) ** max(0.0, no_cpr_min)
        * (1.0 - OHCA_DECLINE_PER_MIN_CPR) ** max(0.0, cpr_min)
    )


def expected_outcome(
    condition: Condition, delay_min: float, quality: float, onset_min: int, cpr_min: float = 0.0
) -> float:
    """Expected survival / good-outcome probability after treatment begins ``delay_min`` after
    the call; ``onset_min`` is the stroke symptom-onset lead before the call; ``cpr_min`` the
    part of the delay a cardiac arrest spent under telephone CPR."""
    q = max(quality, 0.05)
    d = max(0.0, delay_min)
    key = condition.key
    if key == "cardiac_arrest":
        cpr = min(d, max(0.0, cpr_min))
        return cardiac_arrest_survival(d - cpr, cpr) * q
    if key == "stemi":
        mortality = min(0.30, 0.06 * 1.075 ** (d / 30.0) / q)
        return 1.0 - mortality
    if key == "stroke":
        hours = (onset_min + d) / 60.0
        good = (0.49 - 0.052 * max(0.0, hours - 1.0)) * q
        return max(condition.untreated_outcome, good)
    if key == "trauma_haemorrhage":
        death = 0.10 + 0.0035 * min(d, 90.0) + 0.005 * max(0.0, d - 90.0)
        return max(condition.untreated_outcome, 1.0 - min(1.0, death / q))
    if key == "trauma_major":
        return max(condition.untreated_outcome, 1.0 - (0.05 + 0.0005 * d) / q)
    if key == "labour":
        return max(condition.untreated_outcome, (0.995 - 0.0004 * d) * q + (1 - q) * 0.9)
    return max(condition.untreated_outcome, 0.999 - 0.0001 * d)


def best_outcome(condition: Condition, onset_min: int) -> float:
    """Outcome had definitive full-quality care begun at 40 % of the target time."""
    return expected_outcome(condition, 0.4 * condition.target_min, 1.0, onset_min)
