"""LLM results the way agent benchmarks report them: finish reasons, pass^k, intervals, cost.

* :func:`episode_finish` classifies one played episode (stored in the row's ``outcome``):
  the finish reason and the per-episode counts of invalid-format answers, invalid actions,
  context-limit steps and endpoint-failure steps, and the endpoint kind.
* :func:`benchmark_rows` groups stored LLM episodes by (model, endpoint, sampling settings,
  task) and computes pass^k (the chance that k independent runs of the same (task, seed) all
  succeed, estimated without bias from n >= k runs as C(c, k) / C(n, k) averaged over the
  (task, seed) pairs, c = successful runs), the mean score with a 95 % confidence interval,
  the finish reasons, tokens and wall time per episode.
* :func:`leaderboard` is the ``codered report --json`` document (schema:
  ``leaderboard.schema.json`` beside this module, docs/LEADERBOARD.md).

A success is an episode score at or above the threshold, the run log's ``SUCCESS_THRESHOLD``.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codered_env.evaluation.store import EpisodeRecord

DEFAULT_SUCCESS_THRESHOLD = 0.1  # the run log's default SUCCESS_THRESHOLD (docs/INFERENCE.md)
CONFIDENCE = 0.95
LEADERBOARD_SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).with_name("leaderboard.schema.json")

# The LLM agent's fallback kinds (agents/llm: client.LLMError kinds, parsing.Parsed kinds).
FORMAT_KINDS = frozenset({"no_action", "echo", "bad_arguments", "unknown_action"})
CONTEXT_KIND = "context_length"
# How the simulation ended (CodeRedSim.end_reason) -> the reported finish reason.
END_REASONS = {"resolved": "completed", "step_budget": "step_budget", "horizon": "horizon",
               "stopped": "step_cap"}
FINISH_REASONS = ("completed", "step_budget", "horizon", "step_cap", "interrupted",
                  "context_limit", "endpoint_failure", "unknown")
COUNTS = ("invalid_format", "invalid_action", "context_limit", "endpoint_failures")


def episode_finish(end_reason: str | None, steps: int, stats: Mapping[str, Any] | None,
                   invalid_actions: int, failure: str | None = None,
                   endpoint_kind: str | None = None) -> dict[str, Any]:
    """How one episode finished. The reason is where the world ended (``completed`` when every
    patient was resolved, ``step_budget``, ``horizon``, ``step_cap`` for a ``--max-steps`` cap,
    ``interrupted``), except for an LLM that answered none of the steps: ``endpoint_failure``
    (the endpoint failed on every step) or ``context_limit`` (the prompt never fitted), since the
    episode then played the fallback action throughout. ``endpoint_partial`` marks an episode in
    which some but not all steps went unanswered because of the endpoint."""
    reasons = dict((stats or {}).get("fallbacks_by_reason") or {})
    unanswered = int((stats or {}).get("unanswered") or 0)
    context = int(reasons.get(CONTEXT_KIND, 0))
    endpoint = max(0, unanswered - context)
    reason = "interrupted" if failure else END_REASONS.get(str(end_reason), "unknown")
    if stats is not None and steps > 0 and unanswered >= steps:
        reason = "endpoint_failure" if endpoint >= context else "context_limit"
    return {
        "finish_reason": reason,
        "invalid_format": sum(int(reasons.get(k, 0)) for k in FORMAT_KINDS),
        "invalid_action": int(invalid_actions) + int(reasons.get("invalid_action", 0)),
        "context_limit": context,
        "endpoint_failures": endpoint,
        "endpoint_partial": stats is not None and endpoint > 0 and unanswered < steps,
        "endpoint_kind": endpoint_kind,
    }


def endpoint_failed_whole_episode(outcome: Mapping[str, Any] | None) -> bool:
    return outcome is not None and outcome.get("finish_reason") == "endpoint_failure"


def pass_hat_k(successes: Sequence[tuple[int, int]], k: int) -> float | None:
    """Mean over (task, seed) pairs of C(c, k) / C(n, k) for (n runs, c successes); ``None``
    when a pair has fewer than ``k`` runs."""
    if not successes or any(n < k for n, _ in successes):
        return None
    return statistics.fmean(math.comb(c, k) / math.comb(n, k) for n, c in successes)


def mean_interval(values: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95 % interval (normal approximation, ``z * s / sqrt(n)``;
    0 for a single value)."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, 0.0
    z = statistics.NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)
    return mean, z * statistics.stdev(values) / math.sqrt(len(values))


def _sampling(record: EpisodeRecord) -> dict[str, Any]:
    try:
        fingerprint = json.loads(record.agent_fingerprint or "{}")
    except ValueError:
        fingerprint = {}
    keys = ("temperature", "max_tokens", "history", "use_tools", "prompt")
    return {k: fingerprint.get(k) for k in keys if k in fingerprint}


@dataclass
class BenchmarkRow:
    """The LLM episodes of one (model, endpoint kind, sampling settings, task)."""

    model: str
    task_id: str
    endpoint_kind: str | None
    sampling: dict[str, Any]
    threshold: float
    records: list[EpisodeRecord] = field(default_factory=list)

    def _by_pair(self) -> dict[int, list[EpisodeRecord]]:
        pairs: dict[int, list[EpisodeRecord]] = {}
        for r in self.records:
            pairs.setdefault(r.seed, []).append(r)
        return pairs

    @property
    def repeats(self) -> int:
        """Runs of the least-run (task, seed) pair: the largest k pass^k is defined for."""
        return min(len(v) for v in self._by_pair().values())

    def pass_k(self) -> dict[int, float | None]:
        counts = [(len(v), sum(r.score >= self.threshold for r in v)) for v in self._by_pair().values()]
        return {k: pass_hat_k(counts, k) for k in range(1, self.repeats + 1)}

    def score(self) -> tuple[float, float]:
        """Mean score and 95 % half-width over the (task, seed) pairs (each the mean of its
        runs: repeats of one seed are not independent samples of the task)."""
        return mean_interval([statistics.fmean(r.score for r in v) for v in self._by_pair().values()])

    def finish_reasons(self) -> dict[str, int]:
        found = [(r.outcome or {}).get("finish_reason", "unknown") for r in self.records]
        return {reason: found.count(reason) for reason in FINISH_REASONS if reason in found}

    def per_episode(self, name: str) -> float | None:
        values = [(r.outcome or {}).get(name) for r in self.records]
        present = [float(v) for v in values if isinstance(v, (int, float))]
        return statistics.fmean(present) if present else None

    def tokens(self) -> dict[str, float | None]:
        def mean(name: str) -> float | None:
            values = [getattr(r, name) for r in self.records if getattr(r, name) is not None]
            return statistics.fmean(values) if values else None
        return {"prompt": mean("prompt_tokens"), "completion": mean("completion_tokens")}

    def as_dict(self) -> dict[str, Any]:
        mean, half = self.score()
        tokens = self.tokens()
        return {
            "model": self.model, "task_id": self.task_id, "endpoint_kind": self.endpoint_kind,
            "sampling": self.sampling, "success_threshold": self.threshold,
            "episodes": len(self.records), "pairs": len(self._by_pair()), "repeats": self.repeats,
            "seeds": sorted(self._by_pair()),
            "pass_k": {str(k): v for k, v in self.pass_k().items()},
            "score": {"mean": mean, "ci95_half_width": half, "ci_method": "normal approximation"},
            "finish_reasons": self.finish_reasons(),
            "per_episode": {**{name: self.per_episode(name) for name in COUNTS},
                            "endpoint_partial": sum(bool((r.outcome or {}).get("endpoint_partial"))
                                                    for r in self.records),
                            "prompt_tokens": tokens["prompt"],
                            "completion_tokens": tokens["completion"],
                            "wall_time_s": statistics.fmean(r.wall_time_s for r in self.records)},
            "agent_fingerprint": self.records[0].agent_fingerprint,
            "sim_fingerprint": self.records[0].sim_fingerprint,
        }


def benchmark_rows(records: Sequence[EpisodeRecord], threshold: float,
                   agent: str = "llm") -> list[BenchmarkRow]:
    groups: dict[tuple[str, str, str | None, str, str | None], BenchmarkRow] = {}
    for r in records:
        if r.agent != agent:
            continue
        kind = (r.outcome or {}).get("endpoint_kind")
        sampling = _sampling(r)
        key = (r.model, r.task_id, kind, json.dumps(sampling, sort_keys=True), r.sim_fingerprint)
        row = groups.setdefault(key, BenchmarkRow(r.model, r.task_id, kind, sampling, threshold))
        row.records.append(r)
    return sorted(groups.values(), key=lambda row: (row.model, row.task_id, str(row.endpoint_kind)))


def _fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def benchmark_markdown(rows: Sequence[BenchmarkRow]) -> str:
    """The report's LLM section: one line per row."""
    lines = ["| model | task | endpoint | sampling | pairs x runs | pass^1 | pass^k (k) | "
             "score (95% CI) | finish reasons | invalid format / action per ep. | "
             "context limit / endpoint failures per ep. | tokens per ep. (prompt / completion) | "
             "wall s per ep. |",
             "|" + "---|" * 13]
    for row in rows:
        d = row.as_dict()
        passes = row.pass_k()
        k = row.repeats
        mean, half = row.score()
        sampling = ", ".join(f"{key}={d['sampling'][key]}" for key in ("temperature", "max_tokens")
                             if key in d["sampling"])
        reasons = ", ".join(f"{name} {n}" for name, n in d["finish_reasons"].items())
        per = d["per_episode"]
        lines.append(
            f"| {row.model} | {row.task_id} | {row.endpoint_kind or '—'} | {sampling or '—'} | "
            f"{d['pairs']} x {k} | {_fmt(passes.get(1))} | {_fmt(passes.get(k))} ({k}) | "
            f"{mean:.3f} ± {half:.3f} | {reasons} | {_fmt(per['invalid_format'], 1)} / "
            f"{_fmt(per['invalid_action'], 1)} | {_fmt(per['context_limit'], 1)} / "
            f"{_fmt(per['endpoint_failures'], 1)} | {_fmt(per['prompt_tokens'], 0)} / "
            f"{_fmt(per['completion_tokens'], 0)} | {per['wall_time_s']:.1f} |")
    return "\n".join(lines)


def leaderboard(records: Sequence[EpisodeRecord], threshold: float, version: str) -> dict[str, Any]:
    """The ``codered report --json`` document (leaderboard.schema.json)."""
    return {"schema_version": LEADERBOARD_SCHEMA_VERSION, "benchmark": "codered_env",
            "package_version": version, "success_threshold": threshold,
            "confidence": CONFIDENCE,
            "entries": [row.as_dict() for row in benchmark_rows(records, threshold)]}


def threshold_from_env(env: Mapping[str, str]) -> float:
    """``SUCCESS_THRESHOLD`` as the run log reads it (default when unset or malformed)."""
    try:
        value = float(env.get("SUCCESS_THRESHOLD", "").strip() or DEFAULT_SUCCESS_THRESHOLD)
    except ValueError:
        return DEFAULT_SUCCESS_THRESHOLD
    return value if math.isfinite(value) else DEFAULT_SUCCESS_THRESHOLD


def benchmark_section(records: Sequence[EpisodeRecord], threshold: float) -> str | None:
    """The report's LLM section (``None`` without LLM episodes)."""
    rows = benchmark_rows(records, threshold)
    if not rows:
        return None
    return ("\nLLM agent results as agent benchmarks report them (success = score >= "
            f"{threshold:g}, the run log's SUCCESS_THRESHOLD; pass^k = chance that k runs of the "
            "same (task, seed) all succeed, estimated from every run; score = mean over the "
            "(task, seed) pairs with its 95% interval, normal approximation; per-episode counts "
            "are means over the runs):\n\n" + benchmark_markdown(rows) + "\n")
