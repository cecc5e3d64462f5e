"""Write ``constraints.txt``: the locked dependency set as plain ``name==version`` lines.

The project's lock (``uv.lock``, not committed: a fresh clone locks the newest versions the
pyproject allows, so regenerating there moves the pins) resolves every extra for every supported
Python; this keeps the
packages that apply to the running interpreter and platform (their environment markers evaluated
here), drops the markers and everything else (hashes, comments, sources), and sorts by name. The
result pins what the published results (``docs/results/``) were produced with and works with any
installer::

    uv run python bench/make_constraints.py          # rewrite constraints.txt from uv.lock
    uv pip install -c constraints.txt .              # or: pip install -c constraints.txt ".[gym]"

PyTorch is never resolved by uv in this project (``[tool.uv] override-dependencies``), so it is
not in the file: install the version a result names yourself.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

from packaging.markers import Marker

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "constraints.txt"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)$")


def exported() -> list[str]:
    """``uv export`` of the lock: requirement lines with markers, no hashes, no project."""
    done = subprocess.run(
        ["uv", "export", "--frozen", "--no-hashes", "--all-extras", "--no-dev", "--no-emit-project",
         "--no-header", "--no-annotate"], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def pins(lines: list[str]) -> list[str]:
    """The ``name==version`` pins whose markers hold here, one per package, sorted by name."""
    kept: dict[str, str] = {}
    for line in lines:
        requirement, _, marker = line.partition(";")
        match = PIN.match(requirement.strip())
        if match is None or (marker.strip() and not Marker(marker.strip()).evaluate()):
            continue
        name = match.group(1).lower().replace("_", "-")
        if name in kept and kept[name] != match.group(2):
            raise SystemExit(f"{name}: two versions apply here ({kept[name]}, {match.group(2)})")
        kept[name] = match.group(2)
    return [f"{name}=={version}" for name, version in sorted(kept.items())]


def main() -> None:
    argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Rewrites constraints.txt from this checkout's uv.lock (not committed: in a fresh clone "
        "`uv run` locks the newest versions the pyproject allows, so the pins move to those).",
    ).parse_args()
    lines = pins(exported())
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} pins to {OUT.name} (Python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
