"""The factored learner's published tables (docs/TRAINING.md) are the generated file's, and every
kept run has its row (no PyTorch needed)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"


def _tables(text: str) -> list[str]:
    tables, current = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append("\n".join(current))
            current = []
    return tables


def _block(text: str, name: str) -> str:
    begin, end = f"<!-- results:{name} begin -->\n", f"\n<!-- results:{name} end -->"
    assert begin in text and end in text, name
    return text.split(begin, 1)[1].split(end, 1)[0]


def test_factored_tables_are_the_generated_ones() -> None:
    bc, ppo = _tables((RESULTS / "training_factored.md").read_text(encoding="utf-8"))
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
        if "bc" in run:
            assert run["bc"]["training_seeds"][1] < min(cfg["eval_seeds"]), path
