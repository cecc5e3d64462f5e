"""`codered eval --backend ray` on a local Ray (num_cpus=2): same results as serial, a worker
that dies in the middle of an episode is retried, the LLM key reaches workers through runtime_env
only.  Skipped without ray (`uv sync --extra ray`, `pip install ".[ray]"`).

Not in CI (.ci/run does not install the extra): on the project's shared 2-core machine this module
takes 50-60 s (ray.init alone 25-30 s), more than the ~40 s the CI budget leaves."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_endpoint import FakeEndpoint

from codered_env.agents.llm import LLMConfig
from codered_env.evaluation.backends import _keyless, ray_results
from codered_env.evaluation.episode import EpisodeJob, JobResult, LocalEnv, run_job
from codered_env.evaluation.evaluate import Execution, run_evaluation
from codered_env.evaluation.store import EpisodeStore
from codered_env.evaluation.trajectory import Trajectory

# as backends._import_ray does, before the first import of ray (see there why)
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
ray = pytest.importorskip("ray")

AGENTS = ["random", "heuristic"]
TASKS = ["task1", "task4"]
SEEDS = [0, 1]


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    # a loaded machine starts Ray's agents slowly; the raylet's default wait is 30 s
    os.environ.setdefault("RAY_agent_register_timeout_ms", "120000")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def stored(db: Path) -> dict[tuple[str, str, int], tuple]:
    with EpisodeStore(db) as store:
        return {(r.agent, r.task_id, r.seed): (
            r.score, r.raw_score, r.components, r.steps,
            [s.to_json() for s in Trajectory.from_jsonl(r.trajectory).steps])
            for r in store.records()}


def test_ray_results_equal_serial_results(tmp_path: Path) -> None:
    serial = run_evaluation(AGENTS, TASKS, SEEDS, db_path=tmp_path / "serial.db", progress=None)
    on_ray = run_evaluation(AGENTS, TASKS, SEEDS, db_path=tmp_path / "ray.db", progress=None,
                            execution=Execution(backend="ray", workers=2))
    assert serial.ran == on_ray.ran == 8 and on_ray.failed == 0
    assert stored(tmp_path / "ray.db") == stored(tmp_path / "serial.db")


def test_an_episode_whose_worker_dies_is_retried(tmp_path: Path) -> None:
    marker = tmp_path / "died-once"

    def dies_once(job: EpisodeJob) -> JobResult:
        if job.seed != 1 or marker.exists():
            return run_job(job)
        played = LocalEnv.step
        steps = []

        def step(env: LocalEnv, action: dict) -> object:
            steps.append(action)
            if len(steps) == 3:  # the worker process dies in the middle of the episode
                marker.write_text(str(os.getpid()))
                os._exit(1)
            return played(env, action)

        LocalEnv.step = step  # only in this worker process, which does not survive the episode
        return run_job(job)

    jobs = [EpisodeJob("heuristic", "task1", seed) for seed in range(3)]
    results = {r.job.seed: r for r in ray_results(jobs, job_fn=dies_once, max_retries=2)}
    assert marker.exists() and sorted(results) == [0, 1, 2]
    retried, serial = results[1], run_job(jobs[1])
    assert retried.error is None and retried.pid != int(marker.read_text())  # another worker
    assert (retried.record.score, retried.record.components, retried.record.steps) == \
        (serial.record.score, serial.record.components, serial.record.steps)
    assert Trajectory.from_jsonl(retried.record.trajectory).steps == \
        Trajectory.from_jsonl(serial.record.trajectory).steps


def test_llm_episodes_on_ray_get_the_key_from_runtime_env(tmp_path: Path) -> None:
    key = "k-ray-secret-0123456789"
    with FakeEndpoint(latency_s=0.05) as endpoint:
        config = LLMConfig(api_key=key, base_url=endpoint.url, model="fake/m", timeout_s=5.0)
        job = EpisodeJob("llm", "task1", 0, 3, config)
        sent, shipped = _keyless(job, 2)
        assert sent.llm_config.api_key == "" and shipped == key  # never in the task arguments
        (result,) = ray_results([job], concurrency=2)
        local = run_job(job)
    assert result.error is None and result.pid != os.getpid()
    assert endpoint.authorizations == {f"Bearer {key}"}
    assert Trajectory.from_jsonl(result.record.trajectory).steps == \
        Trajectory.from_jsonl(local.record.trajectory).steps
    assert result.record.prompt_tokens == local.record.prompt_tokens > 0
