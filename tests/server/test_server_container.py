"""The container recipe (no Docker engine here, so its properties are checked statically),
and the ways of starting the server: the ``server`` script with the image's environment
(HOME and caches under a temp dir, as on a read-only root filesystem) and ``codered serve``."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import httpx
import pytest
from support_server import RunningServer, launch

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = (REPO / "Dockerfile").read_text()
MY_FILES = [
    "Dockerfile",
    ".dockerignore",
    "openenv.yaml",
    "validation/runtime.json",
    "codered_env/client.py",
    "codered_env/models.py",
    *(str(p.relative_to(REPO)) for p in (REPO / "codered_env" / "server").glob("*.py")),
]


def _instructions() -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n", " ", DOCKERFILE)
    pairs = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            pairs.append((keyword.upper(), rest.strip()))
    return pairs


def _env() -> dict[str, str]:
    env: dict[str, str] = {}
    for keyword, rest in _instructions():
        if keyword == "ENV":
            for item in shlex.split(rest):
                name, _, value = item.partition("=")
                env[name] = value
    return env


def test_base_image_is_slim_python() -> None:
    froms = [rest for keyword, rest in _instructions() if keyword == "FROM"]
    assert froms and all(re.fullmatch(r"python:3\.1[1-3]-slim(-\w+)?", f) for f in froms)


def test_runs_as_a_non_root_user_after_installing() -> None:
    keywords = [k for k, _ in _instructions()]
    users = [rest for keyword, rest in _instructions() if keyword == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root")
    last_run = max(i for i, k in enumerate(keywords) if k == "RUN")
    assert keywords.index("USER") > last_run


def test_dependencies_are_installed_at_build_time_from_pyproject() -> None:
    runs = " ".join(rest for keyword, rest in _instructions() if keyword == "RUN")
    assert "pip install" in runs and "pyproject.toml" in DOCKERFILE
    instructions = " ".join(rest for _, rest in _instructions())
    assert "uv.lock" not in instructions


def test_home_and_caches_point_to_tmp_for_a_read_only_root() -> None:
    env = _env()
    for name in ("HOME", "XDG_CACHE_HOME", "MPLCONFIGDIR", "HF_HOME", "TMPDIR"):
        assert env[name].startswith("/tmp"), name
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"


def test_port_healthcheck_no_volume_and_a_server_command() -> None:
    keywords = dict(_instructions())
    assert keywords["EXPOSE"] == "8000"
    assert "VOLUME" not in keywords
    assert "/health" in keywords["HEALTHCHECK"] and "8000" in keywords["HEALTHCHECK"]
    assert "server" in keywords["CMD"] and "8000" in keywords["CMD"]


def test_dockerignore_keeps_the_build_context_small() -> None:
    lines = (REPO / ".dockerignore").read_text().splitlines()
    ignored = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    for entry in (".git", ".venv", "uv.lock", "tests"):
        assert entry in ignored
    for needed in ("pyproject.toml", "README.md", "codered_env", "codered", "openenv.yaml",
                   "hatch_build.py"):
        assert needed not in ignored


def test_no_package_registry_urls_or_hosts_in_server_files() -> None:
    pattern = re.compile(
        r"pypi\.org|files\.pythonhosted|index-url|registry\.|npmjs|"
        r"docker\.io|ghcr\.io|quay\.io",
        re.I,
    )
    for name in MY_FILES:
        assert not pattern.search((REPO / name).read_text()), name


def test_server_script_starts_with_the_image_environment(tmp_path: Path) -> None:
    env = {k: v.replace("/tmp", str(tmp_path)) for k, v in _env().items()}
    script = Path(sys.executable).with_name("server")
    server = launch(env, argv=[str(script)])
    try:
        assert httpx.get(server.base_url + "/health", timeout=5).json() == {"status": "healthy"}
    finally:
        server.stop()


def test_codered_serve_answers_health(production_server: RunningServer) -> None:
    # The fixture started `codered serve` (in production mode, shared with the validation test).
    if not Path(sys.executable).with_name("codered").exists():
        pytest.skip("the codered CLI is not installed in this environment")
    assert httpx.get(production_server.base_url + "/health", timeout=5).status_code == 200
