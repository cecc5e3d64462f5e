"""The grading rubric (docs/MODEL.md#grading): a pure function of
the episode's world state.

::

    final_score = 0.32 x time_score + 0.16 x efficiency + 0.16 x secondary_harm
                + 0.16 x prep_ready + 0.10 x vitals_score_avg + 0.10 x cascade_score
                - mutual_aid_penalty

Scored patients are those with a real need (true priority P1-P3). The final grade includes
callers whose call has come in but whom no crew has seen yet; the running preview counts only
patients the agent can see, so it never leaks a caller's true condition (the difference lands in
the last step's reward). P4 callers are not patients for grading.

* ``time_score`` -- priority-weighted (P1 x3, P2 x2, P3 x1) mean over scored patients of the
  *benefit kept*: the share of the achievable benefit of treatment still obtained at the delay
  ``d`` (minutes from the call to the start of definitive care), read off the condition's own
  cited outcome curve ``O`` (conditions.py, docs/MODEL.md#calibration)::

      benefit_kept = clip((O(d - a, care given) - O_untreated) / (O(0, best care) - O_untreated), 0, 1)

  so the grade falls steeply where minutes cost lives (haemorrhage, STEMI) and gently where
  they do not (non-shock trauma, labour). The care given enters through its therapy and
  quality (thrombolysis instead of PCI, surgery without blood ...). ``a`` is the transfer
  allowance: 30 min (STEMI 120 instead of 90) for a patient transferred after being sent to a
  non-PCI hospital while no PCI-capable hospital could take them (diverted, lab out of
  service or occupied at the time of assignment); 0 otherwise. Never treated: 0.
* ``efficiency`` -- ``coverage x max(0, 1 - penalties)``; coverage is the share of scored
  patients a crew reached. Penalties: invalid action 0.03, wasted specialist page 0.08, OR
  preparation never used 0.08, pre-empted elective case 0.05, blood reserved for a patient who
  does not need it or never used 0.05, ALS sent to a P3/P4 caller 0.06, any unit sent to a P4
  caller 0.04.
* ``prep_ready`` -- mean over patients whose condition needs an OR, a specialist or blood, of the
  readiness measured when they first reached a hospital (each of OR / specialist / blood in 0..1;
  partial while preparing; 0 at a hospital that cannot treat them; 0 if they never arrived).
  Credit comes only from preparation that happened: a patient given care that needs nothing
  prepared (thrombolysis, a CHC delivery) is left out when that care was the best available
  to them, and scores 0 when a better-equipped hospital could have taken them.
* ``vitals_score_avg`` -- mean vitals score (0..1) at the start of treatment; 0 if never treated.
* ``secondary_harm`` -- mean over secondary casualties of their outcome gain, normalised:
  (expected outcome - untreated outcome) / (best outcome - untreated outcome), clipped to 0..1.
* ``cascade_score`` -- mean of: secondary casualties reached in time (1 within 10 min, 0 at 40),
  hospital load handled (share of patients delivered x (1 - 0.5 x overcrowding diversions)),
  and in phase 2 the triage accuracy over received calls (1 for the right level, 0.5 one level
  off, 0 otherwise or untriaged), halved if a news cycle broke out.
* ``mutual_aid_penalty`` -- 0.04 per request made while the free units (plus mutual-aid units
  already on their way) outnumbered the patients and calls waiting for one, 0.03 per mutual-aid
  unit never given a job; capped at 0.10.

``secondary_harm`` and ``cascade_score`` are ``None`` (not applicable) in tasks without
cascades; their weight is shared out over the other components in proportion. The score is
rounded to 4 decimals and clamped to [0.01, 0.99] at the end of the episode.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .conditions import CONDITIONS, benefit_kept, best_outcome, expected_death, expected_outcome
from .params import (
    DEATHS_PER_N_PATIENTS,
    MEMO_ENTRIES,
    MUTUAL_AID_PENALTY_CAP,
    MUTUAL_AID_PENALTY_UNNEEDED,
    MUTUAL_AID_PENALTY_UNUSED,
    NEWS_CYCLE_TRIAGE_FACTOR,
    OVERCROWDING_LOAD_PENALTY,
    PENALTY,
    PRIORITY_WEIGHT,
    RUBRIC_WEIGHTS,
    SCORE_CEIL,
    SCORE_FLOOR,
    SECONDARY_RESPONSE_FULL_MIN,
    SECONDARY_RESPONSE_ZERO_MIN,
)
from .triage import PRIORITIES, triage_cost
from .types import Patient
from .world import World


def _outcome(p: Patient) -> float:
    cond = CONDITIONS[p.condition]
    if p.treatment_start is not None:
        delay = p.treatment_start - p.appeared_at
        return _treated_outcome(
            p.condition, delay, p.treatment_quality, p.onset_min, p.therapy, _cpr_minutes(p), _door(p)
        )
    return 0.0 if p.status == "deceased" else cond.untreated_outcome


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _treated_outcome(condition: str, delay: int, quality: float, onset: int, therapy: str | None,
                     cpr: float, door: int | None) -> float:
    """``expected_outcome`` memoised like ``_benefit`` (every grade asks it of every patient)."""
    return expected_outcome(CONDITIONS[condition], delay, quality, onset, therapy, cpr, door)


def _door(p: Patient) -> int | None:
    """Minutes from the call to the first hospital door (None: never reached one)."""
    return None if p.first_hospital_arrival is None else p.first_hospital_arrival - p.appeared_at


def _relaxed(p: Patient) -> bool:
    """The relaxed transfer target applies: transferred, and no capable hospital could take them."""
    return p.transferred and p.relaxed_target


def transfer_allowance(p: Patient) -> int:
    cond = CONDITIONS[p.condition]
    return cond.target_for(_relaxed(p)) - cond.target_min


def _time_score(p: Patient) -> float:
    if p.treatment_start is None:
        return 0.0
    delay = p.treatment_start - p.appeared_at - transfer_allowance(p)
    cpr, door = _cpr_minutes(p), _door(p)
    return _benefit(p.condition, delay, p.treatment_quality, p.onset_min, p.therapy, cpr, door)


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _benefit(condition: str, delay: int, quality: float, onset: int, therapy: str | None,
             cpr: float, door: int | None) -> float:
    """``benefit_kept`` memoised: a treated patient's inputs never change, yet the running preview
    asks for them every step."""
    return benefit_kept(CONDITIONS[condition], delay, quality, onset, therapy, cpr, door)


def _cpr_minutes(p: Patient) -> float:
    """Minutes of the call-to-treatment delay a cardiac arrest spent under telephone CPR."""
    if p.cpr_from is None or p.treatment_start is None:
        return 0.0
    return float(max(0, p.treatment_start - max(p.cpr_from, p.appeared_at)))


def _prep(p: Patient) -> float | None:
    if not CONDITIONS[p.condition].needs_prep:
        return None
    if p.first_hospital_arrival is None:
        return 0.0
    parts = p.arrival_prep or {}
    return sum(parts.values()) / len(parts) if parts else None


def _patient_record(p: Patient) -> dict[str, Any]:
    cond = CONDITIONS[p.condition]
    treated = p.treatment_start is not None
    prep = _prep(p)
    time_score = round(_time_score(p), 4)
    return {
        "patient_id": p.patient_id,
        "condition": p.condition,
        "priority": cond.true_priority,
        "secondary": p.secondary,
        "status": p.status,
        "hospital": p.hospital,
        "delay_min": p.treatment_start - p.appeared_at if treated else None,
        "target_min": cond.target_for(_relaxed(p)),
        "therapy": p.therapy if treated else None,
        "quality": round(p.treatment_quality, 3),
        "benefit_kept": time_score,
        "time_score": time_score,
        "vitals_at_treatment": p.reserve_at_treatment if treated else 0.0,
        "prep": None if prep is None else round(prep, 4),
        "prep_parts": dict(p.arrival_prep or {}),
        "expected_outcome": round(_outcome(p), 4),
        "first_unit_min": None if p.first_unit_at is None else p.first_unit_at - p.appeared_at,
    }


def _scored(world: World, final: bool) -> list[Patient]:
    """Patients with a real need. The running preview counts only those the agent can see, so it
    never reveals what a caller really has; the final grade counts every caller."""
    return [p for p in world.patients.values() if p.condition not in _NOT_SCORED and (final or p.visible)]


_NOT_SCORED = frozenset(name for name, cond in CONDITIONS.items() if cond.true_priority == "P4")


def _penalties(world: World, final: bool) -> dict[str, int]:
    counts = dict(world.ledger)
    if final:
        extra_pages = sum(
            1
            for h in world.hospitals.values()
            for s in h.specialists.values()
            if s.agent_paged and not s.used and s.state in ("paged", "present")
        )
        extra_preps = sum(
            1
            for h in world.hospitals.values()
            for r in h.ors
            if r.agent_prepared and r.patient_id is None and r.state in ("preparing", "ready")
        )
        unused_blood = sum(
            1
            for a in world.allocations
            if a.by_agent and not a.used and CONDITIONS[world.patients[a.patient_id].condition].needs_blood
        )
        advised_p1 = sum(  # true P1 callers sent away with advice whom no crew ever reached
            1
            for c in world.calls.values()
            if c.status == "closed_advice"
            and c.true_priority == "P1"
            and world.patients[c.patient_id].first_unit_at is None
            and c.callback_of is None
        )
        for key, n in (
            ("under_triage", advised_p1),
            ("wasted_page", extra_pages),
            ("unused_or_prep", extra_preps),
            ("unneeded_blood", unused_blood),
        ):
            if n:
                counts[key] = counts.get(key, 0) + n
    return counts


def _secondary_gain(p: Patient) -> float:
    if p.treatment_start is None:
        return 0.0
    delay = p.treatment_start - p.appeared_at
    return _gain(p.condition, delay, p.treatment_quality, p.onset_min, p.therapy, _cpr_minutes(p), _door(p))


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _gain(condition: str, delay: int, quality: float, onset: int, therapy: str | None, cpr: float,
          door: int | None) -> float:
    """A treated secondary casualty's outcome gain, memoised like ``_benefit``."""
    cond = CONDITIONS[condition]
    base = cond.untreated_outcome
    best = best_outcome(cond, onset)
    if best <= base:
        return 0.0
    got = expected_outcome(cond, delay, quality, onset, therapy, cpr, door)
    return min(1.0, max(0.0, (got - base) / (best - base)))


def _secondary_response(p: Patient) -> float:
    if p.first_unit_at is None:
        return 0.0
    r = p.first_unit_at - p.appeared_at
    span = SECONDARY_RESPONSE_ZERO_MIN - SECONDARY_RESPONSE_FULL_MIN
    return min(1.0, max(0.0, 1.0 - (r - SECONDARY_RESPONSE_FULL_MIN) / span))


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _triage_accuracy(given: str | None, truth: str) -> float:
    """1 for the right level, less per level of mistriage -- under-triage (a lower acuity than
    the truth) costs more per level than over-triage; 0 if untriaged."""
    if given is None:
        return 0.0
    return 1.0 - triage_cost(given, truth)


# every (given, truth) pair's accuracy, computed once by the function above
_ACCURACY = {
    (given, truth): _triage_accuracy(given, truth) for given in (None, *PRIORITIES) for truth in PRIORITIES
}


class _Share(NamedTuple):
    """One scored patient's inputs to the grade's sums (``_summary`` adds them up in order;
    a named tuple: built at C speed, equal when every field is)."""

    weight: float
    weighted_time: float | None  # weight x time score, None if never treated
    vitals: float
    prep: float | None
    covered: bool  # a crew reached them
    delivered: bool  # reached a hospital
    secondary_gain: float | None  # secondary casualties only
    secondary_response: float | None


def _share(p: Patient) -> _Share:
    w = PRIORITY_WEIGHT[CONDITIONS[p.condition].true_priority]
    treated = p.treatment_start is not None
    return _Share(
        w,
        w * _time_score(p) if treated else None,
        (p.reserve_at_treatment or 0.0) if treated else 0.0,
        _prep(p),
        p.first_unit_at is not None,
        p.first_hospital_arrival is not None,
        _secondary_gain(p) if p.secondary else None,
        _secondary_response(p) if p.secondary else None,
    )


@dataclass
class PreviewMemo:
    """What the running grade keeps between steps (one per episode, ``CodeRedSim``): each
    scored patient's share, and the sums over the last list of shares. A share is recomputed
    only for a patient marked in ``World.score_dirty`` (the places that change a field a share
    reads mark it), the sums only when a share did (tests/sim/test_incremental_core.py checks
    every step)."""

    shares: dict[str, _Share] = field(default_factory=dict)
    sums: _Sums | None = None
    terms: _Terms | None = None  # what the components take from ``sums``
    accuracy: tuple[int, float] | None = None  # (World.triage_version, the triage accuracy)
    index: dict[str, int] = field(default_factory=dict)  # patient id -> place in sums.shares
    penalty: tuple[int, float] | None = None  # (World.ledger_version, the ledger's penalty)


class _Sums(NamedTuple):
    """The shares added up, in patient order."""

    shares: tuple[_Share, ...]
    total_weight: float
    weighted_time: float
    vitals: float
    covered: float
    delivered: int
    preps: list[float]
    secondary_gains: list[float]
    secondary_responses: list[float]


def _add_up(shares: tuple[_Share, ...]) -> _Sums:
    total_w = time_sum = vitals_sum = covered = 0.0
    delivered = 0
    preps: list[float] = []
    gains: list[float] = []
    responses: list[float] = []
    for weight, weighted_time, vitals, prep, was_covered, was_delivered, gain, response in shares:
        total_w += weight
        if weighted_time is not None:
            time_sum += weighted_time
            vitals_sum += vitals
        if prep is not None:
            preps.append(prep)
        if was_covered:
            covered += 1
        if was_delivered:
            delivered += 1
        if gain is not None:
            gains.append(gain)
        if response is not None:
            responses.append(response)
    return _Sums(shares, total_w, time_sum, vitals_sum, covered, delivered, preps, gains, responses)


def _memo_sums(world: World, memo: PreviewMemo) -> _Sums:
    """The sums of the scored patients' shares, reusing every share whose patient is not marked
    dirty, and the sums themselves when no share changed."""
    dirty = world.score_dirty
    kept = memo.sums
    if kept is not None and not dirty:
        return kept
    if kept is not None:
        replaced = _replace_dirty(world, memo, kept)
        if replaced is not None:
            dirty.clear()
            return replaced
    known, index = memo.shares, {}
    shares = []
    for p in world.patients.values():
        if not p.visible or p.condition in _NOT_SCORED:
            continue
        pid = p.patient_id
        share = known.get(pid)
        if share is None or kept is None or pid in dirty:
            share = known[pid] = _share(p)
        index[pid] = len(shares)
        shares.append(share)
    dirty.clear()
    memo.index = index
    ordered = tuple(shares)
    if kept is None or kept.shares != ordered:
        kept = memo.sums = _add_up(ordered)
    return kept


def _replace_dirty(world: World, memo: PreviewMemo, kept: _Sums) -> _Sums | None:
    """The sums with the dirty patients' shares replaced in place, or None when a patient joined
    the scored ones (the caller rebuilds the order)."""
    patients, index = world.patients, memo.index
    shares: list[_Share] | None = None
    for pid in world.score_dirty:
        p = patients.get(pid)
        if p is None or not p.visible or p.condition in _NOT_SCORED:
            continue
        i = index.get(pid)
        if i is None:
            return None
        share = _share(p)
        if share != kept.shares[i]:
            if shares is None:
                shares = list(kept.shares)
            shares[i] = memo.shares[pid] = share
    if shares is None:
        return kept
    memo.sums = _add_up(tuple(shares))
    return memo.sums


def _cascade(world: World, terms: _Terms, final: bool, memo: PreviewMemo | None = None) -> float:
    subs = [terms.secondary_response]
    events = 0
    for h in world.hospitals.values():  # a loop: no generator for three hospitals every step
        events += h.overcrowding_events
    subs.append(terms.delivered_share * max(0.0, 1.0 - OVERCROWDING_LOAD_PENALTY * events))
    if world.task.phase == 2:
        if memo is not None and memo.accuracy is not None and memo.accuracy[0] == world.triage_version:
            accuracy = memo.accuracy[1]
        else:
            accuracy = _triage_accuracy_mean(world, final)
            if memo is not None:
                memo.accuracy = (world.triage_version, accuracy)
        subs.append(accuracy * (NEWS_CYCLE_TRIAGE_FACTOR if world.news_cycle_at is not None else 1.0))
    return _mean(subs)


def _triage_accuracy_mean(world: World, final: bool) -> float:
    patients = world.patients
    return _mean([
        _ACCURACY[c.priority, c.true_priority]
        for c in world.calls.values()
        # the preview judges only triage the crews have already checked
        if c.callback_of is None and (final or patients[c.patient_id].visible)
    ])


def _mutual_aid_penalty(world: World, final: bool) -> float | int:
    total: float | int = sum(MUTUAL_AID_PENALTY_UNNEEDED for r in world.mutual_aid if r.unneeded)
    if final:
        for r in world.mutual_aid:
            amb = world.ambulances.get(r.unit_id)
            if amb is None or amb.dispatches == 0:
                total += MUTUAL_AID_PENALTY_UNUSED
    return min(MUTUAL_AID_PENALTY_CAP, total)


_CASCADE_COMPONENTS = ("secondary_harm", "cascade_score")


@functools.cache
def _effective_weights(cascades: bool) -> dict[str, float]:
    """The rubric's weights with those of components that do not apply (the cascade ones in
    tasks without cascades) shared out over the others in proportion. Read only."""
    applies = {k: cascades or k not in _CASCADE_COMPONENTS for k in RUBRIC_WEIGHTS}
    norm = sum(w for k, w in RUBRIC_WEIGHTS.items() if applies[k])
    return {k: (w / norm if applies[k] else 0.0) for k, w in RUBRIC_WEIGHTS.items()}


def _summary(world: World, final: bool, memo: PreviewMemo | None = None) -> dict[str, Any]:
    """Components, effective weights, penalties and the raw score (no per-patient records); with
    the running grade's ``memo``, the shares it holds of patients not marked dirty are reused."""
    scored = _scored(world, final)
    if memo is None:
        shares = [_share(p) for p in scored]
    else:
        known, dirty = memo.shares, world.score_dirty
        shares = [known[p.patient_id] if p.patient_id in known and p.patient_id not in dirty else _share(p)
                  for p in scored]
    terms = _terms(_add_up(tuple(shares)))
    counts = _penalties(world, final)
    components = _components(world, terms, _penalty(counts), final)
    effective = _effective_weights(world.task.cascades)
    ma_penalty = _mutual_aid_penalty(world, final)
    raw = sum(effective[k] * (components[k] or 0.0) for k in RUBRIC_WEIGHTS) - ma_penalty
    return {
        "scored": scored,
        "components": components,
        "effective": effective,
        "counts": counts,
        "coverage": terms.coverage,
        "ma_penalty": ma_penalty,
        "raw": raw,
    }


class _Terms(NamedTuple):
    """What the components take from the patients' shares (``_terms``)."""

    sums: _Sums
    coverage: float
    time_score: float
    prep: float
    vitals: float
    secondary_gain: float
    secondary_response: float
    delivered_share: float


def _terms(sums: _Sums) -> _Terms:
    n = len(sums.shares)
    return _Terms(
        sums,
        sums.covered / n if n else 0.0,
        sums.weighted_time / sums.total_weight if sums.total_weight else 0.0,
        _mean(sums.preps),
        sums.vitals / n if n else 0.0,
        _mean(sums.secondary_gains),
        _mean(sums.secondary_responses),
        sums.delivered / n if n else 0.0,
    )


def _penalty(counts: dict[str, int]) -> float:
    if not counts:
        return 0  # what the sum below gives (most steps of a good episode)
    return sum(PENALTY[k] * c for k, c in counts.items() if k in PENALTY)


def _components(world: World, terms: _Terms, penalty: float, final: bool) -> dict[str, float | None]:
    return dict(zip(RUBRIC_WEIGHTS, _component_values(world, terms, penalty, final), strict=True))


def _component_values(
    world: World, terms: _Terms, penalty: float, final: bool, memo: PreviewMemo | None = None
) -> tuple[float | None, ...]:
    """The components in the order of ``RUBRIC_WEIGHTS`` (time score, efficiency, secondary
    harm, prep ready, vitals score, cascade score)."""
    cascades = world.task.cascades
    return (
        terms.time_score,
        terms.coverage * max(0.0, 1.0 - penalty),
        terms.secondary_gain if cascades else None,
        terms.prep,
        terms.vitals,
        _cascade(world, terms, final, memo) if cascades else None,
    )


def clinical_outcomes(patients: list[Patient]) -> dict[str, float | int]:
    """What the episode did to patients, beside the score (never part of it): the priority-
    weighted mean expected good outcome (P1 x3, P2 x2, P3 x1) and the expected deaths per 100
    graded patients (``conditions.expected_death``)."""
    total_w = good = deaths = 0.0
    for p in patients:
        cond = CONDITIONS[p.condition]
        w = PRIORITY_WEIGHT[cond.true_priority]
        outcome = _outcome(p)
        total_w += w
        good += w * outcome
        deaths += expected_death(cond, outcome, p.status == "deceased")
    n = len(patients)
    return {
        "weighted_outcome": round(good / total_w, 4) if total_w else 0.0,
        "deaths_per_100": round(DEATHS_PER_N_PATIENTS * deaths / n, 2) if n else 0.0,
        "patients": n,
    }


def _clamp(raw: float, final: bool) -> float:
    return min(SCORE_CEIL, max(SCORE_FLOOR if final else 0.0, round(raw, 4)))


def final_score(world: World, memo: PreviewMemo | None = None) -> float:
    """The score ``grade(world, True)`` reports, without its per-patient breakdown (``memo``:
    as ``_summary`` takes it)."""
    return _clamp(_summary(world, True, memo)["raw"], final=True)


def preview_score(world: World, memo: PreviewMemo | None = None) -> float:
    """The running score now (the same number ``grade(world, False)["score"]`` reports); with
    ``memo`` (kept by the episode) unchanged patients' shares are reused."""
    if memo is None:
        return _clamp(_summary(world, final=False)["raw"], final=False)
    return _clamp(_preview_raw(world, memo), final=False)


def _preview_raw(world: World, memo: PreviewMemo) -> float:
    """``_summary(world, False)["raw"]`` without the breakdown it also returns: the same terms
    added in the same order (tests/sim/test_incremental_core.py compares every step)."""
    sums = _memo_sums(world, memo)
    terms = memo.terms
    if terms is None or terms.sums is not sums:
        terms = memo.terms = _terms(sums)
    penalty = memo.penalty
    if penalty is None or penalty[0] != world.ledger_version:
        penalty = memo.penalty = (world.ledger_version, _penalty(world.ledger))
    values = _component_values(world, terms, penalty[1], False, memo)
    weights = _weights_in_order(world.task.cascades)
    raw = sum([w * (v or 0.0) for w, v in zip(weights, values, strict=True)])
    return raw - _mutual_aid_penalty(world, False) if world.mutual_aid else raw


@functools.cache
def _weights_in_order(cascades: bool) -> tuple[float, ...]:
    """The effective weights in the rubric's order, the order ``_summary`` adds them."""
    effective = _effective_weights(cascades)
    return tuple(effective[k] for k in RUBRIC_WEIGHTS)


def grade(world: World, final: bool) -> dict[str, Any]:
    """Score breakdown of the episode so far (``final`` adds end-of-episode waste checks)."""
    s = _summary(world, final)
    counts = s["counts"]
    return {
        "task_id": world.task.task_id,
        "seed": world.seed,
        "final": final,
        "clock_min": world.clock,
        "score": _clamp(s["raw"], final),
        "raw_score": round(s["raw"], 4),
        "components": {k: (None if v is None else round(v, 4)) for k, v in s["components"].items()},
        "weights": {k: round(v, 4) for k, v in s["effective"].items()},
        "penalties": {k: counts[k] for k in sorted(counts)},
        "mutual_aid_penalty": round(s["ma_penalty"], 4),
        "coverage": round(s["coverage"], 4),
        "news_cycle": world.news_cycle_reason or None,
        "overcrowding_diversions": sum(h.overcrowding_events for h in world.hospitals.values()),
        "patients": [_patient_record(p) for p in s["scored"]],
        "outcomes": clinical_outcomes(s["scored"]),
    }
