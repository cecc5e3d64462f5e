"""The codered CLI: the run log contract of `play` and the table/JSON of `eval`."""

from __future__ import annotations

import json
import re

import pytest
import typer
from typer.testing import CliRunner

from codered_env.cli import app, parse_cities, parse_seeds

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


@pytest.mark.slow
def test_eval_on_a_split_of_cities_and_report_side_by_side(tmp_path) -> None:
    db, out = str(tmp_path / "cities.db"), str(tmp_path / "report")
    base = ["eval", "--agents", "noop,heuristic", "--tasks", "task1", "--seeds", "0", "--json", "--db", db]
    test = runner.invoke(app, [*base, "--split", "test", "--cities", "2"])
    assert test.exit_code == 0, test.output
    episodes = json.loads(test.stdout)
    assert sorted({e["city"] for e in episodes}) == ["gen-100000", "gen-100001"] and len(episodes) == 4
    again = runner.invoke(app, [*base, "--split", "test", "--cities", "2"])
    assert again.stdout == test.stdout and "reused 4" in again.stderr
    assert runner.invoke(app, [*base, "--split", "train", "--cities", "1"]).exit_code == 0
    assert runner.invoke(app, [*base, "--city", "prakashnagar"]).exit_code == 0
    report = runner.invoke(app, ["report", "--db", db, "--out", out])
    assert report.exit_code == 0, report.output
    table = report.stdout.split("Generalisation:")[1].split("\n\n")[1]
    assert "| prakashnagar | train cities | test cities | test − train |" in table
    assert "| task1 | heuristic | heuristic |" in table
    for bad in (["--split", "valid"], ["--city", "atlantis"], ["--split", "test", "--cities", "999"],
                ["--split", "test", "--city", "5"]):
        result = runner.invoke(app, [*base, *bad])
        assert result.exit_code == 2, bad


def test_play_and_view_take_a_city(tmp_path) -> None:
    played = runner.invoke(app, ["play", "--task", "task1", "--city", "100000", "--quiet"])
    assert played.exit_code == 0 and played.stdout.strip().splitlines()[-1].startswith("[END] success=true")
    page = tmp_path / "city.html"
    viewed = runner.invoke(app, ["view", "--task", "task1", "--city", "gen-100000", "--out", str(page)])
    assert viewed.exit_code == 0, viewed.output
    assert "gen-100000" in page.read_text(encoding="utf-8")
    assert runner.invoke(app, ["view", "--city", "nowhere", "--out", str(page)]).exit_code == 2


def test_cities_are_chosen_by_name_seed_or_split() -> None:
    assert parse_cities("prakashnagar", None, 10) == ["prakashnagar"]
    assert parse_cities("100003, gen-7,100003", None, 10) == ["gen-100003", "gen-7"]
    assert parse_cities("prakashnagar", "test", 3) == ["gen-100000", "gen-100001", "gen-100002"]
    assert parse_cities("prakashnagar", "train", 1) == ["gen-0"]
    for city, split, n in (("atlantis", None, 1), ("", None, 1), ("5", "test", 1), ("prakashnagar", "dev", 1),
                           ("prakashnagar", "test", 201)):
        with pytest.raises(typer.BadParameter):
            parse_cities(city, split, n)


def _unboxed(text: str) -> str:
    """``text`` (a rich error panel) without its border and line wrapping."""
    return " ".join(text.replace("│", " ").replace("╭", " ").replace("╰", " ").replace("─", " ").split())


def test_train_chooses_the_factored_policy_s_slot_maxima(tmp_path, monkeypatch) -> None:
    pytest.importorskip("gymnasium")
    from codered_env import factored_ppo
    from codered_env.cli import DEFAULT_MAXIMA
    from codered_env.gym_env.slots import MAXIMA_BY_NAME

    configs = []

    def capture(config, log):
        configs.append(config)
        return {"final": {"mean": 0.5}, "bc": None, "heuristic": 0.6}

    monkeypatch.setattr(factored_ppo, "train_factored", capture)
    base = ["train", "--interface", "factored", "--steps", "32", "--out", str(tmp_path)]
    for args, expected in (([], DEFAULT_MAXIMA), (["--maxima", "generated"], "generated")):
        result = runner.invoke(app, [*base, *args])
        assert result.exit_code == 0, result.output
        assert configs[-1].maxima == expected and configs[-1].total_steps == 32
    assert factored_ppo.FactoredConfig().maxima == DEFAULT_MAXIMA
    command = typer.main.get_command(app).commands["train"]
    option = next(p for p in command.params if p.name == "maxima")
    assert option.default == DEFAULT_MAXIMA and all(name in option.help for name in MAXIMA_BY_NAME)

    bad = runner.invoke(app, [*base, "--maxima", "huge"])
    assert bad.exit_code == 2 and len(configs) == 2
    assert "'--maxima': unknown slot maxima 'huge'; valid: prakashnagar, generated" in _unboxed(bad.output)
    flat = runner.invoke(app, ["train", "--maxima", "generated", "--steps", "32", "--out", str(tmp_path)])
    assert flat.exit_code == 2 and not (tmp_path / "run.json").exists()
    assert ("'--maxima': 'generated' needs --interface factored: the flat interface has no slots (leave "
            "--maxima at prakashnagar)") in _unboxed(flat.output)

    per_minute = runner.invoke(app, [*base, "--gamma-minute", "0.998"])
    assert per_minute.exit_code == 0, per_minute.output
    assert configs[-1].gamma_minute == 0.998 and factored_ppo.FactoredConfig().gamma_minute is None
    flat_args = ["train", "--gamma-minute", "0.998", "--steps", "32", "--out", str(tmp_path)]
    flat_minute = runner.invoke(app, flat_args)
    assert flat_minute.exit_code == 2 and not (tmp_path / "run.json").exists()
    assert "'--gamma-minute': --gamma-minute needs --interface factored" in _unboxed(flat_minute.output)

    chosen = runner.invoke(app, [*base, "--select-seeds", "30000-30001", "--anneal-lr", "--type-first"])
    assert chosen.exit_code == 0, chosen.output
    assert configs[-1].select_seeds == [30000, 30001] and configs[-1].anneal_lr and configs[-1].type_first
    assert not factored_ppo.FactoredConfig().type_first
    flat_type = runner.invoke(app, ["train", "--type-first", "--steps", "32", "--out", str(tmp_path)])
    assert flat_type.exit_code == 2 and "'--type-first': --type-first needs --interface factored" in (
        _unboxed(flat_type.output))
    calls = len(configs)
    overlap = runner.invoke(app, [*base, "--eval-seeds", "10000-10009", "--select-seeds", "10005-10020"])
    assert overlap.exit_code == 2 and len(configs) == calls
    assert ("'--select-seeds': the validation seeds (select_seeds) must not include an evaluation seed "
            "(eval_seeds): 10005, 10006, 10007, 10008, 10009 in both") in _unboxed(overlap.output)
    flat_args = ["train", "--select-seeds", "30000", "--steps", "32", "--out", str(tmp_path)]
    flat_select = runner.invoke(app, flat_args)
    assert flat_select.exit_code == 2 and "'--select-seeds': --select-seeds needs --interface factored" in (
        _unboxed(flat_select.output))

    scaled = runner.invoke(app, [*base, "--reward-scale", "10"])
    assert scaled.exit_code == 0, scaled.output
    assert configs[-1].reward_scale == 10.0 and factored_ppo.FactoredConfig().reward_scale == 1.0
    calls = len(configs)
    for bad_scale in ("0", "-1"):
        refused = runner.invoke(app, [*base, "--reward-scale", bad_scale])
        assert refused.exit_code == 2 and len(configs) == calls
        assert f"'--reward-scale': must be > 0, not {float(bad_scale)}" in _unboxed(refused.output)
    flat_args = ["train", "--reward-scale", "10", "--steps", "32", "--out", str(tmp_path)]
    flat_scale = runner.invoke(app, flat_args)
    assert flat_scale.exit_code == 2 and "'--reward-scale': --reward-scale needs --interface factored" in (
        _unboxed(flat_scale.output))


def test_a_missing_extra_s_install_hint_is_printed_whole(tmp_path, monkeypatch) -> None:
    from codered_env import _optional, factored_ppo, train

    monkeypatch.setattr(_optional, "importable", lambda module: module != "torch")
    monkeypatch.setattr(train, "train", lambda config, log: _optional.require("rl"))
    monkeypatch.setattr(factored_ppo, "train_factored", lambda config, log: factored_ppo.policy_torch("x"))
    for interface in ("flat", "factored"):
        args = ["train", "--interface", interface, "--steps", "32", "--out", str(tmp_path)]
        result = runner.invoke(app, args)
        text = " ".join(result.output.split())  # rich markup would have eaten "[rl]"
        assert result.exit_code == 1 and 'pip install ".[rl]"' in text, result.output


def test_train_passes_the_factored_learner_options_the_flat_one_refuses(tmp_path, monkeypatch) -> None:
    pytest.importorskip("gymnasium")
    from codered_env import factored_ppo

    configs = []
    monkeypatch.setattr(factored_ppo, "train_factored", lambda config, log: configs.append(config) or {
        "final": {"mean": 0.5}, "bc": None, "heuristic": 0.6})
    base = ["train", "--steps", "32", "--out", str(tmp_path)]
    options = {"--gae-lambda": "0.9", "--decision-cost": "0.001"}
    given = [x for kv in options.items() for x in kv]
    result = runner.invoke(app, [*base, "--interface", "factored", *given])
    assert result.exit_code == 0, result.output
    assert configs[-1].gae_lambda == 0.9 and configs[-1].decision_cost == 0.001
    assert runner.invoke(app, [*base, "--interface", "factored"]).exit_code == 0
    default = factored_ppo.FactoredConfig()  # not given: the learner's own defaults
    assert (configs[-1].gae_lambda, configs[-1].decision_cost) == (default.gae_lambda, default.decision_cost)
    for flag, value in options.items():
        refused = runner.invoke(app, [*base, "--interface", "flat", flag, value])
        assert refused.exit_code == 2 and f"{flag} needs --interface factored" in _unboxed(refused.output)
    assert runner.invoke(app, [*base, "--interface", "factored", "--gae-lambda", "1.5"]).exit_code == 2
    no_budget = runner.invoke(app, ["train", "--steps", "0", "--out", str(tmp_path), "--interface=factored"])
    assert no_budget.exit_code == 2 and "needs a step budget" in _unboxed(no_budget.output)
    for flag, value in (("--minutes", "5"), ("--resume", str(tmp_path / "c.zip")), ("--actions", "focused")):
        refused = runner.invoke(app, [*base, "--interface", "factored", flag, value])
        assert refused.exit_code == 2 and f"{flag} needs --interface flat" in _unboxed(refused.output)
    assert len(configs) == 2


def test_train_reports_a_refused_checkpoint_without_a_traceback(tmp_path, monkeypatch) -> None:
    from codered_env import train

    def refuse(config, log):
        raise ValueError("c.zip was trained on the 'full' action set, not 'focused'")

    monkeypatch.setattr(train, "train", refuse)
    result = runner.invoke(app, ["train", "--steps", "32", "--out", str(tmp_path), "--actions", "focused"])
    assert result.exit_code == 1 and "error: c.zip was trained on the 'full' action set" in result.output
