"""One source of truth: clinical and scoring numbers live in the data modules (params.py,
clinical.py, facilities.py).

The modules that turn parameters into dynamics, grades and views may use only 0 and 1 (and -1).
The allow-list, each for a reason that has nothing to do with clinical or scoring numbers:

* the named unit conversions in ``UNIT_CONVERSIONS`` (minutes per hour);
* the ``ndigits`` of ``round(x, n)`` (display precision);
* the exponent of ``**`` (squares in the travel-noise formula);
* the task phase (1, 2) and hospital tier (1, 2, 3) an identifier is compared with.

A number anywhere else must move to a data module with its source (or "design choice: why")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SIM = Path(__file__).resolve().parents[2] / "codered_env" / "sim"
CHECKED = (
    "conditions.py",
    "rubric.py",
    "state.py",
    "tick.py",
    "obs_rows.py",
    "legal.py",
    "view.py",
    *sorted(f"dynamics/{f.name}" for f in (SIM / "dynamics").glob("*.py")),
)
ALLOWED = {0, 1, -1}
# Named unit conversions: module-level constants whose value is a plain unit factor.
UNIT_CONVERSIONS = {"MINUTES_PER_HOUR": 60}


IDENTIFIER_ATTRIBUTES = {"phase", "tier"}


def _explained(tree: ast.AST) -> set[int]:
    """ids of constant nodes the allow-list explains."""
    ok: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in UNIT_CONVERSIONS and isinstance(node.value, ast.Constant):
                assert node.value.value == UNIT_CONVERSIONS[name], f"{name} must be {UNIT_CONVERSIONS[name]}"
                ok.add(id(node.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "round":
            if len(node.args) == 2:
                ok.add(id(node.args[1]))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            ok.add(id(node.right))
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(x, ast.Attribute) and x.attr in IDENTIFIER_ATTRIBUTES for x in sides):
                ok.update(id(x) for x in sides)
    return ok


def _numbers(tree: ast.AST) -> list[tuple[int, object]]:
    explained = _explained(tree)
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, (int, float))
            and not isinstance(node.value, bool)
            and id(node) not in explained
            and node.value not in ALLOWED
        ):
            found.append((node.lineno, node.value))
    return sorted(found)


@pytest.mark.parametrize("module", CHECKED)
def test_no_unexplained_numeric_literals(module: str) -> None:
    tree = ast.parse((SIM / module).read_text(encoding="utf-8"))
    found = _numbers(tree)
    assert not found, (
        f"{module} hard-codes numbers {found} (line, value); move them to a data module (params.py, "
        "clinical.py) with a source or 'design choice: why'"
    )


def test_the_check_catches_a_literal() -> None:
    """The scan itself works: a planted constant is reported, 0/1 and unit conversions are not."""
    code = "MINUTES_PER_HOUR = 60\nx = 0.5 * y**2 + 1 - 0\nz = round(42 * w, 3)\nok = world.task.phase == 2\n"
    assert _numbers(ast.parse(code)) == [(2, 0.5), (3, 42)]
