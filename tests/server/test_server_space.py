"""The Space opens the console: browsers asking for `/` go to `/web`, JSON clients keep the JSON,
and every console marker renders without an emoji font (issue 25)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from codered_env.server.app import create_codered_app, wants_html

ROOT = Path(__file__).resolve().parents[2]
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

# Unicode's Emoji_Presentation=Yes code points in the BMP, plus the pictograph planes: characters
# a plain text font does not draw (an empty box without an emoji font).
_EMOJI_BMP = {0x231A, 0x231B, 0x23E9, 0x23EA, 0x23EB, 0x23EC, 0x23F0, 0x23F3, 0x25FD, 0x25FE,
              0x2614, 0x2615, *range(0x2648, 0x2654), 0x267F, 0x2693, 0x26A1, 0x26AA, 0x26AB,
              0x26BD, 0x26BE, 0x26C4, 0x26C5, 0x26CE, 0x26D4, 0x26EA, 0x26F2, 0x26F3, 0x26F5,
              0x26FA, 0x26FD, 0x2705, 0x270A, 0x270B, 0x2728, 0x274C, 0x274E, 0x2753, 0x2754,
              0x2755, 0x2757, 0x2795, 0x2796, 0x2797, 0x27B0, 0x27BF, 0x2B1B, 0x2B1C, 0x2B50,
              0x2B55}


def _emoji(text: str) -> list[str]:
    return sorted({c for c in text if ord(c) in _EMOJI_BMP or 0x1F000 <= ord(c) <= 0x1FAFF})


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_codered_app())


def test_a_browser_asking_for_the_root_is_sent_to_the_console(client: TestClient) -> None:
    response = client.get("/", headers={"Accept": BROWSER_ACCEPT}, follow_redirects=False)
    assert response.status_code == 307 and response.headers["location"] == "/web"
    followed = client.get("/", headers={"Accept": BROWSER_ACCEPT})
    assert followed.status_code == 200 and "text/html" in followed.headers["content-type"]


@pytest.mark.parametrize("accept", [None, "application/json", "*/*"])
def test_json_clients_keep_the_endpoint_list(client: TestClient, accept: str | None) -> None:
    headers = {"Accept": accept} if accept else {}
    response = client.get("/", headers=headers, follow_redirects=False)
    assert response.status_code == 200
    assert "web" in response.json()["endpoints"] and response.json()["name"]


def test_accept_header_classification() -> None:
    assert wants_html(BROWSER_ACCEPT) and wants_html("TEXT/HTML")
    assert not wants_html(None) and not wants_html("application/json") and not wants_html("*/*")


def test_root_over_a_real_server(server) -> None:
    browser = httpx.get(server.base_url + "/", headers={"Accept": BROWSER_ACCEPT},
                        follow_redirects=True)
    assert browser.status_code == 200 and str(browser.url).endswith("/web")
    assert httpx.get(server.base_url + "/").json()["endpoints"]


def test_console_and_viewer_markers_need_no_emoji_font() -> None:
    static = ROOT / "codered_env" / "web" / "static"
    for path in [*static.iterdir(), ROOT / "codered_env" / "viewer.py"]:
        if path.suffix in (".html", ".js", ".css", ".py"):
            assert _emoji(path.read_text(encoding="utf-8")) == [], path.name
    assert _emoji("⛔ diverted") == ["⛔"]  # the marker this replaced would be caught


def test_space_front_matter_opens_the_console() -> None:
    front = ROOT.joinpath("README.md").read_text(encoding="utf-8").split("---")[1]
    assert re.search(r"^base_path: /web$", front, re.M)
    assert re.search(r"^app_port: 8000$", front, re.M)


def test_dockerignore_keeps_local_results_out_of_the_image_and_the_space() -> None:
    push = pytest.importorskip("openenv.cli.commands.push")
    patterns = [*push.DEFAULT_PUSH_IGNORE_PATTERNS,
                *push._read_ignore_file(ROOT / ".dockerignore")[0]]
    for local in ("codered_eval.db", "runs/ppo-task2/best.zip", ".venv/bin/python", "report/report.md",
                  "run.jsonl", "uv.lock", "tests/conftest.py", "eval.db-wal"):
        parts = Path(local).parts
        assert any(push._should_exclude_path(Path(*parts[:i + 1]), patterns)
                   for i in range(len(parts))), local
    for needed in ("README.md", "pyproject.toml", "Dockerfile", "openenv.yaml",
                   "codered_env/server/app.py", "codered_env/web/static/index.html",
                   "validation/runtime.json"):
        assert not push._should_exclude_path(Path(needed), patterns), needed
