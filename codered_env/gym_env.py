"""Gymnasium adapter for CodeRedEnv: a fixed ``Discrete`` action space with action masking and a
numeric ``Dict`` observation, on top of ``CodeRedSim`` (which itself knows nothing of gymnasium).

gymnasium is a dev dependency of this project, so it is imported only here::

    import gymnasium
    import codered_env.gym_env  # registers CodeRedEnv-task1-v0 .. CodeRedEnv-task5-v0

    env = gymnasium.make("CodeRedEnv-task3-v0")

The observation is computed from ``CodeRedSim.observation()`` only (``encode_observation`` takes
that dict and nothing else), so it carries no hidden state. See ``CodeRedGymEnv`` for the spec.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

try:
    import gymnasium
    from gymnasium import spaces
except ImportError as exc:  # pragma: no cover - exercised only without the dev group
    raise ImportError(
        "codered_env.gym_env needs gymnasium, which is not installed: run `pip install gymnasium` "
        "(or `uv sync --group dev`)."
    ) from exc

from .sim.actions import ACTION_TYPES
from .sim.city import EDGES, NODE_IDS, edge_key
from .sim.conditions import CONDITIONS
from .sim.env import CodeRedSim
from .sim.params import BLOOD_TYPES
from .sim.tasks import TASK_IDS, TASKS
from .sim.triage import PRIORITIES
from .sim.types import AMBULANCE_STATES, OR_STATES, PATIENT_STATES, SPECIALIST_STATES

# ------------------------------------------------------------------------------ action catalogue
ACTION_ORDER: tuple[str, ...] = (
    "maintain_plan",
    "dispatch_ambulance",
    "dispatch_als",
    "dispatch_bls",
    "triage_call",
    "assign_hospital",
    "prepare_or",
    "page_specialist",
    "preempt_or",
    "allocate_blood",
    "transfer_blood",
    "request_mutual_aid",
    "query_blood_type",
    "query_or_status",
)
assert set(ACTION_ORDER) == set(ACTION_TYPES), "ACTION_ORDER must list every action type once"
CANONICAL_UNITS: tuple[int, ...] = (1, 2, 4)
_BLOOD_ACTIONS = frozenset({"allocate_blood", "transfer_blood"})
MAINTAIN: dict[str, Any] = {"action_type": "maintain_plan"}


def _param_values(action_type: str, name: str, values: Sequence[Any]) -> list[Any]:
    if action_type in _BLOOD_ACTIONS and name == "units":
        return [u for u in values if u in CANONICAL_UNITS]
    return list(values)


def _expand(action_type: str, option: Mapping[str, Sequence[Any]]) -> Iterator[dict[str, Any]]:
    """Every concrete action of one legal option (the cross product of its parameter values)."""
    names = list(option)
    choices = [_param_values(action_type, n, option[n]) for n in names]
    for combo in itertools.product(*choices):
        yield {"action_type": action_type, **dict(zip(names, combo, strict=True))}


def enumerate_actions(legal: Mapping[str, Sequence[Mapping[str, Sequence[Any]]]]) -> list[dict[str, Any]]:
    """The concrete legal actions, in a stable order: ``maintain_plan`` first, then by
    ``ACTION_ORDER``, then option order, then the cross product in parameter order."""
    actions = [dict(MAINTAIN)]
    seen = {frozenset(MAINTAIN.items())}
    for action_type in ACTION_ORDER[1:]:
        for option in legal.get(action_type, ()):
            for action in _expand(action_type, option):
                key = frozenset(action.items())
                if key not in seen:
                    seen.add(key)
                    actions.append(action)
    return actions


# ------------------------------------------------------------------------------ observation layout
MAX_AMBULANCES = 7  # 5 own units + up to 2 mutual-aid units
MAX_PATIENTS = 16
MAX_CALLS = 16
N_HOSPITALS = 3
HOSPITAL_IDS: tuple[str, ...] = ("H1", "H2", "H3")
CONDITION_IDS: tuple[str, ...] = tuple(CONDITIONS)
PROCEDURES: tuple[str, ...] = ("cath_lab", "trauma_surgery", "stroke_intervention", "general")
SPECIALTIES: tuple[str, ...] = ("cardiology", "neurology", "trauma_surgery", "obstetrics")
EDGE_KEYS: tuple[tuple[str, str], ...] = tuple(edge_key(a, b) for a, b, _, _ in EDGES)
_EDGE_INDEX = {k: i for i, k in enumerate(EDGE_KEYS)}
_NODE_INDEX = {n: i for i, n in enumerate(NODE_IDS)}
_FINISHED = frozenset({"treated", "released", "deceased"})
# Symptom cues read from the caller's report (a bag of words, not a triage rule).
REPORT_CUES: tuple[tuple[str, ...], ...] = (
    ("chest",),
    ("into the arm", "into the jaw"),
    ("sweat",),
    ("short of breath", "breathing fast", "get breath"),
    ("vomit", "throwing up"),
    ("collapsed", "fell down suddenly"),
    ("not responding", "not waking", "not breathing properly", "gasping"),
    ("one side weak", "face drooping", "lift one arm"),
    ("slurred", "talking strangely", "confused", "where they are"),
    ("headache", "head hurting"),
    ("accident", "had a fall", "hit by"),
    ("bleeding a lot", "lot of blood"),
    ("pale and drowsy", "cold and sleepy"),
    ("badly hurt", "broken", "cannot move the leg"),
    ("pregnant", "labour pains", "water broke", "contractions"),
    ("fever", "hot body"),
    ("stomach", "acidity"),
    ("panicky", "tingling", "shaking"),
    ("some days", "what to do", "advice"),
    ("passer-by calling",),
)
_AGE_SEX = re.compile(r"(\d+)([MF]) at ")

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
    *(f"cue_{cues[0].replace(' ', '_')}" for cues in REPORT_CUES),
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
)
ROAD_FEATURES: tuple[str, ...] = ("closed", "congested", "congestion_factor", "minutes_left")


def _clip01(x: float) -> float:
    return 0.0 if x < 0 else 1.0 if x > 1 else float(x)


class _Row:
    """Writes named features into one float32 row (keeps the encoders readable)."""

    _indexes: ClassVar[dict[tuple[str, ...], dict[str, int]]] = {}

    def __init__(self, row: np.ndarray, names: tuple[str, ...]) -> None:
        index = self._indexes.get(names)
        if index is None:
            index = self._indexes[names] = {n: i for i, n in enumerate(names)}
        self.row, self.index = row, index

    def set(self, name: str, value: float) -> None:
        self.row[self.index[name]] = _clip01(value)

    def flag(self, prefix: str, value: object) -> None:
        i = self.index.get(f"{prefix}_{value}")
        if i is not None:
            self.row[i] = 1.0


def _encode_global(obs: Mapping[str, Any], n_legal: int, max_actions: int) -> np.ndarray:
    out = np.zeros(len(GLOBAL_FEATURES), np.float32)
    g = _Row(out, GLOBAL_FEATURES)
    aid = obs["mutual_aid"]
    g.set("clock_frac", obs["clock_min"] / obs["horizon_min"])
    g.set("step_frac", obs["step"] / obs["max_steps"])
    g.set("phase2", obs["phase"] == 2)
    g.set("score_preview", obs["score_preview"])
    g.set("mutual_aid_remaining", aid["remaining"] / 2)
    g.set("mutual_aid_limit", aid["limit"] / 2)
    g.set("mutual_aid_pending", len(aid["pending"]) / 2)
    g.set("peak_hour", obs["roads"]["peak_hour"])
    g.set("n_patients", len(obs["patients"]) / MAX_PATIENTS)
    g.set("n_calls", len(obs["calls"]) / MAX_CALLS)
    g.set("n_alerts", len(obs["alerts"]) / 5)
    g.set("last_action_error", obs["last_action_error"] is not None)
    g.set("query_result", obs["query_result"] is not None)
    g.set("n_legal_actions", n_legal / max_actions)
    g.set("horizon", obs["horizon_min"] / 180)
    g.set("max_steps", obs["max_steps"] / 60)
    return out


def _encode_ambulances(obs: Mapping[str, Any]) -> np.ndarray:
    out = np.zeros((MAX_AMBULANCES, len(AMBULANCE_FEATURES)), np.float32)
    for row, amb in zip(out, obs["ambulances"], strict=False):
        r = _Row(row, AMBULANCE_FEATURES)
        r.set("present", 1)
        r.set("als", amb["kind"] == "ALS")
        r.set("mutual_aid", amb["mutual_aid"])
        r.flag("status", amb["status"])
        r.flag("node", amb["node"])
        r.flag("dest", amb["destination"])
        r.set("eta", (amb["eta_min"] or 0) / 30)
        r.set("busy", (amb["busy_min"] or 0) / 30)
        r.set("has_job", amb["patient_id"] is not None or amb["call_id"] is not None)
        r.set("held", amb["held"])
    return out


def _slot_patients(patients: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """At most MAX_PATIENTS, in observation order; finished patients are dropped first."""
    extra = len(patients) - MAX_PATIENTS
    if extra <= 0:
        return patients
    finished = [i for i, p in enumerate(patients) if p["status"] in _FINISHED]
    drop = set(finished[:extra])
    kept = [p for i, p in enumerate(patients) if i not in drop]
    return kept[:MAX_PATIENTS]


def _encode_patient(r: _Row, p: Mapping[str, Any]) -> None:
    vitals, waiting = p["vitals"], p["waiting_for"]
    r.set("present", 1)
    r.flag("priority", p["priority"])
    r.flag("condition", p["condition"])
    r.flag("status", p["status"])
    for name, scale in (("hr", 200), ("sbp", 200), ("spo2", 100), ("rr", 40), ("gcs", 15)):
        r.set(name, vitals[name] / scale)
    r.set("vitals_score", vitals["score"])
    r.set("minutes_since_call", p["minutes_since_call"] / 180)
    r.set("eta", (p["eta_min"] or 0) / 30)
    r.set("has_unit", p["ambulance_id"] is not None)
    r.set("has_destination", p["destination"] is not None)
    r.flag("dest", p["destination"])
    r.flag("at", p["hospital"])
    r.set("waiting_or", "or" in waiting)
    r.set("waiting_specialist", any(w in SPECIALTIES for w in waiting))
    r.set("waiting_blood", "blood" in waiting)
    r.set("waiting_transfer", any(w.startswith("transfer") for w in waiting))
    r.set("blood_type_known", p["blood_type"] is not None)
    r.set("blood_reserved", sum(p["blood_reserved"].values()) / 6)
    r.set("secondary", p["secondary"])
    r.flag("node", p["node"])


def _encode_patients(obs: Mapping[str, Any]) -> np.ndarray:
    out = np.zeros((MAX_PATIENTS, len(PATIENT_FEATURES)), np.float32)
    for row, p in zip(out, _slot_patients(obs["patients"]), strict=False):
        _encode_patient(_Row(row, PATIENT_FEATURES), p)
    return out


@functools.lru_cache(maxsize=4096)
def _report_features(report: str) -> tuple[tuple[str, float], ...]:
    """(feature, value) pairs read from a caller report's text (reports never change)."""
    text = report.lower()
    values: list[tuple[str, float]] = [("callback", float(text.startswith("callback")))]
    match = _AGE_SEX.search(report)
    if match:
        values += [("age", int(match.group(1)) / 100), ("male", float(match.group(2) == "M"))]
    for cues in REPORT_CUES:
        values.append((f"cue_{cues[0].replace(' ', '_')}", float(any(c in text for c in cues))))
    return tuple(values)


def _encode_report(r: _Row, report: str) -> None:
    for name, value in _report_features(report):
        r.set(name, value)


def _encode_calls(obs: Mapping[str, Any]) -> np.ndarray:
    out = np.zeros((MAX_CALLS, len(CALL_FEATURES)), np.float32)
    for row, call in zip(out, obs["calls"], strict=False):
        r = _Row(row, CALL_FEATURES)
        r.set("present", 1)
        r.set("waiting", call["waiting_min"] / 60)
        r.flag("triaged", call["priority"])
        r.set("untriaged", call["priority"] is None)
        r.set("pending", call["status"] == "pending")
        r.set("dispatched", call["status"] == "dispatched")
        r.set("has_unit", call["ambulance_id"] is not None)
        r.flag("node", call["node"])
        _encode_report(r, call["report"])
    return out


def _encode_hospital(r: _Row, h: Mapping[str, Any], clock: int) -> None:
    r.set("load", h["occupancy"] / (2 * h["capacity"]))
    r.set("crowded", h["crowded"])
    r.set("diverted", h["diverted_until"] is not None)
    r.set("diversion_left", ((h["diverted_until"] or clock) - clock) / 60)
    for room in h["ors"]:
        r.row[r.index[f"or_{room['state']}"]] += 1 / 3
        if room["state"] in ("preparing", "ready"):
            r.flag(room["state"], room["procedure"])
    for specialty, info in h["specialists"].items():
        r.flag(specialty, info["state"])
    r.set("icu_free", h["icu_free"] / 4)
    for blood_type, units in h["blood"].items():
        r.set(f"blood_{blood_type}", units / 12)
    r.set("blood_total", sum(h["blood"].values()) / 60)


def _encode_hospitals(obs: Mapping[str, Any]) -> np.ndarray:
    out = np.zeros((N_HOSPITALS, len(HOSPITAL_FEATURES)), np.float32)
    for h in obs["hospitals"]:
        row = out[HOSPITAL_IDS.index(h["hospital_id"])]
        _encode_hospital(_Row(row, HOSPITAL_FEATURES), h, obs["clock_min"])
    np.clip(out, 0.0, 1.0, out=out)
    return out


def _encode_roads(obs: Mapping[str, Any]) -> np.ndarray:
    out = np.zeros((len(EDGE_KEYS), len(ROAD_FEATURES)), np.float32)
    clock, roads = obs["clock_min"], obs["roads"]
    for kind, entries in (("closed", roads["closed"]), ("congested", roads["congested"])):
        for entry in entries:
            r = _Row(out[_EDGE_INDEX[edge_key(*entry["edge"])]], ROAD_FEATURES)
            r.set(kind, 1)
            r.set("congestion_factor", (entry.get("factor", 1.0) - 1.0) / 2)
            r.set("minutes_left", (entry["until"] - clock) / 60)
    return out


def encode_observation(
    obs: Mapping[str, Any], actions: Sequence[Mapping[str, Any]], max_actions: int
) -> dict[str, np.ndarray]:
    """The numeric observation, from the structured observation and its enumerated actions only."""
    legal = actions[:max_actions]
    mask = np.zeros(max_actions, np.float32)
    mask[: len(legal)] = 1.0
    kinds = np.zeros((max_actions, len(ACTION_ORDER)), np.float32)
    for i, action in enumerate(legal):
        kinds[i, ACTION_ORDER.index(action["action_type"])] = 1.0
    return {
        "global": _encode_global(obs, len(legal), max_actions),
        "ambulances": _encode_ambulances(obs),
        "patients": _encode_patients(obs),
        "calls": _encode_calls(obs),
        "hospitals": _encode_hospitals(obs),
        "roads": _encode_roads(obs),
        "action_mask": mask,
        "action_types": kinds,
    }


def _box(*shape: int) -> spaces.Box:
    return spaces.Box(low=0.0, high=1.0, shape=shape, dtype=np.float32)


# ------------------------------------------------------------------------------ the environment
class CodeRedGymEnv(gymnasium.Env):
    """CodeRedEnv as a Gymnasium environment with a masked ``Discrete`` action space.

    ## Description
    One episode of ``CodeRedSim(task_id, seed)``: dispatch ambulances, triage calls, choose
    hospitals, prepare ORs, page specialists, manage blood and mutual aid (docs/MODEL.md).

    ## Action space
    ``Discrete(max_actions)``. At every step the legal concrete actions are enumerated from the
    observation's ``legal_actions``: each option's cross product of parameter values, with
    ``allocate_blood``/``transfer_blood`` restricted to the unit counts {1, 2, 4}. Index 0 is
    always ``maintain_plan``; then, in this order, dispatch_ambulance, dispatch_als, dispatch_bls,
    triage_call, assign_hospital, prepare_or, page_specialist, preempt_or, allocate_blood,
    transfer_blood, request_mutual_aid, query_blood_type, query_or_status; within a type, option
    order then the cross product in parameter order. The list is cut at ``max_actions``. The
    meaning of an index therefore changes from step to step: ``info["actions"]`` holds the wire
    dicts and ``observation["action_types"]`` their types. ``action_masks()`` /
    ``info["action_mask"]`` (int8, length ``max_actions``) mark the legal indices. A masked-out
    index is sent to the simulation as an unknown action: it is refused with
    ``last_action_error``, the clock advances one minute and an invalid action is counted (an
    efficiency penalty); nothing raises. Once the episode is over only index 0 is marked, so the
    mask is never empty, but the environment must be reset.

    ## Observation space
    ``Dict`` of float32 ``Box`` arrays in [0, 1], built only from ``CodeRedSim.observation()``
    (never from hidden state). Counts are divided by the stated scale and clipped to [0, 1].

    - ``global`` (16,): clock/horizon, step/max_steps, phase-2 flag, score preview, mutual aid
      remaining/2, limit/2, pending arrivals/2, peak hour, visible patients/16, open calls/16,
      alerts/5, last action refused, query result present, legal actions/max_actions,
      horizon/180, max_steps/60.
    - ``ambulances`` (7, 37): units in observation order (ALS1, ALS2, BLS1-3, then mutual aid);
      present, ALS, mutual aid, status one-hot (6: available, en_route, on_scene, transporting,
      at_hospital, returning), node one-hot (12: N0-N8, H1-H3), destination one-hot (12),
      ETA/30 min, busy minutes/30, has a job, held by a closed road.
    - ``patients`` (16, 61): visible patients in observation order, zero-padded (beyond 16,
      treated/released/deceased ones are dropped first); present, priority one-hot (P1-P4),
      condition one-hot (11), status one-hot (10), displayed vitals hr/200, sbp/200, spo2/100,
      rr/40, gcs/15 and vitals score, minutes since call/180, ETA/30, has a unit, has a
      destination, destination one-hot (H1-H3), current hospital one-hot (H1-H3), waiting for an
      OR / a specialist / blood / a transfer, blood type known, agent-reserved units/6,
      secondary casualty, node one-hot (12).
    - ``calls`` (16, 45): open calls in observation order, zero-padded; present, waiting
      minutes/60, agent triage one-hot (P1-P4), untriaged, pending, dispatched, has a unit, node
      one-hot (12), caller age/100, male, callback, and 20 symptom-cue flags read from the report
      text (``REPORT_CUES``: chest, arm/jaw, sweat, breathless, vomit, collapsed, unresponsive /
      gasping, one side weak, speech / confusion, headache, injury, heavy bleeding, pale and
      drowsy, limb hurt, pregnancy / labour, fever, stomach, panicky, advice wanted, passer-by
      calling).
    - ``hospitals`` (3, 43): H1, H2, H3; occupancy/(2 x capacity), crowded, diverted, diversion
      minutes left/60, OR state counts/3 (idle, preparing, ready, in_use, out_of_service), a room
      preparing for / ready for each procedure (cath_lab, trauma_surgery, stroke_intervention,
      general), specialist state one-hot per specialty (cardiology, neurology, trauma_surgery,
      obstetrics x on_call, paged, present, unavailable; zeros where a hospital has no such
      specialist), free ICU beds/4, blood units per type/12 (8 types), total units/60.
    - ``roads`` (20, 4): per edge of ``city.EDGES``: closed, congested, (factor - 1)/2, minutes
      until the disruption ends/60.
    - ``action_mask`` (max_actions,): 1 where the index is a legal action now.
    - ``action_types`` (max_actions, 14): one-hot action type of each legal index
      (``ACTION_ORDER``), zeros elsewhere.

    Not encoded: names, event and alert texts, ``query_result`` contents, specialists' and
    diversions' exact minutes other than listed above; read them from ``render()``.

    ## Rewards
    The simulation's step reward: the change of the running score preview, so the rewards of an
    episode add up to its final score in [0.01, 0.99]. Rewards can be negative (refused action,
    waste penalties, the final switch from preview to grade).

    ## Starting state
    ``reset(seed=s)`` starts ``CodeRedSim(task_id, s)``; without a seed the simulation seed is
    drawn from ``self.np_random``. ``options={"task_id": "task4"}`` switches the task.

    ## Episode end
    ``terminated`` when the world resolves (every patient treated, released or dead, no call to
    come) or the clock reaches the task horizon. ``truncated`` when the step budget
    (``max_steps``: 30/45/60/45/60) is spent first; the simulation then plays the world on without
    decisions and the last reward already includes that outcome. ``info["termination_reason"]``
    is ``"resolved"``, ``"horizon"`` or ``"step_budget"``.

    ## Info
    ``action_mask``, ``actions`` (wire dicts of the legal indices), ``score_preview``,
    ``last_action_error``, ``step``, ``clock_min``; on the final step also ``grade`` (the full
    breakdown of ``CodeRedSim.grade()``) and ``termination_reason``.

    ## Rendering
    ``render_mode="ansi"``: ``render()`` returns ``CodeRedSim.render_text()``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self, task_id: str = "task1", render_mode: str | None = None, max_actions: int = 256
    ) -> None:
        if task_id not in TASKS:
            raise ValueError(f"unknown task_id {task_id!r}; valid: {', '.join(TASK_IDS)}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"unsupported render_mode {render_mode!r}; supported: ansi")
        if max_actions < 1:
            raise ValueError("max_actions must be at least 1")
        self.task_id = task_id
        self.render_mode = render_mode
        self.max_actions = max_actions
        self.action_space = spaces.Discrete(max_actions)
        self.observation_space = spaces.Dict(
            {
                "global": _box(len(GLOBAL_FEATURES)),
                "ambulances": _box(MAX_AMBULANCES, len(AMBULANCE_FEATURES)),
                "patients": _box(MAX_PATIENTS, len(PATIENT_FEATURES)),
                "calls": _box(MAX_CALLS, len(CALL_FEATURES)),
                "hospitals": _box(N_HOSPITALS, len(HOSPITAL_FEATURES)),
                "roads": _box(len(EDGE_KEYS), len(ROAD_FEATURES)),
                "action_mask": _box(max_actions),
                "action_types": _box(max_actions, len(ACTION_ORDER)),
            }
        )
        self.sim = CodeRedSim(task_id, 0)
        self._actions: list[dict[str, Any]] = [dict(MAINTAIN)]
        self._end_reason: str | None = None

    # -------------------------------------------------------------- gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        task_id = (options or {}).get("task_id", self.task_id)
        if task_id not in TASKS:
            raise ValueError(f"unknown task_id {task_id!r}; valid: {', '.join(TASK_IDS)}")
        self.task_id = task_id
        sim_seed = seed if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
        self.sim = CodeRedSim(task_id, sim_seed)
        self._end_reason = None
        obs = self._observe()
        return obs, self._info()

    def step(self, action: int) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        index = int(action)
        wire = self._wire(index)
        result = self.sim.step(wire)
        obs = self._observe()
        info = self._info()
        info["last_action_error"] = result.error  # also set when the episode was already over
        terminated = truncated = False
        if result.done:
            reason = self._end_reason = self._end_reason or self.sim.end_reason
            terminated, truncated = reason != "step_budget", reason == "step_budget"
            info["termination_reason"] = reason
            info["grade"] = self.sim.grade()
        return obs, float(result.reward), terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Legal indices now (the sb3-contrib MaskablePPO convention), as a boolean array."""
        mask = np.zeros(self.max_actions, dtype=bool)
        mask[: len(self._actions)] = True
        return mask

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self.sim.render_text()
        return None

    # -------------------------------------------------------------- helpers
    def _observe(self) -> dict[str, np.ndarray]:
        structured = self.sim.observation()
        actions = enumerate_actions(structured["legal_actions"])
        self._actions = actions[: self.max_actions]
        return encode_observation(structured, self._actions, self.max_actions)

    def _info(self) -> dict[str, Any]:
        return {
            "action_mask": self.action_masks().astype(np.int8),
            "actions": [dict(a) for a in self._actions],
            "score_preview": self.sim.score_preview,
            "last_action_error": self.sim.last_error,
            "step": self.sim.step_count,
            "clock_min": self.sim.clock,
        }

    def _wire(self, index: int) -> dict[str, Any]:
        if 0 <= index < len(self._actions) and not self.sim.done:
            return dict(self._actions[index])
        return {"action_type": f"masked_out_gym_action_{index}"}


# ------------------------------------------------------------------------------ registration
def register_envs() -> list[str]:
    """Register ``CodeRedEnv-task1-v0`` .. ``CodeRedEnv-task5-v0`` (idempotent); returns the ids."""
    ids = []
    for task_id in TASK_IDS:
        env_id = f"CodeRedEnv-{task_id}-v0"
        if env_id not in gymnasium.registry:
            gymnasium.register(
                id=env_id,
                entry_point="codered_env.gym_env:CodeRedGymEnv",
                kwargs={"task_id": task_id},
            )
        ids.append(env_id)
    return ids


register_envs()
