"""The console as a first-time visitor meets it, on a phone (390x844) and a desktop (1440x900):
the task's goal and what scores in the first viewport, no sideways scrolling, the status card
clear of the toolbar, a legend entry for every mark, the selection hint gone after a dispatch,
one clock per event line. The legend's coverage is checked on the page source as well, so it
holds without a browser."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support_server import RunningServer

from codered_env.citymap import map_layout
from codered_env.sim import TASKS
from codered_env.sim.catalogue import action_spec
from codered_env.sim.types import AMBULANCE_STATES, OR_STATES, SPECIALIST_STATES
from codered_env.web import asset
from codered_env.web.briefing import task_briefs

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORTS = {"phone": (390, 844), "desktop": (1440, 900)}


def legend_html() -> str:
    page = asset("index.html")
    start = page.index('data-testid="legend"')
    return page[start:page.index("</section>", start)]


def expected_legend_ids() -> set[str]:
    layout = map_layout()
    return (
        {f"legend-road-{edge['kind']}" for edge in layout["edges"]}
        | {f"legend-node-{node['kind']}" for node in layout["nodes"].values()}
        | {f"legend-unit-{status}" for status in AMBULANCE_STATES}
        | {"legend-road-closed", "legend-road-congested", "legend-road-minutes", "legend-unit-mutual",
           "legend-person-patient", "legend-person-call", "legend-priorities", "legend-person-states",
           "legend-hospital-diverted", "legend-hospital-crowded", "legend-hospital-beds", "legend-or-states",
           "legend-specialists", "legend-time"}
    )


# ---------------------------------------------------------------------------- the page source
def test_the_legend_explains_every_mark_the_map_draws() -> None:
    legend = legend_html()
    missing = sorted(i for i in expected_legend_ids() if f'data-testid="{i}"' not in legend)
    assert not missing, f"legend entries missing: {missing}"
    for state in OR_STATES:
        assert f'class="box or-{state}"' in legend, state
    for state in SPECIALIST_STATES:
        assert f'class="box spec-{state}"' in legend, state
    for specialty in action_spec("page_specialist").params[1].choices or ():
        assert f"<b>{specialty[0].upper()}</b> {specialty.replace('_', ' ')}" in legend, specialty


def test_riverside_roads_do_not_look_closed() -> None:
    css = asset("console.css")
    rules = dict(re.findall(r"\.road\.(\w+) line \{([^}]*)\}", css))
    assert "dasharray" not in rules["riverside"], "a dashed riverside road reads as closed"
    assert "dasharray" in rules["closed"]


def test_every_task_has_a_goal_and_a_short_scoring_line() -> None:
    for brief in task_briefs():
        assert brief["goal"] == TASKS[brief["task_id"]].description
        sentences = [s for s in re.split(r"(?<=[.;])\s", brief["scoring"]) if s.endswith(".")]
        assert 1 <= len(sentences) <= 2 and len(brief["scoring"]) < 330, brief["scoring"]
        assert sum(c["weight"] for c in brief["components"]) == pytest.approx(1, abs=1e-3)
        unexplained = [c["name"] for c in brief["components"] if c["what"] == c["name"].replace("_", " ")]
        assert not unexplained, f"grade components without words (web/briefing.py): {unexplained}"
        assert f"{round(100 * brief['components'][0]['weight'])}%" in brief["scoring"]


# ---------------------------------------------------------------------------- in Chromium
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if importlib.util.find_spec("playwright") is None:
        pytest.skip("the playwright package is not installed")
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def box(page: Any, testid: str) -> dict[str, float]:
    found = page.locator(f"[data-testid={testid}]").bounding_box()
    assert found is not None, f"{testid} is not displayed"
    return found


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return not (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])


def wait_step(page: Any, n: int) -> None:
    page.wait_for_function(
        "n => parseInt(document.querySelector('[data-testid=step]').textContent) >= n", arg=n
    )


@pytest.mark.parametrize("size", VIEWPORTS)
def test_a_first_visit(browser: Any, server: RunningServer, size: str) -> None:
    width, height = VIEWPORTS[size]
    page = browser.new_page(viewport={"width": width, "height": height})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.set_default_timeout(30_000)
    try:
        page.goto(server.base_url + "/web")
        page.wait_for_selector("[data-testid=map-unit-ALS1]")
        wait_step(page, 0)

        # The goal and what scores, in the first viewport without scrolling.
        assert page.text_content("[data-testid=goal]") == TASKS["task1"].description
        assert page.text_content("[data-testid=scoring]") == task_briefs()[0]["scoring"]
        for testid in ("goal", "scoring"):
            found = box(page, testid)
            assert found["y"] >= 0 and found["y"] + found["height"] <= height, f"{testid} below the fold"
        assert page.is_visible("[data-testid=scoring-details] summary")

        # No sideways scrolling; the status card clear of the toolbar; nothing wider than the page.
        assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
        assert not overlap(box(page, "status"), box(page, "play-bar"))
        assert not overlap(box(page, "status"), box(page, "map"))
        assert box(page, "play-bar")["x"] + box(page, "play-bar")["width"] <= width

        # Every legend entry is on the page.
        legend = page.locator("[data-testid=legend]")
        for testid in sorted(expected_legend_ids()):
            assert legend.locator(f"[data-testid={testid}]").count() == 1, testid

        # Select a unit: the hint says so; dispatch it: the hint is gone.
        assert page.is_hidden("[data-testid=selection-hint]")
        page.click("[data-testid=map-unit-ALS1]")
        page.wait_for_selector("[data-testid=map-patient-P1].target")
        assert "ALS1 selected" in (page.text_content("[data-testid=selection-hint]") or "")
        assert page.is_visible("[data-testid=selection-hint]")
        page.click("[data-testid=map-patient-P1]")
        wait_step(page, 1)
        assert page.is_hidden("[data-testid=selection-hint]")
        assert "ALS1" in (page.text_content("[data-testid=patient-status-P1]") or "")

        # One clock per event line: the line's own minute, not repeated in its text.
        page.click("[data-testid=advance]")
        wait_step(page, 2)
        lines = page.eval_on_selector_all(
            "[data-testid=events] li:not(.empty)",
            "els => els.map(li => [li.querySelectorAll('.when').length, li.textContent])",
        )
        assert lines, "no event line"
        for stamps, text in lines:
            assert stamps == 1 and re.match(r"^t\d+\S", text) and not re.match(r"^t\d+\s*t\d+\b", text), text
        assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
        if size == "phone":  # the zoomed map pans inside its card, the page still does not
            page.click("[data-testid=map-zoom]")
            assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
            assert page.evaluate("document.getElementById('map-box').scrollWidth > window.innerWidth")
        assert errors == []
    finally:
        page.close()


def test_the_end_of_an_episode_fits_a_phone(browser: Any, server: RunningServer) -> None:
    """Autoplay task1 to the end at 390 px: the final grade's tables scroll inside their card,
    the page still does not scroll sideways."""
    width, height = VIEWPORTS["phone"]
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(120_000)
    try:
        page.goto(server.base_url + "/web?task_id=task1&seed=1")
        page.wait_for_selector("[data-testid=map-unit-ALS1]")
        wait_step(page, 0)
        page.click("[data-testid=autoplay]")
        page.wait_for_selector("[data-testid=final-patients]")
        assert page.is_visible("[data-testid=final-score]")
        assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
        card = box(page, "final-grade")
        assert card["x"] >= 0 and card["x"] + card["width"] <= width
    finally:
        page.close()
