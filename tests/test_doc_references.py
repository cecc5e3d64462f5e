"""Every reference into the project's Markdown documents resolves.

* ``MODEL.md#anchor`` (and ``INFERENCE.md#anchor``, ``docs/GYM.md#anchor`` ...): the anchor is an
  explicit ``<a id="...">`` of that file or one of its headings' GitHub slugs;
* ``MODEL.md §4.9`` / ``MODEL.md section 4.9``: ``docs/MODEL.md`` has a heading numbered 4.9;
* inside ``docs/MODEL.md``, a bare ``§4.5`` names one of its own headings.

Code and docs cite ``docs/MODEL.md`` (the simulation model, in the repository) by anchor.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MODEL = REPO / "docs" / "MODEL.md"
SCANNED = ("*.py", "*.md", "*.js", "*.html", "*.toml", "*.yaml")
SKIPPED_DIRS = {".venv", ".git", "node_modules", "runs", "__pycache__", ".pytest_cache"}
SELF = Path(__file__).name  # its examples are made to be broken

ANCHOR_REF = re.compile(r"([\w./-]*\b[\w-]+\.md)#([\w-]+)")
NUMBER_REF = re.compile(r"MODEL\.md,?\s+(?:§\s?|sections?\s+)(\d+(?:\.\d+)*)")
BARE_SECTION = re.compile(r"§\s?(\d+(?:\.\d+)*)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
EXPLICIT_ID = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation removed, spaces
    to hyphens."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """Every anchor a Markdown file defines (duplicate slugs get -1, -2 ... as on GitHub)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
        found.update(EXPLICIT_ID.findall(line))
        match = None if in_code else HEADING.match(line)
        if match:
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


@cache
def section_numbers(path: Path) -> frozenset[str]:
    numbers = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^#{1,6}\s+(\d+(?:\.\d+)*)\.?\s", line)
        if match:
            numbers.add(match.group(1))
    return frozenset(numbers)


def scanned_files(root: Path) -> list[Path]:
    files = []
    for pattern in SCANNED:
        for path in root.rglob(pattern):
            if not SKIPPED_DIRS.intersection(path.relative_to(root).parts) and path.name != SELF:
                files.append(path)
    return sorted(files)


def target(name: str, source: Path, root: Path) -> Path | None:
    """The Markdown file a reference names: relative to the citing file, to the repository, or
    a bare file name looked up in docs/ and the repository root."""
    for base in (source.parent, root, root / "docs"):
        candidate = (base / name).resolve()
        if candidate.is_file():
            return candidate
    return None


def broken_references(root: Path, model: Path) -> list[str]:
    problems = []
    for path in scanned_files(root):
        text = path.read_text(encoding="utf-8", errors="replace")
        where = path.relative_to(root).as_posix()
        for match in ANCHOR_REF.finditer(text):
            doc = target(match.group(1), path, root)
            if doc is None:
                problems.append(f"{where}: {match.group(0)} names no file")
            elif match.group(2) not in anchors(doc):
                problems.append(f"{where}: {match.group(0)} has no such anchor")
        for match in NUMBER_REF.finditer(text):
            if match.group(1) not in section_numbers(model):
                problems.append(f"{where}: {match.group(0)} has no such section")
        if path.resolve() == model.resolve():
            for match in BARE_SECTION.finditer(text):
                if match.group(1) not in section_numbers(model):
                    problems.append(f"{where}: {match.group(0)} has no such section")
    return problems


def test_every_reference_into_the_docs_resolves() -> None:
    assert broken_references(REPO, MODEL) == []


def test_the_checker_catches_broken_anchors_numbers_and_files(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    model = docs / "MODEL.md"
    model.write_text('# Model\n## 5. Actions\n<a id="triage"></a>\n### 4.9 Phase 2: calls, triage\n'
                     "See §5 and §7.\n```\n# not a heading\n```\n", encoding="utf-8")
    (tmp_path / "code.py").write_text(
        '"""MODEL.md#5-actions MODEL.md#triage docs/MODEL.md#49-phase-2-calls-triage MODEL.md §4.9\n'
        'MODEL.md#not-a-heading MODEL.md#grading MODEL.md section 8 GONE.md#x"""\n', encoding="utf-8")
    assert sorted(broken_references(tmp_path, model)) == sorted([
        "code.py: MODEL.md#not-a-heading has no such anchor",
        "code.py: MODEL.md#grading has no such anchor",
        "code.py: MODEL.md section 8 has no such section",
        "code.py: GONE.md#x names no file",
        "docs/MODEL.md: §7 has no such section",
    ])


@pytest.mark.parametrize(("heading", "expected"), [
    ("5. Actions", "5-actions"),
    ("4.13 Forks for planning (`CodeRedSim.fork`, `sim/fork.py`)",
     "413-forks-for-planning-coderedsimfork-simforkpy"),
    ("Output contract", "output-contract"),
])
def test_slugs_follow_github(heading: str, expected: str) -> None:
    assert slug(heading) == expected
