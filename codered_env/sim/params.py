"""The tunable numbers of the simulation with their sources: clock, travel, the ambulance cycle,
hospitals' timings, blood, mutual aid and cascades, grading, scenario generation and triage.

The rest live in data modules of their own: clinical.py (outcome curves, in-hospital intervals,
cardiac arrest, per-condition numbers), facilities.py (Prakashnagar's hospitals and fleet) and
cityparams.py (generated cities). Nothing else in the package hard-codes a clinical, logistic or
grading constant. Values marked ``[assumption]`` are modelling choices with no public figure
behind them; the others cite the study or standard they come from (full references in
``docs/MODEL.md``). All times are in simulated minutes.
"""

from __future__ import annotations

# --------------------------------------------------------------------------------------------
# Clock
# --------------------------------------------------------------------------------------------
DECISION_COST_MIN = 1  # a dispatcher decision takes about a minute (108 call handling 60-90 s)
ACTION_ID_MAX_CHARS = 32  # design choice: longest id an action may name (ids here are <= 4 chars)
MAINTAIN_PLAN_CAP_MIN = 10  # maintain_plan jumps to the next event, at most this far [assumption]

# --------------------------------------------------------------------------------------------
# Travel (city graph in city.py)
# --------------------------------------------------------------------------------------------
LIGHTS_AND_SIRENS_FACTOR = 0.70  # response legs: -30..-38 % (Ho 1998/2001)
# Transport legs with lights and sirens: O'Brien 1999 (Prehosp Emerg Care 3:127) measured 3.8 min
# saved of a 14.9-min run (26 %); Marques-Baptista 2010 ~15 %; Hunt 1995 43.5 s on short urban
# runs. 0.80 is the middle of the 15-26 % range.
TRANSPORT_FACTOR = 0.80
NON_URGENT_FACTOR = 1.0  # P3 responses without lights and sirens (MPDS Alpha/Bravo plans)
TRAVEL_NOISE_CV = 0.20  # lognormal trip-time noise, CV 0.2-0.35 (Westgate 2016; Waterloo thesis)
PEAK_HOUR_FACTOR = 1.25  # 25-30 km/h peak vs 30-35 off-peak (Hindustan Times 2022)
ACCIDENT_CONGESTION_FACTOR = 2.5  # peak speeds x0.4-0.5 of free flow on blocked links [assumption]
BLOOD_COURIER_DISPATCH_MIN = 10  # packing and hand-off before an inter-hospital blood run [assumption]

# --------------------------------------------------------------------------------------------
# Ambulance cycle
# --------------------------------------------------------------------------------------------
ON_SCENE_JITTER_MIN = 2  # +/- uniform jitter on the condition's scene time (JEMSS: mean 12-15)
MCI_EXTRA_SCENE_MIN = 5  # mass-casualty scenes take ~5 min longer (PubMed 33843570)
NO_TRANSPORT_SCENE_MIN = 10  # treat-and-release on scene (anxiety / panic)
FOUND_DEAD_SCENE_MIN = 5  # a crew that finds the patient dead clears the scene quickly [assumption]
MIN_SCENE_MIN = 3  # floor on any jittered scene time [assumption]
# prep_ready: a readiness part ready this many minutes after its prompt reference earns no
# credit (linear from 1 on time) -- a cath lab's whole activation window (CATH_LAB_PREP_RANGE)
# [design choice]
PREP_LATE_ZERO_MIN = 30
HANDOVER_MIN = 12  # median offload 11-16 min (NSW 2012; intjem)
HANDOVER_JITTER_MIN = 3
# Handover x 1.28 at a crowded hospital [assumption]. Schull 2003 (CMAJ 168:277) measured +28 % in
# the 90th-centile *transport* interval under ED crowding; no handover figure is published there,
# so the size is borrowed, not measured (NSW 2012 shows offload delays concentrate at crowded EDs).
CROWDED_HANDOVER_FACTOR = 1.28
ALS_DETERIORATION_FACTOR = 0.5  # paramedic care slows decline [assumption, ALS scope]
BLS_DETERIORATION_FACTOR = 0.85  # basic care (oxygen, positioning) [assumption]
ED_DETERIORATION_FACTOR = 0.6  # monitored in the emergency department [assumption]

# --------------------------------------------------------------------------------------------
# Hospitals
# --------------------------------------------------------------------------------------------
TIER_TERTIARY, TIER_DISTRICT, TIER_CHC = 1, 2, 3  # hospital tiers (identifiers, not quantities)
CATH_LAB_PREP_RANGE = (20, 30)  # cath lab ready 20-30 min after activation (Bradley 2006; SCAI)
OR_PREP_MIN_BY_TIER = {1: 15, 2: 30, 3: 30}  # OR staffed 15 min L-I/II, 30 min L-III (ACS COT)
ELECTIVE_CASE_PROBABILITY = 0.45  # an OR starts the episode running an elective list [assumption]
OR_HOLD_WINDOW_MIN = 40  # a prepared OR is held this long, then the set-up is wasted [assumption]
# Paged specialist arrives 10-15 min (tier 1) .. 20-25 min (tier 3): inside the ACS COT 15-min
# (level I/II) and 30-min (level III) surgeon response mandates.
SPECIALIST_PAGE_DELAY_BY_TIER = {1: (10, 15), 2: (15, 20), 3: (20, 25)}
SPECIALIST_STAY_AFTER_CASE_MIN = 15  # a specialist stays at least this long after a case [assumption]
SPECIALIST_WINDOW_MIN = 90  # a paged specialist stays this long without a patient [assumption]
# The procedures an OR can be readied for and the specialties that can be paged, in the order of
# the wire enums and the Gymnasium feature columns (HOSPITAL_SPECS below uses only these).
PROCEDURES: tuple[str, ...] = ("cath_lab", "trauma_surgery", "stroke_intervention", "general")
SPECIALTIES: tuple[str, ...] = ("cardiology", "neurology", "trauma_surgery", "obstetrics")
PROCEDURE_DURATION_MIN = {  # table time, after which the room is free again [assumption]
    "cath_lab": 60,
    "stroke_intervention": 60,
    "trauma_surgery": 90,
    "general": 45,
}
TRANSFER_DOOR_IN_DOOR_OUT_MIN = 45  # DIDO median 60-90 unless optimised; 45 here (Herrin 2011)
CROWDED_DOOR_FACTOR = 1.3  # slower ED care when crowded [assumption; Sprivulis 2006 reports mortality only]
CROWDING_HAZARD = 1.25  # mortality HR 1.2-1.3 when overcrowded (Sprivulis 2006)
CROWDING_DIVERSION_MIN = 30  # a hospital over capacity goes on diversion this long [assumption]

# --------------------------------------------------------------------------------------------
# Blood (per-hospital stock in generator.py)
# --------------------------------------------------------------------------------------------
BLOOD_TYPES = ("O-", "O+", "A-", "A+", "B-", "B+", "AB-", "AB+")
# Indian ABO/Rh distribution (Agrawal 2014, Asian J Transfus Sci: O+ 37, B+ 32, A+ 22, AB+ 7 %;
# Rh-negative ~5 %).
BLOOD_TYPE_FREQUENCY = {
    "O+": 0.355,
    "B+": 0.31,
    "A+": 0.215,
    "AB+": 0.07,
    "O-": 0.02,
    "B-": 0.015,
    "A-": 0.01,
    "AB-": 0.005,
}
O_NEG_RELEASE_MIN = 5  # emergency (uncross-matched group O) issue < 10 min (HSE Waterford)
# Type-specific units are issued after an immediate-spin cross-match on a sample in the issuing
# hospital's lab: 10-15 min from the sample (NZ Blood). Reserved before the patient (and so the
# sample) reaches that hospital, they are issued this long after arrival.
TYPE_SPECIFIC_MIN = 12
BLOOD_TYPE_QUERY_MIN = 5  # ABO/Rh typing result (focosi table: ABO-Rh 5-15 min)
HOSPITAL_TYPING_MIN = 5  # the receiving lab types an untyped patient on arrival
BLOOD_UNITS_PER_CASE = 2  # units started before surgery in haemorrhagic shock [assumption]
MAX_BLOOD_UNITS_PER_ACTION = 6
BLOOD_TRANSFUSION_FACTOR = 0.35  # blood at hand slows haemorrhagic decline [assumption, PROPPR]
NO_BLOOD_SURGERY_WAIT_MIN = 30  # surgery goes ahead without blood after this wait [assumption]
NO_BLOOD_QUALITY = 0.85

# --------------------------------------------------------------------------------------------
# Patients
# --------------------------------------------------------------------------------------------
VITALS_BANDS = (0.75, 0.5, 0.25)  # reserve thresholds that raise a vitals event
STROKE_ONSET_BEFORE_CALL_RANGE = (30, 120)  # minutes from symptom onset to the 108 call

# --------------------------------------------------------------------------------------------
# Mutual aid and cascades
# --------------------------------------------------------------------------------------------
MUTUAL_AID_UNIT_PREFIX = "MA"  # mutual-aid units are MA1, MA2, ... in request order
MUTUAL_AID_DELAY_RANGE = (10, 20)  # mobilisation before the unit reaches the entry node [assumption]
NEWS_CYCLE_DEATH_PROBABILITY = 0.7  # a death makes the news [assumption]
NEWS_CYCLE_WAIT_MIN = 30  # any caller left this long without a unit makes the news [assumption]
NEWS_CYCLE_SURGE_CALLS = (4, 6)  # extra low-acuity calls over the next 20 min [assumption]
NEWS_CYCLE_SURGE_SPREAD_MIN = 20
INCIDENT_ESCALATION_MIN = 15  # an unattended incident produces one more casualty after this

# --------------------------------------------------------------------------------------------
# Grading (rubric.py) -- weights are part of the public contract (product brief section 5;
# documented in docs/MODEL.md#grading)
# --------------------------------------------------------------------------------------------
RUBRIC_WEIGHTS = {
    "time_score": 0.32,
    "efficiency": 0.16,
    "secondary_harm": 0.16,
    "prep_ready": 0.16,
    "vitals_score_avg": 0.10,
    "cascade_score": 0.10,
}
PRIORITY_WEIGHT = {"P1": 3.0, "P2": 2.0, "P3": 1.0}
# Deaths first: a patient's weight is PRIORITY_WEIGHT + DEATH_WEIGHT x the expected deaths one
# unit of their outcome averts (1 on a survival curve, ~0.11 for stroke, 0 for labour and low
# acuity; conditions.death_slope), so deaths dominate the stake: a STEMI weighs 103, a stroke
# 13.9, low acuity 1. At 3, a stroke's better function outweighed a STEMI's death (9 task2 score
# inversions on the red team); at 50 one return inversion remained, at 100 and 200 none
# [design choice, measured by bench/redteam/probe.py, docs/MODEL.md §8].
DEATH_WEIGHT = 100.0
# Waste per scored patient discounts ``efficiency`` as exp(-waste): continuous, never free past a
# floor. Each weight is sized below the outcome cost of what the waste could buy: one expected
# death per 100 patients moves a score by 0.03-0.12 (the red-team family's slope, docs/MODEL.md
# §8.1), while one unit of waste per patient costs at most 0.22 x (1 - exp(-w)) ~ 0.2 w
# [design choice, re-measured by bench/redteam/probe.py].
PENALTY = {
    "invalid_action": 0.02,
    "wasted_page": 0.03,
    "unused_or_prep": 0.03,
    "preempt_or": 0.03,
    "unneeded_blood": 0.02,
    # response charges, each counted as the chance given the report that the response was wrong
    "over_triage": 0.03,  # ALS sent: P(P3 or P4)
    "dispatch_no_need": 0.02,  # any unit sent: P(P4)
    "under_triage": 0.06,  # cold or BLS response: P(P1); advice: P(P1 or P2). Dearer than over
    # per minute a caller waited while a crew that could answer them stood free, times the chance
    # it could (ALS for a P1, any crew for P2/P3; dispatch.charge_waiting). The call-to-dispatch
    # interval is a standard EMS measure (108 dispatches within ~3 min, Financial Express; Alberta
    # <= 90 s, Calgary Herald 2020); the rate is sized so that holding responses a few minutes
    # costs more than re-planning after the wait was measured to gain, and below the outcome
    # differences between crews of either kind (docs/MODEL.md#red-team) [design choice]
    "dispatch_wait": 0.01,
}
# A mutual-aid unit is a neighbouring district's ALS crew; borrowing one needlessly costs that
# district cover, which no patient of this episode pays for. A request is judged when it is made,
# on what the agent saw (handlers.request_mutual_aid's unneeded test), never by whether the unit
# was used later, so holding a request back cannot avoid the charge; kept below one unnecessary
# unit dispatch's charge so it never outweighs an outcome difference [design choice]
MUTUAL_AID_PENALTY_UNNEEDED = 0.01
SECONDARY_RESPONSE_FULL_MIN = 10  # a secondary casualty reached within this earns full credit
SECONDARY_RESPONSE_ZERO_MIN = 40
SCORE_FLOOR = 0.01
SCORE_CEIL = 0.99

# --------------------------------------------------------------------------------------------
# Scenario generation (generator.py): what the seed draws from. [assumption] unless stated.
# --------------------------------------------------------------------------------------------
PEAK_HOUR_PROBABILITY = 0.4  # share of episodes set in peak-hour traffic


BLOOD_STOCK_JITTER = 1
ELECTIVE_REMAINING_RANGE = (10, 90)  # minutes left on an elective case at t0
BASELINE_HR_RANGE = (68, 92)  # a patient's heart rate before deterioration
BASELINE_SBP_RANGE = (118, 142)

# Phase-2 call mix: ~30 % pregnancy-related calls in Tamil Nadu 108 (Financial Express), many
# non-emergency calls (Arunachal Times 2022).
CALL_MIX: dict[str, float] = {
    "stemi": 0.10,
    "stroke": 0.07,
    "trauma_haemorrhage": 0.06,
    "trauma_major": 0.08,
    "labour": 0.18,
    "minor_injury": 0.11,
    "fever": 0.09,
    "gastritis": 0.09,
    "anxiety": 0.09,
    "cardiac_arrest": 0.05,  # see "Cardiac arrest" below
    "minor_ailment": 0.08,  # advice-only calls (see "Triage likelihood model" below)
}
SURGE_MIX: dict[str, float] = {
    "anxiety": 0.3,
    "minor_injury": 0.2,
    "fever": 0.15,
    "gastritis": 0.1,
    "minor_ailment": 0.15,
    "stemi": 0.1,
}
PHASE2_CALLS = {"task4": (8, 45), "task5": (9, 50)}  # (calls, minute of the last scheduled call)
INCIDENT_CALL_RANGE = (5, 15)  # task5: when the incident's first calls come in
INCIDENT_SECONDARY_DELAY_RANGE = (15, 25)  # task5: a secondary casualty found later
TASK3_SECONDARY_RANGE = (18, 30)  # task3: a casualty found in the wreckage

# Disruption windows: (start range, duration range) in minutes.
ROAD_DISRUPTION_WINDOW = ((3, 15), (40, 70))
DIVERSION_WINDOW = ((5, 20), (30, 45))
OR_FAILURE_WINDOW = ((0, 10), (45, 90))
SPECIALIST_OUT_WINDOW = ((0, 5), (40, 70))
RIVERSIDE_CLOSURE_PROBABILITY = 0.3  # a closure hits the flood-prone riverside links anyway

# --------------------------------------------------------------------------------------------
# Transfusion service (dynamics/blood.py, handlers.allocate_blood)
# --------------------------------------------------------------------------------------------
# Uncross-matched group O: O-pos is acceptable for men and for women past child-bearing age;
# women of child-bearing age get O-neg (BSH 2013 guideline on pre-transfusion testing;
# Yazer 2018, Transfusion: RhD-positive uncross-matched units in trauma).
CHILDBEARING_AGE_RANGE = (15, 49)  # WHO definition of women of reproductive age
# Patient sex and age: drawn from the caller-report tables of the triage model
# (REPORT_SHARE_MALE, REPORT_AGE_BANDS below), so a phase-2 patient is who the caller described.
BLOOD_PENDING_CREDIT = 0.5  # prep credit for blood reserved but still being issued [design choice]

# --------------------------------------------------------------------------------------------
# Grading details (rubric.py) [design choices, documented in docs/MODEL.md#grading]
# --------------------------------------------------------------------------------------------
# prep_ready: the share of a patient's credit that readiness decides; the rest follows the benefit
# kept. Readiness already acts on outcomes through the door-to-treatment delay (time_score); this
# share sizes the process credit on top so that it cannot outweigh about one expected death per
# 100 patients (docs/MODEL.md#red-team: holding every preparation 10 min moved prep_ready 4x as
# much as time_score at a share of 1) [design choice]
PREP_READINESS_SHARE = 0.25
# The running preview's value of a patient no crew has reached falls linearly to 0 over these
# minutes (or by the horizon), so the step reward charges waiting while it happens; reaching them
# restores it. An unseen caller (valued at the report's posterior) falls over 30 min, half again
# the National Ambulance Service's 20-min response target (NAS Operational Guidelines 2026); a
# known patient over 90 min, the STEMI first-contact-to-device target (ACC/AHA). Measured by the
# red team under the common per-decision discount 0.99 (docs/MODEL.md#red-team): over the whole
# horizon, leaving callers waiting through many short decisions out-returned reaching them; at 30
# min for known patients too, the dip before a late crew arrived cost more return than the
# outcome it cost; at 15 min for unseen callers a policy serving nobody kept less of their value in
# the potential's path (task5 return 0.109 -> 0.077 at score 0.010), but return inversions among
# poor padded mixes moved rather than vanished (task5, mixes seeds 1-4: 7 -> 3, new pairs) and
# Spearman(return, outcome) fell 0.01. Also tried: a caller nobody has sent a crew to keeping 0.7
# of the hope (dispatch rewarded when it happens, pace recalibrated): the floor's return fell (task5
# `mix3.4` 0.109 -> 0.084, padded 0.154 -> 0.118) and fewer reach steps were negative (15-16 % vs
# 17-18 %), but the inversions moved to mixes holding dispatch 2 min or triage 5 min (task5 mixes
# seed 3, every twin: 5 -> 5), Spearman(return, outcome) fell 0.01 (seeds 1000-1059); at 0 (the
# crew's ETA valued once sent) holding dispatch under-returned: 29 inversions [design choice]
UNSEEN_CALLER_WINDOW_MIN = 30
UNREACHED_PATIENT_WINDOW_MIN = 90
# In call-queue tasks the preview expects a dispatcher to answer callers as they have answered
# callers like them (plan.answer_rates: those given the same code, or the untriaged): the value of
# every caller no crew has been sent to is scaled by (PRIOR + answered) / (PRIOR + answered +
# unanswered) over their group, unanswered a caller left UNANSWERED_AFTER_MIN minutes while a crew
# that could answer stood free (half the NAS 20-min response target) or advised, at the chance they
# needed a crew. Good play leaves none (the rate stays 1); a policy serving nobody loses its
# callers' value within minutes instead of over their window, whose early minutes a return
# discounted per decision let padding buy (task5: a padded near-noop mix out-returned acting on
# one decision in two by +0.036 with 1.9 more deaths/100). A prior of 2 answered callers a group:
# one left unanswered takes a third of the others' value, two a half (8-18 callers a task). Where
# every patient is known from the start no fresh callers arrive to pad, and the rate hit lazy play:
# task3 `mix4.22+hold-assign-5` out-returned `mix4.1` (+0.022 +- 0.008, 1.1 more deaths/100,
# 66000-66099). Taking instead 1/10 of a caller's own value per such minute until a crew is sent,
# every held dispatch dipped until sent: 20 return inversions on tasks 3 and 5 (1000-1059). One
# pool for every caller dipped the P1 callers of a mix that served only P1 while it held their
# triage 5 min (the P2 callers it never served emptied the pool): a worse-outcome mix out-returned
# it (task5, 2.0 more deaths/100, 53000-53059: +0.036 +- 0.014; with news-cycle callers at their
# chance, +0.029). Grouping untriaged callers by their report's likeliest level left them dipped
# (+0.024); starting each group at the other groups' rate, more so (+0.032) [design choice]
UNANSWERED_AFTER_MIN = 10.0
ANSWER_RATE_PRIOR = 2.0
# Hospital-load credit lost per overcrowding diversion. The diversion's outcome cost (patients sent
# farther) is already in every outcome-based component, so this process charge is sized to about
# that cost (0.002-0.003 of the score per diversion, a few minutes' delay of one P1 patient): at 0.5
# holding P3 dispatches 10 min to spread arrivals gained task3 +0.003 [design choice]
OVERCROWDING_LOAD_PENALTY = 0.1
NEWS_CYCLE_TRIAGE_FACTOR = 0.5  # triage credit halves once a news cycle broke out
SECONDARY_BEST_DELAY_FRACTION = 0.4  # secondary_harm's "best outcome": care at 40 % of target
DEATHS_PER_N_PATIENTS = 100  # expected deaths are shown per 100 graded patients [design choice: a rate]

# --------------------------------------------------------------------------------------------
# Displayed vitals (obs_rows.displayed_vitals): deviation from baseline at zero reserve
# [design choice: shock physiology, ATLS class IV at reserve 0]. Stroke raises blood pressure
# (acute hypertensive response in ~75 % of strokes: Qureshi 2007, Circulation) and lowers GCS.
# --------------------------------------------------------------------------------------------
VITALS_AT_ZERO_RESERVE = {"hr": 60, "sbp": -75, "spo2": -16, "rr": 16, "gcs": -6}
VITALS_AT_ZERO_RESERVE_STROKE = {"hr": 15, "sbp": 45, "spo2": -8, "rr": 8, "gcs": -10}
VITALS_BASELINE = {"spo2": 99, "rr": 14, "gcs": 15}
GCS_MIN = 3

# ============================================================================================
# Phase 2: triage likelihood model, response modes, cardiac arrest, budgets.
# Read by triage.py (reports, posterior, callbacks), generator.py and handlers.py.
# ============================================================================================

# --------------------------------------------------------------------------------------------
# Triage likelihood model (triage.py docstring). How ambiguous real calls are, from dispatch
# triage accuracy studies: a criteria-based dispatch centre sending lights and sirens to 86 % of
# the patients who need it over-triages 78 % of its hot dispatches and under-triages 4.6 % of its
# cold ones (Dami 2015, BMC Emerg Med 15:32; over = share of hot dispatches that needed no hot
# response, under = share of cold dispatches that did); an MPDS centre 33.6 / 4.7 % (Clawson et
# al., emergencydispatch.org poster 042); a Swedish protocol 37.9 / 6.3 % (Torlen 2017, Scand J
# Trauma Resusc Emerg Med); dispatchers recognise ~45 % of strokes (Buck 2009, Stroke 40:2027) and
# ~70 % of cardiac arrests, agonal breathing being the main confounder (Viereck 2017,
# Resuscitation 115:141; Bang 2003, Resuscitation 56:25); few chest-pain calls are acute coronary
# syndromes, and atypical (epigastric, breathless) presentations are common. The tables below are
# a design choice tuned so that from the report alone a send-hot-when-in-doubt rule reaches ~5 %
# under-triage only at ~30 % over-triage, and the best single guess under-triages ~18 %
# (bench/probe_triage.py prints the figures). Over-triage cannot reach Dami's 78 % here: 54 % of
# this call mix needs a hot response (Dami: ~22 %), so even "everyone hot" over-triages 46 %.
# --------------------------------------------------------------------------------------------
REPORT_CALLER_RELIABILITY = {"patient": 0.85, "family": 0.75, "bystander": 0.6}  # P(mention | present)
REPORT_FALSE_MENTION = 0.04  # P(mention | absent): hearsay, worry [design choice]
REPORT_NEVER_MISTAKEN = ("pregnant", "labour_pains")  # nobody reports a pregnancy by mistake
REPORT_CALLER_MIX: dict[str, dict[str, float]] = {  # who rings 108 [design choice]
    "cardiac_arrest": {"patient": 0.01, "family": 0.69, "bystander": 0.3},
    "stemi": {"patient": 0.4, "family": 0.5, "bystander": 0.1},
    "stroke": {"patient": 0.1, "family": 0.7, "bystander": 0.2},
    "trauma_haemorrhage": {"patient": 0.05, "family": 0.25, "bystander": 0.7},
    "trauma_major": {"patient": 0.15, "family": 0.3, "bystander": 0.55},
    "labour": {"patient": 0.3, "family": 0.68, "bystander": 0.02},
    "minor_injury": {"patient": 0.35, "family": 0.35, "bystander": 0.3},
    "fever": {"patient": 0.3, "family": 0.68, "bystander": 0.02},
    "gastritis": {"patient": 0.6, "family": 0.38, "bystander": 0.02},
    "anxiety": {"patient": 0.5, "family": 0.4, "bystander": 0.1},
    "minor_ailment": {"patient": 0.6, "family": 0.38, "bystander": 0.02},
}
REPORT_AGE_BANDS: dict[str, dict[str, float]] = {  # child, young 15-44, middle 45-64, old 65+
    "cardiac_arrest": {"child": 0.02, "young": 0.08, "middle": 0.35, "old": 0.55},
    "stemi": {"child": 0.005, "young": 0.1, "middle": 0.45, "old": 0.445},
    "stroke": {"child": 0.01, "young": 0.07, "middle": 0.32, "old": 0.6},
    "trauma_haemorrhage": {"child": 0.05, "young": 0.65, "middle": 0.25, "old": 0.05},
    "trauma_major": {"child": 0.08, "young": 0.55, "middle": 0.25, "old": 0.12},
    "labour": {"young": 1.0},
    "minor_injury": {"child": 0.25, "young": 0.45, "middle": 0.2, "old": 0.1},
    "fever": {"child": 0.35, "young": 0.3, "middle": 0.15, "old": 0.2},
    "gastritis": {"child": 0.05, "young": 0.55, "middle": 0.3, "old": 0.1},
    "anxiety": {"child": 0.02, "young": 0.75, "middle": 0.18, "old": 0.05},
    "minor_ailment": {"child": 0.2, "young": 0.4, "middle": 0.2, "old": 0.2},
}
REPORT_SHARE_MALE = {
    "cardiac_arrest": 0.65, "stemi": 0.7, "stroke": 0.55, "trauma_haemorrhage": 0.75,
    "trauma_major": 0.7, "labour": 0.0, "minor_injury": 0.6, "fever": 0.5, "gastritis": 0.55,
    "anxiety": 0.4, "minor_ailment": 0.5,
}
# P(symptom present | condition); absent keys are 0 [design choice within the studies above].
REPORT_FEATURES: dict[str, dict[str, float]] = {
    "cardiac_arrest": {"collapsed": 0.9, "unresponsive": 0.85, "gasping": 0.6, "chest_pain": 0.15,
                       "breathless": 0.2, "sweating": 0.05},
    "stemi": {"chest_pain": 0.6, "radiating": 0.3, "sweating": 0.5, "breathless": 0.35,
              "vomiting": 0.3, "collapsed": 0.08, "panicky": 0.1, "stomach": 0.25},
    "stroke": {"one_side_weak": 0.5, "speech": 0.45, "confused": 0.45, "collapsed": 0.3,
               "headache": 0.2, "vomiting": 0.1, "unresponsive": 0.1},
    "trauma_haemorrhage": {"injury": 0.95, "heavy_bleeding": 0.7, "pale_drowsy": 0.45,
                           "unresponsive": 0.15, "limb_hurt": 0.25, "breathless": 0.15},
    "trauma_major": {"injury": 0.95, "heavy_bleeding": 0.25, "limb_hurt": 0.55, "breathless": 0.2,
                     "pale_drowsy": 0.1},
    "labour": {"pregnant": 0.95, "labour_pains": 0.8, "stomach": 0.25, "heavy_bleeding": 0.05},
    "minor_injury": {"injury": 0.9, "limb_hurt": 0.5, "heavy_bleeding": 0.25},
    "fever": {"fever": 0.9, "vomiting": 0.3, "confused": 0.25, "headache": 0.3, "breathless": 0.2,
              "collapsed": 0.12},
    "gastritis": {"stomach": 0.85, "chest_pain": 0.5, "vomiting": 0.45, "sweating": 0.25},
    "anxiety": {"chest_pain": 0.55, "breathless": 0.7, "panicky": 0.6, "sweating": 0.3,
                "collapsed": 0.12, "headache": 0.1},
    "minor_ailment": {"for_days": 0.6, "fever": 0.3, "stomach": 0.15, "headache": 0.3,
                      "breathless": 0.1, "chest_pain": 0.1, "panicky": 0.1},
}
# A caller advised at P4 may ring back. Whether and when is drawn from the model's predictive
# distribution given the report (triage.callback_plan), never from the caller's true state.
CALLBACK_PROBABILITY_BY_PRIORITY = {"P1": 0.9, "P2": 0.8, "P3": 0.5, "P4": 0.3}  # [design choice]
CALLBACK_DELAY_RANGE_BY_PRIORITY = {"P1": (8, 20), "P2": (15, 30), "P3": (25, 60), "P4": (30, 90)}

# --------------------------------------------------------------------------------------------
# Response modes: the triage level sets how a unit drives. Lights and sirens only on a coded
# high-acuity determinant (NAEMSP/NASEMSO/ACEP et al. 2017 joint statement on lights and
# siren vehicle operations; MPDS response plans). P1/P2 hot, P3 cold, P4 no unit.
# --------------------------------------------------------------------------------------------
HOT_PRIORITIES = ("P1", "P2")
# Protocol default for a call dispatched before it is coded: cold, as a P3 -- without a
# determinant there is no authority for lights and sirens (joint statement above).
UNTRIAGED_RESPONSE = "P3"
NON_URGENT_TURNOUT_MIN = 4  # a cold job is taken after restocking / handover chores [design choice]


# --------------------------------------------------------------------------------------------
# Triage accuracy in the rubric (cascade_score): credit lost per level of mistriage. Dispatch
# centres accept heavy over-triage to keep under-triage near 5 % (Dami 2015, BMC Emerg Med 15:32:
# 78 % over / 4.6 % under, i.e. 22 over-triaged calls per under-triaged one; an MPDS study
# 33.6 / 4.7 %; Torlen 2017: 37.9 / 6.3 %). Under-triage costs ten times over-triage per level
# here, so the rule with the least expected triage cost from a report (triage.cautious_priority)
# sends hot when in doubt; from the report alone it under-triages ~5 % at ~30 % over-triage
# (bench/probe_triage.py, tests/sim/test_calibration.py).
# --------------------------------------------------------------------------------------------
UNDER_TRIAGE_COST_PER_LEVEL = 1.0
OVER_TRIAGE_COST_PER_LEVEL = 0.1


# Entries kept by the speed memos (validated actions, benefit kept per treated patient). Not a
# model number: it only bounds memory [design choice: far above the distinct inputs of an episode].
MEMO_ENTRIES = 4096
# Longest text field an action may have to be kept by the validation memo (ids and names are a few
# characters; longer input is validated without the memo) [design choice: bounds the memo's memory].
MEMO_MAX_TEXT = 64
