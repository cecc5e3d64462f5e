"""The package's import structure: no import cycle, and no import pointing up the layers.

Layers, bottom to top (a module may import its own layer and the ones below):

    sim  <-  adapters (gym_env, trl, models, client, citymap)  <-  agents
         <-  tools (evaluation, viewer, train, runner, replay, runlog, web)  <-  server, cli, inference.py

Imports are read with ``ast`` (nothing is imported), including the ones inside functions: a lazy
import is still a dependency. Imports under ``if TYPE_CHECKING:`` are type hints only: they do
not count for the layers, but they do for cycles (two modules that name each other's types are
one unit to read and change, whichever of them imports at run time). Importing ``a.b.c`` also
runs the packages ``a`` and ``a.b``, so those count as imported too, except the importer's own
ancestors (already running when it is imported).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "codered_env"

# Layer of each module, by the longest matching prefix; the package root (lazy exports only) and
# the dependency-free extras check may be used from anywhere.
LAYERS: dict[str, int] = {
    "codered_env": 0,
    "codered_env._optional": 0,
    "codered_env.sim": 0,
    "codered_env.gym_env": 1,
    "codered_env.trl": 1,
    "codered_env.models": 1,
    "codered_env.client": 1,
    "codered_env.citymap": 1,
    "codered_env.agents": 2,
    "codered_env.evaluation": 3,
    "codered_env.viewer": 3,
    "codered_env.train": 3,
    "codered_env.factored_ppo": 3,
    "codered_env.runner": 3,
    "codered_env.replay": 3,
    "codered_env.runlog": 3,
    "codered_env.web": 3,
    "codered_env.server": 4,
    "codered_env.cli": 4,
    "inference": 4,
}
LAYER_NAMES = ("sim", "adapters", "agents", "tools", "server/cli")

# Import cycles tolerated while they are being removed: none today.
KNOWN_CYCLES: set[frozenset[str]] = set()


def module_files(root: Path, package: str, scripts: Iterable[str] = ()) -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``package`` under ``root`` (plus scripts)."""
    modules: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    for script in scripts:
        if (root / f"{script}.py").is_file():
            modules[script] = root / f"{script}.py"
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST, type_hints: bool = False) -> Iterable[ast.Import | ast.ImportFrom]:
    """Every import statement, skipping the bodies of ``if TYPE_CHECKING:`` unless ``type_hints``."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test) and not type_hints:
            stack.extend(node.orelse)
        else:
            stack.extend(ast.iter_child_nodes(node))


def _named(module: str, node: ast.Import | ast.ImportFrom, is_package: bool) -> list[str]:
    """The dotted names an import statement may load (modules, or attributes of modules)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        anchor = module.split(".") if is_package else module.split(".")[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_graph(modules: dict[str, Path], type_hints: bool = False) -> dict[str, set[str]]:
    """Module -> the project modules it imports (directly, or as a package that runs first);
    with ``type_hints``, also those imported under ``if TYPE_CHECKING:``."""
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        own = {module, *_ancestors(module)}
        targets: set[str] = set()
        for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8")), type_hints):
            for name in _named(module, node, path.name == "__init__.py"):
                targets.update(m for m in (*_ancestors(name), name) if m in modules and m not in own)
        graph[module] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def units(graph: dict[str, set[str]], depth: int = 2) -> dict[str, set[str]]:
    """The graph between top-level units (``codered_env.web``, ``codered_env.viewer`` ...): a
    cycle between two packages is a cycle even when no single module closes it."""
    def unit(name: str) -> str:
        return ".".join(name.split(".")[:depth])

    collapsed: dict[str, set[str]] = {}
    for module, targets in graph.items():
        collapsed.setdefault(unit(module), set()).update(unit(t) for t in targets if unit(t) != unit(module))
    return collapsed


def layer_of(module: str, layers: dict[str, int]) -> int:
    for candidate in (module, *reversed(_ancestors(module))):
        if candidate in layers:
            return layers[candidate]
    raise KeyError(f"{module} has no layer: add it to LAYERS in tests/test_architecture.py")


def upward_imports(graph: dict[str, set[str]], layers: dict[str, int]) -> list[str]:
    return sorted(
        f"{module} ({LAYER_NAMES[layer_of(module, layers)]}) imports {target} "
        f"({LAYER_NAMES[layer_of(target, layers)]})"
        for module, targets in graph.items()
        for target in targets
        if layer_of(target, layers) > layer_of(module, layers)
    )


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(module_files(REPO, PACKAGE, scripts=("inference",)))


@pytest.fixture(scope="module")
def hinted_graph() -> dict[str, set[str]]:
    return import_graph(module_files(REPO, PACKAGE, scripts=("inference",)), type_hints=True)


def test_no_import_cycles(hinted_graph: dict[str, set[str]]) -> None:
    unexpected = [sorted(c) for c in cycles(hinted_graph) if c not in KNOWN_CYCLES]
    assert not unexpected, f"import cycles: {unexpected}"


def test_no_cycles_between_packages(hinted_graph: dict[str, set[str]]) -> None:
    assert not [sorted(c) for c in cycles(units(hinted_graph))]


def test_the_simulation_subpackages_form_no_cycle(hinted_graph: dict[str, set[str]]) -> None:
    """``sim.dynamics`` and the rest of ``sim`` as units: the state every subsystem reads sits
    below the subsystems, and the clock that calls them above."""
    inside = {m: {t for t in targets if t.startswith("codered_env.sim")}
              for m, targets in hinted_graph.items() if m.startswith("codered_env.sim")}
    assert not [sorted(c) for c in cycles(units(inside, depth=3))]


def test_no_import_points_up_the_layers(graph: dict[str, set[str]]) -> None:
    assert not upward_imports(graph, LAYERS)


def test_every_module_has_a_layer(graph: dict[str, set[str]]) -> None:
    for module in graph:
        layer_of(module, LAYERS)


# ------------------------------------------------------------------- the checks catch what they should
def _write(root: Path, files: dict[str, str]) -> dict[str, set[str]]:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return import_graph(module_files(root, "pkg"))


def test_a_synthetic_cycle_is_caught_even_through_a_lazy_import(tmp_path: Path) -> None:
    graph = _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/low/__init__.py": "from .a import thing\n",
        "pkg/low/a.py": "def thing():\n    from ..high import b\n    return b\n",
        "pkg/high/__init__.py": "",
        "pkg/high/b.py": "from pkg.low import a\n",
        "pkg/solo.py": "import pkg.low.a\n",
    })
    assert cycles(graph) == [frozenset({"pkg.low", "pkg.low.a", "pkg.high.b"})]
    assert cycles(units(graph)) == [frozenset({"pkg.low", "pkg.high"})]


def test_a_cycle_between_packages_is_caught_when_no_module_closes_it(tmp_path: Path) -> None:
    graph = _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/web/__init__.py": "def page():\n    return ''\n",
        "pkg/web/advice.py": "from pkg.viewer import view\n",
        "pkg/viewer.py": "from .web import page\ndef view():\n    return page()\n",
    })
    assert cycles(graph) == []
    assert cycles(units(graph)) == [frozenset({"pkg.web", "pkg.viewer"})]


def test_type_checking_imports_do_not_count_and_upward_imports_are_named(tmp_path: Path) -> None:
    graph = _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/core.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import tool\n",
        "pkg/tool.py": "from . import core\n",
        "pkg/agent.py": "import pkg.tool\n",
    })
    assert cycles(graph) == [] and graph["pkg.core"] == set()
    hinted = import_graph(module_files(tmp_path, "pkg"), type_hints=True)
    assert cycles(hinted) == [frozenset({"pkg.core", "pkg.tool"})]
    layers = {"pkg": 0, "pkg.core": 0, "pkg.agent": 2, "pkg.tool": 3}
    assert upward_imports(graph, layers) == ["pkg.agent (agents) imports pkg.tool (tools)"]


# ------------------------------------------------------------------- module size and re-exports
MAX_MODULE_LINES = 600


def test_no_module_is_over_the_line_limit() -> None:
    long = {path.relative_to(REPO).as_posix(): n for path in sorted((REPO / PACKAGE).rglob("*.py"))
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def reexports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the names its ``__all__`` lists that it imports from elsewhere (re-exports)."""
    out: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        listed: set[str] = set()
        imported: set[str] = set()
        for node in tree.body:
            is_all = isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            if is_all:
                listed = {e.value for e in getattr(node.value, "elts", ()) if isinstance(e, ast.Constant)}
            elif isinstance(node, ast.ImportFrom):
                imported |= {alias.asname or alias.name for alias in node.names}
        if listed & imported:
            out[module] = listed & imported
    return out


_FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+([.\w]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w.]+)(?:[ \t]+as[ \t]+(\w+))?", re.M)


def _names_read(module: str, text: str, is_package: bool, modules: dict[str, Path],
                attributes: re.Pattern[str]) -> set[str]:
    """Dotted names a file imports (``from m import x``: ``m.x``) or reads as an attribute of a
    module it imported (``import m as alias; alias.x``: ``m.x``); read from the text (quick, and
    an import in a docstring's example counts as a use)."""
    names: set[str] = set()
    aliases: dict[str, str] = {}
    for base, items in _FROM_IMPORT.findall(text):
        level = len(base) - len(base.lstrip("."))
        if level:
            anchor = module.split(".") if is_package else module.split(".")[:-1]
            anchor = anchor[: len(anchor) - (level - 1)]
            base = ".".join([*anchor, base.lstrip(".")] if base.lstrip(".") else anchor)
        for item in items.strip("()").replace("\n", ",").split(","):
            parts = item.split("#")[0].split()
            if parts:
                names.add(f"{base}.{parts[0]}")
                if f"{base}.{parts[0]}" in modules:
                    aliases[parts[-1]] = f"{base}.{parts[0]}"
    for name, alias in _IMPORT.findall(text):
        aliases[alias or name] = name
    for owner, attr in attributes.findall(text):
        names.add(f"{aliases.get(owner, owner)}.{attr}")
    return names


def unused_reexports(root: Path, modules: dict[str, Path], readers: Iterable[Path]) -> list[str]:
    """``module.name`` for every re-export no other file imports from the module or reads as an
    attribute of it (code, tests, scripts and docs; an example in a doc counts as a use)."""
    exported = reexports(modules)
    listed = sorted(set().union(*exported.values()))
    attributes = re.compile(r"\b([A-Za-z_][\w.]*)\.(" + "|".join(map(re.escape, listed)) + r")\b")
    read: set[str] = set()
    for path in readers:
        parts = list(path.relative_to(root).with_suffix("").parts)
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        read |= _names_read(module, path.read_text(encoding="utf-8"), path.name == "__init__.py",
                            modules, attributes)
    return sorted(f"{module}.{name}" for module, names in exported.items() for name in names
                  if f"{module}.{name}" not in read)


def _readers(root: Path) -> list[Path]:
    found = [p for d in (PACKAGE, "tests", "bench", "examples", "docs")
             for p in sorted((root / d).rglob("*.py"))]
    found += [*sorted((root / "docs").glob("*.md")), root / "README.md", root / "inference.py"]
    return [p for p in found if p.is_file()]


def test_every_reexport_is_used() -> None:
    modules = module_files(REPO, PACKAGE)
    assert unused_reexports(REPO, modules, _readers(REPO)) == []


def test_an_unused_reexport_is_caught(tmp_path: Path) -> None:
    _write(tmp_path, {
        "pkg/__init__.py": "from .a import kept, dropped\n__all__ = ['dropped', 'kept']\n",
        "pkg/a.py": "kept = 1\ndropped = 2\n",
        "pkg/user.py": "from pkg import kept\n",
    })
    modules = module_files(tmp_path, "pkg")
    assert unused_reexports(tmp_path, modules, sorted((tmp_path / "pkg").rglob("*.py"))) == ["pkg.dropped"]
