"""OpenEnv's ``AutoEnv.from_env`` finds CodeRedEnv's client once a distribution named
``openenv-codered-env`` is installed (the in-package manifest and the inferred class name are
shipped; the distribution name is the one part that differs: docs/SERVER.md, "AutoEnv")."""

from __future__ import annotations

from pathlib import Path

import pytest
from openenv import AutoEnv
from openenv.auto import _discovery
from support_server import RunningServer

from codered_env.client import CodeRedEnv

DIST_NAME = "openenv-codered-env"


@pytest.fixture
def installed_as_openenv_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dist-info for the package under OpenEnv's naming convention (no reinstall needed)."""
    dist_info = tmp_path / "openenv_codered_env-0.1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {DIST_NAME}\nVersion: 0.1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # no stale discovery cache
    _discovery.reset_discovery()
    yield
    _discovery.reset_discovery()


def test_the_manifest_ships_inside_the_package() -> None:
    import importlib.resources

    shipped = importlib.resources.files("codered_env") / "openenv.yaml"
    root = Path(__file__).resolve().parents[2] / "openenv.yaml"
    assert shipped.read_text() == root.read_text()


@pytest.mark.usefixtures("installed_as_openenv_package")
def test_autoenv_finds_and_plays_codered_env(server: RunningServer) -> None:
    info = _discovery.get_discovery().get_environment_by_name("codered")
    assert info is not None and info.package_name == DIST_NAME
    assert (info.action_class_name, info.observation_class_name) == ("CodeRedAction", "CodeRedObservation")
    client = AutoEnv.from_env("codered", base_url=server.base_url)
    assert isinstance(client, CodeRedEnv)
    with client.sync() as env:
        assert env.reset(task_id="task2", seed=1).done is False
        assert env.state().task_id == "task2"
