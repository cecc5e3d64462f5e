"""A keyword protocol card for call triage (caller's report -> P1..P4), and the cues the
heuristic pre-alerts a specialist on (``suspected_condition``).

A deliberately simple card in the spirit of MPDS key questions. It reads only the report text
(the phrases callers use, the caller's age) and weighs no probabilities, so it is below the
Bayes-optimal triage that the likelihood model in ``sim/triage.py`` allows
(``bench/probe_triage.py`` prints both accuracies): it sends every collapse and every chest pain
over 40 as P1, misses strokes described only as confusion, and cannot tell a bleeding minor
injury from a haemorrhage. The heuristic triages from the posterior instead (hot when in doubt);
this card is kept to compare against (the red team's ``keyword-triage``).
"""

from __future__ import annotations

import re

_P1_CUES = (
    "not responding",
    "not waking",
    "not breathing",
    "gasping",
    "collapsed",
    "fell down suddenly",
    "one side weak",
    "face drooping",
    "cannot lift one arm",
    "speech slurred",
    "talking strangely",
    "bleeding a lot",
    "lot of blood",
    "pale and drowsy",
    "cold and sleepy",
    "into the arm",
    "into the jaw",
)
_CHEST = ("chest",)
_P2_CUES = ("pregnant", "labour pains", "water broke", "contractions", "broken", "badly hurt", "cannot move")
_INJURY = ("accident", "fall", "hit by")
_ADVICE = ("some days", "what to do", "advice")
_AGE = re.compile(r"^(?:CALLBACK[^:]*: )?(\d+)([MF])")


def report_age(report: str) -> int | None:
    match = _AGE.match(report)
    return int(match.group(1)) if match else None


def triage_report(report: str) -> str:
    """Priority for a caller report: P1 immediate, P2 urgent, P3 non-urgent, P4 advice only."""
    text = report.lower()
    if text.startswith("callback"):
        return "P1"
    age = report_age(report) or 40
    if any(cue in text for cue in _P1_CUES):
        return "P1"
    if any(cue in text for cue in _CHEST) and age >= 40:
        return "P1"
    if any(cue in text for cue in _P2_CUES):
        return "P2"
    if any(cue in text for cue in _INJURY):
        return "P3"
    if any(cue in text for cue in _ADVICE):
        return "P4"
    return "P3"


# Cues naming one condition that needs a specialist on arrival (the report phrases of its own
# signs, which no other condition's caller describes, hearsay aside): a dispatcher pre-alerts the
# receiving hospital on them. An injury needs a sign of heavy blood loss as well.
_PRE_ALERT_CUES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("stroke", ("one side weak", "face drooping", "cannot lift one arm", "speech slurred",
                "talking strangely"), ()),
    ("stemi", ("into the arm", "into the jaw"), ()),
    ("labour", ("pregnant", "labour pains", "water broke", "contractions"), ()),
    ("trauma_haemorrhage", ("bleeding a lot", "lot of blood", "pale and drowsy", "cold and sleepy"), _INJURY),
)


def suspected_condition(report: str) -> str | None:
    """The condition a report names by its own signs (stroke, STEMI, labour, an injury bleeding
    heavily),
    or None: what a dispatcher pre-alerts a specialist on before the crew has seen the patient."""
    text = report.lower()
    for condition, cues, context in _PRE_ALERT_CUES:
        if any(cue in text for cue in cues) and (not context or any(c in text for c in context)):
            return condition
    return None
