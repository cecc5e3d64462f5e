"""The user docs against the code: every number the code defines and the docs repeat (step budgets,
LLM defaults and budget rule, action/tool counts, the action space) is checked here, and the docs
hold no path of one machine, no stale budget and no test count that drifts (issue 25)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codered_env.agents.llm import LLMConfig, _default_schemas
from codered_env.sim import TASK_IDS, TASKS

ROOT = Path(__file__).resolve().parents[1]
USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BUDGETS = [TASKS[t].max_steps for t in TASK_IDS]
CONFIG = LLMConfig.from_env({"HF_TOKEN": "hf_docs_test_key"})
assert CONFIG is not None


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _all_docs() -> list[tuple[str, str]]:
    return [(p.name, _text(p)) for p in USER_DOCS]


# --------------------------------------------------------------------------- step budgets

def test_budget_lists_match_the_tasks() -> None:
    lists = [(name, m.group(0)) for name, text in _all_docs()
             for m in re.finditer(r"\b\d+/\d+/\d+/\d+/\d+\b", text)]
    assert lists, "the docs should state the budgets somewhere"
    expected = "/".join(map(str, BUDGETS))
    assert [(n, v) for n, v in lists if v != expected] == []


def test_task_table_steps_column_matches_the_tasks() -> None:
    level = "(?:beginner|intermediate|advanced|expert)"
    rows = re.findall(rf"^\| (task\d) \|.*\| (\d+) \| {level} \|$", _text(ROOT / "README.md"),
                      re.M)
    assert {t: int(n) for t, n in rows} == {t: TASKS[t].max_steps for t in TASK_IDS}


def test_per_task_step_counts_in_prose_match() -> None:
    for name, text in _all_docs():
        for task, steps in re.findall(r"\b(task\d)'s (\d+)\b", text):
            assert int(steps) == TASKS[task].max_steps, (name, task, steps)
        for steps in re.findall(r"within (\d+) steps", text):
            assert int(steps) >= max(BUDGETS), (name, steps)


# --------------------------------------------------------------------------- LLM settings

_ENV_FIELDS = {"CODERED_LLM_TIMEOUT": "timeout_s", "CODERED_LLM_RETRIES": "max_retries",
               "CODERED_LLM_HISTORY": "history", "CODERED_LLM_TEXT_AFTER": "text_after"}


def test_inference_env_table_defaults_are_the_codes() -> None:
    text = _text(ROOT / "docs" / "INFERENCE.md")
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


def _budget_factor() -> float:
    steps = 10
    return CONFIG.episode_budget(steps) / (CONFIG.timeout_s * steps)


def test_episode_budget_rule_and_examples_match_the_code() -> None:
    factor = _budget_factor()
    floor = LLMConfig(api_key="x", timeout_s=0.05).episode_budget(1)
    readme, inference = _text(ROOT / "README.md"), _text(ROOT / "docs" / "INFERENCE.md")
    assert f"{factor:g} × the call timeout per step" in readme
    assert f"at least {floor:g} s" in readme and f"at least {floor:g} s" in inference
    assert f"| `CODERED_LLM_STEP_BUDGET` | {factor:g} × timeout |" in inference
    examples = re.findall(r"([\d,]+) s\s+for (task\d)'s (\d+)", inference)
    assert len(examples) == 2
    for seconds, task, _ in examples:
        assert float(seconds.replace(",", "")) == CONFIG.episode_budget(TASKS[task].max_steps)
    for name, text in _all_docs():  # the old fixed default
        assert not re.search(r"CODERED_LLM_BUDGET`? \(\d+ s", text), name


def test_readme_inline_llm_defaults() -> None:
    readme = _text(ROOT / "README.md")
    assert f"`CODERED_LLM_TIMEOUT` ({CONFIG.timeout_s:g} s per call)" in readme
    assert f"`CODERED_LLM_RETRIES` ({CONFIG.max_retries})" in readme


# --------------------------------------------------------------------------- actions and tools

def test_action_type_counts_match_the_schemas() -> None:
    """(The README's action table itself is generated and checked by tests/test_catalogue.py.)"""
    action_types = set(_default_schemas())
    counts = [int(c) for _, text in _all_docs() for c in re.findall(r"all (\d+) action types", text)]
    assert counts and set(counts) == {len(action_types)}


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
    readme = _text(ROOT / "README.md")
    assert "not published on PyPI" in readme
    assert "keeps only the extras it is given" in readme
    assert "keeps only the extras it is given" in _text(ROOT / "docs" / "TRAINING.md")


def test_measured_planner_timings_state_date_commit_and_machine() -> None:
    readme = _text(ROOT / "README.md")
    section = readme.split("## Planner", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"per decision", section)
    timed = [p for p in section.split("\n\n") if re.search(r"(?:wall|CPU) s median|s per decision", p)]
    assert timed
    stated = [p for p in section.split("\n\n") if re.search(r"at commit `[0-9a-f]{7,}`", p)]
    assert stated, "the planner section names the commit its timings were measured at"
    for paragraph in stated:
        assert re.search(r"\b20\d\d-\d\d-\d\d\b", paragraph), paragraph[:80]
        assert "2-core" in paragraph, paragraph[:80]


def test_quick_start_says_where_results_go() -> None:
    quick = _text(ROOT / "README.md").split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "./codered_eval.db" in quick and "--reuse stale" in quick and "fingerprint" in quick


_DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
_COMMIT = re.compile(r"`[0-9a-f]{7,40}`|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
_MACHINE = re.compile(r"\b2[- ](?:CPU )?cores?\b")


def _tables_with_their_section(text: str) -> list[tuple[str, str]]:
    """(first line of each table, the text of its ``##`` section before the table)."""
    found: list[tuple[str, str]] = []
    section: list[str] = []
    previous = ""
    for line in text.splitlines():
        if line.startswith(("# ", "## ")):
            section = []
        if line.startswith("|") and not previous.startswith("|"):
            found.append((line, "\n".join(section)))
        section.append(line)
        previous = line
    return found


def test_every_performance_table_states_date_commit_and_machine() -> None:
    tables = _tables_with_their_section(_text(ROOT / "docs" / "PERFORMANCE.md"))
    assert len(tables) > 10
    missing = [(head[:60], what) for head, before in tables
               for what, pattern in (("date", _DATE), ("commit", _COMMIT), ("machine", _MACHINE))
               if not pattern.search(before)]
    assert missing == []
