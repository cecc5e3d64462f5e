"""The training curve's spread is the sample std every report shows (no torch needed)."""

from __future__ import annotations

import statistics

import pytest

from codered_env.evaluation.report import mean_and_sample_std
from codered_env.train import _summary


def test_curve_rows_carry_the_sample_std() -> None:
    grades = [0.2, 0.4, 0.9]
    row = _summary(1024, 12.0, grades)
    assert row["std"] == pytest.approx(statistics.stdev(grades), abs=1e-4)
    assert row["std"] != pytest.approx(statistics.pstdev(grades), abs=1e-3)
    assert (row["mean"], row["std"]) == tuple(round(v, 4) for v in mean_and_sample_std(grades))
    assert (row["min"], row["max"]) == (0.2, 0.9)


def test_a_single_evaluation_seed_has_no_spread() -> None:
    assert _summary(0, 0.0, [0.5])["std"] == 0.0
