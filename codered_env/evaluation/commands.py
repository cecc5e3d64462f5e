"""Typer commands ``report`` and ``replay`` for stored evaluation, mounted on the ``codered`` CLI
(``codered eval --db`` itself lives in cli.py).

stdout carries only machine-readable output (JSON, the markdown table); progress and
diagnostics go to stderr.  Bad input gives a one-line error and exit code 1 or 2, never a
traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from codered_env.evaluation.report import DEFAULT_OUT
from codered_env.evaluation.store import DEFAULT_DB, StoreError
from codered_env.evaluation.trajectory import TrajectoryError


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code=1)


def report_command(
    db: Annotated[Path, typer.Option(help="evaluation database")] = Path(DEFAULT_DB),
    out: Annotated[Path, typer.Option(
        help="output directory (default ./report, untracked; --out docs/baseline rewrites the "
             "README's tracked table and plots)")] = Path(DEFAULT_OUT),
    version: Annotated[str | None, typer.Option(
        help="package version to report (default: installed, else newest stored)")] = None,
    threshold: Annotated[float | None, typer.Option(
        help="score counted as a success for pass^k (default: SUCCESS_THRESHOLD, else 0.1)")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="print the leaderboard JSON (docs/LEADERBOARD.md) instead of the markdown")] = False,
) -> None:
    """Markdown table (mean ± sample std per task and agent, with provenance) and PNG plots; for
    LLM episodes also pass^k, a 95% interval, finish reasons, tokens and wall time."""
    from codered_env.evaluation.report import generate_report

    try:
        report = generate_report(db, out, version, threshold)
    except StoreError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        sys.stdout.write(json.dumps(_leaderboard(db, report.version, threshold), indent=1) + "\n")
    else:
        sys.stdout.write(report.markdown)
    typer.echo(f"wrote {report.markdown_path}, {report.scores_png}, {report.components_png}",
               err=True)


def _leaderboard(db: Path, version: str, threshold: float | None) -> dict[str, object]:
    import os

    from codered_env.evaluation.benchmark import leaderboard, threshold_from_env
    from codered_env.evaluation.store import EpisodeStore

    with EpisodeStore(db) as store:
        records = store.records(version)
    chosen = threshold_from_env(os.environ) if threshold is None else threshold
    return leaderboard(records, chosen, version)


def replay_command(
    file: Annotated[Path, typer.Argument(help="trajectory JSONL file")],
    as_json: Annotated[bool, typer.Option("--json", help="full grade as JSON on stdout")] = False,
) -> None:
    """Re-grade a trajectory file deterministically from its actions."""
    from codered_env.evaluation.trajectory import replay

    try:
        result = replay(file)
    except TrajectoryError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        typer.echo(json.dumps({"score": result.score, "recorded_score": result.recorded_score,
                               "matches": result.matches, "grade": result.grade}, default=str))
    else:
        t = result.trajectory
        typer.echo(f"{t.task_id} seed {t.seed} {t.agent}/{t.model}: {len(t.steps)} steps, "
                   f"score {result.score:.4f}")
    if result.matches is False:
        typer.echo(f"warning: recorded score {result.recorded_score} differs from the re-graded "
                   f"{result.score:.4f}", err=True)
        raise typer.Exit(code=3)
