"""Import OpenEnv's light modules without its heavy package initialisers.

``openenv/core/__init__.py`` imports ``openenv.core.env_server``, whose ``__init__`` imports
OpenEnv's HTTP server, its MCP environment (fastmcp) and its web interface (gradio, pandas):
about 5-10 s of CPU before the first line of CodeRedEnv runs, although CodeRedEnv only uses
the wire types, the ``Environment`` base class, the serialiser, the rubric base class and the
client. ``openenv.core.rubrics``' ``__init__`` likewise imports the LLM judge (openai).

:func:`install` (called by ``codered_env/__init__.py``) registers a finder for those three
packages: importing one of them creates the package module, so its submodules
(``openenv.core.env_server.types`` ...) import normally, but its ``__init__`` runs only when
someone asks the package itself for an attribute it does not have yet (``from openenv.core
import EnvClient``, ``openenv.core.env_server.MCPEnvironment``, ``import *``). Code that uses
the packages' re-exports therefore behaves as before; code that imports only submodules never
pays for gradio.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
import types
from collections.abc import Sequence
from typing import Any

DEFERRED_PACKAGES = frozenset({"openenv.core", "openenv.core.env_server", "openenv.core.rubrics"})
_init_lock = threading.RLock()


class _DeferredPackage(types.ModuleType):
    """A package whose ``__init__`` runs on the first attribute it cannot answer."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name not in ("__all__", "__path__"):
            raise AttributeError(name)
        _complete(self)
        return getattr(self, name)


def _complete(module: types.ModuleType) -> None:
    """Run the package's real ``__init__`` (once) in its own namespace."""
    with _init_lock:
        if type(module) is not _DeferredPackage:
            return
        module.__class__ = types.ModuleType  # from now on an ordinary module
        loader = module.__dict__.pop("__deferred_loader__")
        module.__loader__ = loader
        if module.__spec__ is not None:
            module.__spec__.loader = loader
        loader.exec_module(module)


class _DeferringLoader(importlib.abc.Loader):
    def __init__(self, real: importlib.abc.Loader) -> None:
        self.real = real

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None  # the default module object

    def exec_module(self, module: types.ModuleType) -> None:
        module.__dict__["__deferred_loader__"] = self.real
        module.__class__ = _DeferredPackage


class _DeferringFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in DEFERRED_PACKAGES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            return None
        spec.loader = _DeferringLoader(spec.loader)
        return spec


def install() -> None:
    """Defer the heavy OpenEnv package initialisers (idempotent; a no-op once imported)."""
    if any(isinstance(finder, _DeferringFinder) for finder in sys.meta_path):
        return
    sys.meta_path.insert(0, _DeferringFinder())
