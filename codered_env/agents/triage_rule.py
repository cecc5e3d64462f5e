"""The heuristic agent's call-triage rule: keywords in the caller's report -> P1..P4.

A deliberately simple protocol card in the spirit of MPDS key questions. It reads only the
report text. It gets atypical presentations wrong (a breathless, vomiting elderly STEMI reads as
P3) and sends some panic attacks as P1 -- the headroom a smarter agent can win back.
"""

from __future__ import annotations

import re

_P1_CUES = (
    "arm",
    "jaw",
    "sweat",
    "faint",
    "grey",
    "pressure",
    "heaviness",
    "crushing",
    "drooping",
    "slurred",
    "cannot speak",
    "one side",
    "cannot move right",
    "vision blurred",
    "bleeding heavily",
    "lot of blood",
    "blood everywhere",
    "stabbed",
    "trapped",
    "barely answering",
    "drowsy",
    "unconscious",
    "bleeding from head",
)
_P2_CUES = (
    "pregnant",
    "labour",
    "water broke",
    "contractions",
    "fell from",
    "overturned",
    "hit by",
    "cannot move legs",
    "leg bent",
    "hurts when breathing",
)
_ANXIETY_CUES = ("tingling", "panic", "exams", "argument", "shaking, crying", "hands numb")
_AGE = re.compile(r"^(?:CALLBACK[^-]*-- )?(\d+)([MF])")


def report_age(report: str) -> int | None:
    match = _AGE.match(report)
    return int(match.group(1)) if match else None


def triage_report(report: str) -> str:
    """Priority for a caller report: P1 immediate, P2 urgent, P3 non-urgent, P4 advice only."""
    text = report.lower()
    if text.startswith("callback"):
        return "P1"
    age = report_age(report) or 40
    anxious = any(cue in text for cue in _ANXIETY_CUES)
    if "chest" in text and not anxious and (age >= 45 or any(c in text for c in _P1_CUES)):
        return "P1"
    if any(cue in text for cue in _P1_CUES) and not anxious:
        return "P1"
    if any(cue in text for cue in _P2_CUES):
        return "P2"
    if anxious and age < 45:
        return "P4"
    return "P3"
