"""The HTML episode viewer: frames hold only what the agent saw, the page is one offline file
whose embedded JSON round-trips, and (when a browser is installed) the controls work."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from codered_env.sim import CodeRedSim
from codered_env.sim.city import NODE_IDS
from codered_env.viewer import (
    NODE_POSITIONS,
    OMITTED_KEYS,
    embed_json,
    map_layout,
    public_view,
    record_frames,
    render_html,
    view_command,
)

CHROMIUM = Path("/usr/bin/chromium")
DATA_TAG = re.compile(r'<script type="application/json" id="episode-data">(.*?)</script>', re.S)
FRAME_KEYS = {"observation", "action", "reward", "error"}


@pytest.fixture(scope="module")
def phase2_frames() -> list[dict[str, Any]]:
    return record_frames("task4", 0, "heuristic")


@pytest.fixture(scope="module")
def phase1_frames() -> list[dict[str, Any]]:
    return record_frames("task3", 1, "random")


def embedded_payload(page: str) -> dict[str, Any]:
    blocks = DATA_TAG.findall(page)
    assert len(blocks) == 1
    return json.loads(blocks[0])


def replay_observations(task_id: str, seed: int, frames: list[dict[str, Any]]):
    """Yield (frame, full observation, sim) re-created by replaying the frames' actions."""
    sim = CodeRedSim(task_id, seed)
    yield frames[0], sim.observation(), sim
    for frame in frames[1:]:
        result = sim.step(frame["action"])
        assert (result.reward, result.error) == (frame["reward"], frame["error"])
        yield frame, sim.observation(), sim
    assert sim.done


@pytest.mark.parametrize(
    ("task_id", "seed", "fixture"), [("task4", 0, "phase2_frames"), ("task3", 1, "phase1_frames")]
)
def test_frames_are_exactly_the_public_observations(task_id, seed, fixture, request) -> None:
    frames = request.getfixturevalue(fixture)
    assert frames[0]["action"] is None and frames[-1]["observation"]["done"]
    for n, (frame, observation, _) in enumerate(replay_observations(task_id, seed, frames)):
        assert set(frame) == FRAME_KEYS
        assert frame["observation"]["step"] == n
        assert set(frame["observation"]) == set(observation) - set(OMITTED_KEYS)
        assert frame["observation"] == {k: v for k, v in observation.items() if k not in OMITTED_KEYS}


def test_phase2_frames_never_reveal_unseen_callers(phase2_frames) -> None:
    unseen_total = 0
    for frame, _, sim in replay_observations("task4", 0, phase2_frames):
        obs = frame["observation"]
        unseen = {p.patient_id for p in sim.world.patients.values() if not p.visible}
        unseen_total += len(unseen)
        assert {p["patient_id"] for p in obs["patients"]}.isdisjoint(unseen)
        for call in obs["calls"]:
            assert "condition" not in call and "true_priority" not in call
            assert call["patient_id"] is None  # open calls: nobody on scene yet
        text = json.dumps(obs)
        assert '"reserve"' not in text and '"true_priority"' not in text
    assert unseen_total > 0  # the check had hidden callers to protect


def test_page_is_one_offline_file_whose_json_round_trips(phase2_frames) -> None:
    page = render_html(phase2_frames, "task4 replay")
    assert page.startswith("<!DOCTYPE html>")
    for banned in ("http://", "https://", "<link", " src=", "@import", "url("):
        assert banned not in page, banned
    assert page.count("</script>") == 2
    payload = embedded_payload(page)
    assert payload["frames"] == phase2_frames
    assert payload["title"] == "task4 replay"


def test_embedding_escapes_script_terminators() -> None:
    frames = record_frames("task1", 0, "noop")[:2]
    frames[1]["observation"]["events"].append("</script><script>alert(1)</script><!-- & done")
    page = render_html(frames, "</title>hostile")
    assert page.count("</script>") == 2 and "<!--" not in page
    assert "</title>hostile" not in page
    assert embedded_payload(page)["frames"] == frames
    assert json.loads(embed_json({"a": "</b>"})) == {"a": "</b>"}


def test_every_frames_ambulances_can_be_drawn(phase1_frames, phase2_frames) -> None:
    for frames in (phase1_frames, phase2_frames):
        payload = embedded_payload(render_html(frames, "t"))
        nodes = payload["map"]["nodes"]
        for frame in payload["frames"]:
            ambulances = frame["observation"]["ambulances"]
            assert ambulances
            for amb in ambulances:
                assert amb["node"] in nodes
                assert amb["next_node"] is None or amb["next_node"] in nodes


def test_layout_covers_every_node() -> None:
    assert set(NODE_POSITIONS) == set(NODE_IDS)
    layout = map_layout()
    for node in layout["nodes"].values():
        assert 0 <= node["x"] <= layout["width"] and 0 <= node["y"] <= layout["height"]


def test_public_view_is_a_detached_copy() -> None:
    observation = CodeRedSim("task1", 0).observation()
    view = public_view(observation)
    view["ambulances"][0]["status"] = "changed"
    assert observation["ambulances"][0]["status"] != "changed"
    assert "legal_actions" not in view


def test_view_command_writes_a_replay(tmp_path) -> None:
    app = typer.Typer()
    app.command()(view_command)
    out = tmp_path / "replay.html"
    args = ["--task", "task1", "--seed", "2", "--agent", "heuristic", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert embedded_payload(out.read_text(encoding="utf-8"))["frames"][0]["observation"]["seed"] == 2
    bad = CliRunner().invoke(app, ["--agent", "llm", "--out", str(tmp_path / "x.html")])
    assert bad.exit_code != 0 and not (tmp_path / "x.html").exists()


def test_replay_in_headless_chromium(tmp_path, phase2_frames) -> None:
    if importlib.util.find_spec("playwright") is None:
        pytest.skip("the playwright package is not installed (CI installs no browser)")
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (CI installs no browser)")
    from playwright.sync_api import sync_playwright

    page_file = tmp_path / "replay.html"
    page_file.write_text(render_html(phase2_frames, "browser test"), encoding="utf-8")
    args = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=args)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(page_file.as_uri())
            clocks = [page.text_content("#clock")]
            for n in range(1, 4):
                page.click("#next")
                clocks.append(page.text_content("#clock"))
                ids = {a["ambulance_id"] for a in phase2_frames[n]["observation"]["ambulances"]}
                drawn = set(
                    page.eval_on_selector_all("[data-ambulance]", "els => els.map(e => e.dataset.ambulance)")
                )
                assert drawn == ids
            assert clocks[0] == "t+0 min"
            assert len(set(clocks)) == len(clocks), clocks
            page.click("#prev")
            assert page.text_content("#clock") == clocks[2]
            assert errors == []
        finally:
            browser.close()
