"""Rounding to hundredths, bit for bit as ``round(x, 2)`` and faster (a numeric helper of the
observation; no clinical or scoring number lives here)."""

from __future__ import annotations

import math

_HUNDRED = 100.0  # two decimal digits
_HALF = 0.5  # a tie between two hundredths
# 100 x carries a rounding error below 1e-13 for |100 x| < 1e9 (53-bit floats): closer than this
# to a tie, ``round`` decides
_TIE_MARGIN = 1e-6
_FAST_BELOW = 1e9


def round2(x: float) -> float:
    """``round(x, 2)``, the same float, about twice as fast (the vitals score of every
    patient row, every step). ``round`` with digits formats the number in decimal; away from a
    tie the nearest hundredth is ``floor(100 x)`` or one more, and ``n / 100`` is the float
    nearest to it, which is what ``round`` returns. Near a tie (where 100 x carries a rounding
    error), at zero (keeping its sign) and for huge or negative values ``round`` decides."""
    y = x * _HUNDRED
    if 0.0 < y < _FAST_BELOW:
        n = math.floor(y)
        frac = y - n
        if abs(frac - _HALF) > _TIE_MARGIN:
            return (n + 1 if frac > _HALF else n) / _HUNDRED
    return round(x, 2)
