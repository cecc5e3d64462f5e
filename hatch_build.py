"""Wheel build hook: the root manifest also goes into the AutoEnv alias package.

pyproject's ``force-include`` puts ``openenv.yaml`` into ``codered_env/``; this hook adds
``codered/openenv.yaml``, where OpenEnv's AutoEnv reads the manifest of the distribution
``openenv-codered`` (its module ``codered``, see codered/__init__.py). One file in the source
tree and no link (``openenv validate`` refuses symbolic links); a force-include maps each
source file to one place, so the second place gets a copy made for the build.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

ALIAS_MANIFEST = "codered/openenv.yaml"


class ManifestHook(BuildHookInterface):  # type: ignore[misc]
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        self._copy_dir = tempfile.mkdtemp(prefix="codered-manifest-")
        copy = Path(self._copy_dir) / "openenv.yaml"
        shutil.copyfile(Path(self.root) / "openenv.yaml", copy)
        build_data["force_include"][str(copy)] = ALIAS_MANIFEST

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        shutil.rmtree(self._copy_dir, ignore_errors=True)
