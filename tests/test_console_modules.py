"""The console's ES modules (``web/static/*.js``): every import names an export of a module in
``JS_MODULES``, every export is imported somewhere, no module imports itself through others
(no import circle), and the offline file's joined script keeps every module's code with no
import/export left and no top-level name defined twice."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

from codered_env.web import JS_MODULES, asset, bundled_script, offline_page

IMPORT = re.compile(r'^import \{ ([^}]*) \} from "\./([a-z]+\.js)";$', re.M)
EXPORT = re.compile(r"^export (?:async )?(?:function|const|let) ([\w$]+)", re.M)
# Any static import or re-export, whatever its form (named, default, namespace, bare, multi-line).
ANY_IMPORT = re.compile(
    r'^\s*(?:import|export)\b[^;]*?\bfrom\s*["\']([^"\']+)["\']|^\s*import\s*["\']([^"\']+)["\']', re.M
)
WEB = Path(__file__).resolve().parents[1] / "codered_env" / "web"
TOP_LEVEL = re.compile(r"^(?:export )?(?:async )?(?:function|const|let) ([\w$]+)", re.M)


def test_the_static_folder_holds_exactly_the_listed_modules() -> None:
    static = resources.files("codered_env.web") / "static"
    assert {p.name for p in static.iterdir() if p.name.endswith(".js")} == set(JS_MODULES)
    assert JS_MODULES[-1] == "console.js", "the entry module comes last in the offline file"


def test_imports_resolve_to_exports_and_every_export_is_used() -> None:
    exports = {name: set(EXPORT.findall(asset(name))) for name in JS_MODULES}
    imported: set[tuple[str, str]] = set()
    for name in JS_MODULES:
        text = asset(name)
        lines = [line for line in text.splitlines() if line.startswith("import")]
        assert len(lines) == len(IMPORT.findall(text)), f"{name}: one-line named imports only"
        for names, source in IMPORT.findall(text):
            assert source in JS_MODULES and source != name
            for imported_name in names.split(", "):
                assert imported_name in exports[source], f"{name} imports {imported_name} from {source}"
                imported.add((source, imported_name))
    unused = {(m, n) for m, names in exports.items() for n in names} - imported
    assert not unused, f"exported but never imported: {sorted(unused)}"


def test_offline_script_is_the_modules_joined() -> None:
    script = bundled_script()
    assert not re.search(r"^(import|export) ", script, re.M)
    names = TOP_LEVEL.findall(script)
    assert len(names) == len(set(names)), "a top-level name defined in two modules"
    assert names == [n for module in JS_MODULES for n in TOP_LEVEL.findall(asset(module))]
    page = offline_page({"title": "t", "map": {}, "frames": []})
    assert f'<script type="module">{script}</script>' in page


def import_graph(root: Path) -> dict[str, set[str]]:
    """Each ``.js`` file under ``root`` (relative path) -> the files it imports statically."""
    graph: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.js")):
        targets = set()
        for match in ANY_IMPORT.finditer(path.read_text(encoding="utf-8")):
            spec = match.group(1) or match.group(2)
            assert spec.startswith("./") or spec.startswith("../"), f"{path.name} imports {spec!r}"
            targets.add((path.parent / spec).resolve().relative_to(root.resolve()).as_posix())
        graph[path.relative_to(root).as_posix()] = targets
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` as a path that ends where it starts, or None."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" once fully explored
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return [*path[path.index(target):], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_console_modules_have_no_import_circle() -> None:
    graph = import_graph(WEB)
    assert set(graph) >= {f"static/{name}" for name in JS_MODULES}
    missing = {target for targets in graph.values() for target in targets} - set(graph)
    assert not missing, f"imports of missing files: {sorted(missing)}"
    cycle = find_cycle(graph)
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_js_modules_lists_each_module_after_the_ones_it_imports() -> None:
    graph = import_graph(WEB)
    position = {f"static/{name}": n for n, name in enumerate(JS_MODULES)}
    for module, targets in graph.items():
        for target in targets:
            assert position[target] < position[module], f"{module} imports {target}, listed later"


@pytest.mark.parametrize(
    ("sources", "cycle"),
    [
        (
            {"a.js": 'import { x } from "./b.js";', "b.js": 'export { y } from "./a.js";'},
            ["a.js", "b.js", "a.js"],
        ),
        ({"a.js": 'import {\n  x,\n} from "./a.js";'}, ["a.js", "a.js"]),
        (
            {"a.js": 'import "./sub/c.js";', "sub/c.js": 'import * as a from "../a.js";'},
            ["a.js", "sub/c.js", "a.js"],
        ),
        ({"a.js": 'import { x } from "./b.js";', "b.js": "export const x = 1;"}, None),
    ],
)
def test_the_circle_finder_sees_every_import_form(tmp_path: Path, sources: dict[str, str], cycle) -> None:
    for name, text in sources.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text + "\n", encoding="utf-8")
    assert find_cycle(import_graph(tmp_path)) == cycle
