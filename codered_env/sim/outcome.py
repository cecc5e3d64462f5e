"""One patient's outcome on their condition's cited curve (conditions.py), and what the rubric
derives from it: the stake a patient weighs in every mean and the benefit kept (docs/MODEL.md §8)."""

from __future__ import annotations

import functools

from .conditions import CONDITIONS, Condition, benefit_kept, best_outcome, death_slope, expected_outcome
from .params import DEATH_WEIGHT, MEMO_ENTRIES, PRIORITY_WEIGHT
from .types import Patient


def patient_outcome(p: Patient) -> float:
    cond = CONDITIONS[p.condition]
    if p.treatment_start is not None:
        delay = p.treatment_start - p.appeared_at
        cpr = cpr_minutes(p, p.treatment_start)
        quality, door = p.treatment_quality, door_minutes(p)
        return treated_outcome(p.condition, delay, quality, p.onset_min, p.therapy, cpr, door)
    return 0.0 if p.status == "deceased" else cond.untreated_outcome


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def treated_outcome(condition: str, delay: int, quality: float, onset: int, therapy: str | None,
                     cpr: float, door: int | None) -> float:
    return expected_outcome(CONDITIONS[condition], delay, quality, onset, therapy, cpr, door)


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def benefit_at(condition: str, delay: int, quality: float, onset: int, therapy: str | None,
             cpr: float, door: int | None) -> float:
    """``benefit_kept`` memoised (asked of every patient at every grade)."""
    return benefit_kept(CONDITIONS[condition], delay, quality, onset, therapy, cpr, door)


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def secondary_gain(condition: str, delay: int, quality: float, onset: int, therapy: str | None, cpr: float,
          door: int | None) -> float:
    """A secondary casualty's outcome gain, normalised to the best outcome (care at 40 % of target)."""
    cond = CONDITIONS[condition]
    base, best = cond.untreated_outcome, best_outcome(cond, onset)
    if best <= base:
        return 0.0
    got = expected_outcome(cond, delay, quality, onset, therapy, cpr, door)
    return min(1.0, max(0.0, (got - base) / (best - base)))


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def kept_by_death(condition: str, onset: int) -> float:
    """The benefit kept, on the ``benefit_kept`` scale, by a patient who died before any care:
    ``(0 - O_untreated) / (O(0, best care) - O_untreated)``, at most 0. They lost the outcome
    they would have had untreated as well, so the stake-weighted sum of benefit kept moves with
    the weighted expected outcome for deaths too (0 where untreated means death)."""
    cond = CONDITIONS[condition]
    span = stake(condition, onset) / (outcome_weight(condition) or 1.0)
    return -cond.untreated_outcome / span if span > 0 else 0.0


@functools.cache
def outcome_weight(condition: str) -> float:
    """What one unit of the patient's expected outcome weighs: the priority weight plus
    ``DEATH_WEIGHT`` x the expected deaths it averts (``death_slope``); 0 for a P4 caller."""
    cond = CONDITIONS[condition]
    if cond.true_priority not in PRIORITY_WEIGHT:
        return 0.0
    return PRIORITY_WEIGHT[cond.true_priority] + DEATH_WEIGHT * death_slope(cond)


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def stake(condition: str, onset: int) -> float:
    """The patient's weight in every mean: ``outcome_weight`` x the outcome at stake,
    ``O(0, best care) - O_untreated`` (0 for a P4 caller)."""
    cond = CONDITIONS[condition]
    weight = outcome_weight(condition)
    if not weight:
        return 0.0
    best = cond.best_care
    ceiling = expected_outcome(cond, 0.0, 1.0, onset, best.therapy if best else "definitive")
    return weight * max(0.0, ceiling - cond.untreated_outcome)


def door_minutes(p: Patient) -> int | None:
    """Minutes from the call to the first hospital door (None: never reached one)."""
    return None if p.first_hospital_arrival is None else p.first_hospital_arrival - p.appeared_at


def relaxed_target_applies(p: Patient) -> bool:
    """The relaxed transfer target applies: transferred, and no capable hospital could take them."""
    return p.transferred and p.relaxed_target


def transfer_allowance(p: Patient) -> int:
    if not relaxed_target_applies(p):
        return 0
    cond = CONDITIONS[p.condition]
    return cond.target_for(True) - cond.target_min


def cpr_minutes(p: Patient, until: int) -> float:
    """Minutes of the call-to-``until`` delay a cardiac arrest spent under telephone CPR."""
    if p.cpr_from is None:
        return 0.0
    return float(max(0, until - max(p.cpr_from, p.appeared_at)))


def patient_time_score(p: Patient) -> float:
    if p.treatment_start is None:
        return kept_by_death(p.condition, p.onset_min) if p.status == "deceased" else 0.0
    delay = p.treatment_start - p.appeared_at - transfer_allowance(p)
    return benefit_at(p.condition, delay, p.treatment_quality, p.onset_min, p.therapy,
                    cpr_minutes(p, p.treatment_start), door_minutes(p))


def best_therapy(cond: Condition) -> tuple[float, str]:
    best = cond.best_care
    return (best.quality, best.therapy) if best else (1.0, "definitive")
