"""The grading rubric (docs/MODEL.md#grading, the full specification): a pure function of the
episode's world state.

::

    final_score = 0.32 x time_score + 0.16 x efficiency + 0.16 x secondary_harm
                + 0.16 x prep_ready + 0.10 x vitals_score_avg + 0.10 x cascade_score
                - mutual_aid_penalty

Outcome first, deaths first. Every per-patient mean is weighted by the patient's *stake*: the
outcome weight (priority weight P1 x3, P2 x2, P3 x1, plus ``DEATH_WEIGHT`` x the expected deaths
a unit of outcome averts; ``outcome.outcome_weight``) times the outcome at stake,
``O(0, best care) - O_untreated`` on the condition's cited curve (conditions.py), so between two
policies on the same patients ``time_score`` moves exactly as the weighted expected outcome
(``clinical_outcomes``) does. Scored patients have a real need (true priority P1-P3).

* ``time_score`` -- stake-weighted mean of the *benefit kept*, ``clip((O(d - a, care given) -
  O_untreated) / (O(0, best care) - O_untreated), 0, 1)`` (``d`` call to definitive care, ``a``
  the transfer allowance for a relaxed-target transfer); never treated: 0; died before any care:
  ``-O_untreated / (O(0, best care) - O_untreated)`` (the untreated outcome lost too); floored at 0.
* ``efficiency`` -- ``time_score x exp(-waste per scored patient)``: invalid actions, unused
  pages and preparations, pre-emptions, needless blood, minutes a caller waits while a capable
  crew stands free, and response charges at the chance, given the report, that they were wrong.
* ``prep_ready`` -- stake-weighted ``benefit kept x (0.75 + 0.25 x readiness)``
  (``PREP_READINESS_SHARE``; a death before care at full weight), readiness measured against a
  prompt-arrival reference (``dynamics.care``) that never moves with the dispatch.
* ``vitals_score_avg`` -- stake-weighted reserve (0..1) at the start of treatment; 0 untreated.
* ``secondary_harm`` -- the stake-weighted benefit kept less the stake-weighted outcome gain
  secondary casualties lost, both shares of the total stake, floored at 0.
* ``cascade_score`` -- mean of: secondary casualties reached in time (as ``secondary_harm``,
  with response credit); ``time_score`` x stake share delivered x (1 - 0.1 x overcrowding
  diversions); in phase 2 ``time_score`` x the expected triage accuracy, halved after a news cycle.
* ``mutual_aid_penalty`` -- per request made while the units free or coming covered every caller
  waiting (judged when made).

The running preview (the step reward is its change) is the same computation on the world now,
from what the agent can see: an untreated patient at the benefit kept under the care planned for
them (``plan.care_plans``: the chosen hospital's care once door time, room and specialist
allow, the room after the cases of those the hospital serves first; nothing if no plan could
begin by the horizon, as the final grade gives care never begun), times a share falling to 0
over 90 min while no crew has reached them (an unseen caller: 30 min after the first call,
times, until a crew is sent, the share of callers like them the dispatcher has answered so
far; ``plan.hope_share``, ``plan.answer_rates``), and an unseen caller at the expectation under the
report's posterior (nothing for a condition whose care could not begin by the horizon), never
the hidden condition; a caller in a news cycle's surge window counts as caused at the chance
the surge brought them (``call_sources.news_cycle_shares``: from the condition once seen, else
the report). A death before care is charged in the step it happens. ``secondary_harm``
and ``cascade_score`` are ``None`` in tasks without cascades (their weight shared out in
proportion); the final score is rounded to 4 decimals and clamped to [0.01, 0.99].
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from .call_sources import news_cycle_shares
from .clinical import CONDITION_NUMBERS
from .conditions import CONDITIONS, expected_death
from .dynamics.care import parts_ready_at, prep_part_credit
from .dynamics.rooms import care_for
from .outcome import (
    benefit_at,
    best_therapy,
    cpr_minutes,
    door_minutes,
    outcome_weight,
    patient_outcome,
    patient_time_score,
    relaxed_target_applies,
    secondary_gain,
    stake,
    transfer_allowance,
)
from .params import (
    DEATHS_PER_N_PATIENTS,
    MEMO_ENTRIES,
    MUTUAL_AID_PENALTY_UNNEEDED,
    NEWS_CYCLE_TRIAGE_FACTOR,
    OVERCROWDING_LOAD_PENALTY,
    PENALTY,
    PREP_READINESS_SHARE,
    RUBRIC_WEIGHTS,
    SCORE_CEIL,
    SCORE_FLOOR,
    SECONDARY_RESPONSE_FULL_MIN,
    SECONDARY_RESPONSE_ZERO_MIN,
    STROKE_ONSET_BEFORE_CALL_RANGE,
    UNREACHED_PATIENT_WINDOW_MIN,
    UNSEEN_CALLER_WINDOW_MIN,
)
from .plan import Plan, answer_rate, answer_rates, care_plans, hope_share, unprepared_wait
from .state import World
from .triage import report_condition_posterior, triage_accuracy
from .types import FINAL_PATIENT_STATES, Call, Patient

T = TypeVar("T")

_NOT_SCORED = frozenset(name for name, cond in CONDITIONS.items() if cond.true_priority == "P4")


# ---------------------------------------------------------------- one patient's terms
def _kept_if_treated_now(p: Patient, t: int, plans: list[Plan]) -> float:
    """The benefit ``p`` would keep under the best of ``plans`` (``plan.care_plans``)."""
    delay = t - p.appeared_at
    door = delay if p.first_hospital_arrival is None else p.first_hospital_arrival - p.appeared_at
    cpr, allowance = cpr_minutes(p, t), transfer_allowance(p)
    return max(benefit_at(p.condition, delay + plan.extra - allowance, plan.quality, p.onset_min,
                          plan.therapy, cpr, door) for plan in plans)


def _secondary_gain_now(p: Patient, t: int, plans: list[Plan]) -> float:
    delay, cpr = t - p.appeared_at, cpr_minutes(p, t)
    return max(secondary_gain(p.condition, delay + plan.extra, plan.quality, p.onset_min, plan.therapy,
                              cpr, delay) for plan in plans)


def _response_credit(minutes: int) -> float:
    span = SECONDARY_RESPONSE_ZERO_MIN - SECONDARY_RESPONSE_FULL_MIN
    return min(1.0, max(0.0, 1.0 - (minutes - SECONDARY_RESPONSE_FULL_MIN) / span))


# ---------------------------------------------------------------- per-patient terms
class _Entry(NamedTuple):
    """One scored patient's (or the expectation over an unseen caller's) terms in the grade's sums."""

    n: float  # scored mass: 1, or the chance an unseen caller has a real need
    reached: float  # a crew reached them
    w: float  # stake weight
    wk: float  # w x benefit kept
    wv: float  # w x vitals at treatment
    prep_wkr: float  # w x benefit kept x readiness credit (ready where care needed nothing prepared)
    load_w: float  # w, if they are to be taken to hospital
    load_wd: float  # w x delivered
    sec_w: float  # secondary casualties: stake, stake x gain, stake x response credit
    sec_wg: float
    sec_r: float


_ZERO = _Entry(*([0.0] * len(_Entry._fields)))


def _readiness_credit(readiness: float) -> float:
    """The share of a patient's benefit kept that ``prep_ready`` credits at this readiness."""
    return 1.0 - PREP_READINESS_SHARE + PREP_READINESS_SHARE * readiness


def _prep(world: World, p: Patient, final: bool, plans: list[Plan] | None = None) -> float | None:
    """Readiness credited to ``p`` (None: their care needed nothing prepared): the mean of the
    parts' credit when treatment began; in the preview, for a patient not treated yet, the
    credit were treatment to begin as soon as it could at the hospital they are in or headed for
    (the parts of its plan in ``plans`` where given)."""
    if p.prep_credit is not None:
        return sum(p.prep_credit.values()) / len(p.prep_credit) if p.prep_credit else None
    if p.first_hospital_arrival is not None and not p.arrival_prep:
        return None
    where = p.hospital or p.destination
    if final or p.prep_rule_zero or where is None or p.status in FINAL_PATIENT_STATES:
        return 0.0
    h = world.hospitals[where]
    care = care_for(p, h)
    if care is None:
        return 0.0
    planned = next((plan.parts for plan in plans or () if plan.hospital_id == where and plan.parts), None)
    parts = planned if planned is not None else parts_ready_at(world, p, h, care, world.clock, earliest=True)
    credits = [prep_part_credit(world, p, ready, need) for ready, need in parts.values()]
    return sum(credits) / len(credits) if credits else None


def _known_entry(world: World, p: Patient, final: bool) -> _Entry:
    """The terms of a patient whose condition the grade may read (a crew has seen them, or final)."""
    cond = CONDITIONS[p.condition]
    t = world.clock
    w = stake(p.condition, p.onset_min)
    if final or p.status in FINAL_PATIENT_STATES:
        hope = 0.0
    elif p.first_unit_at is not None:
        hope = 1.0  # a crew is with them: care is under way
    else:
        hope = hope_share(p.appeared_at, t, world.task.horizon_min, UNREACHED_PATIENT_WINDOW_MIN)
    plans = None
    if p.treatment_start is not None or p.status == "deceased":
        kept, vitals = patient_time_score(p), p.reserve_at_treatment or 0.0
    else:
        plans = care_plans(world, p, t) if hope else None
        kept = _kept_if_treated_now(p, t, plans) * hope if plans else 0.0
        vitals = max(0.0, p.reserve) * hope if plans else 0.0
    prep = _prep(world, p, final, plans) if cond.needs_prep else None
    # nothing to prepare: ready; a death before care counts in full, whatever was ready
    credit = _readiness_credit(1.0 if prep is None else prep) if kept > 0.0 else 1.0
    prep_wkr = w * kept * credit
    load_w = w if cond.transport else 0.0
    delivered = 1.0 if p.first_hospital_arrival is not None else hope
    sec_w = sec_wg = sec_r = 0.0
    if p.secondary:
        sec_w = w
        if p.treatment_start is not None:
            start = p.treatment_start
            quality, cpr = p.treatment_quality, cpr_minutes(p, start)
            delay, door = start - p.appeared_at, door_minutes(p)
            sec_wg = w * secondary_gain(p.condition, delay, quality, p.onset_min, p.therapy, cpr, door)
        elif plans:
            sec_wg = w * _secondary_gain_now(p, t, plans) * hope
        reached_at = p.first_unit_at
        sec_r = w * (_response_credit(reached_at - p.appeared_at) if reached_at is not None else (
            _response_credit(t - p.appeared_at) * hope))
    return _Entry(1.0, float(p.first_unit_at is not None), w, w * kept, w * vitals, prep_wkr, load_w,
                  load_w * delivered, sec_w, sec_wg, sec_r)


# a stroke call's mean onset lead (the preview's nominal caller)
_STROKE_ONSET_NOMINAL = round(statistics.fmean(STROKE_ONSET_BEFORE_CALL_RANGE))


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _caller_terms(report: str) -> tuple[tuple[str, float, float, float, int], ...]:
    """Each scored condition of ``report``'s posterior: its name, its chance times its stake at the
    nominal onset (the weight), the readiness credit of its benefit (nothing prepared yet) and the
    minutes from the door to its best care at a hospital that readied nothing."""
    terms = []
    for condition, chance in report_condition_posterior(report).items():
        if condition in _NOT_SCORED or chance <= 0.0:
            continue
        weight = chance * stake(condition, _nominal_onset(condition))
        cond = CONDITIONS[condition]
        terms.append((condition, chance, weight, _readiness_credit(0.0 if cond.needs_prep else 1.0),
                      unprepared_wait(cond)))
    return tuple(terms)


def _nominal_onset(condition: str) -> int:
    return _STROKE_ONSET_NOMINAL if condition == "stroke" else 0


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _unseen_condition(condition: str, delay: int, cpr: float) -> tuple[float, float]:
    """An unseen caller with ``condition``, ``delay`` minutes after the call, if the best care
    began once a hospital that readied nothing could give it: the benefit kept and the reserve
    (nominal reserve and stroke onset; ``cpr`` minutes of telephone CPR, which follows the
    agent's own P1 code, count only for a cardiac arrest)."""
    cond = CONDITIONS[condition]
    numbers = CONDITION_NUMBERS[condition]
    quality, therapy = best_therapy(cond)
    onset, wait = _nominal_onset(condition), unprepared_wait(cond)
    telephone_cpr = cpr if condition == "cardiac_arrest" else 0.0
    benefit = benefit_at(condition, delay + wait, quality, onset, therapy, telephone_cpr, delay)
    reserve = statistics.fmean(numbers.initial_reserve) - numbers.deterioration_per_min * delay
    return benefit, reserve if reserve > 0.0 else 0.0


def _caller_sums(report: str, delay: int, cpr: float, left: int) -> tuple[float, float, float]:
    """The sums over ``report``'s posterior that move with the delay: weight x benefit kept, x reserve,
    x benefit kept x readiness credit (none for a condition whose care could not begin in ``left``)."""
    wk = wv = ready_wk = 0.0
    for condition, _, weight, credit, wait in _caller_terms(report):
        if wait > left:
            continue
        benefit, reserve = _unseen_condition(condition, delay, cpr)
        kept = weight * benefit
        wk += kept
        wv += weight * reserve
        ready_wk += kept * credit
    return wk, wv, ready_wk


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _caller_given_up(report: str) -> _Entry:
    """``_caller_entry`` of a caller past hope: the expected scored mass, stake and stake of those
    to be taken to hospital under ``report``'s posterior, the sums that do not move with the delay."""
    n = w = load_w = 0.0
    for condition, chance, weight, _, _ in _caller_terms(report):
        n += chance
        w += weight
        load_w += weight if CONDITIONS[condition].transport else 0.0
    return _Entry(n, 0.0, w, 0.0, 0.0, 0.0, load_w, 0.0, 0.0, 0.0, 0.0)


def _caller_entry(world: World, call: Call, first_call: int, rate: float = 1.0) -> _Entry:
    """An unseen caller: the expectation under the latest report's posterior, since the first call,
    times the hope left."""
    t = world.clock
    given_up = _caller_given_up(call.report)
    rate = rate if call.ambulance_id is None else 1.0
    hope = hope_share(first_call, t, world.task.horizon_min, UNSEEN_CALLER_WINDOW_MIN, rate)
    if not hope:
        return given_up
    cpr = 0.0 if call.coded_p1_at is None else float(max(0, t - max(call.coded_p1_at, call.received_at)))
    wk, wv, ready_wk = _caller_sums(call.report, t - first_call, cpr, world.task.horizon_min - t)
    load_w = given_up.load_w
    return _Entry(given_up.n, 0.0, given_up.w, wk * hope, wv * hope, ready_wk * hope, load_w, load_w * hope,
                  0.0, 0.0, 0.0)


def _settled_entry(world: World, p: Patient, settled: dict[str, tuple[str, _Entry]]) -> _Entry:
    """``_known_entry`` of a patient in a final state, reused from ``settled`` while their state is
    the one it was built in: once care has begun, or they were released or died, nothing the
    terms read moves with the clock or with play."""
    kept = settled.get(p.patient_id)
    if kept is not None and kept[0] == p.status:
        return kept[1]
    entry = _known_entry(world, p, False)
    settled[p.patient_id] = (p.status, entry)
    return entry


def _entries(world: World, final: bool,
             memo: dict[str, Any] | None = None) -> tuple[list[Patient], list[_Entry]]:
    """The scored patients the grade may name, and the terms of every scored patient: in the final
    grade every patient with a real need; in the preview the patients a crew has seen and, for
    each caller no crew has seen, the posterior expectation given their latest call's report.
    ``memo`` (the preview's, kept by the episode) holds the terms of settled patients."""
    known = [p for p in world.patients.values() if p.condition not in _NOT_SCORED and (final or p.visible)]
    if final or memo is None:
        entries = [_known_entry(world, p, final) for p in known]
    else:
        settled = memo.setdefault("settled", {})
        entries = [_settled_entry(world, p, settled) if p.status in FINAL_PATIENT_STATES
                   else _known_entry(world, p, False) for p in known]
    caused = caused_patients(world) if final else _caused_in_view(world)
    surged = {} if final else _by_calls(world, memo, news_cycle_shares)
    if caused or surged:
        entries = [_as_loss(e, 1.0 if p.patient_id in caused else surged.get(p.patient_id, 0.0))
                   for p, e in zip(known, entries, strict=True)]
    if not final:
        callers, rates = _by_calls(world, memo, _unseen_callers), answer_rates(world)
        entries += [_as_loss(_caller_entry(world, c, first, answer_rate(rates, c)),
                             surged.get(c.patient_id, 0.0)) for c, first in callers]
    return known, entries


def _caused_in_view(world: World) -> frozenset[str]:
    """The caused patients the preview may name: the bystander once in view (an alert announces
    them; which callers a news cycle brought is not shown)."""
    bystander = world.patients.get(world.escalation_casualty or "")  # spawns the minute after
    return frozenset((bystander.patient_id,)) if bystander and bystander.visible else frozenset()


def _as_loss(entry: _Entry, chance: float = 1.0) -> _Entry:
    """A patient the play brought about (``caused_patients``) enters by their loss alone: each credit
    as its shortfall from full, no mass or stake in the bases (as ``clinical_outcomes``); one who
    was brought about at ``chance``, in that proportion."""
    if not chance:
        return entry
    w, load_w, kept = entry.w * chance, entry.load_w * chance, 1.0 - chance
    return entry._replace(n=entry.n * kept, reached=entry.reached * kept, w=entry.w - w, wk=entry.wk - w,
                          wv=entry.wv - w, prep_wkr=entry.prep_wkr - w, load_w=entry.load_w - load_w,
                          load_wd=entry.load_wd - load_w)


def _unseen_callers(world: World) -> list[tuple[Call, int]]:
    """Each caller no crew has seen: their latest call and the minute of their first."""
    patients = world.patients
    unseen: dict[str, tuple[Call, int]] = {}
    for call in world.calls.values():  # in arrival order: the latest report, the first minute
        if not patients[call.patient_id].visible:
            first = unseen.get(call.patient_id)
            unseen[call.patient_id] = (call, call.received_at if first is None else first[1])
    return list(unseen.values())


def _by_calls(world: World, memo: dict[str, Any] | None, read: Callable[[World], T]) -> T:
    """``read(world)``, of the calls alone, kept in ``memo`` while ``World.version("calls")`` is
    the same (a caller is first seen when a crew reaches them, which sets their call's status)."""
    if memo is None:
        return read(world)
    version = world.version("calls")
    kept = memo.get(read.__name__)
    if kept is not None:
        kept_world, kept_version, value = kept
        if kept_world is world and kept_version == version:
            return value  # type: ignore[no-any-return]
    value = read(world)
    memo[read.__name__] = (world, version, value)
    return value


def _add_up(entries: list[_Entry]) -> _Entry:
    return _Entry(*map(sum, zip(*entries, strict=True))) if entries else _ZERO


# ---------------------------------------------------------------- episode-level terms
def _penalties(world: World) -> dict[str, float]:
    """The ledger plus the waste outstanding now (pages, preparations, blood nothing has used yet):
    charged while unused (use refunds them), so waste never used costs through the episode."""
    counts = dict(world.ledger)
    hospitals, patients = world.hospitals.values(), world.patients
    outstanding = {
        "wasted_page": sum(s.agent_paged and not s.used and s.state in ("paged", "present")
                           for h in hospitals for s in h.specialists.values()),
        "unused_or_prep": sum(r.agent_prepared and r.patient_id is None and r.state in ("preparing", "ready")
                              for h in hospitals for r in h.ors),
        "unneeded_blood": sum(a.by_agent and not a.used
                              and CONDITIONS[patients[a.patient_id].condition].needs_blood
                              for a in world.allocations),
    }
    counts.update({key: counts.get(key, 0) + n for key, n in outstanding.items() if n})
    return counts


def _waste(counts: dict[str, float]) -> float:
    return sum(PENALTY[k] * c for k, c in counts.items() if k in PENALTY)


def _triage_mean(world: World) -> float:
    values = [triage_accuracy(c) for c in world.calls.values() if c.callback_of is None]
    return sum(values) / len(values) if values else 0.0


def _cascade(world: World, total: _Entry, time_score: float, memo: dict[str, Any] | None) -> float:
    """Secondary response, load delivered, phase 2's triage; the process credit (the last two) gated
    on the benefit kept as waste and readiness are: with the outcomes lost, it earns nothing."""
    response = _less_secondary_shortfall(total, total.sec_r)
    events = sum(h.overcrowding_events for h in world.hospitals.values())
    delivered = max(0.0, _ratio(total.load_wd, total.load_w))
    subs = [response, time_score * delivered * max(0.0, 1.0 - OVERCROWDING_LOAD_PENALTY * events)]
    if world.task.phase == 2:
        news = NEWS_CYCLE_TRIAGE_FACTOR if world.news_cycle_at is not None else 1.0
        subs.append(time_score * _by_calls(world, memo, _triage_mean) * news)
    return sum(subs) / len(subs)


def _mutual_aid_penalty(world: World) -> float:
    return sum(MUTUAL_AID_PENALTY_UNNEEDED for r in world.mutual_aid if r.unneeded)


_CASCADE_COMPONENTS = ("secondary_harm", "cascade_score")


@functools.cache
def _effective_weights(cascades: bool) -> dict[str, float]:
    """The rubric's weights with those of components that do not apply (the cascade ones in
    tasks without cascades) shared out over the others in proportion. Read only."""
    applies = {k: cascades or k not in _CASCADE_COMPONENTS for k in RUBRIC_WEIGHTS}
    norm = sum(w for k, w in RUBRIC_WEIGHTS.items() if applies[k])
    return {k: (w / norm if applies[k] else 0.0) for k, w in RUBRIC_WEIGHTS.items()}


def _ratio(part: float, whole: float) -> float:
    return part / whole if whole > 0 else 0.0


def _less_secondary_shortfall(total: _Entry, secondary_credit: float) -> float:
    """The benefit kept over every scored patient less what secondary casualties fell short of
    full credit (``secondary_credit``: their stake x credit, summed), both as shares of the total
    stake, floored at 0: a secondary casualty moves it by their stake, as a patient moves
    ``time_score``, not by one over the few of them (``secondary_harm``, and the response part of
    ``cascade_score``)."""
    return max(0.0, _ratio(total.wk - (total.sec_w - secondary_credit), total.w))


def _components(world: World, total: _Entry, waste: float,
                memo: dict[str, Any] | None) -> dict[str, float | None]:
    cascades = world.task.cascades
    time_score = max(0.0, _ratio(total.wk, total.w))  # deaths before care, casualties caused: below 0
    return {
        "time_score": time_score,
        "efficiency": time_score * math.exp(-waste / max(1.0, total.n)),
        "secondary_harm": _less_secondary_shortfall(total, total.sec_wg) if cascades else None,
        "prep_ready": max(0.0, _ratio(total.prep_wkr, total.w)),
        "vitals_score_avg": max(0.0, _ratio(total.wv, total.w)),
        "cascade_score": _cascade(world, total, time_score, memo) if cascades else None,
    }


def _summary(world: World, final: bool, memo: dict[str, Any] | None = None) -> dict[str, Any]:
    """Components, effective weights, penalties and the raw score: the one computation behind
    the final grade and the running preview."""
    known, entries = _entries(world, final, memo)
    total = _add_up(entries)
    counts = _penalties(world)
    waste = _waste(counts)
    components = _components(world, total, waste, memo)
    effective = _effective_weights(world.task.cascades)
    ma_penalty = _mutual_aid_penalty(world)
    raw = sum(effective[k] * (components[k] or 0.0) for k in RUBRIC_WEIGHTS) - ma_penalty
    return {
        "scored": known,
        "components": components,
        "effective": effective,
        "counts": counts,
        "waste": waste / max(1.0, total.n),
        "coverage": _ratio(total.reached, total.n),
        "ma_penalty": ma_penalty,
        "raw": raw,
    }


# ---------------------------------------------------------------- reports
def _patient_record(world: World, p: Patient, final: bool, caused: frozenset[str]) -> dict[str, Any]:
    cond = CONDITIONS[p.condition]
    treated = p.treatment_start is not None
    prep = _prep(world, p, final) if cond.needs_prep else None
    time_score = round(patient_time_score(p), 4)
    return {
        "patient_id": p.patient_id,
        "condition": p.condition,
        "priority": cond.true_priority,
        "stake": round(stake(p.condition, p.onset_min), 4),
        "secondary": p.secondary,
        "caused": p.patient_id in caused,  # a surge caller or an escalation's bystander
        "status": p.status,
        "hospital": p.hospital,
        "delay_min": p.treatment_start - p.appeared_at if treated else None,
        "target_min": cond.target_for(relaxed_target_applies(p)),
        "therapy": p.therapy if treated else None,
        "quality": round(p.treatment_quality, 3),
        "benefit_kept": time_score,
        "time_score": time_score,
        "vitals_at_treatment": p.reserve_at_treatment if treated else 0.0,
        "prep": None if prep is None else round(prep, 4),
        "prep_parts": dict(p.prep_credit or {}),
        "readiness_on_arrival": dict(p.arrival_prep or {}),
        "expected_outcome": round(patient_outcome(p), 4),
        "first_unit_min": None if p.first_unit_at is None else p.first_unit_at - p.appeared_at,
    }


def clinical_outcomes(
    patients: list[Patient], caused: frozenset[str] = frozenset()
) -> dict[str, float | int]:
    """What the episode did to patients, beside the score (never part of it): the mean expected
    good outcome weighted by ``outcome_weight`` (the score's weights) and the expected deaths per 100
    graded patients (``conditions.expected_death``). Patients the play itself brought about
    (``caused``: callers a news cycle brought, the bystander an unattended incident injured)
    count in what is lost (deaths, outcome short of 1) but not in the hundred or the weights it
    is a share of, so a policy cannot dilute its figures with casualties it caused."""
    base_w = short = deaths = 0.0
    base = 0
    for p in patients:
        cond = CONDITIONS[p.condition]
        w = outcome_weight(p.condition)
        outcome = patient_outcome(p)
        if p.patient_id not in caused:
            base_w += w
            base += 1
        short += w * (1.0 - outcome)
        deaths += expected_death(cond, outcome, p.status == "deceased")
    return {
        "weighted_outcome": round(max(0.0, 1.0 - short / base_w), 4) if base_w else 0.0,
        "deaths_per_100": round(DEATHS_PER_N_PATIENTS * deaths / base, 2) if base else 0.0,
        "patients": len(patients),
    }


def caused_patients(world: World) -> frozenset[str]:
    """The patients the play brought about: a news cycle's surge (their calls carry ``surge``)
    and an escalation's bystander."""
    surge = frozenset(c.patient_id for c in world.calls.values() if c.surge)
    escalation = world.escalation_casualty
    return surge | {escalation} if escalation else surge


def _clamp(raw: float, final: bool) -> float:
    return min(SCORE_CEIL, max(SCORE_FLOOR if final else 0.0, round(raw, 4)))


def final_score(world: World) -> float:
    """The score ``grade(world, True)`` reports, without its per-patient breakdown."""
    return _clamp(_summary(world, True)["raw"], final=True)


def preview_score(world: World, memo: dict[str, Any] | None = None) -> float:
    """The running score now (the number ``grade(world, False)["score"]`` reports); ``memo``, a
    dict the caller keeps for this episode (empty at first), lets it reuse settled patients' terms."""
    return _clamp(_summary(world, False, memo)["raw"], final=False)


def grade(world: World, final: bool) -> dict[str, Any]:
    """Score breakdown of the episode so far (``final`` adds end-of-episode waste checks)."""
    s = _summary(world, final)
    counts = s["counts"]
    caused = caused_patients(world)
    return {
        "task_id": world.task.task_id,
        "seed": world.seed,
        "final": final,
        "clock_min": world.clock,
        "score": _clamp(s["raw"], final),
        "raw_score": round(s["raw"], 4),
        "components": {k: (None if v is None else round(v, 4)) for k, v in s["components"].items()},
        "weights": {k: round(v, 4) for k, v in s["effective"].items()},
        "penalties": {k: round(counts[k], 4) for k in sorted(counts)},
        "waste_per_patient": round(s["waste"], 4),
        "mutual_aid_penalty": round(s["ma_penalty"], 4),
        "coverage": round(s["coverage"], 4),
        "news_cycle": world.news_cycle_reason or None,
        "overcrowding_diversions": sum(h.overcrowding_events for h in world.hospitals.values()),
        "patients": [_patient_record(world, p, final, caused) for p in s["scored"]],
        "outcomes": clinical_outcomes(s["scored"], caused),
    }
