#!/usr/bin/env python
"""CodeRedEnv inference script (the entry point OpenEnv evaluators run).

    python inference.py --task task2 --seed 3 [--max-steps N] [--agent llm|heuristic|planner|...]
                        [--env-url http://host:8000] [--trajectory run.jsonl]

stdout carries exactly the agent run log of docs/INFERENCE.md#output-contract (one START line, one
STEP line per step, one END line - also after an error or Ctrl-C); everything else goes to stderr.
Environment: HF_TOKEN (or API_KEY / OPENAI_API_KEY), API_BASE_URL, MODEL_NAME, BENCHMARK, MAX_STEPS,
SUCCESS_THRESHOLD.  Without a key (and without a local API_BASE_URL, which needs none) the
built-in heuristic agent plays (model shown as ``heuristic``).  The LLM agent's statistics
line (calls, retries, timeouts, fallbacks, tokens) follows END on stderr.  See docs/INFERENCE.md.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from codered_env.agents.roster import BUILTIN_AGENTS
from codered_env.evaluation.benchmark import DEFAULT_SUCCESS_THRESHOLD as DEFAULT_THRESHOLD

AGENTS = ("llm", *BUILTIN_AGENTS)  # the agent registry's built-in agents, and the LLM
DEFAULT_BENCHMARK = "codered_env"
ENDPOINT_FAILURE_EXIT = 3  # the model endpoint failed on every step: a broken run, not a result


def warn(message: str) -> None:
    """A diagnostic line on stderr (never stdout)."""
    print(f"inference: {message}", file=sys.stderr, flush=True)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Play one CodeRedEnv episode and print the "
                                     "agent run log (docs/INFERENCE.md#output-contract) on stdout.")
    parser.add_argument("--task", default="task1", help="task id, task1..task5 (default task1)")
    parser.add_argument("--seed", type=int, default=0, help="episode seed (default 0)")
    parser.add_argument("--max-steps", type=int, default=None,
                        help="step cap (default: MAX_STEPS, else the task's step budget)")
    parser.add_argument("--env-url", default=None,
                        help="play against a running server (default: in-process simulator)")
    parser.add_argument("--agent", choices=AGENTS, default=None,
                        help="default: llm when an API key is set, else heuristic")
    parser.add_argument("--trajectory", default=None,
                        help="also write the episode as a trajectory JSONL file")
    return parser.parse_args(argv)


@dataclass(frozen=True)
class Settings:
    benchmark: str
    threshold: float
    max_steps_env: int | None


def read_settings(env: Mapping[str, str]) -> Settings:
    """BENCHMARK, SUCCESS_THRESHOLD and MAX_STEPS; malformed values fall back with a warning."""
    threshold = DEFAULT_THRESHOLD
    raw = env.get("SUCCESS_THRESHOLD", "").strip()
    if raw:
        try:
            threshold = float(raw)
            if not math.isfinite(threshold):
                raise ValueError(raw)
        except ValueError:
            warn(f"ignoring SUCCESS_THRESHOLD={raw!r}; using {DEFAULT_THRESHOLD}")
            threshold = DEFAULT_THRESHOLD
    max_steps = None
    raw = env.get("MAX_STEPS", "").strip()
    if raw:
        try:
            max_steps = int(raw)
        except ValueError:
            warn(f"ignoring MAX_STEPS={raw!r}")
    benchmark = " ".join(env.get("BENCHMARK", "").split()) or DEFAULT_BENCHMARK
    return Settings(benchmark=benchmark, threshold=threshold, max_steps_env=max_steps)


def _endpoint(url: str) -> str:
    """Scheme, host and path of the endpoint, without any credentials or query."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname or "?"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(unparsable API_BASE_URL)"
    return f"{parts.scheme}://{host}{port}{parts.path}"


def choose_agent(requested: str | None, env: Mapping[str, str],
                 seed: int = 0) -> tuple[Any, str]:
    """The agent to play and the model name for the START line."""
    from codered_env.agents.llm import LLMAgent, LLMConfig

    config = LLMConfig.from_env(env)
    name = requested or "llm"
    if name == "llm" and config is None:
        warn("no API key set (HF_TOKEN, API_KEY or OPENAI_API_KEY) and API_BASE_URL is not a "
             "local server: "
             "playing the built-in heuristic agent instead of the LLM")
        name = "heuristic"
    if name == "llm" and config is not None:
        warn(f"LLM agent: model {config.model} at {_endpoint(config.base_url)}")
        return LLMAgent(config), config.model
    from codered_env.agents import make_agent

    return make_agent(name, seed=seed), name


def task_budget(task_id: str) -> int | None:
    """The task's step budget, or ``None`` for an unknown task."""
    from codered_env.sim import TASKS

    spec = TASKS.get(task_id) if isinstance(TASKS, Mapping) else None
    return int(spec.max_steps) if spec is not None else None


def step_cap(arg: int | None, settings: Settings, budget: int) -> int:
    for source, value in (("--max-steps", arg), ("MAX_STEPS", settings.max_steps_env)):
        if value is None:
            continue
        if value >= 1:
            return value
        warn(f"ignoring {source}={value} (must be >= 1)")
    return budget


class RunLog:
    """Prints the run-log lines to the real stdout, flushing each one; START always comes first."""

    def __init__(self, out: TextIO, task: str, benchmark: str) -> None:
        self.out = out
        self.task = task
        self.benchmark = benchmark
        self.started = False
        self.steps = 0
        self.rewards: list[float] = []

    def start(self, model: str) -> None:
        from codered_env.runlog import format_start

        if not self.started:
            self.started = True
            self._emit(format_start(self.task, self.benchmark, model))

    def step(self, record: Any) -> None:
        from codered_env.runlog import format_step

        with _signals_held():  # the line and its count go together, or neither
            self._emit(format_step(self.steps + 1, record.action, record.reward, record.done,
                                   record.error))
            self.steps += 1
            self.rewards.append(record.reward)

    def end(self, model: str, success: bool, score: float) -> None:
        from codered_env.runlog import format_end

        self.start(model)
        self._emit(format_end(success, self.steps, score, self.rewards))

    def _emit(self, line: str) -> None:
        self.out.write(" ".join(line.split()) + "\n")
        self.out.flush()


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


_HELD = {signal.SIGINT, signal.SIGTERM}


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT/SIGTERM wait until the block is done (then interrupt as usual); a no-op where
    signals cannot be blocked (Windows, a thread other than the main one)."""
    if not hasattr(signal, "pthread_sigmask") or (
            threading.current_thread() is not threading.main_thread()):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def run(args: argparse.Namespace, out: TextIO, env: Mapping[str, str]) -> int:
    """Play one episode; prints START/STEP/END on ``out`` whatever happens.  Returns the exit
    code: 0 when the episode ran, 1 on an error, 3 when the model endpoint failed on every step,
    130 on an interrupt."""
    from codered_env.evaluation.episode import EpisodeOutcome, LocalEnv, RemoteEnv, play_episode

    settings = read_settings(env)
    log = RunLog(out, " ".join(str(args.task).split()) or "unknown", settings.benchmark)
    outcome = EpisodeOutcome(task_id=args.task, seed=args.seed)
    environment: Any = None
    agent: Any = None
    model = "unknown"
    code = 0
    try:
        agent, model = choose_agent(args.agent, env, max(0, args.seed))
        log.start(model)
        budget = task_budget(args.task)
        if budget is None:
            raise ValueError(f"unknown task {args.task!r}")
        if args.seed < 0:
            raise ValueError("seed must be >= 0")
        environment = RemoteEnv(args.env_url) if args.env_url else LocalEnv()
        args.step_cap = step_cap(args.max_steps, settings, budget)
        play_episode(environment, agent, args.task, args.seed, args.step_cap,
                     on_step=log.step, outcome=outcome)
    except KeyboardInterrupt:
        warn("interrupted; the episode is cut short")
        outcome.failure, code = "interrupted", 130
    except Exception as exc:
        warn(f"episode stopped: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
        outcome.failure, code = f"{type(exc).__name__}", 1
    finally:
        previous = _set_sigint(signal.SIG_IGN)  # a second Ctrl-C must not stop the END line
        try:
            _close_out(log, model, args, settings, environment, outcome)
            _report_stats(agent)
        finally:
            _set_sigint(previous)
    return code or _endpoint_failure_code(agent, outcome)


def _endpoint_failure_code(agent: Any, outcome: Any) -> int:
    """``ENDPOINT_FAILURE_EXIT`` (and why, on stderr) when the LLM's endpoint failed on every
    step, so a script can tell a broken run from a real one; a partial failure is warned about."""
    from codered_env.evaluation.benchmark import episode_finish

    stats = getattr(agent, "stats", None)
    if not isinstance(stats, Mapping) or not outcome.steps:
        return 0
    finish = episode_finish(None, len(outcome.steps), stats, outcome.invalid_actions, outcome.failure)
    if finish["finish_reason"] == "endpoint_failure":
        warn(f"error: the model endpoint failed on every one of the {len(outcome.steps)} step(s) "
             f"(last error: {getattr(agent, 'last_error', None) or 'unknown'}); the agent played "
             "maintain_plan throughout, so this run measures nothing")
        return ENDPOINT_FAILURE_EXIT
    if finish["endpoint_partial"]:
        warn(f"warning: the model endpoint failed on {finish['endpoint_failures']} of "
             f"{len(outcome.steps)} step(s) (maintain_plan was played there)")
    return 0


def _set_sigint(handler: Any) -> Any:
    """Install a SIGINT handler, returning the previous one (no-op off the main thread)."""
    if handler is None or threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, handler)


def _close_out(log: RunLog, model: str, args: argparse.Namespace, settings: Settings,
               environment: Any, outcome: Any) -> None:
    """Grade, print END (and START if it never got out), save the trajectory, close the env.
    A step that happened but whose STEP line an interrupt kept back is printed first."""
    from codered_env.evaluation.episode import finish

    for record in outcome.steps[log.steps:]:
        log.step(record)
    try:
        finish(environment if outcome.steps else None, outcome)
    except Exception as exc:  # finish() already guards; this is belt and braces
        warn(f"grading failed: {type(exc).__name__}")
    success = outcome.score >= settings.threshold
    log.end(model, success, outcome.score)
    if outcome.failure is not None and not outcome.ended:
        warn(f"the run stopped after {len(outcome.steps)} step(s) without finishing the episode "
             f"({outcome.failure}): score {outcome.score:.3f} grades what was played (the sum of "
             "the rewards), not a finished episode")
    _save_trajectory(args, model, outcome)
    if environment is not None:
        try:
            environment.close()
        except Exception as exc:
            warn(f"closing the environment failed: {type(exc).__name__}")


def _report_stats(agent: Any) -> None:
    """The LLM agent's per-episode statistics line, on stderr."""
    stats = getattr(agent, "stats", None)
    if not isinstance(stats, Mapping):
        return
    from codered_env.runlog import format_stats

    print(format_stats(stats), file=sys.stderr, flush=True)


def _save_trajectory(args: argparse.Namespace, model: str, outcome: Any) -> None:
    if not args.trajectory:
        return
    from codered_env.evaluation.trajectory import Trajectory

    agent = "llm" if model not in AGENTS else model
    grade = outcome.grade or {}
    trajectory = Trajectory(task_id=args.task, seed=args.seed, agent=agent, model=model,
                            max_steps=getattr(args, "step_cap", None), steps=outcome.steps,
                            end={"score": outcome.score, "components": grade.get("components"),
                                 "interrupted": outcome.failure is not None,
                                 "reason": outcome.failure})
    try:
        Path(args.trajectory).parent.mkdir(parents=True, exist_ok=True)
        trajectory.save(args.trajectory)
        warn(f"trajectory written to {args.trajectory}")
    except OSError as exc:
        warn(f"cannot write trajectory: {exc}")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    out = sys.stdout
    sys.stdout = sys.stderr  # anything printed by libraries lands on stderr, not in the log
    # SIGINT explicitly too: Python leaves it ignored when the process started with it ignored
    # (bash does that to `cmd &` in a script or any non-interactive shell), and then neither
    # Ctrl-C nor an evaluator's SIGINT would stop the run and get its END line out.
    previous = {signum: signal.signal(signum, _interrupt)
                for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        return run(args, out, os.environ)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        sys.stdout = out


if __name__ == "__main__":
    sys.exit(main())
