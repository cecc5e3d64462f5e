"""The browser dispatch console (``GET /web``) and its offline replay form (``codered view``).

The page is static files in ``static/``: ``index.html``, ``console.css`` and the script as ES
modules by panel (``JS_MODULES``: ``console.js`` is the entry and imports the others), with no
build step and nothing fetched from elsewhere. Served by the OpenEnv server, the page loads its
script and style from ``/web/static/`` (no inline script or style, so a strict
Content-Security-Policy holds). For an offline file, ``offline_page`` inlines the same CSS and
the modules joined into one inline module (``bundled_script``) and embeds the episode as JSON in
a non-executable ``<script type="application/json" id="episode-data">`` block; the script then
starts in replay mode without any server.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

#: The console's ES modules, each after the modules it imports (the offline file joins them in
#: this order); ``console.js`` is the entry the page loads.
JS_MODULES: tuple[str, ...] = (
    "common.js", "map.js", "actions.js", "panels.js", "play.js", "replay.js", "console.js",
)
ASSETS: dict[str, str] = {
    **dict.fromkeys(JS_MODULES, "text/javascript; charset=utf-8"),
    "console.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
# A module's static imports (one line each) and the export keyword, dropped when joining.
_IMPORT_LINE = re.compile(r'^import \{[^}]*\} from "\./[a-z]+\.js";\n', re.M)
_EXPORT = re.compile(r"^export (?=(?:async )?function |const |let )", re.M)
_ICON_TAG = '<link rel="icon" href="/web/static/favicon.svg" type="image/svg+xml">'
_CSS_TAG = '<link rel="stylesheet" href="/web/static/console.css">'
_JS_TAG = '<script type="module" src="/web/static/console.js"></script>'


@lru_cache(maxsize=8)
def asset(name: str) -> str:
    """The text of one static file (``index.html`` or a name in ``ASSETS``)."""
    if name != "index.html" and name not in ASSETS:
        raise KeyError(name)
    return (resources.files(__package__) / "static" / name).read_text(encoding="utf-8")


def bundled_script() -> str:
    """The modules as one module script for an offline file: their imports and export keywords
    dropped, joined in ``JS_MODULES`` order (their top-level names are distinct)."""
    parts = [_EXPORT.sub("", _IMPORT_LINE.sub("", asset(name))) for name in JS_MODULES]
    return "\n".join(parts)


def embed_json(payload: Any) -> str:
    """JSON safe inside a <script> element: '<', '>' and '&' are written as \\u escapes, so no
    '</script>' or '<!--' can end the element early; JSON.parse reads it back unchanged."""
    text = json.dumps(payload, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def offline_page(payload: dict[str, Any]) -> str:
    """The console as ONE self-contained file replaying ``payload`` ({title, map, frames})."""
    page = asset("index.html")
    for tag in (_CSS_TAG, _JS_TAG):
        if tag not in page:
            raise RuntimeError(f"index.html lost its asset tag {tag}")
    # Replace the tags via a function so no backslash or group reference in the assets is
    # interpreted; the CSS and JS are our own files and contain no '</style>' or '</script>'.
    css = asset("console.css")
    js = bundled_script()
    if "</style" in css or "</script" in js:
        raise RuntimeError("an asset contains a closing tag and cannot be inlined")
    data = f'<script type="application/json" id="episode-data">{embed_json(payload)}</script>'
    page = page.replace(_ICON_TAG, "").replace(_CSS_TAG, f"<style>{css}</style>")
    return page.replace(_JS_TAG, f'{data}\n<script type="module">{js}</script>')
