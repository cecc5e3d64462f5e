"""The /web dispatch console: its JSON routes, its CSP-friendly page, and (when Chromium is
installed) a real browser playing, refusing and replaying episodes by clicking only."""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support_server import RunningServer

from codered_env.agents import make_agent
from codered_env.agents.heuristic import RULES
from codered_env.evaluation.trajectory import StepRecord, Trajectory, replay
from codered_env.sim import CodeRedSim, grade_episode
from codered_env.viewer import record_frames
from codered_env.web import ASSETS, asset

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture(scope="module")
def http(server: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=60) as client:
        yield client


def heuristic_actions(task_id: str, seed: int) -> list[dict[str, Any]]:
    agent = make_agent("heuristic", seed)
    agent.reset(task_id, seed)
    sim = CodeRedSim(task_id, seed)
    actions = []
    while not sim.done:
        action = agent.act(sim.observation())
        actions.append(action)
        sim.step(action)
    return actions


# ---------------------------------------------------------------------------- page and routes
def test_page_and_assets_have_no_inline_code_and_fetch_nothing_from_elsewhere(http: httpx.Client) -> None:
    page = http.get("/web")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    text = page.text
    assert text == asset("index.html")
    assert re.findall(r"<script[^>]*>", text) == ['<script type="module" src="/web/static/console.js">']
    assert "<style" not in text and " style=" not in text
    assert not re.search(r"\son[a-z]+=", text), "inline event handler"
    for name, media_type in ASSETS.items():
        served = http.get(f"/web/static/{name}")
        assert served.status_code == 200
        assert served.headers["content-type"].startswith(media_type.split(";")[0])
        body = served.text
        if name != "favicon.svg":
            assert "http://" not in body and "https://" not in body and "eval(" not in body
    assert http.get("/web/static/app.py").status_code == 422
    testids = set(re.findall(r'data-testid="([^"]+)"', text))
    documented = (DOCS / "VIEWER.md").read_text(encoding="utf-8")
    missing = sorted(t for t in testids if f"`{t}`" not in documented)
    assert not missing, f"data-testid values not documented in docs/VIEWER.md: {missing}"


def test_advice_suggests_the_heuristics_next_action_and_hides_patients_until_the_end(
    http: httpx.Client,
) -> None:
    expected = heuristic_actions("task5", 0)
    for n in (0, 3, 7):
        body = {"task_id": "task5", "seed": 0, "actions": expected[:n]}
        answer = http.post("/web/advice", json=body).json()
        assert answer["step"] == n and answer["done"] is False
        assert answer["suggestion"]["action"] == expected[n]
        assert 1 <= answer["suggestion"]["rule"] <= len(RULES) and answer["suggestion"]["reason"]
        # Running grade: no per-patient rows (they name callers' true conditions).
        assert "patients" not in answer["grade"] and "components" in answer["grade"]
    final = http.post("/web/advice", json={"task_id": "task5", "seed": 0, "actions": expected}).json()
    assert final["done"] is True and final["suggestion"] is None
    assert final["grade"] == grade_episode("task5", 0, expected)


def test_asking_once_per_step_plays_the_agents_episode(http: httpx.Client) -> None:
    """Autoplay asks /web/advice at every step: for the heuristic that is its own episode."""
    actions: list[dict[str, Any]] = []
    while True:
        answer = http.post("/web/advice", json={"task_id": "task2", "seed": 1, "actions": actions}).json()
        if answer["done"]:
            break
        actions.append(answer["suggestion"]["action"])
    assert actions == heuristic_actions("task2", 1)
    noop = http.post("/web/advice", json={"task_id": "task2", "seed": 1, "agent": "noop"}).json()
    assert noop["suggestion"]["action"] == {"action_type": "maintain_plan"}
    body = {"task_id": "task5", "seed": 2, "actions": actions[:0], "agent": "random"}
    first = http.post("/web/advice", json=body).json()["suggestion"]
    assert first == http.post("/web/advice", json=body).json()["suggestion"]  # deterministic
    assert first["action"]["action_type"] in CodeRedSim("task5", 2).observation()["legal_actions"]


def test_frames_and_stored_episodes_are_the_viewer_frames(http: httpx.Client) -> None:
    stored = http.get("/web/episode", params={"task_id": "task3", "seed": 2, "agent": "random"}).json()
    frames = record_frames("task3", 2, "random")
    assert stored["frames"] == json.loads(json.dumps(frames))
    actions = [frame["action"] for frame in frames[1:]]
    replayed = http.post("/web/frames", json={"task_id": "task3", "seed": 2, "actions": actions}).json()
    assert replayed["frames"] == stored["frames"]


@pytest.mark.parametrize(
    "body",
    [
        {"task_id": "task9"},
        {"seed": -1},
        {"actions": [{"action_type": "maintain_plan"}] * 501},
        {"actions": "maintain_plan"},
        {"surprise": 1},
        {"agent": "llm"},
    ],
)
def test_web_routes_refuse_bad_bodies_without_side_effects(http: httpx.Client, body: dict) -> None:
    for path in ("/web/advice", "/web/frames"):
        if path == "/web/frames" and "agent" in body:
            continue
        assert http.post(path, json=body).status_code == 422
    assert http.get("/web/episode", params={"agent": "llm"}).status_code == 422


def test_post_bodies_fit_500_actions_and_no_more_bytes_than_grader(http: httpx.Client) -> None:
    action = {"action_type": "dispatch_ambulance", "ambulance_id": "ALS1", "patient_id": "P1"}
    body = json.dumps({"task_id": "task5", "seed": 7, "actions": [action] * 500}).encode()
    headers = {"content-type": "application/json"}
    advice = http.post("/web/advice", content=body, headers=headers)
    assert advice.status_code == 200 and advice.json()["step"] >= 1
    frames = http.post("/web/frames", content=body, headers=headers)
    assert frames.status_code == 200 and len(frames.json()["frames"]) == advice.json()["step"] + 1
    huge = json.dumps({"task_id": "task1", "actions": [action] * 2000}).encode()
    for path in ("/web/advice", "/web/frames", "/grader"):
        assert http.post(path, content=huge, headers=headers).status_code == 413


def test_console_page_has_the_strict_csp(http: httpx.Client) -> None:
    page = http.get("/web")
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp and "style-src 'self'" in csp
    assert "unsafe" not in csp and page.headers["x-content-type-options"] == "nosniff"


def test_view_is_the_consoles_replay_mode(http: httpx.Client) -> None:
    moved = http.get("/view", params={"task_id": "task1", "seed": 4}, follow_redirects=False)
    assert moved.status_code == 307
    assert moved.headers["location"] == "/web?mode=replay&task_id=task1&seed=4&agent=heuristic"
    assert http.get("/view", params={"task_id": "task9"}).status_code == 422


# ---------------------------------------------------------------------------- in a browser
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if importlib.util.find_spec("playwright") is None:
        pytest.skip("the playwright package is not installed (CI installs no browser)")
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (CI installs no browser)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


class Console:
    """One page of the console, recording every console error and uncaught exception."""

    def __init__(self, browser: Any, url: str) -> None:
        self.page = browser.new_page(viewport={"width": 1500, "height": 1000})
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.set_default_timeout(30_000)
        self.page.goto(url)

    def testid(self, *ids: str) -> str:
        return " ".join(f"[data-testid={i}]" for i in ids)

    def text(self, *ids: str) -> str:
        return self.page.text_content(self.testid(*ids)) or ""

    def step(self) -> int:
        return int(self.text("step").split("/")[0])

    def click_step(self, *ids: str) -> None:
        """Click a control that sends one action and wait for the observation it brings."""
        before = self.step()
        self.page.click(self.testid(*ids))
        self.page.wait_for_function(
            "n => parseInt(document.querySelector('[data-testid=step]').textContent) > n", arg=before
        )

    def new_episode(self, task_id: str, seed: int) -> None:
        self.page.wait_for_selector(self.testid("map-unit-ALS1"))
        self.page.select_option(self.testid("task-select"), task_id)
        self.page.fill(self.testid("seed-input"), str(seed))
        self.page.click(self.testid("reset"))
        self.page.wait_for_function(
            "t => document.querySelector('[data-testid=status-line]').textContent.startsWith(t)"
            " && document.querySelector('[data-testid=step]').textContent.startsWith('0 /')",
            arg=f"{task_id} seed {seed}",
        )


def test_play_task1_by_clicking_and_the_score_is_the_servers_grade(
    browser: Any, server: RunningServer, http: httpx.Client
) -> None:
    console = Console(browser, server.base_url + "/web")
    console.new_episode("task1", 0)
    page = console.page
    # Select the unit on the map, then the patient: the dispatch.
    page.click(console.testid("map-unit-ALS1"))
    page.wait_for_selector(console.testid("map-patient-P1") + ".target")
    console.click_step("map-patient-P1")
    assert "ALS1" in console.text("patient-status-P1")
    console.click_step("patient-P1", "act-assign_hospital-H1")
    console.click_step("hospital-H1", "act-prepare_or-cath_lab")
    console.click_step("hospital-H1", "act-page_specialist-cardiology")
    clicked = [
        {"action_type": "dispatch_ambulance", "ambulance_id": "ALS1", "patient_id": "P1"},
        {"action_type": "assign_hospital", "patient_id": "P1", "hospital_id": "H1"},
        {"action_type": "prepare_or", "hospital_id": "H1", "procedure": "cath_lab"},
        {"action_type": "page_specialist", "hospital_id": "H1", "specialty": "cardiology"},
    ]
    clocks = set()
    while not page.is_visible(console.testid("done-banner")):
        clocks.add(console.text("clock"))
        console.click_step("advance")
        clicked.append({"action_type": "maintain_plan"})
    assert len(clocks) > 3  # the clock ran
    page.wait_for_selector(console.testid("final-score"))
    graded = http.post("/grader", json={"task_id": "task1", "seed": 0, "actions": clicked}).json()
    assert graded["steps"] == len(clicked)
    assert console.text("score") == f"{graded['score']:.4f}"
    assert console.text("final-score") == f"{graded['score']:.4f}"
    heuristic = http.post("/grader", json={"task_id": "task1", "seed": 0, "agent": "heuristic"}).json()
    assert console.text("heuristic-score") == f"{heuristic['score']:.4f}"
    assert page.locator(console.testid("final-patients") + " tr").count() == 1 + len(graded["patients"])
    assert page.is_disabled(console.testid("advance"))
    assert console.errors == []


def test_refused_action_shows_its_error_next_to_the_control(browser: Any, server: RunningServer) -> None:
    console = Console(browser, server.base_url + "/web")
    console.new_episode("task1", 0)
    page = console.page
    page.click("summary:has-text('Custom action')")
    refused = '{"action_type": "triage_call", "call_id": "C9", "priority": "P1"}'
    page.fill(console.testid("custom-action"), refused)
    console.click_step("custom-send")
    error = console.text("custom-action-box", "control-error")
    assert error and error == console.text("last-action-error")
    assert "C9" in error or "phase" in error
    # A schema error is refused by the server before the simulation: no step is taken.
    page.fill(console.testid("custom-action"), '{"action_type": "warp"}')
    page.click(console.testid("custom-send"))
    page.wait_for_function(
        "() => document.querySelector('[data-testid=custom-action-box] [data-testid=control-error]')"
        ".textContent.includes('warp') || document.querySelector('[data-testid=custom-action-box] "
        "[data-testid=control-error]').textContent.includes('action_type')"
    )
    assert console.step() == 1
    page.click(console.testid("title"))  # focus off the text field: Space is the Advance shortcut
    page.keyboard.press("Space")
    page.wait_for_function("() => parseInt(document.querySelector('[data-testid=step]').textContent) == 2")
    assert console.text("last-action-error") == ""
    assert console.errors == []


def test_suggest_and_autoplay_finish_like_the_heuristic(
    browser: Any, server: RunningServer, http: httpx.Client
) -> None:
    console = Console(browser, server.base_url + "/web")
    console.new_episode("task4", 1)
    page = console.page
    page.keyboard.press("s")  # the Suggest shortcut
    expected = heuristic_actions("task4", 1)
    page.wait_for_selector(console.testid("suggested-action"))
    assert console.text("suggested-action") == expected[0]["action_type"]
    assert "not triaged yet" in console.text("suggestion-reason")
    console.click_step("apply-suggestion")
    page.click(console.testid("autoplay"))
    page.wait_for_selector(console.testid("final-score"), timeout=120_000)
    heuristic = http.post("/grader", json={"task_id": "task4", "seed": 1, "agent": "heuristic"}).json()
    assert console.text("final-score") == console.text("heuristic-score") == f"{heuristic['score']:.4f}"
    assert console.errors == []


def test_replayed_trajectory_reaches_the_recorded_score(
    browser: Any, server: RunningServer, tmp_path: Path
) -> None:
    actions = heuristic_actions("task2", 3)
    sim = CodeRedSim("task2", 3)
    steps = []
    for n, action in enumerate(actions, start=1):
        result = sim.step(action)
        steps.append(StepRecord(n, action, result.reward, sim.done, result.error, sim.score_preview))
    path = tmp_path / "run.jsonl"
    final = sim.grade()["score"]
    Trajectory("task2", 3, "heuristic", "heuristic", steps=steps, end={"score": final}).save(path)
    assert replay(path).score == final

    console = Console(browser, server.base_url + "/web")
    page = console.page
    page.wait_for_selector(console.testid("map-unit-ALS1"))
    page.click(console.testid("mode-replay"))
    page.set_input_files(console.testid("trajectory-file"), str(path))
    page.wait_for_function(
        "() => document.querySelector('[data-testid=status-line]').textContent.includes('run.jsonl')"
    )
    assert console.text("step").startswith("0 /")
    page.click(console.testid("replay-next"))
    assert console.text("step").startswith("1 /")
    page.click(console.testid("replay-last"))
    assert console.text("score") == f"{final:.4f}"
    assert page.is_visible(console.testid("done-banner"))
    page.keyboard.press("Home")
    assert console.text("step").startswith("0 /")
    # A file that is not a trajectory is refused with a message, and nothing else changes.
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "step"}\n', encoding="utf-8")
    page.set_input_files(console.testid("trajectory-file"), str(bad))
    page.wait_for_selector(console.testid("replay-error"))
    assert "header" in console.text("replay-error")
    assert console.errors == []


def test_view_redirect_opens_the_stored_episode(browser: Any, server: RunningServer) -> None:
    console = Console(browser, server.base_url + "/view?task_id=task1&seed=0&agent=heuristic")
    page = console.page
    page.wait_for_function(
        "() => document.querySelector('[data-testid=status-line]').textContent.includes('heuristic agent')"
    )
    assert page.is_visible(console.testid("replay-bar")) and not page.is_visible(console.testid("play-bar"))
    page.click(console.testid("replay-last"))
    final = grade_episode("task1", 0, heuristic_actions("task1", 0))["score"]
    assert console.text("score") == f"{final:.4f}"
    assert console.errors == []
