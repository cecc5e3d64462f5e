"""The console's ES modules (``web/static/*.js``): every import names an export of a module in
``JS_MODULES``, every export is imported somewhere, and the offline file's joined script keeps
every module's code with no import/export left and no top-level name defined twice."""

from __future__ import annotations

import re
from importlib import resources

from codered_env.web import JS_MODULES, asset, bundled_script, offline_page

IMPORT = re.compile(r'^import \{ ([^}]*) \} from "\./([a-z]+\.js)";$', re.M)
EXPORT = re.compile(r"^export (?:async )?(?:function|const|let) ([\w$]+)", re.M)
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
