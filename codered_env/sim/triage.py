"""Call triage ground truth and the caller reports the agent sees.

True priorities follow MPDS response plans mapped onto the four 108 levels (MODEL.md section 7):
Echo/Delta -> P1 immediate, Charlie -> P2 urgent, Bravo/Alpha -> P3 non-urgent, Omega -> P4
no-dispatch advice. Stroke within the treatment window is handled as Delta-equivalent (P1) here.

A caller describes symptoms, never the diagnosis. Reports are drawn from per-condition phrase
pools that deliberately overlap: chest pain comes from STEMI, gastritis and panic attacks alike;
atypical STEMI (breathless, vomiting, tired) reads like gastritis. Age and the details that
separate look-alikes (radiation, sweating, tingling fingers after an argument) are in the text.
"""

from __future__ import annotations

import re
from random import Random

from .params import CALL_MIX
from .types import Call

PRIORITIES: tuple[str, ...] = ("P1", "P2", "P3", "P4")
PRIORITY_MEANING: dict[str, str] = {
    "P1": "immediate (MPDS Echo/Delta)",
    "P2": "urgent (MPDS Charlie)",
    "P3": "non-urgent (MPDS Bravo/Alpha)",
    "P4": "no dispatch, advice only (MPDS Omega)",
}

# condition -> (age range, share male, complaint phrases)
_REPORTS: dict[str, tuple[tuple[int, int], float, tuple[str, ...]]] = {
    "stemi": (
        (45, 78),
        0.7,
        (
            "crushing chest pain spreading to left arm, sweating",
            "chest pain for 30 min, cold sweat, feels faint",
            "heaviness in chest and jaw, vomited once, sweating",
            "breathless and very tired, vomiting, looks grey",  # atypical presentation
            "pressure in chest after climbing stairs, not going away",
        ),
    ),
    "stroke": (
        (50, 85),
        0.55,
        (
            "face drooping on one side, speech slurred",
            "suddenly cannot move right arm and leg, confused",
            "fell down, cannot speak properly, one side weak",
            "sudden severe headache, vision blurred, arm numb",
        ),
    ),
    "trauma_haemorrhage": (
        (18, 60),
        0.75,
        (
            "bike hit by truck, bleeding heavily from thigh",
            "stabbed in abdomen, lot of blood, getting drowsy",
            "fell from scaffolding, bleeding from head and belly pain, pale",
            "car crash, trapped, blood everywhere, barely answering",
        ),
    ),
    "trauma_major": (
        (18, 70),
        0.7,
        (
            "fell from first floor, cannot move legs, awake",
            "auto-rickshaw overturned, chest hurts when breathing",
            "hit by car, leg bent badly, in a lot of pain",
        ),
    ),
    "labour": (
        (19, 36),
        0.0,
        (
            "nine months pregnant, water broke, pains every five minutes",
            "pregnant, strong labour pains, first baby",
            "in labour, contractions close together, no transport",
        ),
    ),
    "minor_injury": (
        (8, 70),
        0.6,
        (
            "fell from scooter, wrist painful and swollen",
            "cut hand on glass, bleeding stopped with cloth",
            "twisted ankle, cannot walk on it",
            "small accident, bruises, says he is fine but shaken",
        ),
    ),
    "fever": (
        (3, 80),
        0.5,
        (
            "high fever for two days, body ache",
            "child with fever and vomiting since morning",
            "elderly mother hot to touch, eating nothing",
        ),
    ),
    "gastritis": (
        (20, 70),
        0.55,
        (
            "burning pain in upper stomach and chest after meal",
            "stomach pain and vomiting, ate outside",
            "chest and stomach burning, sour taste, had this before",
        ),
    ),
    "anxiety": (
        (16, 40),
        0.4,
        (
            "chest tight, breathing fast, fingers tingling after argument",
            "says she is dying, heart racing, had panic attacks before",
            "cannot breathe, shaking, crying, exams tomorrow",
            "chest pain and fear, breathing very fast, hands numb",
        ),
    ),
}


def caller_report(condition: str, place: str, rng: Random) -> str:
    """One caller report: age, sex, place and symptoms -- never the diagnosis."""
    (lo, hi), share_male, phrases = _REPORTS[condition]
    age = rng.randint(lo, hi)
    sex = "M" if rng.random() < share_male else "F"
    return f"{age}{sex} at {place}: {rng.choice(phrases)}"


def callback_report(original: str) -> str:
    """What an under-triaged caller says when ringing back: worse, and angrier."""
    return f"CALLBACK, much worse now -- {original}"


_CALLBACK_PREFIX = "CALLBACK, much worse now -- "
_REPORT_SHAPE = re.compile(r"^(\d+)([MF]) at [^:]*: (.*)$")


def condition_posterior(call: Call) -> dict[str, float]:
    """Posterior over true conditions given only what the agent sees of ``call`` (its report).

    Bayes over today's phrase pools: prior = the phase-2 call mix (``CALL_MIX``), likelihood =
    P(age | condition) x P(sex | condition) x P(phrase | condition), each exactly as
    ``caller_report`` draws them. A callback repeats the original report, so it carries the
    same evidence. A report that fits no condition falls back to the prior.
    """
    report = call.report
    while report.startswith(_CALLBACK_PREFIX):
        report = report[len(_CALLBACK_PREFIX) :]
    prior = {c: w for c, w in CALL_MIX.items() if c in _REPORTS}
    match = _REPORT_SHAPE.match(report)
    weights: dict[str, float] = {}
    if match:
        age, sex, phrase = int(match.group(1)), match.group(2), match.group(3)
        weights = {c: w * _likelihood(c, age, sex, phrase) for c, w in prior.items()}
        if sum(weights.values()) <= 0.0:  # an edited report: trust the symptoms alone
            weights = {c: w * (phrase in _REPORTS[c][2]) / len(_REPORTS[c][2]) for c, w in prior.items()}
    total = sum(weights.values())
    if total <= 0.0:
        weights, total = prior, sum(prior.values())
    return {c: w / total for c, w in weights.items() if w > 0.0}


def _likelihood(condition: str, age: int, sex: str, phrase: str) -> float:
    (lo, hi), share_male, phrases = _REPORTS[condition]
    if not lo <= age <= hi or phrase not in phrases:
        return 0.0
    p_sex = share_male if sex == "M" else 1.0 - share_male
    return p_sex / ((hi - lo + 1) * len(phrases))
