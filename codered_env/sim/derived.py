"""Values derived from an observation's read-only parts, remembered by the part's identity.

An episode's views hand out the same object for a part that did not change (view.py: hospital
rows, legal-action sections kept by the world's change record or equal to the last ones, the
city's public map).
A value derived from such an object alone (its text line, ...) is then the same as long as the
object is: ``Derived.get`` makes it once and returns it again while the same object comes back.
Entries not asked for during a turn (one step's rendering) are dropped at the next ``turn``, so
the memo holds no more than two steps' parts, and every object it remembers stays alive while
remembered (an ``id`` is never reused by another object meanwhile).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class Derived:
    """Derived values by (identity of a read-only part, tag); see the module docstring."""

    __slots__ = ("_before", "_now")

    def __init__(self) -> None:
        self._now: dict[tuple[int, str], tuple[Any, Any]] = {}
        self._before: dict[tuple[int, str], tuple[Any, Any]] = {}

    def turn(self) -> None:
        """A new step: what the last one did not ask for again is forgotten."""
        self._before, self._now = self._now, {}

    def get(self, part: Any, tag: str, make: Callable[..., T], *args: Any) -> T:
        """``make(*args, part)``, made once per part object (``tag`` names what is derived)."""
        key = (id(part), tag)
        hit = self._now.get(key)
        if hit is None:
            hit = self._before.get(key)  # the part is kept in the entry: its id is still its own
            if hit is None:
                hit = (part, make(*args, part))
            self._now[key] = hit
        return hit[1]  # type: ignore[no-any-return]

    def __len__(self) -> int:
        return len(self._now)
