"""Test folders never shadow a module: pytest puts ``tests/`` on ``sys.path``, so a folder named
like a module (``tests/gym``) becomes an empty namespace package that libraries probing for the
module import instead (stable-baselines3 reads ``gym.__version__`` if ``gym`` imports)."""

from __future__ import annotations

import sys
from importlib.metadata import packages_distributions
from pathlib import Path

TESTS = Path(__file__).parent
# imported by a dependency only if present (stable-baselines3 probes for the old ``gym``)
PROBED = {"gym"}


def test_no_test_folder_is_named_like_a_module() -> None:
    taken = set(packages_distributions()) | set(sys.stdlib_module_names) | PROBED | {"codered_env"}
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))}
    assert not folders & taken, f"rename these test folders: {sorted(folders & taken)}"
