"""``codered``: play, evaluate, serve, report and replay CodeRedEnv from the command line.

stdout carries only machine-readable output (the run log of ``play``, the table or JSON of
``eval``); narration, progress bars and breakdowns go to stderr.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from . import runlog
from .agents import BUILTIN_AGENTS, make_agent
from .evaluation.commands import replay_command, report_command
from .evaluation.store import DEFAULT_DB
from .runner import EpisodeResult, run_episode
from .sim import TASK_IDS, TASKS
from .viewer import view_command

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="CodeRedEnv: emergency medical coordination benchmark."
)
err_console = Console(stderr=True)
out_console = Console(width=120)
BENCHMARK = "codered_env"
DEFAULT_AGENTS = "noop,random,heuristic"


def parse_seeds(text: str) -> list[int]:
    """'0-19', '0,3,7' or '5' -> a sorted list of distinct non-negative seeds."""
    seeds: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise typer.BadParameter(f"bad seed range {part!r}: use e.g. 0-19 or 0,3,7")
        start, end = int(lo), int(hi) if sep else int(lo)
        if end < start or end - start > 10_000:
            raise typer.BadParameter(f"bad seed range {part!r}")
        seeds.update(range(start, end + 1))
    if not seeds:
        raise typer.BadParameter("no seeds given")
    return sorted(seeds)


def parse_tasks(text: str) -> list[str]:
    if text.strip() == "all":
        return list(TASK_IDS)
    tasks = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in TASKS]
    if unknown or not tasks:
        raise typer.BadParameter(f"unknown task(s) {unknown}; valid: all, {', '.join(TASK_IDS)}")
    return tasks


def parse_agents(text: str) -> list[str]:
    agents = [a.strip() for a in text.split(",") if a.strip()]
    valid = (*BUILTIN_AGENTS, "llm")
    unknown = [a for a in agents if a not in valid]
    if unknown or not agents:
        raise typer.BadParameter(f"unknown agent(s) {unknown}; valid: {', '.join(valid)}")
    return agents


@app.command()
def play(
    task: Annotated[str, typer.Option(help="task1..task5")] = "task1",
    seed: Annotated[int, typer.Option(min=0)] = 0,
    agent: Annotated[str, typer.Option(help="noop, random, heuristic or planner")] = "heuristic",
    quiet: Annotated[bool, typer.Option(help="no narration on stderr")] = False,
) -> None:
    """Play one episode and print the agent run log ([START] / [STEP] / [END]) on stdout."""
    parse_tasks(task)
    if agent not in BUILTIN_AGENTS:
        raise typer.BadParameter(
            f"unknown agent {agent!r}; valid: {', '.join(BUILTIN_AGENTS)}"
            " (the LLM agent runs through inference.py)"
        )
    print(runlog.format_start(task, BENCHMARK, agent), flush=True)
    if not quiet:
        err_console.print(f"[bold]{TASKS[task].name}[/bold] ({task}, seed {seed}): {TASKS[task].description}")

    def on_step(n, action, reward, done, error, sim) -> None:
        print(runlog.format_step(n, action, reward, done, error), flush=True)
        if not quiet:
            for event in sim._events:
                err_console.print(f"    [dim]{event}[/dim]", highlight=False)

    result = run_episode(task, seed, make_agent(agent, seed), on_step=on_step)
    print(runlog.format_end(result.score >= 0.1, result.steps, result.score, result.rewards), flush=True)
    if not quiet:
        _print_breakdown(result)


def _print_breakdown(result: EpisodeResult) -> None:
    table = Table(title=f"score {result.score:.4f}", show_header=True)
    table.add_column("component")
    table.add_column("value", justify="right")
    table.add_column("weight", justify="right")
    for name, value in result.components.items():
        weight = result.grade["weights"][name]
        table.add_row(name, "n/a" if value is None else f"{value:.3f}", f"{weight:.3f}")
    table.add_row("mutual_aid_penalty", f"-{result.grade['mutual_aid_penalty']:.3f}", "")
    err_console.print(table)
    patients = Table(show_header=True, title="patients")
    for col in ("id", "condition", "status", "hospital", "delay", "target", "time", "prep", "outcome"):
        patients.add_column(col)
    for p in result.grade["patients"]:
        patients.add_row(
            p["patient_id"],
            p["condition"],
            p["status"],
            str(p["hospital"] or "-"),
            "-" if p["delay_min"] is None else str(p["delay_min"]),
            str(p["target_min"]),
            f"{p['time_score']:.2f}",
            "-" if p["prep"] is None else f"{p['prep']:.2f}",
            f"{p['expected_outcome']:.2f}",
        )
    err_console.print(patients)


def _mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), statistics.pstdev(values) if len(values) > 1 else 0.0


@app.command("eval")
def evaluate(
    agents: Annotated[str, typer.Option(help="comma-separated: noop,random,heuristic,llm")] = DEFAULT_AGENTS,
    tasks: Annotated[str, typer.Option(help="'all' or comma-separated task ids")] = "all",
    seeds: Annotated[str, typer.Option(help="e.g. 0-19 or 0,3,7")] = "0-9",
    db: Annotated[Path, typer.Option(help="SQLite file every episode is stored in")] = Path(DEFAULT_DB),
    as_json: Annotated[bool, typer.Option("--json", help="JSON list of episodes on stdout")] = False,
) -> None:
    """Evaluate agents over tasks and seeds: a table of mean ± std, or --json per episode.

    Every episode is stored in the SQLite file; episodes already stored are read back, not re-run.
    """
    from .agents.llm import LLMConfig
    from .evaluation.evaluate import EvalEvent, run_evaluation
    from .evaluation.store import StoreError

    agent_names, task_ids, seed_list = parse_agents(agents), parse_tasks(tasks), parse_seeds(seeds)
    config = LLMConfig.from_env()
    if "llm" in agent_names and config is None:
        raise typer.BadParameter("agent 'llm' needs an API key: set HF_TOKEN, API_KEY or OPENAI_API_KEY")
    total = len(agent_names) * len(task_ids) * len(seed_list)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True) as progress:
        bar = progress.add_task("episodes", total=total)

        def advance(event: EvalEvent) -> None:
            label = f"{event.agent} {event.task_id} seed {event.seed}: {event.status}"
            progress.update(bar, description=label)
            progress.advance(bar)

        try:
            summary = run_evaluation(agent_names, task_ids, seed_list, db_path=db, llm_config=config,
                                     progress=advance)
        except StoreError as exc:
            err_console.print(f"error: {exc}")
            raise typer.Exit(code=1) from None
    err_console.print(f"stored {summary.ran}, reused {summary.skipped}, invalid {summary.invalid}, "
                      f"failed {summary.failed} -> {db}", highlight=False)
    episodes = summary.episodes()
    if as_json:
        json.dump(episodes, sys.stdout)
        sys.stdout.write("\n")
        return
    out_console.print(_summary_table(episodes, agent_names, task_ids, seed_list))


def _summary_table(episodes: list[dict], agents: list[str], tasks: list[str], seeds: list[int]) -> Table:
    table = Table(title=f"mean ± std over seeds {seeds[0]}-{seeds[-1]} ({len(seeds)} seeds)")
    table.add_column("agent")
    for task_id in tasks:
        table.add_column(task_id, justify="right")
    for name in agents:
        row = [name]
        for task_id in tasks:
            scores = [e["score"] for e in episodes if e["agent"] == name and e["task"] == task_id]
            mean, std = _mean_std(scores)
            row.append(f"{mean:.3f} ± {std:.3f}")
        table.add_row(*row)
    return table


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="interface to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8000,
) -> None:
    """Serve the environment over HTTP/WebSocket (OpenEnv protocol)."""
    from .server.app import serve as run_server

    run_server(host, port)


app.command("report")(report_command)
app.command("replay")(replay_command)
app.command("view")(view_command)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
