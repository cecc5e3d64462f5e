"""Red-team probe: can the score (or the discounted return) be raised while patients fare worse?

Plays the red-team family (policies.py) on seeds the tests do not use and prints, per task:

* every policy's mean score, expected deaths per 100 patients, weighted expected outcome
  (``rubric.clinical_outcomes`` of the final grade's patients) and discounted return (per-decision
  discount 0.99 over the episode's step rewards);
* the outcome inversions, paired by seed, beyond 2 standard errors: A scores >= 0.01 above B while
  A's patients suffer >= 1 expected death per 100 more; or A scores above the heuristic at all
  while its patients suffer >= 0.3 deaths per 100 more. Each is printed with the rubric component
  responsible (the largest paired difference of component x effective weight);
* the delay gains: each delayed variant against the same policy undelayed (paired, per k); a
  flagged one also shows its mean gain on the seeds where the step budget ended neither episode
  (a twin's waits spend decisions: where the budget binds, it has fewer left for the rest);
* Spearman(score, weighted outcome) and Spearman(return, weighted outcome) across the policies;
* the same inversions for discounted returns;
* the share of steps in which a crew first reaches a caller that get a negative reward.

It imports only the public API of ``codered_env``, so it measures whichever checkout's package
is installed in the running interpreter: ``cd OTHER_CHECKOUT && uv run python
PATH/TO/bench/redteam/probe.py``.

Usage::

    uv run python bench/redteam/probe.py                       # every task, seeds 1000-1049
    uv run python bench/redteam/probe.py --tasks task1,task4 --seeds 1000-1019
    uv run python bench/redteam/probe.py --policies heuristic,hold-dispatch-5,oracle --json out.json
    uv run python bench/redteam/probe.py --list                 # the family
    uv run python bench/redteam/probe.py --mixes 30 --mix-seed 1  # + 30 random mixes and their delayed twins
    uv run python bench/redteam/probe.py --mixes 30 --mix-seed 1 --mix-twins held,waiting,padded
    uv run python bench/redteam/probe.py --policies oracle --seeds 1000-1009 --json oracle.json
    uv run python bench/redteam/probe.py --replay family.json,oracle.json   # analyse both together
    uv run python bench/redteam/probe.py --mixes 40 --mix-seed 4 --confirm 66000-66199  # replay the flagged

Exit status 0 when every invariant holds (zero inversions in score and return, no delay gain above
0.002, reaching a caller not punished on average, the oracle, if played, above every policy in
mean), 1 otherwise. Over many pairs a few pass 2 SE by chance: ``--confirm SEEDS`` replays the
pairs behind each inversion and delay gain on other seeds, and only those that hold there count.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

_BENCH = str(Path(__file__).resolve().parent.parent)
if _BENCH not in sys.path:  # run as a script from any checkout: the family beside this file
    sys.path.insert(0, _BENCH)

from codered_env.sim import TASK_IDS, CodeRedSim  # noqa: E402
from redteam.policies import DEFAULT_FAMILY, MIX_TWINS, POLICIES, mix_names, policy  # noqa: E402

DEFAULT_SEEDS = "1000-1049"
DISCOUNT = 0.99  # the common per-decision discount
MINUTE_DISCOUNT = 0.998  # per simulated minute (docs/TRAINING.md, --gamma-minute): shown, not judged
SCORE_GAP = 0.01  # an inversion: a score gap at least this ...
DEATH_GAP = 1.0  # ... against at least this many expected deaths per 100 more
HEURISTIC_DEATH_GAP = 0.3  # any gain over the heuristic against this many deaths per 100 more
DELAY_GAIN_MAX = 0.002
REACH_NEGATIVE_SHARE_MAX = 0.5  # reaching a caller punished "on average": most such steps negative
Z = 2.0  # "beyond 2 standard errors"
REFERENCE = "heuristic"
CEILING = "oracle"


@dataclass
class Episode:
    """What the probe keeps of one episode."""

    seed: int
    score: float
    deaths: float
    outcome: float
    ret: float  # discounted return
    contributions: dict[str, float]  # component x effective weight (penalties negative)
    reach_rewards: list[float] = field(default_factory=list)  # rewards of steps a caller was first reached
    steps: int = 0
    seconds: float = 0.0
    ret_minute: float | None = None  # return discounted per simulated minute (None: an older file)
    end: str | None = None  # the end reason (resolved, horizon, step_budget; None: an older file)


# ------------------------------------------------------------------------------ playing
def contributions(grade: dict[str, Any]) -> dict[str, float]:
    """Each component's share of the score (component x effective weight), the mutual-aid
    penalty as a negative share, and what rounding and clamping add (``clamp``)."""
    weights = grade.get("weights") or {}
    components = grade.get("components") or {}
    parts = {k: float(weights.get(k, 0.0)) * float(v or 0.0) for k, v in components.items()}
    for key, value in grade.items():
        if key.endswith("_penalty") and isinstance(value, (int, float)) and not isinstance(value, bool):
            parts[key] = -float(value)
    parts["clamp"] = float(grade["score"]) - sum(parts.values())
    return parts


def outcomes_of(grade: dict[str, Any]) -> dict[str, float]:
    """The final grade's clinical outcomes (``rubric.clinical_outcomes``: expected deaths per 100
    patients, news-cycle surge callers counted in the deaths but not in the hundred)."""
    return grade["outcomes"]


def _reached(sim: CodeRedSim) -> set[str]:
    """Patients a crew has reached (the simulator's record; the probe measures, it plays nothing)."""
    return {pid for pid, p in sim.world.patients.items() if getattr(p, "first_unit_at", None) is not None}


def play(task_id: str, seed: int, policy_name: str) -> Episode:
    """One episode of ``policy_name`` (built with the episode seed), played to the end."""
    started = time.process_time()
    agent = policy(policy_name).build(seed)
    sim = CodeRedSim(task_id, seed)
    agent.reset(task_id, seed)
    rewards: list[float] = []
    ret_minute, minutes = 0.0, 0
    reach_rewards: list[float] = []
    reached = _reached(sim)
    while not sim.done:
        result = sim.step(agent.act(sim.observation()))
        rewards.append(float(result.reward))
        ret_minute += float(result.reward) * MINUTE_DISCOUNT**minutes
        minutes += result.minutes
        now = _reached(sim)
        if now - reached:
            reach_rewards.append(float(result.reward))
        reached = now
    sim.finish()
    grade = sim.grade()
    outcomes = outcomes_of(grade)
    ret = sum(r * DISCOUNT**t for t, r in enumerate(rewards))
    return Episode(seed, float(grade["score"]), float(outcomes["deaths_per_100"]),
                   float(outcomes["weighted_outcome"]), ret, contributions(grade), reach_rewards,
                   sim.step_count, time.process_time() - started, ret_minute, sim.end_reason)


def _cell(args: tuple[str, str, tuple[int, ...]]) -> tuple[str, str, list[Episode]]:
    task_id, name, seeds = args
    return task_id, name, [play(task_id, seed, name) for seed in seeds]


def run(tasks: Sequence[str], seeds: Sequence[int], names: Sequence[str], workers: int = 1,
        progress: bool = False) -> dict[str, dict[str, list[Episode]]]:
    """Every policy on every task and seed: ``results[task][policy]`` in seed order."""
    cells = [(task_id, name, tuple(seeds)) for task_id in tasks for name in names]
    results: dict[str, dict[str, list[Episode]]] = {task_id: {} for task_id in tasks}
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            done: Iterable[tuple[str, str, list[Episode]]] = pool.map(_cell, cells)
            for task_id, name, episodes in done:
                results[task_id][name] = episodes
    else:
        for cell in cells:
            task_id, name, episodes = _cell(cell)
            results[task_id][name] = episodes
            if progress:
                cpu = sum(e.seconds for e in episodes)
                print(f"  {task_id} {name:<28} {cpu:6.1f} s", file=sys.stderr, flush=True)
    for task_id in tasks:  # back in the requested order
        results[task_id] = {name: results[task_id][name] for name in names}
    return results


# ------------------------------------------------------------------------------ statistics
def paired(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Mean of the paired differences a - b and its standard error."""
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    mean = math.fsum(diffs) / n
    if n < 2:
        return mean, 0.0
    variance = math.fsum((d - mean) ** 2 for d in diffs) / (n - 1)  # floats: statistics.stdev is slow
    return mean, math.sqrt(variance / n)


def beyond(mean: float, se: float, at_least: float) -> bool:
    """``mean`` is at least ``at_least`` and more than 2 standard errors above 0."""
    return mean >= at_least and mean > Z * se


def ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    var = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return cov / var if var else 0.0


def _values(episodes: list[Episode], metric: str) -> list[float]:
    return [getattr(e, metric) for e in episodes]


def responsible(a: list[Episode], b: list[Episode]) -> list[tuple[str, float]]:
    """The components behind A's score lead over B, largest first (mean paired difference of
    component x effective weight)."""
    keys = sorted({k for e in a + b for k in e.contributions})
    gaps = [(k, paired([e.contributions.get(k, 0.0) for e in a], [e.contributions.get(k, 0.0) for e in b])[0])
            for k in keys]
    return sorted(gaps, key=lambda kv: -kv[1])


def inversions(results: dict[str, list[Episode]], metric: str = "score") -> list[dict[str, Any]]:
    """Every pair (A, B) where A's ``metric`` is higher although A's patients fare worse (see the
    module docstring for the thresholds)."""
    found = []
    for a_name, a in results.items():
        for b_name, b in results.items():
            if a_name == b_name:
                continue
            gap, gap_se = paired(_values(a, metric), _values(b, metric))
            deaths, deaths_se = paired(_values(a, "deaths"), _values(b, "deaths"))
            general = beyond(gap, gap_se, SCORE_GAP) and beyond(deaths, deaths_se, DEATH_GAP)
            over_reference = b_name == REFERENCE and beyond(gap, gap_se, 0.0) and beyond(
                deaths, deaths_se, HEURISTIC_DEATH_GAP)
            if general or over_reference:
                found.append({
                    "better": a_name, "worse": b_name, "gap": gap, "gap_se": gap_se,
                    "deaths": deaths, "deaths_se": deaths_se,
                    "kind": "over heuristic" if over_reference and not general else "pair",
                    "components": responsible(a, b)[:3] if metric == "score" else [],
                })
    return sorted(found, key=lambda inv: -inv["gap"])


def delay_gains(results: dict[str, list[Episode]]) -> list[dict[str, Any]]:
    """Each delayed variant against the same policy undelayed (paired by seed)."""
    rows = []
    for name, episodes in results.items():
        base = policy(name).base
        if base is None or base not in results:
            continue
        gain, gain_se = paired(_values(episodes, "score"), _values(results[base], "score"))
        deaths, deaths_se = paired(_values(episodes, "deaths"), _values(results[base], "deaths"))
        ret, ret_se = paired(_values(episodes, "ret"), _values(results[base], "ret"))
        rows.append({"policy": name, "base": base, "hold": policy(name).hold, "gain": gain,
                     "gain_se": gain_se, "deaths": deaths, "deaths_se": deaths_se,
                     "return_gain": ret, "return_gain_se": ret_se,
                     "components": responsible(episodes, results[base])[:2],
                     "unbound": _unbound_gain(episodes, results[base])})
    return rows


def _unbound_gain(delayed: list[Episode], base: list[Episode]) -> tuple[int, float] | None:
    """The seeds on which the step budget ended neither episode, and the mean gain on them: a
    delayed twin's waits spend decisions, so where the budget binds it has fewer left for what
    else it does (all else is not equal). None for episodes of an older file."""
    if any(e.end is None for e in delayed + base):
        return None
    gains = [d.score - b.score for d, b in zip(delayed, base, strict=True)
             if "step_budget" not in (d.end, b.end)]
    return len(gains), statistics.fmean(gains) if gains else 0.0


def reach_stats(episodes: Iterable[Episode]) -> dict[str, float]:
    rewards = [r for e in episodes for r in e.reach_rewards]
    if not rewards:
        return {"steps": 0, "negative_share": 0.0, "mean_reward": 0.0}
    return {"steps": len(rewards), "negative_share": sum(r < 0 for r in rewards) / len(rewards),
            "mean_reward": statistics.fmean(rewards)}


def summary_rows(results: dict[str, list[Episode]]) -> list[dict[str, Any]]:
    rows = []
    for name, episodes in results.items():
        rows.append({
            "policy": name,
            "score": statistics.fmean(_values(episodes, "score")),
            "deaths": statistics.fmean(_values(episodes, "deaths")),
            "outcome": statistics.fmean(_values(episodes, "outcome")),
            "return": statistics.fmean(_values(episodes, "ret")),
            "reach": reach_stats(episodes),
            "cpu_s_per_episode": statistics.fmean(_values(episodes, "seconds")),
        })
    return rows


def analyse(results: dict[str, list[Episode]]) -> dict[str, Any]:
    """Everything the probe reports for one task."""
    rows = summary_rows(results)
    outcome = [r["outcome"] for r in rows]
    analysis: dict[str, Any] = {
        "policies": rows,
        "inversions": inversions(results, "score"),
        "return_inversions": inversions(results, "ret"),
        "delay_gains": delay_gains(results),
        "spearman_score": spearman([r["score"] for r in rows], outcome) if len(rows) > 2 else None,
        "spearman_return": spearman([r["return"] for r in rows], outcome) if len(rows) > 2 else None,
        "reach": reach_stats(e for episodes in results.values() for e in episodes),
    }
    if all(e.ret_minute is not None for episodes in results.values() for e in episodes):
        analysis["minute_return_inversions"] = inversions(results, "ret_minute")
    if CEILING in results:
        ceiling = statistics.fmean(_values(results[CEILING], "score"))
        analysis["above_ceiling"] = [
            r["policy"] for r in rows if r["policy"] != CEILING and r["score"] > ceiling]  # ties: equal plays
        analysis["ceiling_beaten_on"] = beaten_seeds(results)
    return analysis


def beaten_seeds(results: dict[str, list[Episode]]) -> dict[str, list[int]]:
    """Per fair policy, the seeds on which it scored above the oracle."""
    ceiling = {e.seed: e.score for e in results[CEILING]}
    out = {}
    for name, episodes in results.items():
        if name != CEILING and policy(name).fair:
            seeds = [e.seed for e in episodes if e.score > ceiling[e.seed]]
            if seeds:
                out[name] = seeds
    return out


def violations(analysis: dict[str, Any]) -> list[str]:
    """The invariants the analysis of one task breaks (empty: all hold)."""
    return list(keyed_violations(analysis).values())


def keyed_violations(analysis: dict[str, Any]) -> dict[tuple[str, ...], str]:
    """``violations`` by what each is about: (kind, policy[, other policy])."""
    out: dict[tuple[str, ...], str] = {}
    for inv in analysis["inversions"]:
        out["score", inv["better"], inv["worse"]] = f"score inversion: {inv['better']} > {inv['worse']}"
    for inv in analysis["return_inversions"]:
        out["return", inv["better"], inv["worse"]] = f"return inversion: {inv['better']} > {inv['worse']}"
    for row in analysis["delay_gains"]:
        if row["gain"] > DELAY_GAIN_MAX:
            out["delay", row["policy"], row["base"]] = (
                f"delay gain: {row['policy']} +{row['gain']:.4f} over {row['base']}")
    reach = analysis["reach"]
    if reach["steps"] and (reach["mean_reward"] < 0 or reach["negative_share"] > REACH_NEGATIVE_SHARE_MAX):
        out["reach",] = (f"reaching a caller punished: mean reward {reach['mean_reward']:+.4f}, "
                         f"{reach['negative_share']:.0%} of such steps negative")
    for name in analysis.get("above_ceiling", []):
        out["ceiling", name] = f"{name} above the oracle in mean"
    return out


def confirm(task_id: str, found: dict[tuple[str, ...], str], seeds: list[int],
            workers: int) -> dict[tuple[str, ...], str]:
    """Replay every pair behind a pairwise violation (inversion, delay gain) of ``found`` on
    ``seeds`` and return the violations that hold there too, with the others (reach, ceiling:
    properties of the whole family) as found. On many pairs, some pass 2 SE by chance alone."""
    pairwise = [key for key in found if key[0] in ("score", "return", "delay")]
    if not pairwise:
        return found
    names = list(dict.fromkeys([REFERENCE, *(name for key in pairwise for name in key[1:])]))
    print(f"\nconfirming {len(pairwise)} with {len(names)} policies on {len(seeds)} seeds "
          f"({seeds[0]}-{seeds[-1]})")
    again = keyed_violations(analyse(run([task_id], seeds, names, workers)[task_id]))
    for key in pairwise:
        print(f"  {'CONFIRMED' if key in again else 'not confirmed'}: {again.get(key, found[key])}")
    return {key: text for key, text in found.items() if key not in pairwise or key in again}


def component_tally(found: list[dict[str, Any]]) -> dict[str, int]:
    """How many inversions each component leads (the largest paired contribution gap)."""
    tally: dict[str, int] = {}
    for inv in found:
        if inv["components"]:
            top = inv["components"][0][0]
            tally[top] = tally.get(top, 0) + 1
    return dict(sorted(tally.items(), key=lambda kv: -kv[1]))


def summary_line(task_id: str, analysis: dict[str, Any]) -> dict[str, Any]:
    """One task's figures in a row (the closing table)."""
    rows = {r["policy"]: r for r in analysis["policies"]}
    reference = rows.get(REFERENCE, {}).get("score", 0.0)
    best = max((r for r in rows.values() if policy(r["policy"]).fair), key=lambda r: r["score"])
    gains = [row["gain"] for row in analysis["delay_gains"]]
    return {
        "task": task_id, "policies": len(rows),
        "inversions": len(analysis["inversions"]), "return_inversions": len(analysis["return_inversions"]),
        "max_delay_gain": max(gains) if gains else None,
        "spearman_score": analysis["spearman_score"], "spearman_return": analysis["spearman_return"],
        "reach_negative": analysis["reach"]["negative_share"], "reach_mean": analysis["reach"]["mean_reward"],
        "best_fair": best["policy"], "best_fair_gain": best["score"] - reference,
        "culprits": component_tally(analysis["inversions"]),
    }


# ------------------------------------------------------------------------------ printing
def print_summary(lines: list[dict[str, Any]]) -> None:
    print("\nsummary: task | inversions score/return | max delay gain | Spearman score/return | "
          "reach: negative share, mean reward | best fair policy (gain over heuristic) | inversions led by")
    for x in lines:
        gain = "-" if x["max_delay_gain"] is None else f"{x['max_delay_gain']:+.4f}"
        culprits = ", ".join(f"{k} {n}" for k, n in x["culprits"].items()) or "-"
        ranks = "/".join("-" if r is None else f"{r:.2f}"  # too few policies to rank
                         for r in (x["spearman_score"], x["spearman_return"]))
        print(f"  {x['task']} | {x['inversions']}/{x['return_inversions']} | {gain} | "
              f"{ranks} | {x['reach_negative']:.0%}, "
              f"{x['reach_mean']:+.4f} | {x['best_fair']} ({x['best_fair_gain']:+.4f}) | {culprits}")


def _component_text(parts: list[tuple[str, float]]) -> str:
    return ", ".join(f"{k} {v:+.3f}" for k, v in parts if v > 0) or "-"


def _budget_text(row: dict[str, Any]) -> str:
    unbound = row.get("unbound")
    if unbound is None:
        return ""
    return f"; on the {unbound[0]} seeds the step budget ended neither: {unbound[1]:+.4f}"


def print_task(task_id: str, analysis: dict[str, Any], n_seeds: int) -> None:
    print(f"\n=== {task_id} ({n_seeds} seeds) ===")
    print(f"{'policy':<28} {'score':>7} {'deaths/100':>10} {'w.outcome':>9} {'return':>7} {'reach<0':>7}")
    for row in sorted(analysis["policies"], key=lambda r: -r["score"]):
        reach = row["reach"]
        neg = f"{reach['negative_share']:.0%}" if reach["steps"] else "-"
        print(f"{row['policy']:<28} {row['score']:7.4f} {row['deaths']:10.2f} {row['outcome']:9.4f} "
              f"{row['return']:7.4f} {neg:>7}")
    rho, rho_ret = analysis["spearman_score"], analysis["spearman_return"]
    if rho is not None:
        print(f"Spearman(score, w.outcome) = {rho:.3f}   Spearman(return, w.outcome) = {rho_ret:.3f}")
    reach = analysis["reach"]
    print(f"crew first reaches a caller: {reach['steps']} steps, {reach['negative_share']:.1%} with a "
          f"negative reward, mean reward {reach['mean_reward']:+.4f}")
    for title, key in (("score inversions", "inversions"), ("return inversions", "return_inversions"),
                       ("per-minute return inversions (not judged)", "minute_return_inversions")):
        if key not in analysis:
            continue
        found = analysis[key]
        print(f"{title}: {len(found)}")
        for inv in found:
            print(f"  {inv['better']} > {inv['worse']}: {inv['gap']:+.4f} ± {inv['gap_se']:.4f} with "
                  f"{inv['deaths']:+.2f} ± {inv['deaths_se']:.2f} deaths/100 [{inv['kind']}]"
                  + (f"; from {_component_text(inv['components'])}" if inv["components"] else ""))
    print("delay gains (delayed - undelayed, paired):")
    for row in analysis["delay_gains"]:
        flag = "  GAIN" if row["gain"] > DELAY_GAIN_MAX else ""
        print(f"  {row['policy']:<24} vs {row['base']:<20} k={row['hold']:>2}: {row['gain']:+.4f} ± "
              f"{row['gain_se']:.4f}, deaths {row['deaths']:+.2f}, return {row['return_gain']:+.4f}"
              f"{flag}" + (f"; from {_component_text(row['components'])}{_budget_text(row)}" if flag else ""))
    if "above_ceiling" in analysis:
        beaten = analysis["ceiling_beaten_on"]
        seeds = sorted({s for v in beaten.values() for s in v})
        print(f"oracle: no policy above it in mean: {not analysis['above_ceiling']}; beaten by a fair "
              f"policy on {len(seeds)} of {n_seeds} seeds" + (f" ({', '.join(beaten)})" if beaten else ""))


def parse_seeds(text: str) -> list[int]:
    """``lo-hi`` ranges and single seeds, comma separated; ValueError naming the bad part."""
    seeds: list[int] = []
    for part in text.split(","):
        try:
            if "-" in part:
                lo, hi = part.split("-")
                seeds += range(int(lo), int(hi) + 1)
            elif part:
                seeds.append(int(part))
        except ValueError:
            raise ValueError(f"seeds {part!r}: lo-hi or a seed, comma separated (1000-1049,7)") from None
    return seeds


def parse_policies(text: str, mixes: Sequence[str] = ()) -> list[str]:
    """A comma list of names; ``default`` is the family without the search agents, ``all``
    everything; ``+name`` adds to the default family; ``mixes`` (random mixes' names) are added."""
    names: list[str] = []
    for part in text.split(","):
        part = part.strip()
        if part == "default" or (part.startswith("+") and not names):
            names += DEFAULT_FAMILY
        if part == "all":
            names += POLICIES
        elif part not in ("default", ""):
            names.append(part.lstrip("+"))
    names += mixes
    unknown = [n for n in names if not _known(n)]
    if unknown:
        raise SystemExit(f"unknown policies {unknown}; see --list")
    if REFERENCE not in names:
        names.insert(0, REFERENCE)  # every analysis pairs with it
    return list(dict.fromkeys(names))


def _known(name: str) -> bool:
    try:
        policy(name)
    except KeyError:
        return False
    return True


def replayed(paths: list[Path]) -> tuple[dict[str, dict[str, list[Episode]]], list[int], list[str]]:
    """The episodes earlier runs wrote with ``--json``, merged: each (task, policy) from the first
    file that has it, on the seeds every file played (so an expensive policy can be played
    separately and analysed with the rest)."""
    saved = [json.loads(path.read_text()) for path in paths]
    seeds = sorted(set.intersection(*(set(run["seeds"]) for run in saved)))
    results: dict[str, dict[str, list[Episode]]] = {}
    names: list[str] = []
    for run in saved:
        for task_id, task in run["tasks"].items():
            for name, episodes in task["episodes"].items():
                kept = [Episode(**e) for e in episodes if e["seed"] in seeds]
                results.setdefault(task_id, {}).setdefault(name, kept)
                names += [] if name in names else [name]
    tasks = [t for t in results if all(t in run["tasks"] for run in saved)]
    return {t: results[t] for t in tasks}, seeds, names


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="See the module docstring for what is measured.")
    ap.add_argument("--tasks", default=",".join(TASK_IDS), help="comma list (default: every task)")
    ap.add_argument("--seeds", default=DEFAULT_SEEDS,
                    help=f"lo-hi and/or a comma list (default {DEFAULT_SEEDS})")
    ap.add_argument("--policies", default="default",
                    help="comma list; 'default' (the family without planner/oracle), 'all', '+oracle'")
    ap.add_argument("--json", type=Path, help="write every episode's figures and the analyses here")
    ap.add_argument("--workers", type=int, default=1, help="processes (default 1: the machine is shared)")
    ap.add_argument("--list", action="store_true", help="print the family and exit")
    ap.add_argument("--replay", help="analyse earlier --json files' episodes (comma list) instead of playing")
    ap.add_argument("--quiet", action="store_true", help="no per-policy progress on stderr")
    ap.add_argument("--mixes", type=int, default=0,
                    help="add this many random mixes of the family's twists, each but the lazy ones "
                         "with a delayed twin")
    ap.add_argument("--mix-seed", type=int, default=0, help="the random mixes' seed (default 0)")
    ap.add_argument("--confirm", metavar="SEEDS",
                    help="replay the pairs behind each inversion and delay gain on these seeds; only "
                         "those that hold there count in the exit status")
    ap.add_argument("--mix-twins", default="held",
                    help=f"the mixes' twins, a comma list of {', '.join(MIX_TWINS)} (default held): "
                         "a hold with the other rules acting meanwhile, the same hold all else equal "
                         "(a one-minute wait in each held action's place), every wait a one-minute query")
    args = ap.parse_args(argv)
    try:
        mixes = mix_names(args.mixes, args.mix_seed, args.mix_twins)
    except ValueError as e:
        ap.error(str(e))
    if args.list:
        for name, p in [*POLICIES.items(), *((n, policy(n)) for n in mixes)]:
            tags = [t for t, on in (("search, not default", p.search), ("named only", not p.default),
                                    ("reads the truth", not p.fair)) if on]
            base = f" (delayed {p.base}, k={p.hold})" if p.base else ""
            note = f": {p.note}" if p.note else ""
            print(f"{name}{base}{note}{'  [' + ', '.join(tags) + ']' if tags else ''}")
        return 0
    started = time.perf_counter()
    if args.replay and args.confirm is not None:
        ap.error("--confirm replays flagged pairs by playing them: not with --replay")
    if args.replay:
        results, seeds, names = replayed([Path(p) for p in args.replay.split(",")])
        tasks = list(results)
    else:
        try:
            seeds, confirm_seeds = parse_seeds(args.seeds), parse_seeds(args.confirm or "")
        except ValueError as e:
            ap.error(str(e))
        if args.confirm is not None and not confirm_seeds:
            ap.error("--confirm: no seeds")
        tasks, names = args.tasks.split(","), parse_policies(args.policies, mixes)
        bad = [t for t in tasks if t not in TASK_IDS]
        if bad or not seeds:
            ap.error(f"unknown tasks {bad} (valid: {', '.join(TASK_IDS)})" if bad else "no seeds")
    print(f"red-team probe: {len(names)} policies, seeds {seeds[0]}-{seeds[-1]} ({len(seeds)}), "
          f"tasks {', '.join(tasks)}")
    if not args.replay:
        results = run(tasks, seeds, names, args.workers, progress=not args.quiet)
        if args.json:  # the episodes first: a long run survives an interrupted analysis
            played = {t: {"episodes": {n: [asdict(e) for e in eps] for n, eps in results[t].items()}}
                      for t in tasks}
            args.json.write_text(json.dumps({"seeds": seeds, "policies": names, "tasks": played}))
    report: dict[str, Any] = {"seeds": seeds, "policies": names, "tasks": {}}
    broken = 0
    lines = []
    for task_id in tasks:
        analysis = analyse(results[task_id])
        print_task(task_id, analysis, len(seeds))
        keyed = keyed_violations(analysis)
        print(f"invariants: {'all hold' if not keyed else f'{len(keyed)} broken'}")
        if args.confirm:
            keyed = confirm(task_id, keyed, confirm_seeds, args.workers)
            print(f"confirmed: {'none' if not keyed else f'{len(keyed)} broken'}")
        problems = list(keyed.values())
        broken += len(problems)
        lines.append(summary_line(task_id, analysis))
        episodes = {n: [asdict(e) for e in eps] for n, eps in results[task_id].items()}
        report["tasks"][task_id] = {"analysis": analysis, "problems": problems, "episodes": episodes}
    print_summary(lines)
    report["summary"] = lines
    print(f"\n{'every invariant holds' if not broken else f'{broken} invariant violations'} "
          f"({time.perf_counter() - started:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0 if not broken else 1


if __name__ == "__main__":
    sys.exit(main())
