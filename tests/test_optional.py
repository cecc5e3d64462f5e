"""Every optional dependency is imported behind a check that names the extra to install."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from codered_env import _optional

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "codered_env"
OPTIONAL = {m for modules, _ in _optional.EXTRAS.values() for m in modules}


def _extras_in_pyproject() -> set[str]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^([\w-]+) = \[", section, re.M))


def test_every_extra_has_its_check() -> None:
    assert set(_optional.EXTRAS) == _extras_in_pyproject()


@pytest.mark.parametrize("extra", sorted(_optional.EXTRAS))
def test_a_missing_extra_says_how_to_install_it(extra: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_optional, "importable", lambda module: False)
    with pytest.raises(ImportError, match=rf"`{re.escape(extra)}` extra: `uv sync --extra {extra}`"):
        _optional.require(extra)


def test_an_unknown_extra_is_refused() -> None:
    with pytest.raises(ValueError, match="known: rl"):
        _optional.missing("nope")


def _optional_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found & OPTIONAL


def _guarded(path: Path) -> bool:
    """The module, or its package's ``__init__``, checks before the import is used."""
    def checks(p: Path) -> bool:
        text = p.read_text(encoding="utf-8") if p.is_file() else ""
        return "require(" in text or "except ImportError" in text
    return checks(path) or checks(path.parent / "__init__.py")


def test_every_optional_import_in_the_package_is_guarded() -> None:
    unguarded = [p.relative_to(ROOT).as_posix() for p in sorted(PACKAGE.rglob("*.py"))
                 if _optional_imports(p) and not _guarded(p)]
    assert unguarded == []
