"""The heuristic agent's call-triage rule: keywords in the caller's report -> P1..P4.

A deliberately simple protocol card in the spirit of MPDS key questions. It reads only the
report text (the phrases callers use, the caller's age) and weighs no probabilities, so it is
below the Bayes-optimal triage that the likelihood model in ``sim/triage.py`` allows
(``bench/probe_triage.py`` prints both accuracies): it sends every collapse and every chest pain
over 40 as P1, misses strokes described only as confusion, and cannot tell a bleeding minor
injury from a haemorrhage.
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
