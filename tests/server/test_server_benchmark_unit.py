"""Benchmark-route helpers in process: LLM gating, the agent-run pool (queue bound, cache, rate
limit) and the built-in agent episodes."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

import pytest
from fastapi import HTTPException
from starlette.requests import Request

from codered_env.server.benchmark_routes import _check_llm_allowed, _model_failure, task_listing
from codered_env.server.config import ServerSettings
from codered_env.server.heavy import builtin_episode
from codered_env.server.jobs import HeavyJobs, RateLimiter

KEY_VARS = ("HF_TOKEN", "API_KEY", "OPENAI_API_KEY")
ENABLED = ServerSettings(enable_llm_baseline=True, baseline_token="tok")


def _request(authorization: str | None = None) -> Request:
    headers = [] if authorization is None else [(b"authorization", authorization.encode())]
    return Request({"type": "http", "method": "POST", "path": "/baseline", "headers": headers})


def test_llm_baseline_needs_the_flag_a_token_and_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "a-key")
    for settings in (ServerSettings(enable_llm_baseline=False), ServerSettings(enable_llm_baseline=True)):
        with pytest.raises(HTTPException) as disabled:
            _check_llm_allowed(settings, _request("Bearer tok"))
        assert disabled.value.status_code == 403  # off, or on without a configured token
    for header in (None, "Bearer wrong", "Basic tok", "tok"):
        with pytest.raises(HTTPException) as refused:
            _check_llm_allowed(ENABLED, _request(header))
        assert refused.value.status_code == 401
    _check_llm_allowed(ENABLED, _request("Bearer tok"))  # flag + token + key: allowed
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(HTTPException) as no_key:
        _check_llm_allowed(ENABLED, _request("Bearer tok"))
    assert no_key.value.status_code == 403 and "API key" in str(no_key.value.detail)


def test_a_model_that_never_answered_counts_as_a_failure() -> None:
    ok = SimpleNamespace(disabled_reason=None, stats=SimpleNamespace(unanswered=0))
    unanswered = SimpleNamespace(disabled_reason=None, stats=SimpleNamespace(unanswered=3))
    disabled = SimpleNamespace(disabled_reason="HTTP 401 authentication failed", stats=None)
    assert _model_failure(ok) is None
    assert "3 step" in (_model_failure(unanswered) or "")
    assert "401" in (_model_failure(disabled) or "")


def test_a_full_queue_is_refused_with_503_at_once() -> None:
    jobs = HeavyJobs(slots=1, queue=0, wait_s=5.0, per_minute=100)

    async def scenario() -> tuple[int, float]:
        blocker = asyncio.create_task(jobs.run_in_thread("a", time.sleep, 1.0))
        await asyncio.sleep(0.1)
        began = time.monotonic()
        try:
            await jobs.run_in_thread("b", time.sleep, 0)
        except HTTPException as exc:
            return exc.status_code, time.monotonic() - began
        finally:
            await blocker
        return 200, 0.0

    status, waited = asyncio.run(scenario())
    assert status == 503 and waited < 0.5


def test_rate_limiter_counts_per_client_in_a_sliding_minute() -> None:
    now = [0.0]
    limiter = RateLimiter(per_minute=2, clock=lambda: now[0])
    limiter.check("a")
    limiter.check("a")
    limiter.check("b")
    with pytest.raises(HTTPException) as limited:
        limiter.check("a")
    assert limited.value.status_code == 429 and int(limited.value.headers["Retry-After"]) > 0
    now[0] = 61.0
    limiter.check("a")


def test_builtin_episodes_are_deterministic() -> None:
    first = builtin_episode("random", "task2", 3)
    again = builtin_episode("random", "task2", 3)
    assert first == again and first["actions"]
    assert builtin_episode("random", "task2", 4)["actions"] != first["actions"]


def test_task_listing_marks_phase_specific_actions() -> None:
    tasks = {t["task_id"]: t for t in task_listing()["tasks"]}
    assert "dispatch_ambulance" not in tasks["task5"]["action_types"]
    assert "dispatch_als" not in tasks["task1"]["action_types"]
