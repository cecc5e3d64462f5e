"""The clinical numbers of the model, with their sources: outcome curves, in-hospital intervals,
cardiac arrest, and the per-condition targets, deterioration and scene times.

conditions.py builds the conditions and their care from these; the sources are cited beside each
value (full references in docs/MODEL.md). Values marked ``[assumption]`` are modelling choices
with no public figure behind them. All times are in simulated minutes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# --------------------------------------------------------------------------------------------
# Outcome curves (conditions.expected_outcome) and the time score built on them (rubric.py).
# Each curve is calibrated to the table in docs/MODEL.md#calibration; tests/sim/test_calibration.py
# evaluates the model at the published delays and holds it to the stated tolerances.
# ``d`` is minutes from the 108 call to the start of definitive care.
# --------------------------------------------------------------------------------------------
# STEMI, primary PCI: in-hospital mortality against door-to-balloon time (Rathore 2009, BMJ
# 338:b1807: 3.0 % at 30 min .. 8.4 % at 180 min), fitted as m = 3.0 % x exp(k (D2B - 30)) with
# k = ln(8.4 / 3.0) / 150. The model's clock starts at the call, Rathore's at the door:
# D2B = d - STEMI_CALL_TO_DOOR_MIN (design choice: the typical call-to-door time in this city).
STEMI_MORTALITY_AT_D2B_30 = 0.030
STEMI_RATHORE_REF_D2B_MIN = 30
STEMI_MORTALITY_GROWTH_PER_MIN = 0.00686
STEMI_CALL_TO_DOOR_MIN = 30
STEMI_UNTREATED_MORTALITY = 0.13  # no reperfusion: GISSI-1 control arm, 21-day mortality 13.0 %
# Fibrinolysis instead of primary PCI: short-term mortality 9.3 % (360/3867) vs 7.0 % (270/3872)
# in the 23 trials of Keeley 2003 (Lancet 361:13), a ratio of 1.34 -- but measured with PCI starting
# ~54 min later than lysis (the trials' PCI-related delay: Boersma 2006, Eur Heart J 27:779, 55 min;
# Asseburg 2007, Heart 93:1244). At the *same* delay the ratio is therefore 1.34 x exp(k x 54) with
# the Rathore slope k below: ~1.94. PCI then stays better as long as it starts less than
# ln(1.94) / k ~ 96 min after lysis could, in line with guidelines that prefer PCI within 90-120 min
# of first medical contact over lysis within 30 (ACC/AHA 2025; ESC). The care quality of lysis is
# the inverse of the ratio. tests/sim/test_calibration.py measures the break-even through play.
STEMI_KEELEY_LYSIS_DEATHS = (360, 3867)
STEMI_KEELEY_PCI_DEATHS = (270, 3872)
STEMI_KEELEY_PCI_RELATED_DELAY_MIN = 54
STEMI_LYSIS_MORTALITY_RATIO = (
    (STEMI_KEELEY_LYSIS_DEATHS[0] / STEMI_KEELEY_LYSIS_DEATHS[1])
    / (STEMI_KEELEY_PCI_DEATHS[0] / STEMI_KEELEY_PCI_DEATHS[1])
    * math.exp(STEMI_MORTALITY_GROWTH_PER_MIN * STEMI_KEELEY_PCI_RELATED_DELAY_MIN)
)
STEMI_LYSIS_QUALITY = 1.0 / STEMI_LYSIS_MORTALITY_RATIO
# Stroke (large-vessel occlusion). Thrombectomy: mRS 0-2 at 90 days 46.0 % in the HERMES
# endovascular arm (Goyal 2016, Lancet 387:1723) at its median onset-to-puncture of 238 min
# (Saver 2016, JAMA 316:1279), falling 5.2 points per hour of delay (product brief section 7,
# HERMES / Dundee registry); floored at the untreated level.
STROKE_EVT_GOOD_AT_REF = 0.46
STROKE_EVT_REF_ONSET_MIN = 238
STROKE_EVT_LOSS_PER_HOUR = 0.052
STROKE_UNTREATED_GOOD = 0.13  # mRS 0-2 without reperfusion: DAWN control arm 13 %
# 90-day mortality, HERMES pooled analysis (Goyal 2016): 15.3 % thrombectomy vs 18.9 % control.
# Used only for the expected deaths shown beside the score (conditions.expected_death).
STROKE_DEATH_EVT = 0.153
STROKE_DEATH_UNTREATED = 0.189
# IV thrombolysis: odds ratio for a good outcome 1.75 (<= 3 h), 1.26 (3-4.5 h), none after 4.5 h
# (Emberson 2014, Lancet 384:1929). Fitted as log OR = s x (4.5 h - onset-to-needle hours).
STROKE_LYSIS_LOG_OR_PER_HOUR = 0.28
STROKE_LYSIS_WINDOW_MIN = 270
# Haemorrhagic shock needing laparotomy: death rises ~1 % per 3 min *spent in the ED* before
# laparotomy, up to 90 min (Clarke 2002, J Trauma 52:420, hypotensive patients); beyond 90 min the
# slope steepens [assumption]. That slope runs from hospital arrival. Before arrival the evidence is
# weaker: Newgard 2010 (Ann Emerg Med 55:235) found no association of EMS intervals with mortality
# in physiologically abnormal trauma patients (SBP <= 90 included), while Newgard 2015 (PMC4478150)
# found out-of-hospital time > 60 min harmful (aOR 2.37) in shock
# patients needing early critical interventions -- this condition. The prehospital slope is half
# of Clarke's [modelling choice between the two]. Inter-facility transfer time counts as ED time.
HAEMORRHAGE_DEATH_AT_0 = 0.10  # [assumption] operative mortality with no delay
HAEMORRHAGE_DEATH_PER_MIN = 1.0 / 300.0  # per ED minute (Clarke 2002)
HAEMORRHAGE_PREHOSPITAL_SHARE = 0.5  # prehospital slope = this x the ED slope [modelling choice]
HAEMORRHAGE_LINEAR_UNTIL_MIN = 90  # ED minutes
HAEMORRHAGE_DEATH_PER_MIN_AFTER = 0.005  # [assumption]
HAEMORRHAGE_UNTREATED_SURVIVAL = 0.35  # [assumption] untreated haemorrhagic shock
# Major trauma without shock: survival barely depends on EMS minutes (Newgard 2010, Ann Emerg
# Med 55:235: adjusted OR per minute of total EMS time 1.00, 95 % CI 0.99-1.01, in a cohort of
# physiologically abnormal trauma patients -- hypotension included, so the figure covers more than
# trauma without shock; it is used here for the non-shock case).
TRAUMA_DEATH_AT_0 = 0.05  # [assumption]
TRAUMA_DEATH_GROWTH_PER_MIN = 0.002  # odds ratio ~1.002 per minute, inside Newgard's CI
TRAUMA_UNTREATED_SURVIVAL = 0.85  # [assumption]
# Uncomplicated labour and low-acuity conditions: weakly time-dependent [design choice: they
# must weigh little per minute next to P1 conditions].
LABOUR_GOOD_AT_0 = 0.995
LABOUR_LOSS_PER_MIN = 0.0001
LABOUR_PARTIAL_CARE_OUTCOME = 0.9  # outcome share not covered by partial-quality care
LABOUR_UNTREATED_GOOD = 0.93
LOW_ACUITY_GOOD_AT_0 = 0.999
LOW_ACUITY_LOSS_PER_MIN = 0.00005
LOW_ACUITY_UNTREATED_GOOD = 0.97
MIN_CARE_QUALITY = 0.05  # guard against division by a zero quality [design choice]


@dataclass(frozen=True)
class ConditionNumbers:
    """Per-condition numbers used by conditions.CONDITIONS."""

    target_min: int  # call -> definitive treatment target
    deterioration_per_min: float  # hidden reserve lost per untreated minute [assumption]
    initial_reserve: tuple[float, float]  # reserve when the call comes in [assumption]
    scene_min: int  # on-scene time before jitter (JEMSS mean 12-15)
    transfer_target_min: int | None = None


CONDITION_NUMBERS: dict[str, ConditionNumbers] = {
    # FMC-to-device 90 min; 120 min when first taken to a non-PCI hospital (ACC/AHA 2025, ESC)
    "stemi": ConditionNumbers(90, 0.0035, (0.68, 0.84), 12, transfer_target_min=120),
    # onset-to-needle within 4.5 h: a call-to-treatment target of 80 min [design choice]
    "stroke": ConditionNumbers(80, 0.003, (0.68, 0.84), 12),
    # golden hour (Motor Vehicles Act s.2(12-A)); short scene time for load-and-go
    "trauma_haemorrhage": ConditionNumbers(60, 0.008, (0.56, 0.72), 10),
    "trauma_major": ConditionNumbers(90, 0.002, (0.66, 0.8), 14),  # [design choice]
    "labour": ConditionNumbers(60, 0.0008, (0.85, 0.95), 10),  # [design choice]
    "minor_injury": ConditionNumbers(120, 0.0002, (0.88, 0.98), 10),  # P3: 120 min [design choice]
    "fever": ConditionNumbers(120, 0.0003, (0.88, 0.98), 10),
    "gastritis": ConditionNumbers(120, 0.0002, (0.88, 0.98), 10),
    "anxiety": ConditionNumbers(120, 0.0, (0.95, 1.0), 10),  # P4: no transport needed
}

# --------------------------------------------------------------------------------------------
# In-hospital intervals (conditions.Care). Door-to-treatment = max(door floor, the hospital's
# own activation + room preparation + room-to-treatment). Pre-activation from the field removes
# the activation and preparation legs.
# --------------------------------------------------------------------------------------------
# Primary PCI: door-to-device ~40 min with field pre-activation, ~52 min without (US registry
# medians, ACTION Registry-GWTG / D2B Alliance; Bradley 2006: pre-activation
# saves ~12 min). Without it: ECG + activation 12 min, cath lab 20-30 min, lab-to-device 15 min.
PCI_DOOR_MIN = 40
PCI_ACTIVATION_MIN = 12
PCI_ROOM_TO_DEVICE_MIN = 15
# Thrombectomy door-to-puncture: the SNIS "ideal" target is < 60 min (JNIS standards); the Rapid
# Reperfusion Registry's median was 112 min (IQR 68-176; Sun 2014, JAHA 3:e000859). The model is
# a well-run centre between the two [modelling choice]: with pre-activation 60; without, CT/CTA
# read and decision 35 min, lab 20-30 min, on table 20 min (~78 min measured).
EVT_DOOR_MIN = 60
EVT_ACTIVATION_MIN = 35
EVT_ROOM_TO_PUNCTURE_MIN = 20
STEMI_LYSIS_DOOR_MIN = 30  # door-to-needle 30 min (ACC/AHA, ESC)
STROKE_LYSIS_DOOR_MIN = 45  # door-to-needle <= 60, good <= 45 (AHA Target: Stroke)
TRAUMA_SURGERY_DOOR_MIN = 10  # [assumption] primary survey + FAST before theatre
TRAUMA_MAJOR_DOOR_MIN = 15  # [assumption]
TRAUMA_ROOM_TO_INCISION_MIN = 5  # [assumption] patient into theatre, knife to skin
OBSTETRIC_DOOR_MIN = 10  # [assumption]
MIDWIFE_DOOR_MIN = 15  # [assumption]
ED_CARE_DOOR_MIN = 15  # [assumption] low-acuity ED care
TIER2_TRAUMA_QUALITY = 0.9  # district-hospital surgery vs trauma centre [assumption]
# Uncomplicated deliveries belong at a CHC first-referral unit (IPHS CHC 2012: 24x7 normal
# delivery services), so midwife care there is full quality.
CHC_DELIVERY_QUALITY = 1.0
DEFAULT_TREATMENT_MIN = 30  # ED treatment without an OR occupies the patient this long [assumption]

# --------------------------------------------------------------------------------------------
# Cardiac arrest (MPDS Echo, P1). Larsen 1993 (Ann Emerg Med 22:1652) fitted survival as a
# *linear* function: 67 % - 2.3 %/min to CPR - 1.1 %/min to defibrillation - 2.1 %/min to ALS
# care. A crew brings CPR, the defibrillator and ALS together, so without bystander CPR survival
# falls 5.5 points a minute and is gone at ~12 min; each minute of (telephone) CPR before the
# crew gives back 2.3 points. The model keeps Larsen's shape and scales it to its own survival
# at collapse: S(T, c) = S0 x max(0, 1 - (5.5 T - 2.3 c) / 67), T = minutes from the call to the
# crew, c = minutes of telephone CPR in between. Dispatcher-assisted (telephone) CPR, given once
# the call is coded P1, nearly doubles the CPR rate (Rea 2001, Circulation 104:2513: adjusted OR
# for survival 1.45; Wu 2018, Resuscitation 122:135: adjusted OR 1.64). Crew arrival
# (defibrillation, ALS) is the definitive care here.
# --------------------------------------------------------------------------------------------
OHCA_SURVIVAL_AT_COLLAPSE = 0.30  # witnessed arrest defibrillated at once [design choice]
OHCA_LARSEN_INTERCEPT_PCT = 67.0
OHCA_LARSEN_CPR_PER_MIN = 2.3
OHCA_LARSEN_DEFIB_PER_MIN = 1.1
OHCA_LARSEN_ALS_PER_MIN = 2.1
OHCA_LOSS_PER_MIN_NO_CPR = OHCA_LARSEN_CPR_PER_MIN + OHCA_LARSEN_DEFIB_PER_MIN + OHCA_LARSEN_ALS_PER_MIN
OHCA_LOSS_PER_MIN_CPR = OHCA_LARSEN_DEFIB_PER_MIN + OHCA_LARSEN_ALS_PER_MIN  # under CPR
OHCA_TARGET_MIN = 8  # call -> crew at the patient (NFPA 1710 / AHA 8-min ALS response)
OHCA_INITIAL_RESERVE = (0.3, 0.4)  # physiological reserve at the call (dies in ~12-16 min)
OHCA_DETERIORATION_PER_MIN = 0.025
OHCA_SCENE_MIN = 25  # resuscitation on scene (ROSC or termination) [design choice]
TELEPHONE_CPR_FACTOR = OHCA_LOSS_PER_MIN_CPR / OHCA_LOSS_PER_MIN_NO_CPR  # slows the decline (Larsen)
ADVICE_SCENE_MIN = 10  # a crew sent to an advice-only caller [design choice]
ON_SCENE_CARE_QUALITY = 1.0  # care the crew gives on scene is the definitive care [design choice]

# Condition numbers of the Phase-2 additions (conditions.CONDITIONS reads them from here).
CONDITION_NUMBERS["cardiac_arrest"] = ConditionNumbers(
    OHCA_TARGET_MIN, OHCA_DETERIORATION_PER_MIN, OHCA_INITIAL_RESERVE, OHCA_SCENE_MIN
)
CONDITION_NUMBERS["minor_ailment"] = ConditionNumbers(120, 0.0, (0.95, 1.0), ADVICE_SCENE_MIN)  # P4
