"""What produced a stored episode: the agent's fingerprint, the simulation's and the commit.

* ``agent_fingerprint(agent)``: the agent's own ``fingerprint()`` when it has one (planner budget,
  PPO checkpoint hash, LLM model/prompt/sampling), else its class and the SHA-256 of its module's
  source (``codered_env.agents.base.code_fingerprint``).
* ``sim_fingerprint()``: SHA-256 over the files of ``codered_env/sim/`` (the dynamics, the
  parameters, the grader), so any change to the simulation changes it.  Cheap (about 1 ms) and
  deterministic.
* ``git_commit()``: ``git rev-parse HEAD`` of the checkout the package runs from (``+dirty`` when
  the working tree differs from it); ``None`` for an installed package or without git.

The store reuses an episode only when the agent and simulation fingerprints both match; the commit
is recorded for the reader, not matched (a commit that changes neither the agent's code nor the
simulation cannot change an episode).
"""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

_SIM_DIR = Path(__file__).resolve().parent.parent / "sim"
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent.parent
SHORT = 8  # hex digits shown in reports


def agent_fingerprint(agent: Any) -> dict[str, Any]:
    """The agent's fingerprint as a JSON-able dict (see the module docstring)."""
    own = getattr(agent, "fingerprint", None)
    if callable(own):
        return dict(own())
    from codered_env.agents.base import code_fingerprint

    return code_fingerprint(agent)


def fingerprint_text(fingerprint: dict[str, Any]) -> str:
    """Canonical JSON (sorted keys), the form stored and compared."""
    return json.dumps(fingerprint, sort_keys=True, separators=(",", ":"))


def short_hash(text: str | None) -> str:
    """A short label for a stored fingerprint: 8 hex digits of its SHA-256 (``—`` when missing)."""
    if not text:
        return "—"
    return hashlib.sha256(text.encode()).hexdigest()[:SHORT]


def sim_source_files() -> list[Path]:
    """Every Python source of the simulation, subpackages such as ``sim/dynamics`` included."""
    return sorted(_SIM_DIR.rglob("*.py"))


@functools.lru_cache(maxsize=1)
def sim_fingerprint() -> str:
    """SHA-256 (16 hex digits) over the simulation's source files (subpackages such as
    ``sim/dynamics`` included), in relative-path order."""
    digest = hashlib.sha256()
    for path in sim_source_files():
        digest.update(path.relative_to(_SIM_DIR).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The commit of the checkout the package runs from, ``+dirty`` if modified; else ``None``."""
    if not (_PACKAGE_ROOT / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(_PACKAGE_ROOT), "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(_PACKAGE_ROOT), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if dirty else head or None
