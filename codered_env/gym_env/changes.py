"""What changed since an earlier step, as the adapters' row caches ask it: the view's change
marks (``ObservationView.change_marks``), the one piece of the core's change record the
Gymnasium adapter reads besides the observation itself. A row cache compares two
``ChangeMarks``: equal marks of the same episode mean the parts they cover are unchanged."""

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
    return ChangeMarks(*view.change_marks())
