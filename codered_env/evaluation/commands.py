"""Typer commands for stored evaluation: ``eval`` (with ``--db``), ``report`` and ``replay``.

They run standalone as ``python -m codered_env.evaluation eval|report|replay ...`` and are meant
to be mounted on the ``codered`` CLI::

    from codered_env.evaluation.commands import report_command, replay_command
    app.command("report")(report_command)
    app.command("replay")(replay_command)

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

from codered_env.evaluation.store import DEFAULT_DB, StoreError
from codered_env.evaluation.trajectory import TrajectoryError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="CodeRedEnv stored evaluation: eval, report, replay.")


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code=1)


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _seeds(text: str) -> list[int]:
    seeds: set[int] = set()
    for part in _split(text):
        low, sep, high = part.partition("-")
        if not low.isdigit() or (sep and not high.isdigit()):
            raise typer.BadParameter(f"bad seed range {part!r}: use e.g. 0-19 or 0,3,7")
        start, end = int(low), int(high) if sep else int(low)
        if end < start or end - start > 10_000:
            raise typer.BadParameter(f"bad seed range {part!r}")
        seeds.update(range(start, end + 1))
    if not seeds:
        raise typer.BadParameter("no seeds given")
    return sorted(seeds)


def _tasks(text: str) -> list[str]:
    from codered_env.sim import TASK_IDS

    tasks = list(TASK_IDS) if text.strip() == "all" else _split(text)
    unknown = [t for t in tasks if t not in TASK_IDS]
    if unknown or not tasks:
        raise typer.BadParameter(f"unknown task(s) {unknown}; valid: all, {', '.join(TASK_IDS)}")
    return tasks


def _agents(text: str) -> list[str]:
    valid = ("noop", "random", "heuristic", "llm")
    agents = _split(text)
    unknown = [a for a in agents if a not in valid]
    if unknown or not agents:
        raise typer.BadParameter(f"unknown agent(s) {unknown}; valid: {', '.join(valid)}")
    return agents


def eval_command(
    agents: Annotated[str, typer.Option(help="comma-separated: noop,random,heuristic,llm")] = (
        "noop,random,heuristic"),
    tasks: Annotated[str, typer.Option(help="'all' or comma-separated task ids")] = "all",
    seeds: Annotated[str, typer.Option(help="e.g. 0-19 or 0,3,7")] = "0-9",
    db: Annotated[Path, typer.Option(help="SQLite file (created if missing)")] = Path(DEFAULT_DB),
    as_json: Annotated[bool, typer.Option("--json", help="JSON summary on stdout")] = False,
) -> None:
    """Evaluate agents on tasks x seeds, storing every episode; stored ones are skipped."""
    from codered_env.agents.llm import LLMConfig
    from codered_env.evaluation.evaluate import run_evaluation

    agent_names, task_ids, seed_list = _agents(agents), _tasks(tasks), _seeds(seeds)
    config = LLMConfig.from_env()
    if "llm" in agent_names and config is None:
        raise _fail("agent 'llm' needs an API key: set HF_TOKEN, API_KEY or OPENAI_API_KEY")
    try:
        summary = run_evaluation(agent_names, task_ids, seed_list, db_path=db, llm_config=config)
    except StoreError as exc:
        raise _fail(str(exc)) from None
    typer.echo(f"stored {summary.ran}, skipped {summary.skipped}, invalid {summary.invalid}, "
               f"failed {summary.failed} -> {db}", err=True)
    if as_json:
        typer.echo(json.dumps(summary.as_dict()))


def report_command(
    db: Annotated[Path, typer.Option(help="evaluation database")] = Path(DEFAULT_DB),
    out: Annotated[Path, typer.Option(help="output directory")] = Path("report"),
    version: Annotated[str | None, typer.Option(
        help="package version to report (default: installed, else newest stored)")] = None,
) -> None:
    """Markdown table (mean ± std per task and agent) and PNG plots from the database."""
    from codered_env.evaluation.report import generate_report

    try:
        report = generate_report(db, out, version)
    except StoreError as exc:
        raise _fail(str(exc)) from None
    sys.stdout.write(report.markdown)
    typer.echo(f"wrote {report.markdown_path}, {report.scores_png}, {report.components_png}",
               err=True)


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


app.command("eval")(eval_command)
app.command("report")(report_command)
app.command("replay")(replay_command)
