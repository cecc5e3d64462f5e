"""Benchmark-route helpers in process: LLM gating and the bound on concurrent agent runs."""

from __future__ import annotations

import asyncio
import threading

import pytest
from fastapi import HTTPException

from codered_env.server.benchmark_routes import (
    HeavyJobs,
    _check_llm_allowed,
    builtin_episode,
    task_listing,
)
from codered_env.server.config import ServerSettings

KEY_VARS = ("HF_TOKEN", "API_KEY", "OPENAI_API_KEY")


def test_llm_baseline_needs_the_flag_and_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "a-key")
    with pytest.raises(HTTPException) as disabled:
        _check_llm_allowed(ServerSettings(enable_llm_baseline=False))
    assert disabled.value.status_code == 403
    _check_llm_allowed(ServerSettings(enable_llm_baseline=True))  # flag + key: allowed
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(HTTPException) as no_key:
        _check_llm_allowed(ServerSettings(enable_llm_baseline=True))
    assert no_key.value.status_code == 403 and "API key" in str(no_key.value.detail)


def test_heavy_jobs_refuse_with_503_when_all_slots_stay_busy() -> None:
    jobs = HeavyJobs(slots=1, wait_s=0.2)
    release = threading.Event()

    async def scenario() -> int:
        blocker = asyncio.create_task(jobs.run(release.wait, 5))
        await asyncio.sleep(0.05)
        try:
            await jobs.run(lambda: None)
        except HTTPException as exc:
            return exc.status_code
        finally:
            release.set()
            await blocker
        return 200

    assert asyncio.run(scenario()) == 503


def test_builtin_episodes_are_deterministic_and_cached() -> None:
    first = builtin_episode("random", "task2", 3)
    again = builtin_episode("random", "task2", 3)
    assert first == again and first["actions"]
    assert builtin_episode("random", "task2", 4)["actions"] != first["actions"]


def test_task_listing_marks_phase_specific_actions() -> None:
    tasks = {t["task_id"]: t for t in task_listing()["tasks"]}
    assert "dispatch_ambulance" not in tasks["task5"]["action_types"]
    assert "dispatch_als" not in tasks["task1"]["action_types"]
