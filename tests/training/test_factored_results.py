"""The factored learner's published tables (docs/TRAINING.md) are the generated file's, and every
kept run has its row (no PyTorch needed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
if str(ROOT / "bench") not in sys.path:  # the tables are read as bench/results.py writes them
    sys.path.insert(0, str(ROOT / "bench"))

from results import tables  # noqa: E402


def _block(text: str, name: str) -> str:
    begin, end = f"<!-- results:{name} begin -->\n", f"\n<!-- results:{name} end -->"
    assert begin in text and end in text, name
    return text.split(begin, 1)[1].split(end, 1)[0]


def test_factored_tables_are_the_generated_ones() -> None:
    bc, ppo = tables((RESULTS / "training_factored.md").read_text(encoding="utf-8"))
    doc = (ROOT / "docs" / "TRAINING.md").read_text(encoding="utf-8")
    assert _block(doc, "training_factored_bc") == bc
    assert _block(doc, "training_factored_ppo") == ppo
    root = RESULTS / "training_factored"
    names = {p.name for p in root.iterdir() if p.is_dir()}
    rows = {row.split(" | ")[0].strip("|` ") for table in (bc, ppo) for row in table.splitlines()[2:]}
    assert rows == names


def test_kept_runs_never_evaluated_on_training_seeds() -> None:
    for path in (RESULTS / "training_factored").rglob("run.json"):
        run = json.loads(path.read_text(encoding="utf-8"))
        cfg = run["config"]
        assert min(cfg["eval_seeds"]) >= 10_000, path
        assert not set(cfg.get("select_seeds") or []) & set(cfg["eval_seeds"]), path  # selection held out
        if "bc" in run:
            assert run["bc"]["training_seeds"][1] < min(cfg["eval_seeds"]), path


def test_ppo_row_names_the_reward_scale_and_every_commit() -> None:
    import results

    def run(seed: int, commit: str, **config: object) -> dict:
        cfg = {"task_id": "task5", "bc_episodes": 0, "eval_seeds": [10000, 10019], "gamma": 0.995, **config}
        curve = [{"steps": 0, "mean": 0.01}, {"steps": 100, "mean": 0.4 + seed / 100}]
        return {"config": cfg, "curve": curve, "final": curve[-1], "wall_s": 60.0,
                "machine": {"commit": commit}, "heuristic": 0.5}

    commits = ("aaaaaaa", "bbbbbbb", "aaaaaaa")
    seeds = [run(seed, commit, reward_scale=10.0) for seed, commit in enumerate(commits)]
    scaled = results._ppo_row("x", seeds)
    assert "| 0.995 / decision, rewards x10 |" in scaled and scaled.endswith("| aaaaaaa, bbbbbbb |")
    plain = results._ppo_row("y", [run(0, "aaaaaaa")])  # a run from before the option
    assert "| 0.995 / decision |" in plain and "rewards" not in plain and plain.endswith("| aaaaaaa |")
    assert "| 0.500 | **0.80** |" in plain  # rated against the run's own heuristic (0.4 / 0.5)


def test_kept_runs_name_no_folder_of_the_machine_that_trained_them() -> None:
    for path in (RESULTS / "training_factored").rglob("run.json"):
        cfg = json.loads(path.read_text(encoding="utf-8"))["config"]
        for key in ("out_dir", "init_from"):
            assert not Path(cfg.get(key) or "").is_absolute(), (path, key)


def test_keep_cuts_paths_to_the_runs_own_folders() -> None:
    from factored_runs import without_machine_paths

    record = {"config": {"out_dir": "/somewhere/runs/ppo-task2-scratch/seed1",
                         "init_from": "/elsewhere/bc/bc-task2/policy.pt", "seed": 1}, "final": {}}
    kept = without_machine_paths(record)
    assert kept["config"] == {"out_dir": "ppo-task2-scratch/seed1", "init_from": "bc-task2/policy.pt",
                              "seed": 1}
    assert without_machine_paths({"config": {"out_dir": "/x/bc-task4", "init_from": None}})["config"] == {
        "out_dir": "bc-task4", "init_from": None}
    assert record["config"]["out_dir"].startswith("/somewhere"), "the record read is left as it was"


def test_a_run_is_named_by_every_setting_off_its_default() -> None:
    from argparse import Namespace

    from factored_runs import run_name

    plain = Namespace(task="task4", bc=0, init_from=None, anneal_lr=False, gamma_minute=0.0, select_seeds="",
                      type_first=False, reward_scale=1.0, learning_rate=3e-4, envs=8,
                      decision_cost=0.0, gae_lambda=0.95)
    assert run_name(plain) == "ppo-task4-scratch"
    bent = Namespace(**{**vars(plain), "anneal_lr": True, "select_seeds": "30000-30059", "type_first": True,
                        "reward_scale": 10.0, "learning_rate": 1e-4, "envs": 16,
                        "decision_cost": 0.001, "gae_lambda": 0.99})
    assert run_name(bent) == (
        "ppo-task4-scratch-anneal-select-type-first-reward-x10-decision-cost0.001-lambda0.99-lr0.0001-envs16")
