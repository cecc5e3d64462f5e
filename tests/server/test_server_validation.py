"""OpenEnv's own validators: static manifest, `openenv validate --url`, and the runtime
graders (reward_well_formed, observation_schema, state_contract) driven through OpenEnv's
validation runner with a provider that points at a local uvicorn instead of Docker."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import httpx
import pytest
from openenv.cli._validation import validate_running_environment
from openenv.validation import run_validation
from openenv.validation.manifest import ExecutionDeclaration
from openenv.validation.providers import ExecResult, ProviderError
from openenv.validation.runtime.contracts import LaunchSpec
from openenv.validation.types import CheckStatus, Level, ProviderCapability
from support_server import RunningServer

REPO = Path(__file__).resolve().parents[2]
# OpenEnv's own collector opens its socket in a way websockets 17 flags as deprecated.
pytestmark = pytest.mark.filterwarnings("ignore:connect\\(\\) must be used:DeprecationWarning")

RUNTIME_GRADERS = (
    "runtime.startup",
    "runtime.reward_well_formed",
    "runtime.observation_schema",
    "runtime.state_contract",
)


class LocalSubject:
    """A 'started' subject that is really the test's uvicorn server."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.stopped = False

    def inspect(self) -> dict:
        return {"provider": "local-uvicorn"}

    def logs(self, max_bytes: int = 65536) -> str:
        return ""

    def exec(self, argv: list[str], timeout_s: float) -> ExecResult:
        raise ProviderError("exec is not available on the local provider")

    def stop(self) -> None:
        self.stopped = True


class LocalProvider:
    """Validation provider without Docker: 'builds' by hashing the Dockerfile."""

    name = "local-uvicorn"
    capabilities = frozenset({ProviderCapability.IMAGE_BUILD})
    supported_network_modes = frozenset({"public", "no-network"})

    def __init__(self, base_url: str) -> None:
        self.subject = LocalSubject(base_url)

    def build(self, root: Path, execution: ExecutionDeclaration) -> str:
        return "sha256:" + hashlib.sha256((root / execution.dockerfile).read_bytes()).hexdigest()

    def start(self, spec: LaunchSpec) -> LocalSubject:
        return self.subject


def _package_copy(tmp_path: Path) -> Path:
    """The files the runner reads, copied so that concurrent edits elsewhere in the repo
    cannot trip its before/after source digest."""
    for name in ("openenv.yaml", "Dockerfile", "validation/runtime.json"):
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / name, target)
    return tmp_path


def test_static_validation_passes() -> None:
    report = run_validation(REPO, max_level=Level.STATIC)
    assert report.verdict.value == "pass", [r.evidence for r in report.results]


def test_runtime_graders_pass_against_a_local_server(server: RunningServer, tmp_path: Path) -> None:
    provider = LocalProvider(server.base_url)
    report = run_validation(_package_copy(tmp_path), max_level=Level.RUNTIME, provider=provider)
    results = {r.check_id: r for r in report.results}
    for check_id in RUNTIME_GRADERS:
        assert results[check_id].status is CheckStatus.PASS, results[check_id].evidence
    assert provider.subject.stopped


def test_runtime_graders_catch_a_broken_episode_contract(server: RunningServer, tmp_path: Path) -> None:
    """The harness can fail: a plan whose reset the server refuses must not pass."""
    package = _package_copy(tmp_path)
    plan = package / "validation" / "runtime.json"
    plan.write_text(plan.read_text().replace('"task1"', '"task42"'))
    report = run_validation(package, max_level=Level.RUNTIME, provider=LocalProvider(server.base_url))
    statuses = {r.check_id: r.status for r in report.results}
    assert statuses["runtime.startup"] is not CheckStatus.PASS
    assert report.verdict.value == "fail"


def test_validate_url_passes(server: RunningServer) -> None:
    report = validate_running_environment(server.base_url, timeout_s=10)
    assert report["passed"], report["criteria"]
    assert report["mode"] == "simulation"


def test_openenv_cli_validate_url_exits_zero(server: RunningServer) -> None:
    # The `openenv` console script's own app, in-process: a fresh interpreter would re-import
    # openenv and its UI stack (~10 s of CPU) for the same command, report and exit code.
    from openenv.cli.__main__ import app
    from typer.testing import CliRunner

    done = CliRunner().invoke(app, ["validate", "--url", server.base_url])
    assert done.exit_code == 0, done.output


def test_validate_url_passes_in_production_mode_without_http_episode_routes(
    production_server: RunningServer,
) -> None:
    report = validate_running_environment(production_server.base_url, timeout_s=10)
    assert report["passed"], report["criteria"]
    assert report["mode"] == "production"
    assert httpx.post(production_server.base_url + "/reset", timeout=10).status_code in (404, 405)
