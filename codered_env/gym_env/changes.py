"""What changed since an earlier step, as the adapters' row caches ask it: the one place the
Gymnasium adapter reads the core's change bookkeeping (everything else it reads from the
observation view). A row cache compares two ``ChangeMarks``: equal marks of the same episode
mean the parts they cover are unchanged."""

from __future__ import annotations

from typing import NamedTuple

from ..sim.view import ObservationView


class ChangeMarks(NamedTuple):
    """``episode`` identifies the episode (compare it with ``is``); ``calls``: a call was added
    or its status, triage or unit set; ``rooms``: an OR's or a specialist's state was set;
    ``stock``: a hospital's blood stock changed (each a count that moves on such a change)."""

    episode: object
    calls: int
    rooms: int
    stock: int


def change_marks(view: ObservationView) -> ChangeMarks:
    """The marks of the episode ``view`` shows, now."""
    world = view._world  # the view's own episode state; read for its change counters only
    return ChangeMarks(world, world.version("calls"), world.version("rooms"), world.version("stock"))
