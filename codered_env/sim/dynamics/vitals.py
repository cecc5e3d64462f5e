"""Vitals bands: the thresholds of the hidden reserve at which a patient visibly worsens."""

from __future__ import annotations

from ..params import VITALS_BANDS


def band(reserve: float) -> int:
    """How many vitals thresholds the reserve is below."""
    return sum(1 for threshold in VITALS_BANDS if reserve < threshold)
