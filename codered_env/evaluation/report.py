"""Turn an evaluation database into a markdown table and PNG plots (``codered report``).

Every number comes from stored episodes; nothing is estimated or filled in.  Rows are grouped
by task, agent, model *and provenance* (simulation and agent fingerprints,
:mod:`codered_env.evaluation.provenance`), so episodes of two simulations or two versions of an
agent never share a cell: they become two rows, labelled by their fingerprints.  Each row shows
the mean ± sample standard deviation (n − 1; the same :func:`mean_and_sample_std` that
``codered eval`` prints) of the score over the stored seeds, the mean of each rubric component
(``—`` where the component is ``null``), the seeds, the date(s) of the runs and the fingerprints;
a provenance table lists each agent's fingerprint and the commits.  Episodes of generated cities
are grouped by city set (Prakashnagar, the ``train`` or ``test`` split of city seeds, other
seeds: ``codered_env.city_choice``) and never share a row with Prakashnagar's; when the store
holds more than one set, a generalisation table shows each agent's score per set side by side.
Plots use matplotlib's Agg canvas (no display needed).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from codered_env.agents.roster import REPORT_ORDER
from codered_env.city_choice import DEFAULT_CITY, split_of
from codered_env.evaluation.provenance import short_hash
from codered_env.evaluation.store import EpisodeRecord, EpisodeStore, StoreError
from codered_env.evaluation.trajectory import Trajectory, package_version, regrade

AGENT_ORDER = REPORT_ORDER  # the agent registry's order
RUBRIC_ORDER = ("time_score", "efficiency", "secondary_harm", "prep_ready", "vitals_score_avg",
                "cascade_score")
SPREAD_LABEL = "mean ± sample std"
DEFAULT_OUT = "report"  # untracked (.gitignore); docs/baseline is the README's, rewritten on purpose


def mean_and_sample_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (n − 1; 0 for a single value): the one spread that
    ``codered eval`` and ``codered report`` both show."""
    mean = statistics.fmean(values) if values else 0.0
    return mean, statistics.stdev(values) if len(values) > 1 else 0.0


@dataclass(frozen=True)
class Row:
    """Aggregate of one (task, agent, model) group."""

    task_id: str
    agent: str
    model: str
    scores: tuple[float, ...]
    seeds: tuple[int, ...]
    components: dict[str, float | None]
    dates: tuple[str, ...]
    sim_fingerprint: str | None = None
    agent_fingerprint: str | None = None
    commits: tuple[str, ...] = ()
    variant: str = ""  # set when the same (task, agent, model) has rows of several provenances
    cities: str = DEFAULT_CITY  # city set: prakashnagar, train, test or other (city_set)

    @property
    def n(self) -> int:
        return len(self.scores)

    @property
    def mean(self) -> float:
        return mean_and_sample_std(self.scores)[0]

    @property
    def std(self) -> float:
        return mean_and_sample_std(self.scores)[1]

    @property
    def provenance(self) -> str:
        """``sim XXXXXXXX / agent YYYYYYYY`` (short hashes; ``—`` for rows stored before
        fingerprints)."""
        return f"sim {self.sim_fingerprint or '—'} / agent {short_hash(self.agent_fingerprint)}"

    @property
    def label(self) -> str:
        base = self.agent if self.model == self.agent else f"{self.agent} ({self.model})"
        if self.cities != DEFAULT_CITY:
            base = f"{base} @{self.cities} cities"
        return f"{base} [{self.variant}]" if self.variant else base


@dataclass(frozen=True)
class Report:
    """What :func:`generate_report` wrote."""

    markdown: str
    markdown_path: Path
    scores_png: Path
    components_png: Path
    version: str
    episodes: int


def _agent_rank(agent: str) -> tuple[int, str]:
    return (AGENT_ORDER.index(agent) if agent in AGENT_ORDER else len(AGENT_ORDER), agent)


def component_names(records: Iterable[EpisodeRecord]) -> list[str]:
    """Component names: the rubric's order first, then any others in first-seen order."""
    names: dict[str, None] = {}
    for record in records:
        names.update(dict.fromkeys(record.components))
    known = [n for n in RUBRIC_ORDER if n in names]
    return known + [n for n in names if n not in RUBRIC_ORDER]


def _mean_or_none(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def _short_sim(record: EpisodeRecord) -> str | None:
    return record.sim_fingerprint[:8] if record.sim_fingerprint else None


CITY_SETS = (DEFAULT_CITY, "train", "test", "other")


def city_set(record: EpisodeRecord) -> str:
    """Which set a stored episode's city is in: prakashnagar, train, test or other."""
    if record.city == DEFAULT_CITY:
        return DEFAULT_CITY
    return split_of(record.city) or "other"


def summarize(records: Sequence[EpisodeRecord]) -> list[Row]:
    """Group episodes by (task, agent, model, city set, simulation, agent fingerprint), ordered by
    task then agent; a (task, agent, model, city set) split over several provenances gets
    labelled variants."""
    groups: dict[tuple[str, str, str, str, str | None, str | None], list[EpisodeRecord]] = {}
    for record in sorted(records, key=lambda r: (r.seed, r.city)):
        key = (record.task_id, record.agent, record.model, city_set(record), _short_sim(record),
               record.agent_fingerprint)
        groups.setdefault(key, []).append(record)
    names = component_names(records)
    split = {k[:4] for k in groups if sum(1 for g in groups if g[:4] == k[:4]) > 1}
    rows = [
        Row(task_id=task, agent=agent, model=model, cities=cities,
            scores=tuple(r.score for r in items), seeds=tuple(r.seed for r in items),
            components={n: _mean_or_none([r.components.get(n) for r in items]) for n in names},
            dates=tuple(sorted({r.created_at[:10] for r in items})),
            sim_fingerprint=sim, agent_fingerprint=agent_fp,
            commits=tuple(sorted({r.git_commit for r in items if r.git_commit})),
            variant=(f"sim {sim or '—'}, agent {short_hash(agent_fp)}"
                     if (task, agent, model, cities) in split else ""))
        for (task, agent, model, cities, sim, agent_fp), items in groups.items()
    ]
    return sorted(rows, key=lambda r: (r.task_id, CITY_SETS.index(r.cities), _agent_rank(r.agent),
                                       r.model, r.sim_fingerprint or "", r.agent_fingerprint or ""))


def format_seeds(seeds: Iterable[int]) -> str:
    """Compact seed list: ``0–19`` or ``0–2, 5, 7``."""
    ordered = sorted(set(seeds))
    parts: list[str] = []
    start = prev = None
    for seed in [*ordered, None]:
        if start is not None and (seed is None or seed != prev + 1):
            parts.append(str(start) if start == prev else f"{start}–{prev}")
            start = None
        if seed is not None and start is None:
            start = seed
        prev = seed
    return ", ".join(parts)


def _dates(row: Row) -> str:
    return row.dates[0] if len(row.dates) == 1 else f"{row.dates[0]} to {row.dates[-1]}"


def normalised_score(row: Row, rows: Sequence[Row]) -> str:
    """``(score - random) / (oracle - random)`` on the row's task, from the stored ``random`` and
    ``oracle`` rows of that task (and simulation, where rows carry one): the share of the range
    from a random policy to the oracle ceiling (agents/oracle.py) that the row reaches; ``—``
    when either reference row is missing or the oracle does not beat random."""
    def reference(agent: str) -> Row | None:
        same = [r for r in rows if r.task_id == row.task_id and r.agent == agent
                and r.cities == row.cities]
        sim = getattr(row, "sim_fingerprint", None)
        return next((r for r in same if getattr(r, "sim_fingerprint", None) == sim), None)

    floor, ceiling = reference("random"), reference("oracle")
    if floor is None or ceiling is None or ceiling.mean <= floor.mean:
        return "—"
    return f"{(row.mean - floor.mean) / (ceiling.mean - floor.mean):.2f}"


def markdown_table(rows: Sequence[Row], names: Sequence[str]) -> str:
    """The results table in GitHub markdown."""
    header = ["Task", "Agent", "Model", "n", f"Score ({SPREAD_LABEL})", *names, "Seeds", "Date"]
    header += ["Provenance"]
    header.insert(5, "Normalised")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        comps = ["—" if row.components[n] is None else f"{row.components[n]:.3f}" for n in names]
        agent = row.agent if row.cities == DEFAULT_CITY else f"{row.agent} @{row.cities} cities"
        cells = [row.task_id, agent, row.model, str(row.n), f"{row.mean:.3f} ± {row.std:.3f}",
                 *comps, format_seeds(row.seeds), _dates(row)]
        cells += [row.provenance]
        cells.insert(5, normalised_score(row, rows))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def generalisation_table(rows: Sequence[Row]) -> str | None:
    """Each (task, agent, model)'s score per city set side by side (mean ± sample std, episodes),
    and the gap from train cities to held-out test cities; None when the rows hold one set."""
    present = [c for c in CITY_SETS if any(r.cities == c for r in rows)]
    if len(present) < 2:
        return None
    header = ["Task", "Agent", "Model", *(f"{c} cities" if c != DEFAULT_CITY else c for c in present)]
    gap = "train" in present and "test" in present
    header += ["test − train"] if gap else []
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    keys = dict.fromkeys((r.task_id, r.agent, r.model) for r in rows)
    for task, agent, model in keys:
        cells: dict[str, Row] = {}
        for r in rows:  # the first row of a set (variants of other provenances follow it)
            if (r.task_id, r.agent, r.model) == (task, agent, model):
                cells.setdefault(r.cities, r)
        shown = [f"{cells[c].mean:.3f} ± {cells[c].std:.3f} ({cells[c].n})" if c in cells else "—"
                 for c in present]
        if gap:
            both = "train" in cells and "test" in cells
            shown.append(f"{cells['test'].mean - cells['train'].mean:+.3f}" if both else "—")
        lines.append("| " + " | ".join([task, agent, model, *shown]) + " |")
    return "\n".join(lines)


def provenance_table(records: Sequence[EpisodeRecord]) -> str:
    """One line per (agent, model, agent fingerprint, simulation): the full agent fingerprint,
    the simulation fingerprint, the commits that played the episodes and how many there are."""
    groups: dict[tuple[str, str, str | None, str | None], list[EpisodeRecord]] = {}
    for record in records:
        key = (record.agent, record.model, record.agent_fingerprint, record.sim_fingerprint)
        groups.setdefault(key, []).append(record)
    header = ["Agent", "Model", "Agent fingerprint", "Simulation", "Commit(s)", "Episodes"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for (agent, model, agent_fp, sim), items in sorted(
            groups.items(), key=lambda kv: (_agent_rank(kv[0][0]), kv[0][1], kv[0][3] or "")):
        commits = sorted({r.git_commit[:12] + ("+dirty" if r.git_commit.endswith("+dirty") else "")
                          for r in items if r.git_commit})
        fingerprint = (f"{short_hash(agent_fp)} `{agent_fp}`" if agent_fp
                       else "— (stored before fingerprints)")
        cells = [agent, model, fingerprint, sim or "—", ", ".join(commits) or "unknown",
                 str(len(items))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def simulation_note(records: Sequence[EpisodeRecord], current: str) -> str:
    """A sentence saying which simulation(s) the rows come from, and warning when several."""
    sims = sorted({r.sim_fingerprint or "" for r in records})
    named = ", ".join(f"`{s[:8]}`" + (" (this checkout's)" if s == current else "") if s
                      else "unknown (stored before fingerprints)" for s in sims)
    if len(sims) == 1:
        return f"All rows come from one simulation: {named}."
    return (f"**These rows come from {len(sims)} different simulations ({named}); rows of "
            "different simulations are listed separately (column Provenance) and are not "
            "comparable.**")


def _stat(record: EpisodeRecord, key: str) -> int | None:
    value = (record.llm_stats or {}).get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _token_row(task: str, agent: str, model: str, items: Sequence[EpisodeRecord]) -> str:
    prompt = [r.prompt_tokens or 0 for r in items]
    completion = [r.completion_tokens or 0 for r in items]
    calls = [c for c in (_stat(r, "calls") for r in items) if c is not None]
    peaks = [m for m in (_stat(r, "max_prompt_tokens") for r in items) if m is not None]
    per_call = f"{sum(prompt) / sum(calls):.0f}" if len(calls) == len(items) and sum(calls) else "—"
    cells = [task, agent, model, str(len(items)),
             f"{statistics.fmean(calls):.0f}" if len(calls) == len(items) else "—", per_call,
             str(max(peaks)) if peaks else "—", f"{statistics.fmean(prompt):.0f}",
             f"{statistics.fmean(completion):.0f}", str(sum(prompt) + sum(completion))]
    return "| " + " | ".join(cells) + " |"


def token_table(records: Sequence[EpisodeRecord]) -> str | None:
    """Token use for each (task, agent, model) with token counts: model calls and prompt/completion
    tokens per episode (means), prompt tokens per call (over all the group's calls), the largest
    single prompt, and the group's total; ``None`` when no stored episode has any (no LLM rows)."""
    groups: dict[tuple[str, str, str], list[EpisodeRecord]] = {}
    for record in records:
        if record.prompt_tokens is not None or record.completion_tokens is not None:
            groups.setdefault((record.task_id, record.agent, record.model), []).append(record)
    if not groups:
        return None
    header = ["Task", "Agent", "Model", "n", "Calls / episode", "Prompt tokens / call",
              "Max prompt tokens", "Prompt tokens / episode", "Completion tokens / episode",
              "Total tokens (all n episodes)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += [_token_row(*key, items) for key, items in sorted(groups.items())]
    return "\n".join(lines)


# ------------------------------------------------------------------ clinical outcomes
def episode_outcomes(record: EpisodeRecord) -> dict[str, float] | None:
    """The simulation's clinical outcomes of a stored episode (``grade["outcomes"]``), recomputed
    by regrading its actions (the grade is a pure function of them). None when the regrade does
    not reproduce the stored score: the episode was recorded under another model."""
    try:
        actions = Trajectory.from_jsonl(record.trajectory).actions()
    except ValueError:
        return None
    grade = regrade(record.task_id, record.seed, record.city, actions)
    if abs(float(grade["score"]) - record.score) > 1e-4:
        return None
    return grade["outcomes"]


def clinical_table(records: Sequence[EpisodeRecord]) -> str:
    """Per (task, agent, model): the weighted expected good outcome and the expected
    deaths per 100 patients, beside the score (never part of it), and the share of the
    heuristic's outcome gain over noop on the same task. Episodes whose regrade does not match
    their stored score are left out (counted in n / of)."""
    groups: dict[tuple[str, str, str, str], list[dict[str, float]]] = {}
    totals: dict[tuple[str, str, str, str], int] = {}
    for record in records:
        key = (record.task_id, record.agent, record.model, city_set(record))
        totals[key] = totals.get(key, 0) + 1
        outcomes = episode_outcomes(record)
        groups.setdefault(key, [])
        if outcomes is not None:
            groups[key].append(outcomes)
    means = {
        key: (statistics.fmean(o["weighted_outcome"] for o in items),
              statistics.fmean(o["deaths_per_100"] for o in items))
        for key, items in groups.items() if items
    }
    header = ["Task", "Agent", "Model", "n", "Weighted expected outcome", "Expected deaths / 100 patients",
              "Share of heuristic's outcome gain over noop"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for key in sorted(totals, key=lambda k: (k[0], CITY_SETS.index(k[3]), _agent_rank(k[1]), k[2])):
        task, cities = key[0], key[3]
        agent = key[1] if cities == DEFAULT_CITY else f"{key[1]} @{cities} cities"
        if key not in means:
            lines.append(f"| {task} | {agent} | {key[2]} | 0 of {totals[key]} | — | — | — |")
            continue
        outcome, deaths = means[key]
        floor = means.get((task, "noop", "noop", cities))
        top = means.get((task, "heuristic", "heuristic", cities))
        share = "—"
        if floor is not None and top is not None and top[0] != floor[0]:
            share = f"{(outcome - floor[0]) / (top[0] - floor[0]):.2f}"
        n = len(groups[key])
        count = str(n) if n == totals[key] else f"{n} of {totals[key]}"
        lines.append(f"| {task} | {agent} | {key[2]} | {count} | {outcome:.3f} | {deaths:.1f} | {share} |")
    return "\n".join(lines)


def _figure(width: float, height: float):  # -> matplotlib.figure.Figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(figure)
    return figure


def _labels(rows: Sequence[Row]) -> list[str]:
    labels: dict[str, None] = {}
    for row in sorted(rows, key=lambda r: (_agent_rank(r.agent), r.model)):
        labels[row.label] = None
    return list(labels)


def plot_scores(rows: Sequence[Row], path: Path) -> None:
    """Grouped bars: mean score per task per agent, with standard-deviation error bars."""
    tasks = sorted({r.task_id for r in rows})
    labels = _labels(rows)
    by_key = {(r.task_id, r.label): r for r in rows}
    figure = _figure(max(6.0, 1.6 * len(tasks) + 2), 4.5)
    axes = figure.add_subplot()
    width = 0.8 / max(1, len(labels))
    for i, label in enumerate(labels):
        xs, means, stds = [], [], []
        for t, task in enumerate(tasks):
            row = by_key.get((task, label))
            if row is not None:
                xs.append(t + (i - (len(labels) - 1) / 2) * width)
                means.append(row.mean)
                stds.append(row.std)
        axes.bar(xs, means, width, yerr=stds, capsize=3, label=label)
    axes.set_xticks(range(len(tasks)), tasks)
    axes.set_ylim(0, 1)
    axes.set_ylabel(f"score ({SPREAD_LABEL} over seeds)")
    axes.set_title("CodeRedEnv score per task and agent")
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path)


def plot_components(rows: Sequence[Row], names: Sequence[str], path: Path) -> None:
    """One panel per task: mean of each rubric component per agent (null components omitted)."""
    tasks = sorted({r.task_id for r in rows})
    labels = _labels(rows)
    figure = _figure(max(7.0, 1.1 * len(names) + 3), 2.8 * max(1, len(tasks)))
    width = 0.8 / max(1, len(labels))
    for t, task in enumerate(tasks):
        axes = figure.add_subplot(len(tasks), 1, t + 1)
        for i, label in enumerate(labels):
            row = next((r for r in rows if r.task_id == task and r.label == label), None)
            if row is None:
                continue
            points = [(c, row.components[n]) for c, n in enumerate(names)
                      if row.components.get(n) is not None]
            xs = [c + (i - (len(labels) - 1) / 2) * width for c, _ in points]
            axes.bar(xs, [v for _, v in points], width, label=label)
        for c, name in enumerate(names):
            if all(r.components.get(name) is None for r in rows if r.task_id == task):
                axes.text(c, 0.05, "n/a", ha="center", fontsize=7, color="grey")
        axes.set_xticks(range(len(names)), names, fontsize=8)
        axes.set_ylim(0, 1)
        axes.set_title(task, fontsize=9)
        if t == 0:
            axes.legend(fontsize=7, ncol=max(1, len(labels)))
    figure.tight_layout()
    figure.savefig(path)


def choose_version(store: EpisodeStore, version: str | None) -> str:
    """The requested version, else the installed one if stored, else the newest stored."""
    versions = store.versions()
    if version is not None:
        if version not in versions:
            raise StoreError(f"no episodes of version {version} in {store.path}")
        return version
    if not versions:
        raise StoreError(f"{store.path} holds no episodes")
    current = package_version()
    return current if current in versions else versions[-1]


def generate_report(db_path: str | Path, out_dir: str | Path,
                    version: str | None = None, threshold: float | None = None) -> Report:
    """Write ``report.md``, ``scores.png`` and ``components.png`` into ``out_dir``."""
    if not Path(db_path).is_file():
        raise StoreError(f"{db_path}: no such evaluation database")
    with EpisodeStore(db_path) as store:
        chosen = choose_version(store, version)
        records = store.records(chosen)
    rows = summarize(records)
    names = component_names(records)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    from codered_env.evaluation.provenance import sim_fingerprint

    text = (f"Results from `codered report` ({len(records)} episodes, openenv-codered {chosen}; "
            f"score = {SPREAD_LABEL} (n − 1) over the listed seeds). "
            f"{simulation_note(records, sim_fingerprint())}\n\n"
            f"{markdown_table(rows, names)}\n")
    general = generalisation_table(rows)
    if general is not None:
        text += ("\nGeneralisation: the score per city set (Prakashnagar; generated cities of the "
                 "`train` and held-out `test` splits of city seeds; n = episodes):\n\n"
                 f"{general}\n")
    text += ("\nClinical outcomes beside the score (`grade[\"outcomes\"]`, recomputed from each "
             "episode's actions; weighted by priority and deaths averted, docs/MODEL.md §8):\n\n"
             f"{clinical_table(records)}\n")
    tokens = token_table(records)
    if tokens is not None:
        text += f"\nLLM token usage (from the endpoint's `usage`):\n\n{tokens}\n"
    text += _llm_benchmark_section(records, threshold)
    text += ("\nProvenance (what produced the episodes; `codered eval` reuses a stored episode only "
             f"when both fingerprints match):\n\n{provenance_table(records)}\n")
    report = Report(markdown=text, markdown_path=out / "report.md",
                    scores_png=out / "scores.png", components_png=out / "components.png",
                    version=chosen, episodes=len(records))
    report.markdown_path.write_text(text, encoding="utf-8")
    plot_scores(rows, report.scores_png)
    plot_components(rows, names, report.components_png)
    return report


def _llm_benchmark_section(records: Sequence[EpisodeRecord], threshold: float | None) -> str:
    """pass^k, intervals and finish reasons of the LLM episodes (evaluation/benchmark.py)."""
    import os

    from codered_env.evaluation.benchmark import benchmark_section, threshold_from_env

    chosen = threshold_from_env(os.environ) if threshold is None else threshold
    return benchmark_section(records, chosen) or ""
