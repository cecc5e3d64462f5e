"""The feature schema: the observation groups' column names, their sizes and normalisers, the
report cues, and the column indices the encoder writes to."""

from __future__ import annotations

from ..sim.catalogue import fixed_id_choices
from ..sim.city import EDGES, NODE_IDS, edge_key
from ..sim.conditions import CONDITIONS
from ..sim.params import BLOOD_TYPES, PROCEDURES, SPECIALTIES
from ..sim.tasks import TASKS
from ..sim.triage import FEATURES as REPORT_FEATURE_NAMES
from ..sim.triage import PRIORITIES
from ..sim.types import AMBULANCE_STATES, OR_STATES, PATIENT_STATES, SPECIALIST_STATES

MAX_AMBULANCES = len(fixed_id_choices()["ambulance"])  # own units + the most mutual-aid units


MAX_PATIENTS = 16


MAX_CALLS = 16


# Normalisers of the task-level features: the largest values in the task table, so every task's
# budget and horizon read differently (v1: the budget was divided by 60 and read 1.0 on tasks 3-5).
LARGEST_STEP_BUDGET = max(t.max_steps for t in TASKS.values())


LONGEST_HORIZON_MIN = max(t.horizon_min for t in TASKS.values())


HOSPITAL_IDS: tuple[str, ...] = fixed_id_choices()["hospital"]


N_HOSPITALS = len(HOSPITAL_IDS)


CONDITION_IDS: tuple[str, ...] = tuple(CONDITIONS)


EDGE_KEYS: tuple[tuple[str, str], ...] = tuple(edge_key(a, b) for a, b, _, _ in EDGES)


_EDGE_INDEX = {k: i for i, k in enumerate(EDGE_KEYS)}


_NODE_INDEX = {n: i for i, n in enumerate(NODE_IDS)}


_FINISHED = frozenset({"treated", "released", "deceased"})


# Symptom cues of the caller's report: the report model's own features (triage.parse_report),
# some merged into one column (speech and confusion, unresponsive and gasping, pregnancy and
# labour), plus the bystander caller. A column is named after its first feature's usual wording.
REPORT_CUES: tuple[tuple[str, frozenset[str]], ...] = (
    ("chest", frozenset({"chest_pain"})),
    ("into_the_arm", frozenset({"radiating"})),
    ("sweat", frozenset({"sweating"})),
    ("short_of_breath", frozenset({"breathless"})),
    ("vomit", frozenset({"vomiting"})),
    ("collapsed", frozenset({"collapsed"})),
    ("not_responding", frozenset({"unresponsive", "gasping"})),
    ("one_side_weak", frozenset({"one_side_weak"})),
    ("slurred", frozenset({"speech", "confused"})),
    ("headache", frozenset({"headache"})),
    ("accident", frozenset({"injury"})),
    ("bleeding_a_lot", frozenset({"heavy_bleeding"})),
    ("pale_and_drowsy", frozenset({"pale_drowsy"})),
    ("badly_hurt", frozenset({"limb_hurt"})),
    ("pregnant", frozenset({"pregnant", "labour_pains"})),
    ("fever", frozenset({"fever"})),
    ("stomach", frozenset({"stomach"})),
    ("panicky", frozenset({"panicky"})),
    ("some_days", frozenset({"for_days"})),
)


BYSTANDER_CUE = "passer-by_calling"


assert {f for _, features in REPORT_CUES for f in features} == set(REPORT_FEATURE_NAMES), "a cue per feature"


GLOBAL_FEATURES: tuple[str, ...] = (
    "clock_frac",
    "step_frac",
    "phase2",
    "score_preview",
    "mutual_aid_remaining",
    "mutual_aid_limit",
    "mutual_aid_pending",
    "peak_hour",
    "n_patients",
    "n_calls",
    "n_alerts",
    "last_action_error",
    "query_result",
    "n_legal_actions",
    "horizon",
    "max_steps",
)


AMBULANCE_FEATURES: tuple[str, ...] = (
    "present",
    "als",
    "mutual_aid",
    *(f"status_{s}" for s in AMBULANCE_STATES),
    *(f"node_{n}" for n in NODE_IDS),
    *(f"dest_{n}" for n in NODE_IDS),
    "eta",
    "busy",
    "has_job",
    "held",
    "can_dispatch",
)


PATIENT_FEATURES: tuple[str, ...] = (
    "present",
    *(f"priority_{p}" for p in PRIORITIES),
    *(f"condition_{c}" for c in CONDITION_IDS),
    *(f"status_{s}" for s in PATIENT_STATES),
    "hr",
    "sbp",
    "spo2",
    "rr",
    "gcs",
    "vitals_score",
    "minutes_since_call",
    "eta",
    "has_unit",
    "has_destination",
    *(f"dest_{h}" for h in HOSPITAL_IDS),
    *(f"at_{h}" for h in HOSPITAL_IDS),
    "waiting_or",
    "waiting_specialist",
    "waiting_blood",
    "waiting_transfer",
    "blood_type_known",
    "blood_reserved",
    "secondary",
    *(f"node_{n}" for n in NODE_IDS),
    "can_dispatch_to",
    "can_assign_hospital",
    "can_allocate_blood",
    "can_query_blood_type",
    "can_mutual_aid",
)


CALL_FEATURES: tuple[str, ...] = (
    "present",
    "waiting",
    *(f"triaged_{p}" for p in PRIORITIES),
    "untriaged",
    "pending",
    "dispatched",
    "has_unit",
    *(f"node_{n}" for n in NODE_IDS),
    "age",
    "male",
    "callback",
    *(f"cue_{name}" for name, _ in REPORT_CUES),
    f"cue_{BYSTANDER_CUE}",
    "can_dispatch_als",
    "can_dispatch_bls",
    "can_triage",
    "can_mutual_aid",
)


HOSPITAL_FEATURES: tuple[str, ...] = (
    "load",
    "crowded",
    "diverted",
    "diversion_left",
    *(f"or_{s}" for s in OR_STATES),
    *(f"preparing_{p}" for p in PROCEDURES),
    *(f"ready_{p}" for p in PROCEDURES),
    *(f"{sp}_{st}" for sp in SPECIALTIES for st in SPECIALIST_STATES),
    "icu_free",
    *(f"blood_{t}" for t in BLOOD_TYPES),
    "blood_total",
    "can_assign_to",
    "can_prepare_or",
    "can_page",
    "can_preempt",
    "can_allocate_from",
    "can_transfer_from",
)


ROAD_FEATURES: tuple[str, ...] = ("closed", "congested", "congestion_factor", "minutes_left")


ACTION_FEATURES: tuple[str, ...] = ("count", "start")


def _index(names: tuple[str, ...]) -> dict[str, int]:
    return {n: i for i, n in enumerate(names)}


_G, _A, _P, _C, _H = (
    _index(GLOBAL_FEATURES),
    _index(AMBULANCE_FEATURES),
    _index(PATIENT_FEATURES),
    _index(CALL_FEATURES),
    _index(HOSPITAL_FEATURES),
)


def _columns(index: dict[str, int], prefix: str) -> dict[str, int]:
    """value -> column of the one-hot ``{prefix}_{value}`` (precomputed: f-strings per step cost)."""
    return {name[len(prefix) + 1:]: i for name, i in index.items() if name.startswith(f"{prefix}_")}


_A_STATUS, _A_NODE, _A_DEST = _columns(_A, "status"), _columns(_A, "node"), _columns(_A, "dest")


_P_PRIORITY, _P_CONDITION = _columns(_P, "priority"), _columns(_P, "condition")


_P_STATUS = _columns(_P, "status")


_P_NODE, _P_DEST, _P_AT = _columns(_P, "node"), _columns(_P, "dest"), _columns(_P, "at")


_C_NODE, _C_TRIAGED = _columns(_C, "node"), _columns(_C, "triaged")


_H_OR, _H_BLOOD = _columns(_H, "or"), _columns(_H, "blood")


_H_ROOM: dict[tuple[str, str | None], int] = {
    (state, proc): _H[f"{state}_{proc}"] for state in ("preparing", "ready") for proc in PROCEDURES
}


_H_SPECIALIST = {(sp, st): _H[f"{sp}_{st}"] for sp in SPECIALTIES for st in SPECIALIST_STATES}
