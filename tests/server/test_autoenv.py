"""OpenEnv's ``AutoEnv.from_env("codered")`` finds CodeRedEnv's client once the distribution
``openenv-codered`` is installed: AutoEnv looks at installed ``openenv-*`` distributions, maps
``openenv-codered`` to the module ``codered`` (a thin alias of ``codered_env`` shipped in the
wheel) and reads the manifest and the client from it.

The wheel test builds the real wheel, installs it (no dependencies, nothing downloaded) into a
fresh virtual environment that borrows the project environment's third-party packages, and
resolves the client there, in a process that cannot see this source tree."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from openenv import AutoAction, AutoEnv
from openenv.auto import _discovery
from support_server import RunningServer

from codered_env.client import CodeRedEnv
from codered_env.models import CodeRedAction

ROOT = Path(__file__).resolve().parents[2]
DIST_NAME = "openenv-codered"
BUILD_TIMEOUT_S = 180

RESOLVE_SCRIPT = """
import json, sys
from importlib import metadata
from openenv import AutoAction, AutoEnv
from openenv.auto import _discovery
_discovery.reset_discovery()
info = _discovery.get_discovery().get_environment_by_name("codered")
client = AutoEnv.from_env("codered", base_url=sys.argv[1])
import codered_env
print(json.dumps({
    "package": info.package_name,
    "manifest_name": (info.manifest or {}).get("name"),
    "client": type(client).__module__ + "." + type(client).__qualname__,
    "action": AutoAction.from_env("codered").__name__,
    "codered_env_file": codered_env.__file__,
    "dist_files": str(metadata.distribution("openenv-codered").locate_file("")),
    "manifest_from_alias": info.manifest is not None,
}))
"""


def _uv() -> str:
    uv = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    if not Path(uv).exists():
        pytest.skip("uv is needed to build and install the wheel")
    return uv


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
                          check=False)


def _build_wheel(uv: str, out: Path) -> Path:
    built = _run([uv, "build", "--wheel", "--offline", "--out-dir", str(out), str(ROOT)], ROOT)
    if built.returncode != 0:
        pytest.skip(f"the wheel could not be built offline: {built.stderr[-300:]}")
    wheels = list(out.glob("openenv_codered-*.whl"))
    assert len(wheels) == 1, built.stdout + built.stderr
    return wheels[0]


def _fresh_venv(uv: str, where: Path) -> Path:
    """A virtual environment that sees the project environment's packages through a .pth file."""
    made = _run([uv, "venv", "--offline", "--python", sys.executable, str(where)], where.parent)
    assert made.returncode == 0, made.stderr
    python = where / "bin" / "python"
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   where.parent).stdout.strip()
    (Path(purelib) / "project_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def test_wheels_carry_the_manifest_inside_both_packages() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["name"] == DIST_NAME
    wheel = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["packages"] == ["codered_env", "codered"]
    assert wheel["force-include"] == {"openenv.yaml": "codered_env/openenv.yaml"}
    assert "custom" in wheel["hooks"]  # hatch_build.py adds codered/openenv.yaml
    # one manifest in the source tree, no link (openenv validate refuses them)
    assert not (ROOT / "codered" / "openenv.yaml").exists()


def test_autoenv_resolves_codered_from_an_installed_wheel(server: RunningServer, tmp_path: Path) -> None:
    uv = _uv()
    wheel = _build_wheel(uv, tmp_path / "dist")
    python = _fresh_venv(uv, tmp_path / "venv")
    installed = _run([uv, "pip", "install", "--offline", "--no-deps", "--no-config",
                      "--python", str(python), str(wheel)], tmp_path)
    assert installed.returncode == 0, installed.stderr
    work = tmp_path / "elsewhere"  # not the source tree: imports come from the wheel
    work.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    resolved = subprocess.run([str(python), "-I", "-c", RESOLVE_SCRIPT, server.base_url], cwd=work, env=env,
                              capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False)
    assert resolved.returncode == 0, resolved.stderr[-2000:]
    found = json.loads(resolved.stdout.strip().splitlines()[-1])
    venv = str(tmp_path / "venv")
    assert found["package"] == DIST_NAME and found["manifest_name"] == "codered_env"
    assert found["client"] == "codered_env.client.CodeRedEnv"
    assert found["action"] == "CodeRedAction"
    assert found["codered_env_file"].startswith(venv) and found["dist_files"].startswith(venv)
    assert found["manifest_from_alias"] is True


def test_autoenv_finds_and_plays_codered_in_this_environment(
    server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project environment's own (editable) install is ``openenv-codered`` too."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # no stale discovery cache
    _discovery.reset_discovery()
    try:
        info = _discovery.get_discovery().get_environment_by_name("codered")
        if info is None:
            pytest.skip("the project environment predates the rename: run `uv sync`")
        assert info.package_name == DIST_NAME
        assert info.get_action_class() is CodeRedAction
        assert AutoAction.from_env("codered") is CodeRedAction
        client = AutoEnv.from_env("codered", base_url=server.base_url)
        assert isinstance(client, CodeRedEnv)
        with client.sync() as env:
            assert env.reset(task_id="task2", seed=1).done is False
            assert env.state().task_id == "task2"
    finally:
        _discovery.reset_discovery()
