"""The soak script (bench/soak.py), short: sessions of every kind across a SIGKILL + restart
lose no episode, no request waits out a time-out, and every score matches in-process play.
Opt-in: CODERED_SLOW=1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support_server import REPO_ROOT


@pytest.mark.slow
def test_a_short_soak_loses_and_mismatches_nothing(tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "soak.py"), "--minutes", "0.75", "--ws", "8",
         "--http", "4", "--mcp", "4", "--json", str(out)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(out.read_text())
    assert all(report["completed"].get(kind, 0) > 0 for kind in ("ws", "http", "mcp")), report
    assert not report["lost"] and not report["mismatched"], report
    assert report["recovery_s"] is not None and report["rss_mb"]
    # no request sat out a read time-out: a request cut off by the kill failed at once and was
    # repeated, and the last episodes ended soon after the run's 45 s (plus the restart)
    assert not [kind for kind in report["errors"] if "Timeout" in kind], report["errors"]
    assert report["run_s"] < 45 + report["recovery_s"] + 30, report
