"""Draws from a seeded ``random.Random``: integers, choices, shuffles and weighted keys.

``randbelow``, ``randint``, ``choice`` and ``shuffle`` take exactly the numbers CPython's own
methods take from the stream and return the same values (tests/sim/test_fork_speed_equivalence.py
checks them against ``random.Random``) without those methods' Python call layers: they run for
every symptom of every caller report a scenario or a fork draws.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Mapping, MutableSequence, Sequence
from random import Random
from typing import TypeVar

T = TypeVar("T")


def randbelow(rng: Random, n: int) -> int:
    """``rng._randbelow(n)``: an integer in ``[0, n)``, what ``randint``, ``choice`` and
    ``shuffle`` of ``random.Random`` draw through."""
    if n <= 0:
        raise ValueError(f"randbelow needs n > 0, got {n}")
    bits = rng.getrandbits
    k = n.bit_length()
    r = bits(k)
    while r >= n:
        r = bits(k)
    return r


def randint(rng: Random, lo: int, hi: int) -> int:
    """``rng.randint(lo, hi)``: an integer in ``[lo, hi]``."""
    if hi < lo:
        raise ValueError(f"empty range for randint({lo}, {hi})")
    return lo + randbelow(rng, hi - lo + 1)


def choice(rng: Random, options: Sequence[T]) -> T:
    """``rng.choice(options)``."""
    return options[randbelow(rng, len(options))]


def shuffle(rng: Random, items: MutableSequence[T]) -> None:
    """``rng.shuffle(items)``, in place."""
    for i in range(len(items) - 1, 0, -1):
        j = randbelow(rng, i + 1)
        items[i], items[j] = items[j], items[i]


def weighted_draw(rng: Random, table: Mapping[str, float]) -> str:
    """One key of ``table``, drawn with probability proportional to its (non-negative) weight:
    the first key whose cumulative weight exceeds ``random() * total``, as
    ``rng.choices(keys, weights)`` draws it."""
    if not table:
        raise ValueError("weighted_draw needs a non-empty table")
    cumulative = list(itertools.accumulate(table.values()))
    i = bisect.bisect_right(cumulative, rng.random() * cumulative[-1], 0, len(cumulative) - 1)
    return next(itertools.islice(table, i, None))
