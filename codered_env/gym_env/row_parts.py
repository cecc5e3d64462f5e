"""What every group of row encoders shares: the kept rows of one group (``_Rows``), the
frozen memoised rows, the per-build column indices and the clipping."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class _Rows:
    """One entity group's rows (a view into the builder's buffer), kept between builds. A row is
    made of parts (the whole row by default): ``keys[part][i]`` is the key whose memoised columns
    slot ``i`` holds for that part (``None``: zeros); ``n`` rows are present. The per-build
    columns are not written here: each group appends their values to the build's list, in the
    order of its ``dynamic`` flat indices (``FeatureBuilder`` writes them all at once)."""

    __slots__ = ("dynamic", "keys", "n", "per_row", "rows", "waiting")

    def __init__(self, rows: np.ndarray, offset: int, columns: np.ndarray, parts: int = 1) -> None:
        self.rows = rows
        n_rows, width = rows.shape
        self.keys: list[list[Any]] = [[None] * n_rows for _ in range(parts)]
        self.n = 0
        self.waiting: dict[str, tuple[Any, ...]] = {}  # patient rows: ``_kept_waiting`` (not copied)
        self.per_row = len(columns)
        # flat buffer index of every per-build value, row after row (the first n rows' are used)
        self.dynamic = (offset + np.arange(n_rows)[:, None] * width + columns[None, :]).ravel()

    def clear(self, start: int, stop: int) -> None:
        self.rows[start:stop] = 0.0
        for keys in self.keys:
            keys[start:stop] = [None] * (stop - start)

    def finish(self, n: int) -> int:
        """``n`` rows are present now (the rows after them are cleared); returns ``n``."""
        if n < self.n:
            self.clear(n, self.n)
        self.n = n
        return n


def _dynamic_columns(*spans: slice) -> np.ndarray:
    """The column indices of a group's per-build values, in the order they are produced."""
    return np.array([c for span in spans for c in range(span.start, span.stop)], np.intp)


def _frozen_row(row: Sequence[float]) -> np.ndarray:
    out = np.array(row, np.float32)
    out.flags.writeable = False  # shared by every slot that copies it
    return out


def _c(x: float) -> float:
    """Clip a scaled count into [0, 1]."""
    return 0.0 if x < 0 else 1.0 if x > 1 else x
