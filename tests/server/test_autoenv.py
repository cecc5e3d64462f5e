"""OpenEnv's ``AutoEnv.from_env`` finds CodeRedEnv's client once a distribution named
``openenv-codered-env`` is installed (wheels carry the manifest inside the package and the
client module has the class names AutoEnv infers; the distribution name is the one part that
differs: docs/SERVER.md, "OpenEnv conventions")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from openenv import AutoAction, AutoEnv
from openenv.auto import _discovery
from support_server import RunningServer

from codered_env.client import CodeRedEnv
from codered_env.models import CodeRedAction

ROOT = Path(__file__).resolve().parents[2]
DIST_NAME = "openenv-codered-env"


@pytest.fixture
def installed_as_openenv_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A dist-info for the package under OpenEnv's naming convention (no reinstall needed)."""
    dist_info = tmp_path / "openenv_codered_env-0.1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {DIST_NAME}\nVersion: 0.1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # no stale discovery cache
    _discovery.reset_discovery()
    yield
    _discovery.reset_discovery()


def test_wheels_carry_the_manifest_inside_the_package() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    force_include = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert force_include == {"openenv.yaml": "codered_env/openenv.yaml"}


@pytest.mark.usefixtures("installed_as_openenv_package")
def test_autoenv_finds_and_plays_codered_env(server: RunningServer) -> None:
    info = _discovery.get_discovery().get_environment_by_name("codered")
    assert info is not None and info.package_name == DIST_NAME
    assert info.get_action_class() is CodeRedAction
    assert AutoAction.from_env("codered") is CodeRedAction
    client = AutoEnv.from_env("codered", base_url=server.base_url)
    assert isinstance(client, CodeRedEnv)
    with client.sync() as env:
        assert env.reset(task_id="task2", seed=1).done is False
        assert env.state().task_id == "task2"
