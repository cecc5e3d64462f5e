"""The user docs against the code and the generated results.

* Every number the code defines and the docs repeat (step budgets, horizons, LLM defaults and
  budget rule, action counts, the Gymnasium action space, the city's size) is checked here.
* Every results table in the docs is a copy of a generated file under ``docs/results/`` (each
  with a header naming its command, commit and machine), and the copy must be exact.
* Every relative link and every repository path the docs name exists.
* The docs describe the product, not how it was made: no work-process words (sessions, branches,
  helpers, "the lead", internal issue numbers, commit hashes in prose) in the docs or in the
  package's code. A file another change still has to clean is listed in ``NOT_YET_CLEAN`` with its
  count of hits, which may only go down.
* README stays a short front page and the docs stay within a line budget.
"""

from __future__ import annotations

import json
import re
from importlib.metadata import version
from pathlib import Path

import pytest

from codered_env.agents.llm import LLMConfig, _default_schemas
from codered_env.sim import TASK_IDS, TASKS, city

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RESULTS = DOCS / "results"
README = ROOT / "README.md"
USER_DOCS = [README, ROOT / "CHANGELOG.md", *sorted(DOCS.glob("*.md"))]
BUDGETS = [TASKS[t].max_steps for t in TASK_IDS]
CONFIG = LLMConfig.from_env({"HF_TOKEN": "hf_docs_test_key"})
assert CONFIG is not None

README_MAX_LINES = 300
# README, CHANGELOG and docs/*.md together (generated files under docs/results/ not counted)
DOCS_LINE_BUDGET = 4_400
FIRST_COMMANDS = (
    "pip install uv && uv run python inference.py --task task1 --seed 0",
    "pip install uv && uv run pytest",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _all_docs() -> list[tuple[str, str]]:
    return [(p.name, _text(p)) for p in USER_DOCS]


# --------------------------------------------------------------------------- shape of the docs

def test_readme_is_a_short_front_page() -> None:
    lines = _text(README).splitlines()
    assert len(lines) <= README_MAX_LINES, len(lines)
    assert lines[0] == "---" and "sdk: docker" in lines[:12] and "base_path: /web" in lines[:12]
    after_front_matter = lines[lines.index("---", 1) + 1:]
    commands = [ln for ln in after_front_matter if ln.startswith("pip install")][:2]
    assert [c.split("  #")[0].strip() for c in commands] == list(FIRST_COMMANDS)
    assert after_front_matter.index(commands[0]) < after_front_matter.index("## Install")


def test_docs_stay_within_their_line_budget() -> None:
    total = sum(len(_text(p).splitlines()) for p in USER_DOCS)
    assert total <= DOCS_LINE_BUDGET, total


# --------------------------------------------------------------------------- links and paths

LINK = re.compile(r"\]\(([^)\s]+)\)")
# named in the docs but made at build time (the wheel's copy of the manifest)
BUILT_PATHS = {"codered_env/openenv.yaml"}
REPO_PATH = re.compile(r"(?<![\w/.-])((?:codered_env|bench|docs|tests|examples|validation|\.ci)/"
                       r"[\w./-]*[\w/])")


# Named files removed since, in docs still to be updated by another change (the count may only fall)
NOT_YET_UPDATED = {"GYM.md": {"bench/bench_mypyc.sh"}}


def _missing_targets(path: Path) -> list[str]:
    text = _text(path)
    missing = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        file = target.split("#", 1)[0]
        if not (path.parent / file).exists():
            missing.append(target)
    if path.name == "CHANGELOG.md":  # history names files that are gone
        return missing
    for name in REPO_PATH.findall(text):
        if name not in BUILT_PATHS and not (ROOT / name).exists():
            missing.append(name)
    return missing


@pytest.mark.parametrize("path", USER_DOCS, ids=lambda p: p.name)
def test_every_link_and_named_file_exists(path: Path) -> None:
    missing = set(_missing_targets(path))
    assert missing <= NOT_YET_UPDATED.get(path.name, set())


def test_the_link_checker_finds_missing_files(tmp_path: Path) -> None:
    doc = tmp_path / "X.md"
    doc.write_text("[a](gone.md) [b](https://example.org) [c](#here) `codered_env/nope.py` "
                   "docs/ENV.md", encoding="utf-8")
    assert _missing_targets(doc) == ["gone.md", "codered_env/nope.py"]


# --------------------------------------------------------------------------- work-process words

WORK_PROCESS = re.compile("|".join((
    r"\bsession \d+\b", r"\bsession's deadline\b",
    r"\bissues? ?#?\d+\b", r"\bissue-\d+\b", r"(?<![&\w(])#\d{1,4}\b(?!-)",
    r"\bthe lead\b", r"\b(?:other|another|eight|six|several) helpers?\b",
    r"\bhelpers?'? (?:work|branch(?:es)?|sessions?|test suites?|benchmarks)\b",
    r"\bbranch(?:es)? `", r"\b(?:on|this|that|another|other) branch\b", r"(?<!'s )\bmain branch\b",
    r"\bmerged (?:into main|here)\b",
)), re.IGNORECASE)
# a commit hash in prose: hex with a digit and a letter, in backticks or after "commit"
COMMIT_IN_PROSE = re.compile(r"`(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}`"
                             r"|\bcommit (?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
CODE_SUFFIXES = (".py", ".js", ".html", ".css", ".sh")
# Files still to be cleaned by changes under way elsewhere, with their hits today: the count may
# only fall (fix a line, lower its number; at 0 drop the entry).
NOT_YET_CLEAN: dict[str, int] = {}


def work_process_hits(text: str, *, prose: bool) -> list[str]:
    hits = [m.group(0) for m in WORK_PROCESS.finditer(text)]
    if prose:
        hits += [m.group(0) for m in COMMIT_IN_PROSE.finditer(text)]
    return hits


def _scanned() -> list[Path]:
    code = [p for p in sorted((ROOT / "codered_env").rglob("*"))
            if p.suffix in CODE_SUFFIXES and "__pycache__" not in p.parts]
    bench = [p for p in sorted((ROOT / "bench").rglob("*")) if p.suffix in CODE_SUFFIXES]
    examples = sorted((ROOT / "examples").glob("*.py"))
    return [*USER_DOCS, *sorted(RESULTS.glob("*.md")), *code, *bench, *examples, ROOT / ".ci" / "run",
            ROOT / "inference.py"]


def test_no_work_process_words_in_docs_and_code() -> None:
    found = {}
    for path in _scanned():
        name = path.relative_to(ROOT).as_posix()
        # a generated result's header names its commit on purpose
        prose = path.suffix == ".md" and not name.startswith("docs/results/")
        hits = work_process_hits(_text(path), prose=prose)
        if len(hits) > NOT_YET_CLEAN.get(name, 0):
            found[name] = hits
    assert found == {}


def test_the_work_process_check_catches_each_kind() -> None:
    for bad in ("measured in session 11", "see issue 23", "issue #7", "(issue-23 targets)", "as in #34",
                "the lead merged it", "other helpers' benchmarks", "on branch `speed`",
                "the main branch", "branch `trl` moves"):
        assert work_process_hits(bad, prose=False), bad
    assert work_process_hits("at commit `c521bc8`", prose=True)
    for fine in ("a helper function", "one branch per action type", "from OpenEnv's main branch", "&#34;",
                 "[1. Overview](#1-overview)",
                 "an MCP session is one episode", "`maintain_plan`", "PlannerAgent.branch(sim)"):
        assert not work_process_hits(fine, prose=True), fine


# --------------------------------------------------------------------------- generated results

def _block(text: str, name: str) -> str:
    begin, end = f"<!-- results:{name} begin -->\n", f"\n<!-- results:{name} end -->"
    assert begin in text and end in text, name
    return text.split(begin, 1)[1].split(end, 1)[0]


def _tables(text: str) -> list[str]:
    tables, current = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append("\n".join(current))
            current = []
    return tables


@pytest.mark.parametrize("path", sorted(RESULTS.glob("*.md")), ids=lambda p: p.name)
def test_every_result_file_has_its_header(path: Path) -> None:
    head = "\n".join(_text(path).splitlines()[:12])
    for field in ("- Command: `", "- Commit: `", "- Machine: "):
        assert field in head, (path.name, field)


def test_readme_results_table_is_the_generated_one() -> None:
    generated = _text(RESULTS / "baselines.md").split("## Scores\n\n", 1)[1].split("\n\n", 1)[0]
    assert _block(_text(README), "baselines") == generated
    agents = generated.splitlines()[0].strip("| ").split(" | ")[1:]
    assert agents[:3] == ["noop", "random", "heuristic"]
    assert [row.split(" | ")[0].strip("| ") for row in generated.splitlines()[2:]] == list(TASK_IDS)


def test_training_table_is_the_generated_one() -> None:
    generated = _tables(_text(RESULTS / "training.md"))
    assert len(generated) == 1
    assert _block(_text(DOCS / "TRAINING.md"), "training") == generated[0]
    runs = {p.parent.name for p in (RESULTS / "training").glob("*/run.json")}
    assert {row.split(" | ")[0].strip("|` ") for row in generated[0].splitlines()[2:]} == runs


def test_generalisation_tables_are_the_generated_ones() -> None:
    generated = _tables(_text(RESULTS / "generalisation.md"))
    assert _tables(_block(_text(DOCS / "TRAINING.md"), "generalisation")) == generated[: len(generated) - 1]


def _cells(table: str) -> list[list[str]]:
    return [row.strip("| ").split(" | ") for row in table.splitlines()[2:]]


def _mean(cell: str) -> float:
    return float(cell.split(" ± ")[0])


def test_training_generalisation_prose_quotes_the_generated_ratios() -> None:
    task1, task3 = ({r[0].split(" ")[0] + r[1]: r for r in _cells(t)}
                    for t in _tables(_text(RESULTS / "generalisation.md"))[:2])
    there = [f"{_mean(t['open-loopPrakashnagar, 1 episode'][3]) / _mean(t['heuristic-'][3]):.2f}"
             for t in (task1, task3)]
    held_out = [t["open-loopPrakashnagar, 1 episode"][4] for t in (task1, task3)]
    learner = [task1[f"factored{s}"][4] for s in ("1 train city", "10 train cities", "100 train cities")]
    prose = " ".join(_text(DOCS / "TRAINING.md").split())
    assert (f"the blind replay keeps {there[0]} (task1) and {there[1]} (task3) of the heuristic there, "
            f"{held_out[0]} and {held_out[1]} on held-out cities") in prose
    assert f"{task1['factoredPrakashnagar only'][4]} of the heuristic on held-out cities" in prose
    assert f"{', '.join(learner)} with 1, 10, 100 cities" in prose


def test_model_city_figures_are_the_generated_ones() -> None:
    held_out, prakashnagar = (_cells(t) for t in _tables(_text(RESULTS / "bench_cities.md"))[:2])
    expected = [[*c[:4], f"{p[2]}, {p[3]}"] for c, p in zip(held_out, prakashnagar, strict=True)]
    model = _text(DOCS / "MODEL.md")
    assert [_cells(t) for t in _tables(model)].count(expected) == 1
    kept = {where: " / ".join(r[4] for r in _cells(_tables(_text(RESULTS / "bench_open_loop.md"))[0])
                              if r[1] == where) for where in ("fixed city", "new cities")}
    prose = " ".join(model.split())
    assert f"it keeps {kept['fixed city']} of the heuristic's own score" in prose
    assert f"on held-out generated cities {kept['new cities']}," in prose


def test_performance_tables_are_copies_of_results_files() -> None:
    results = "\n".join(_text(p) for p in sorted(RESULTS.glob("*.md")))
    tables = _tables(_text(DOCS / "PERFORMANCE.md"))
    assert tables
    assert [t.splitlines()[0] for t in tables if t not in results] == []


def test_grpo_log_matches_what_training_md_says() -> None:
    steps = [json.loads(line) for line in _text(RESULTS / "grpo-smollm2-task1.jsonl").splitlines()]
    rollouts = [r for s in steps for r in s["rollout_rewards"]]
    text = _text(DOCS / "TRAINING.md")
    assert f"after {len(steps)} optimisation steps" in text.replace("\n", " ")
    assert f"Over its {len(rollouts)} rollouts" in text.replace("\n", " ")
    assert set(rollouts) == {0.01} and all(s["tool_calls_per_rollout"] == 0 for s in steps)


def test_constraints_are_plain_pins_of_this_environment() -> None:
    lines = _text(ROOT / "constraints.txt").splitlines()
    assert lines and all(re.fullmatch(r"[a-z0-9][a-z0-9._-]*==[A-Za-z0-9.+!_-]+", ln) for ln in lines)
    assert lines == sorted(lines, key=lambda ln: ln.split("==")[0])
    pins = dict(ln.split("==") for ln in lines)
    for name in ("openenv", "pydantic", "fastapi", "numpy"):
        assert pins[name] == version(name), name


# --------------------------------------------------------------------------- numbers from the code

def test_budget_lists_match_the_tasks() -> None:
    lists = [(name, m.group(0)) for name, text in _all_docs()
             for m in re.finditer(r"\b\d+/\d+/\d+/\d+/\d+\b", text)]
    assert lists, "the docs should state the budgets somewhere"
    expected = "/".join(map(str, BUDGETS))
    assert [(n, v) for n, v in lists if v != expected] == []


def test_task_table_steps_column_matches_the_tasks() -> None:
    level = "(?:beginner|intermediate|advanced|expert)"
    rows = re.findall(rf"^\| (task\d) \|.*\| (\d+) \| {level} \|$", _text(README), re.M)
    assert {t: int(n) for t, n in rows} == {t: TASKS[t].max_steps for t in TASK_IDS}


def test_env_spec_matches_the_tasks_and_the_city() -> None:
    text = _text(DOCS / "ENV.md")
    rows = re.findall(r"^\| (task\d) \| (\d+) \| (\d+) \|$", text, re.M)
    assert {t: (int(s), int(h)) for t, s, h in rows} == {
        t: (TASKS[t].max_steps, TASKS[t].horizon_min) for t in TASK_IDS}
    hospitals = sum(1 for n in city.NODES if n.kind == "hospital")
    assert f"{len(city.NODES)} nodes, {hospitals} of them hospitals" in text
    pyproject = _text(ROOT / "pyproject.toml")
    project_version = re.search(r'^version = "([^"]+)"', pyproject, re.M)
    project_name = re.search(r'^name = "([^"]+)"', pyproject, re.M)
    assert project_version and project_name
    assert f"`{project_name.group(1)}` {project_version.group(1)}" in text
    assert f"## {project_version.group(1)}\n" in _text(ROOT / "CHANGELOG.md")
    for heading in ("Description", "Action space", "Observation space", "Rewards", "Starting state",
                    "Episode end", "Arguments", "Versions"):
        assert f"\n## {heading}\n" in text, heading


def test_per_task_step_counts_in_prose_match() -> None:
    for name, text in _all_docs():
        for task, steps in re.findall(r"\b(task\d)'s (\d+)\b", text):
            assert int(steps) == TASKS[task].max_steps, (name, task, steps)
        for steps in re.findall(r"within (\d+) steps", text):
            assert int(steps) >= max(BUDGETS), (name, steps)


_ENV_FIELDS = {"CODERED_LLM_TIMEOUT": "timeout_s", "CODERED_LLM_RETRIES": "max_retries",
               "CODERED_LLM_HISTORY": "history", "CODERED_LLM_TEXT_AFTER": "text_after"}


def test_inference_env_table_defaults_are_the_codes() -> None:
    text = _text(DOCS / "INFERENCE.md")
    for var, attr in _ENV_FIELDS.items():
        match = re.search(rf"^\| `{var}` \| `([\d.]+)` \|", text, re.M)
        assert match, var
        assert float(match.group(1)) == float(getattr(CONFIG, attr)), var
    pair = re.search(r"^\| `CODERED_LLM_TEMPERATURE`, `CODERED_LLM_MAX_TOKENS` \| `([\d.]+)`, "
                     r"`(\d+)` \|", text, re.M)
    assert pair and (float(pair.group(1)), int(pair.group(2))) == (CONFIG.temperature,
                                                                   CONFIG.max_tokens)
    backoff = re.search(r"^\| `CODERED_LLM_BACKOFF`, `CODERED_LLM_BACKOFF_MAX` \| `([\d.]+)`, "
                        r"`([\d.]+)` \|", text, re.M)
    assert backoff and (float(backoff.group(1)), float(backoff.group(2))) == (
        CONFIG.backoff_s, CONFIG.backoff_max_s)


def test_episode_budget_rule_and_examples_match_the_code() -> None:
    steps = 10
    factor = CONFIG.episode_budget(steps) / (CONFIG.timeout_s * steps)
    floor = LLMConfig(api_key="x", timeout_s=0.05).episode_budget(1)
    inference = _text(DOCS / "INFERENCE.md")
    assert f"at least {floor:g} s" in inference
    assert f"| `CODERED_LLM_STEP_BUDGET` | {factor:g} × timeout |" in inference
    examples = re.findall(r"([\d,]+) s\s+for (task\d)'s (\d+)", inference)
    assert len(examples) == 2
    for seconds, task, _ in examples:
        assert float(seconds.replace(",", "")) == CONFIG.episode_budget(TASKS[task].max_steps)


def test_readme_inline_llm_defaults() -> None:
    readme = _text(README)
    assert f"`CODERED_LLM_TIMEOUT` ({CONFIG.timeout_s:g} s per call)" in readme
    assert f"`CODERED_LLM_RETRIES` ({CONFIG.max_retries})" in readme
    assert f"`MODEL_NAME` (default `{CONFIG.model}`)" in readme


def test_action_and_tool_counts_match_the_schemas() -> None:
    """(The README's action table itself is generated and checked by tests/test_catalogue.py.)"""
    n = len(set(_default_schemas()))
    counts = [int(c) for _, text in _all_docs() for c in re.findall(r"all (\d+) action types", text)]
    assert counts and set(counts) == {n}
    assert f"the {n} actions plus the read-only" in _text(README)
    assert f"one of {n} types" in _text(DOCS / "ENV.md")


def test_gym_action_space_size() -> None:
    pytest.importorskip("gymnasium")
    from codered_env.gym_env import CodeRedGymEnv

    size = CodeRedGymEnv().action_space.n
    for name, text in _all_docs():
        for found in re.findall(r"Discrete\((\d+)\)", text):
            assert int(found) == size, name


# --------------------------------------------------------------------------- what users can run

_MACHINE_PATH = re.compile(r"(?<![\w.])(/work/|/home/|/opt/|/Users/|/root/|/mnt/|/srv/)|\.whl\b"
                           r"|[A-Z]:\\\\")


def test_no_paths_of_one_machine() -> None:
    found = [(name, line.strip()) for name, text in _all_docs()
             for line in text.splitlines() if _MACHINE_PATH.search(line)]
    assert found == []


def test_no_test_counts_that_drift() -> None:
    found = [(name, m.group(0)) for name, text in _all_docs()
             for m in re.finditer(r"~?\b\d{3,}\s+tests\b", text)]
    assert found == []


def test_install_commands_say_the_package_is_not_on_pypi() -> None:
    for name, text in _all_docs():
        assert not re.search(r"pip install ['\"]?(codered-env|openenv-codered)", text), name
    readme = _text(README)
    assert "not published on PyPI" in readme
    assert "keeps only the extras it is given" in readme
    assert "keeps only the extras it is given" in _text(DOCS / "TRAINING.md")
    assert "-c constraints.txt" in readme


def test_readme_extras_table_names_the_real_extras() -> None:
    tomllib = pytest.importorskip("tomllib")

    extras = set(tomllib.loads(_text(ROOT / "pyproject.toml"))["project"]["optional-dependencies"])
    section = _text(README).split("## Install", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([\w-]+)` \| ", section, re.M)
    assert set(rows) == extras


def test_training_md_states_the_trainers_defaults() -> None:
    from codered_env.train import TrainConfig

    cfg = TrainConfig()
    text = " ".join(_text(DOCS / "TRAINING.md").split())
    arch = "x".join(map(str, cfg.net_arch))
    lr = f"{cfg.learning_rate:.0e}".replace("e-0", "e-")  # 3e-4
    assert (f"(MLP {arch} after sb3's Dict flattening), `n_steps` {cfg.n_steps} per env, batch "
            f"{cfg.batch_size}, {cfg.n_epochs} epochs, lr {lr}, γ {cfg.gamma:g} (`--gamma`;"
            ) in text
    assert f"entropy {cfg.ent_coef:g}," in text and f"torch on {cfg.torch_threads} thread" in text


def test_no_install_hint_in_code_names_a_registry_package() -> None:
    for path in sorted((ROOT / "codered_env").rglob("*.py")):
        assert not re.search(r"pip install ['\"]?(codered-env|openenv-codered)", _text(path)), path


def test_the_observation_keys_the_docs_list_are_the_core_s() -> None:
    from codered_env.sim import CodeRedSim

    keys = set(CodeRedSim("task1", 0).observation())
    for name in ("CORE_API.md", "ENV.md"):
        text = " ".join(_text(DOCS / name).split())
        listed = re.search(r"`(task_id, seed, step, [\w, ]+)`", text)
        assert listed and set(listed.group(1).split(", ")) == keys, name


def test_the_constants_gym_md_names_are_exported_by_the_package() -> None:
    gym_env = pytest.importorskip("codered_env.gym_env")
    from codered_env.gym_env import (  # what GYM.md tells users to import from the package
        ACTION_FEATURES,
        AMBULANCE_FEATURES,
        CALL_FEATURES,
        CASE_COLUMNS,
        COMPONENTS,
        GENERATED_MAXIMA,
        GLOBAL_COLUMNS,
        GLOBAL_FEATURES,
        HOSPITAL_COLUMNS,
        HOSPITAL_FEATURES,
        MAX_CASES,
        PARAMETER_TABLE,
        PATIENT_FEATURES,
        PRAKASHNAGAR_LAYOUT,
        PRAKASHNAGAR_MAXIMA,
        ROAD_FEATURES,
        UNIT_COLUMNS,
        SlotMaxima,
    )

    imported = {
        "ACTION_FEATURES": ACTION_FEATURES,
        "AMBULANCE_FEATURES": AMBULANCE_FEATURES,
        "CALL_FEATURES": CALL_FEATURES,
        "CASE_COLUMNS": CASE_COLUMNS,
        "COMPONENTS": COMPONENTS,
        "GENERATED_MAXIMA": GENERATED_MAXIMA,
        "GLOBAL_COLUMNS": GLOBAL_COLUMNS,
        "GLOBAL_FEATURES": GLOBAL_FEATURES,
        "HOSPITAL_COLUMNS": HOSPITAL_COLUMNS,
        "HOSPITAL_FEATURES": HOSPITAL_FEATURES,
        "MAX_CASES": MAX_CASES,
        "PARAMETER_TABLE": PARAMETER_TABLE,
        "PATIENT_FEATURES": PATIENT_FEATURES,
        "PRAKASHNAGAR_LAYOUT": PRAKASHNAGAR_LAYOUT,
        "PRAKASHNAGAR_MAXIMA": PRAKASHNAGAR_MAXIMA,
        "ROAD_FEATURES": ROAD_FEATURES,
        "UNIT_COLUMNS": UNIT_COLUMNS,
    }
    named = set(re.findall(r"`([A-Z][A-Z0-9_]{3,})`", _text(DOCS / "GYM.md")))
    assert named and named <= set(imported), sorted(named - set(imported))
    assert all(value is not None for value in imported.values())
    assert PRAKASHNAGAR_LAYOUT.unit_ids and isinstance(PRAKASHNAGAR_MAXIMA, SlotMaxima)
    assert all(hasattr(gym_env, name) for name in gym_env.__all__)
