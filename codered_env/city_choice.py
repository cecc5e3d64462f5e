"""The city an episode plays in, as every surface names it (reset, ``/mcp?city=``, the CLI,
Gym kwargs): ``"prakashnagar"`` (the default), a city seed (a non-negative integer, also given
as digits or ``"gen-<seed>"``), or a draw from a split of city seeds (``train``, ``test``).

``city_key`` checks a value from outside and returns the city's canonical name (what
``CodeRedSim(city=...)`` takes, what ``state`` and the journal record); a bad value raises a
ValueError that lists what is valid. ``split_city`` names the ``index``-th city of a split.
"""

from __future__ import annotations

from typing import Any

from codered_env.sim.city import PRAKASHNAGAR
from codered_env.sim.citygen import CITY_SPLITS, GENERATED_PREFIX, split_seeds

DEFAULT_CITY = PRAKASHNAGAR.key
MAX_CITY_SEED = 2**32 - 1
_MAX_DIGITS = len(str(MAX_CITY_SEED))


def valid_cities() -> str:
    """One line saying which city values are accepted (used in every error message)."""
    splits = ", ".join(f"{name} {seeds.start}-{seeds.stop - 1}" for name, seeds in CITY_SPLITS.items())
    return (
        f"{DEFAULT_CITY!r}, a city seed in [0, {MAX_CITY_SEED}] (an integer, its digits or "
        f"'{GENERATED_PREFIX}<seed>'); city seed splits: {splits}"
    )


def city_key(value: Any) -> str:
    """The canonical name of the city ``value`` names (``"prakashnagar"`` or ``"gen-<seed>"``);
    None means the default city. Raises ValueError saying what is valid."""
    if value is None or value == DEFAULT_CITY:
        return DEFAULT_CITY
    seed = _seed_of(value)
    if seed is None or not 0 <= seed <= MAX_CITY_SEED:
        raise ValueError(f"unknown city {str(value)[:40]!r}; valid: {valid_cities()}")
    return f"{GENERATED_PREFIX}{seed}"


def _seed_of(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if not isinstance(value, str):
        return None
    digits = value[len(GENERATED_PREFIX):] if value.startswith(GENERATED_PREFIX) else value
    if not digits.isdigit() or not digits.isascii() or len(digits) > _MAX_DIGITS:
        return None
    if digits != str(int(digits)):  # no leading zeros: one name per city
        return None
    return int(digits)


def split_city(split: str, index: int) -> str:
    """The name of the ``index``-th city of ``split`` (wrapping round the split)."""
    seeds = split_seeds(split)
    return f"{GENERATED_PREFIX}{seeds[index % len(seeds)]}"


def city_seed(key: str) -> int | None:
    """The city seed of a canonical name (None for Prakashnagar)."""
    return None if key == DEFAULT_CITY else int(key[len(GENERATED_PREFIX):])


def split_of(key: str) -> str | None:
    """The split a city belongs to (None: Prakashnagar or a seed outside every split)."""
    seed = city_seed(key)
    return next((name for name, seeds in CITY_SPLITS.items() if seed in seeds), None)
