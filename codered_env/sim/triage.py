"""Call triage: the caller-report likelihood model, its Bayes posterior, and callbacks.

True priorities follow MPDS response plans mapped onto the four 108 levels (docs/MODEL.md#triage):
Echo/Delta -> P1 immediate, Charlie -> P2 urgent, Bravo/Alpha -> P3 non-urgent, Omega -> P4
no-dispatch advice. Stroke within the treatment window is handled as Delta-equivalent (P1) here.

Likelihood model (the tables live in ``params.py``, section "Triage likelihood model")
    A caller describes symptoms, never the diagnosis. For one call with true condition ``c``:

    1. who rings (``patient`` / ``family`` / ``bystander``) is drawn from ``REPORT_CALLER_MIX[c]``;
    2. the age band from ``REPORT_AGE_BANDS[c]`` (the age is then uniform inside the band), and
       the sex from ``REPORT_SHARE_MALE[c]``;
    3. each symptom feature ``f`` is present with probability ``REPORT_FEATURES[c][f]``; the
       caller mentions a present feature with the caller's reliability ``r`` and mentions an
       absent one by mistake with probability ``REPORT_FALSE_MENTION``. So a feature is in the
       report with probability ``p_cf * r + (1 - p_cf) * e``, independently given (c, caller);
    4. each mentioned feature is worded with one of several phrases drawn uniformly (the words
       carry no information beyond the feature), in a random order.

    The same words therefore come from several conditions (chest pain: STEMI, gastritis,
    anxiety; collapse: cardiac arrest, stroke, fever in the elderly; breathlessness: STEMI,
    anxiety, trauma). The report text is everything the dispatcher knows about the caller.

Public functions
    ``caller_report(condition, place, rng)`` -- sample a report for ``condition`` from ``rng``
    (a ``random.Random``); the draws depend only on that generator.
    ``parse_report(report)`` -- the visible facts of a report (caller, age band, sex, features).
    ``report_facts(report)`` -- the same under any number of callback prefixes (the Gym
    encoder's symptom cues are these features).
    ``condition_posterior(call, prior=None)`` -- the exact posterior over true conditions given
    only what the dispatcher sees of ``call`` (its report text), normalised, deterministic;
    ``prior`` defaults to the phase-2 call mix ``CALL_MIX`` (incident and news-cycle surge calls
    come from other mixes: pass ``call_sources.call_prior`` of the call if you know better).
    ``priority_posterior(call)`` -- the same, summed per priority level.
    ``best_guess_priority(post)`` -- the most probable level ("trust the best guess").
    ``cautious_priority(post)`` -- the level with the least expected triage cost under the
    rubric's costs (under-triage 1.0 per level, over-triage 0.1): a send-hot-when-in-doubt rule.
    ``triage_rates(pairs)`` -- over-/under-triage at the lights-and-sirens line, as Dami 2015
    defines them, for (true, given) priority pairs.
    ``callback_plan(report, rng)`` -- whether and when a caller advised at P4 rings back, drawn
    from the model's predictive distribution given the report alone (so a callback's timing
    and words never depend on the caller's hidden truth).
    ``triage_accuracy(call)`` -- 1 minus the expected triage cost of the code given, under the
    posterior given the report (the rubric's phase-2 triage credit).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from random import Random
from typing import TYPE_CHECKING, Any

from .conditions import CONDITIONS
from .params import (
    CALL_MIX,
    CALLBACK_DELAY_RANGE_BY_PRIORITY,
    CALLBACK_PROBABILITY_BY_PRIORITY,
    HOT_PRIORITIES,
    MEMO_ENTRIES,
    OVER_TRIAGE_COST_PER_LEVEL,
    REPORT_AGE_BANDS,
    REPORT_CALLER_MIX,
    REPORT_CALLER_RELIABILITY,
    REPORT_FALSE_MENTION,
    REPORT_FEATURES,
    REPORT_NEVER_MISTAKEN,
    REPORT_SHARE_MALE,
    UNDER_TRIAGE_COST_PER_LEVEL,
)
from .rng import choice, randint, shuffle, weighted_draw

if TYPE_CHECKING:
    from .types import Call

PRIORITIES: tuple[str, ...] = ("P1", "P2", "P3", "P4")

# feature -> phrases a caller may use for it (drawn uniformly: wording carries no information).
FEATURE_PHRASES: dict[str, tuple[str, ...]] = {
    "chest_pain": ("chest pain", "pain in the chest", "tightness in the chest"),
    "radiating": ("pain going into the arm", "pain up into the jaw"),
    "sweating": ("sweating a lot", "cold sweat"),
    "breathless": ("short of breath", "breathing fast", "cannot get breath"),
    "vomiting": ("vomiting", "throwing up"),
    "collapsed": ("collapsed", "fell down suddenly"),
    "unresponsive": ("not responding", "not waking up"),
    "gasping": ("not breathing properly", "gasping"),
    "one_side_weak": ("one side weak", "face drooping", "cannot lift one arm"),
    "speech": ("speech slurred", "talking strangely"),
    "confused": ("confused", "does not know where they are"),
    "headache": ("bad headache", "head hurting"),
    "injury": ("road accident", "had a fall", "hit by a vehicle"),
    "heavy_bleeding": ("bleeding a lot", "lot of blood"),
    "pale_drowsy": ("pale and drowsy", "going cold and sleepy"),
    "limb_hurt": ("leg badly hurt", "arm looks broken", "cannot move the leg"),
    "pregnant": ("pregnant", "nine months pregnant"),
    "labour_pains": ("labour pains", "water broke", "contractions"),
    "fever": ("fever", "very hot body"),
    "stomach": ("stomach pain", "burning in the stomach", "acidity"),
    "panicky": ("very panicky", "hands tingling", "shaking and crying"),
    "for_days": ("same for some days", "wants to know what to do", "asking for advice"),
}
FEATURES: tuple[str, ...] = tuple(FEATURE_PHRASES)
CALLER_PHRASES: dict[str, str] = {
    "patient": "patient calling",
    "family": "family calling",
    "bystander": "passer-by calling",
}
AGE_BANDS: dict[str, tuple[int, int]] = {
    "child": (2, 14),
    "young": (15, 44),
    "middle": (45, 64),
    "old": (65, 90),
}
NO_SYMPTOM_TEXT = "unwell, caller not sure what is wrong"
CALLBACK_PREFIX = "CALLBACK"
CALLBACK_SAYS = ", caller says it is worse: "
_PHRASE_TO_FEATURE = {phrase: f for f, phrases in FEATURE_PHRASES.items() for phrase in phrases}
_CALLER_FROM_PHRASE = {v: k for k, v in CALLER_PHRASES.items()}
_HEADER = re.compile(r"^(?:CALLBACK[^:]*: )?(\d+)([MF]) at [^,]+, ([a-z -]+ calling): (.*)$")


@dataclass(frozen=True)
class ReportFacts:
    """What a report says, as a dispatcher reads it."""

    caller: str
    age: int
    sex: str
    features: frozenset[str]

    @property
    def age_band(self) -> str:
        return age_band(self.age)


def age_band(age: int) -> str:
    for band, (lo, hi) in AGE_BANDS.items():
        if lo <= age <= hi:
            return band
    return "old" if age > AGE_BANDS["old"][0] else "child"


def _false_mention(feature: str) -> float:
    return 0.0 if feature in REPORT_NEVER_MISTAKEN else REPORT_FALSE_MENTION


@functools.cache
def _feature_table(condition: str) -> tuple[tuple[float, float, tuple[str, ...]], ...]:
    """Per feature, in ``FEATURES`` order: P(present) for ``condition``, P(mentioned though
    absent), and its phrases (what ``caller_report`` reads for every feature of every call)."""
    return tuple(
        (REPORT_FEATURES[condition].get(f, 0.0), _false_mention(f), FEATURE_PHRASES[f]) for f in FEATURES
    )


def _mentions(condition: str, caller: str, rng: Random) -> list[str]:
    """The phrases a ``caller`` uses for ``condition``'s features, in the shuffled order of
    ``drawn_report``: per feature the draws of ``random() < P(present)``, ``random() < P(said)``
    and, when said, ``rng.choice(phrases)``; then ``rng.shuffle`` (the same draws, rng.py)."""
    reliability = REPORT_CALLER_RELIABILITY[caller]
    draw = rng.random
    mentioned = []
    for present_p, false_p, phrases in _feature_table(condition):
        said_p = reliability if draw() < present_p else false_p
        if draw() < said_p:
            mentioned.append(choice(rng, phrases))
    shuffle(rng, mentioned)
    return mentioned


def caller_report(condition: str, place: str, rng: Random) -> str:
    """One caller report for ``condition``: caller, age, sex, place and mentioned symptoms."""
    return drawn_report(condition, place, rng)[0]


def drawn_report(condition: str, place: str, rng: Random) -> tuple[str, str, int]:
    """``caller_report`` with the sex and age it drew (what ``parse_report`` would read back)."""
    caller = weighted_draw(rng, REPORT_CALLER_MIX[condition])
    lo, hi = AGE_BANDS[weighted_draw(rng, REPORT_AGE_BANDS[condition])]
    age = randint(rng, lo, hi)
    sex = "M" if rng.random() < REPORT_SHARE_MALE[condition] else "F"
    mentioned = _mentions(condition, caller, rng)
    symptoms = "; ".join(mentioned) if mentioned else NO_SYMPTOM_TEXT
    return f"{age}{sex} at {place}, {CALLER_PHRASES[caller]}: {symptoms}", sex, age


def skip_report(condition: str, rng: Random) -> None:
    """Advance ``rng`` exactly as ``drawn_report(condition, ...)`` would, building no text (a
    fork's shadow schedule discards the calls it has already passed)."""
    caller = weighted_draw(rng, REPORT_CALLER_MIX[condition])
    lo, hi = AGE_BANDS[weighted_draw(rng, REPORT_AGE_BANDS[condition])]
    randint(rng, lo, hi)
    rng.random()
    _mentions(condition, caller, rng)


def callback_report(original: str, original_id: str) -> str:
    """What a caller advised at P4 says when ringing back."""
    return f"{CALLBACK_PREFIX} (was {original_id}){CALLBACK_SAYS}{original}"


@functools.lru_cache(maxsize=8192)
def parse_report(report: str) -> ReportFacts | None:
    """The visible facts of a report, or None for text this model did not produce."""
    match = _HEADER.match(report)
    if match is None:
        return None
    age, sex, caller_text, body = match.groups()
    caller = _CALLER_FROM_PHRASE.get(caller_text)
    if caller is None:
        return None
    features = set()
    if body != NO_SYMPTOM_TEXT:
        for phrase in body.split("; "):
            if phrase not in _PHRASE_TO_FEATURE:
                return None
            features.add(_PHRASE_TO_FEATURE[phrase])
    return ReportFacts(caller, int(age), sex, frozenset(features))


def report_facts(report: str) -> ReportFacts | None:
    """``parse_report`` of the caller's own words under any number of callback prefixes (a
    caller may ring back about a callback), or None for text this model did not produce."""
    while report.startswith(CALLBACK_PREFIX) and CALLBACK_SAYS in report:
        report = report.split(CALLBACK_SAYS, 1)[1]
    return parse_report(report)


def log_likelihood(condition: str, facts: ReportFacts) -> float:
    """log P(report facts | condition) under the generative model above."""
    return _log_likelihood(condition, facts.caller, facts.age_band, facts.sex, facts.features)


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _log_likelihood(condition: str, caller: str, band: str, sex: str, features: frozenset[str]) -> float:
    """``log_likelihood`` of the facts it reads (memoised: every fork weighs the same waiting
    callers again). The per-feature logs come from ``_log_chances``, added in the same order."""
    caller_p = REPORT_CALLER_MIX[condition].get(caller, 0.0)
    band_p = REPORT_AGE_BANDS[condition].get(band, 0.0)
    male = REPORT_SHARE_MALE[condition]
    sex_p = male if sex == "M" else 1.0 - male
    if caller_p <= 0 or band_p <= 0 or sex_p <= 0:
        return -math.inf
    total = math.log(caller_p) + math.log(band_p) + math.log(sex_p)
    for feature, said_log, unsaid_log in _log_chances(condition, caller):
        chance_log = said_log if feature in features else unsaid_log
        if chance_log is None:
            return -math.inf
        total += chance_log
    return total


@functools.cache
def _log_chances(condition: str, caller: str) -> tuple[tuple[str, float | None, float | None], ...]:
    """Per feature, in ``FEATURES`` order: log P(mentioned) and log P(not mentioned) for this
    condition and caller (None where the chance is 0: the report is then impossible)."""
    r = REPORT_CALLER_RELIABILITY[caller]
    table = REPORT_FEATURES[condition]
    rows = []
    for feature in FEATURES:
        p = table.get(feature, 0.0)
        said = p * r + (1.0 - p) * _false_mention(feature)
        unsaid = 1.0 - said
        said_log = math.log(said) if said > 0.0 else None
        rows.append((feature, said_log, math.log(unsaid) if unsaid > 0.0 else None))
    return tuple(rows)


def posterior_from_facts(facts: ReportFacts, prior: dict[str, float] | None = None) -> dict[str, float]:
    prior = CALL_MIX if prior is None else prior
    logs = {c: math.log(w) + log_likelihood(c, facts) for c, w in prior.items() if w > 0}
    top = max(logs.values())
    weights = {c: math.exp(v - top) if v > -math.inf else 0.0 for c, v in logs.items()}
    norm = sum(weights.values())
    return {c: w / norm for c, w in weights.items()}


def condition_posterior(call: Any, prior: dict[str, float] | None = None) -> dict[str, float]:
    """P(true condition | everything the dispatcher sees of ``call``), normalised.

    ``call`` is a ``types.Call`` or anything with a ``report`` attribute / key. A report this
    model did not produce (not expected in play) falls back to the prior."""
    report = call["report"] if isinstance(call, dict) else call.report
    prior = CALL_MIX if prior is None else prior
    facts = parse_report(report)
    if facts is None:
        norm = sum(prior.values())
        return {c: w / norm for c, w in prior.items()}
    return posterior_from_facts(facts, prior)


def priority_posterior(call: Any, prior: dict[str, float] | None = None) -> dict[str, float]:
    out = dict.fromkeys(PRIORITIES, 0.0)
    for condition, p in condition_posterior(call, prior).items():
        out[CONDITIONS[condition].true_priority] += p
    return out


def callback_plan(report: str, rng: Random) -> int | None:
    """Minutes until a caller advised at P4 rings back, or None if they never do.

    A condition is drawn from the posterior given the report, then whether and when that
    caller would ring back; the caller's true condition plays no part."""
    imagined = weighted_draw(rng, _report_posterior(report))
    priority = CONDITIONS[imagined].true_priority
    if rng.random() >= CALLBACK_PROBABILITY_BY_PRIORITY[priority]:
        return None
    return rng.randint(*CALLBACK_DELAY_RANGE_BY_PRIORITY[priority])


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _report_posterior(report: str) -> dict[str, float]:
    """``condition_posterior`` of a report under the call mix, memoised (read only): every
    fork redraws the callbacks of the same advised callers."""
    return condition_posterior({"report": report})


def report_condition_posterior(report: str) -> dict[str, float]:
    """``condition_posterior`` of a report under the call mix, memoised (read only)."""
    return _report_posterior(report)


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def report_priority_posterior(report: str) -> dict[str, float]:
    """``priority_posterior`` of a report under the call mix, memoised (read only): the rubric
    asks it of every call at every dispatch and every grade."""
    return priority_posterior({"report": report})


def triage_cost(given: str, truth: str) -> float:
    """Credit lost for coding a call ``given`` when it is ``truth`` (the rubric's triage cost):
    under-triage (a lower acuity than the truth) costs more per level than over-triage."""
    gap = int(given[1]) - int(truth[1])
    per_level = UNDER_TRIAGE_COST_PER_LEVEL if gap > 0 else OVER_TRIAGE_COST_PER_LEVEL
    return min(1.0, per_level * abs(gap))


def best_guess_priority(post: dict[str, float]) -> str:
    """The most probable level (ties: the more urgent)."""
    return max(PRIORITIES, key=lambda level: (post.get(level, 0.0), -int(level[1])))


def cautious_priority(post: dict[str, float]) -> str:
    """The level with the least expected triage cost given the posterior (ties: the more urgent).
    With under-triage ten times dearer than over-triage this sends hot when in doubt."""
    def expected_cost(level: str) -> float:
        return sum(p * triage_cost(level, truth) for truth, p in post.items())

    return min(PRIORITIES, key=lambda level: (round(expected_cost(level), 12), int(level[1])))


def triage_rates(pairs: list[tuple[str, str]]) -> dict[str, float]:
    """Over- and under-triage at the lights-and-sirens line for (true, given) priority pairs, as
    Dami 2015 defines them: over = share of hot codes (P1/P2) whose caller needed no hot response,
    under = share of cold codes (P3/P4) whose caller did; plus the hot sensitivity and the
    share of true P1 callers coded cold."""
    hot_given = [truth for truth, given in pairs if given in HOT_PRIORITIES]
    cold_given = [truth for truth, given in pairs if given not in HOT_PRIORITIES]
    needs_hot = [given for truth, given in pairs if truth in HOT_PRIORITIES]
    p1_given = [given for truth, given in pairs if truth == "P1"]
    return {
        "over": sum(t not in HOT_PRIORITIES for t in hot_given) / max(1, len(hot_given)),
        "under": sum(t in HOT_PRIORITIES for t in cold_given) / max(1, len(cold_given)),
        "hot_sensitivity": sum(g in HOT_PRIORITIES for g in needs_hot) / max(1, len(needs_hot)),
        "p1_sent_cold": sum(g not in HOT_PRIORITIES for g in p1_given) / max(1, len(p1_given)),
        "exact": sum(t == g for t, g in pairs) / max(1, len(pairs)),
    }


def triage_accuracy(call: Call) -> float:
    """1 minus the expected triage cost of the code given, under the posterior given the report
    (what the code could be judged on when it was given); 0 if untriaged."""
    return 0.0 if call.priority is None else _expected_accuracy(call.report, call.priority)


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _expected_accuracy(report: str, code: str) -> float:
    chances = report_priority_posterior(report)
    return 1.0 - sum(chances.get(level, 0.0) * triage_cost(code, level) for level in PRIORITIES)
