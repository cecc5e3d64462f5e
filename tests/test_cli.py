"""The codered CLI: the run log contract of `play` and the table/JSON of `eval`."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from codered_env.cli import app, parse_seeds

runner = CliRunner()
STEP = re.compile(r"^\[STEP\] step=(\d+) action=\S.* reward=(-?\d+\.\d\d) done=(true|false) error=(.+)$")
END = re.compile(r"^\[END\] success=(true|false) steps=(\d+) score=(\d\.\d{3}) rewards=(.*)$")


def test_play_prints_the_run_log_contract() -> None:
    result = runner.invoke(app, ["play", "--task", "task1", "--seed", "0", "--agent", "heuristic", "--quiet"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert lines[0] == "[START] task=task1 env=codered_env model=heuristic"
    steps = [STEP.match(line) for line in lines[1:-1]]
    assert all(steps), lines
    assert [int(m.group(1)) for m in steps] == list(range(1, len(steps) + 1))
    end = END.match(lines[-1])
    assert end and int(end.group(2)) == len(steps)
    assert end.group(4).split(",") == [m.group(2) for m in steps]
    assert float(end.group(3)) > 0.75 and end.group(1) == "true"
    assert steps[-1].group(3) == "true"


def test_eval_json_is_deterministic_and_complete(tmp_path) -> None:
    args = [
        "eval",
        "--agents",
        "noop,heuristic",
        "--tasks",
        "task1,task4",
        "--seeds",
        "0-2",
        "--json",
        "--db",
        str(tmp_path / "eval.db"),
    ]
    first = runner.invoke(app, args)
    second = runner.invoke(app, args)  # read back from the database
    fresh = runner.invoke(app, [*args[:-1], str(tmp_path / "other.db")])  # re-run from scratch
    assert first.exit_code == 0, first.output
    assert first.stdout == second.stdout == fresh.stdout
    episodes = json.loads(first.stdout)
    assert len(episodes) == 2 * 2 * 3
    assert {"agent", "task", "seed", "score", "components", "steps"} <= set(episodes[0])


def test_eval_table_and_bad_arguments(tmp_path) -> None:
    db = str(tmp_path / "eval.db")
    table = runner.invoke(app, ["eval", "--agents", "noop", "--tasks", "task1", "--seeds", "0-1", "--db", db])
    assert table.exit_code == 0 and "0.010" in table.stdout
    for bad in (["--tasks", "task9"], ["--agents", "genius"], ["--seeds", "5-1"], ["--seeds", "x"]):
        result = runner.invoke(app, ["eval", *bad, "--db", db])
        assert result.exit_code != 0
    assert parse_seeds("0-2,7") == [0, 1, 2, 7]
