"""The keyed-lines API (``sim/render_lines.py``): render_text is its lines joined, every entity
has exactly one line keyed by its id, and each option removes exactly what it says."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from codered_env.agents import make_agent
from codered_env.sim import TASK_IDS, CodeRedSim, render_text
from codered_env.sim.city import NODE_NAMES
from codered_env.sim.render_lines import INLINE_SECTIONS, SECTIONS, lines_text, render_lines


def played_states(
    task: str, seed: int, agent_name: str, every: int = 3, city: object = "prakashnagar"
) -> Iterator[dict[str, Any]]:
    """Every ``every``-th observation of one episode; ``noisy`` is random play with 1 in 5
    decisions replaced by an invalid action (so error lines appear)."""
    sim = CodeRedSim(task, seed, city=city)
    agent = make_agent("random" if agent_name == "noisy" else agent_name, seed=seed)
    agent.reset(task, seed)
    rng = random.Random(f"{task}:{seed}:{agent_name}")
    obs = sim.observation()
    for n in range(10_000):
        if n % every == 0 or obs["done"]:
            yield obs
        if obs["done"]:
            return
        action = agent.act(obs)
        if agent_name == "noisy" and rng.random() < 0.2:
            action = {"action_type": "dispatch_ambulance", "ambulance_id": "ALS9", "patient_id": "P99"}
        sim.step(action)
        obs = sim.observation()


def all_states(seeds: range = range(2)) -> Iterator[dict[str, Any]]:
    for task in TASK_IDS:
        for seed in seeds:
            for agent_name in ("random", "heuristic", "noisy"):
                yield from played_states(task, seed, agent_name)


STATES = list(all_states())
# a generated city's observations also show its map (Prakashnagar's is documented instead)
CITY_STATES = list(played_states("task5", 0, "heuristic", city=100_000))


def test_states_cover_every_section() -> None:
    seen = {line.section for obs in STATES + CITY_STATES for line in render_lines(obs)}
    assert seen == set(SECTIONS)
    assert "map" not in {line.section for obs in STATES for line in render_lines(obs)}


@pytest.mark.parametrize("obs", CITY_STATES[::9])
def test_a_generated_citys_lines_keep_section_order(obs: dict[str, Any]) -> None:
    lines = render_lines(obs)
    assert lines_text(lines) == render_text(obs)
    order = [SECTIONS.index(line.section) for line in lines]
    assert order == sorted(order) and sum(line.section == "map" for line in lines) == 1


@pytest.mark.parametrize("obs", STATES[::7])
def test_render_text_is_the_lines_joined_in_section_order(obs: dict[str, Any]) -> None:
    lines = render_lines(obs)
    assert lines_text(lines) == render_text(obs)
    order = [SECTIONS.index(line.section) for line in lines]
    assert order == sorted(order)
    heads = [line.section for line in lines if line.key is None]
    assert len(heads) == len(set(heads)), "one head line per section"
    assert set(heads) == {line.section for line in lines}, "every section has its head line"


def test_every_entity_has_one_line_keyed_by_its_id() -> None:
    for obs in STATES[::5]:
        lines = render_lines(obs)
        keyed = {(line.section, line.key): line.text for line in lines if line.key is not None}
        assert len(keyed) == sum(line.key is not None for line in lines), "keys unique per section"
        assert {k for s, k in keyed if s == "calls"} == {c["call_id"] for c in obs["calls"]}
        assert {k for s, k in keyed if s == "units"} == {a["ambulance_id"] for a in obs["ambulances"]}
        assert {k for s, k in keyed if s == "hospitals"} == {h["hospital_id"] for h in obs["hospitals"]}
        shown = {p["patient_id"] for p in obs["patients"] if p["status"] not in ("treated", "released")}
        assert {k for s, k in keyed if s == "patients"} == shown
        text_lines = render_text(obs).splitlines()
        units_line = next(t for t in text_lines if t.startswith("UNITS: "))
        for (section, key), line in keyed.items():
            assert line.startswith(key)
            if section in INLINE_SECTIONS:
                assert line in units_line[len("UNITS: "):].split("; ")
            else:
                assert " " + line in text_lines


def _by_key(lines: list) -> dict[tuple[str, str | None], str]:
    return {(line.section, line.key): line.text for line in lines}


def test_options_remove_exactly_what_they_say() -> None:
    for obs in STATES[::5]:
        full = _by_key(render_lines(obs))
        no_legal = _by_key(render_lines(obs, legal=False))
        assert no_legal == {k: v for k, v in full.items() if k[0] != "legal"}
        no_stock = _by_key(render_lines(obs, blood_stock=False))
        changed = {k for k in full if full[k] != no_stock[k]}
        assert {s for s, _ in changed} <= {"hospitals"}
        for h in obs["hospitals"]:
            line = no_stock[("hospitals", h["hospital_id"])]
            assert (" | blood " in line) == (not h["blood"]), "stock shown only as 'blood none'"
        compact = _by_key(render_lines(obs, compact=True))
        assert compact.keys() == full.keys()
        assert not compact[("clock", None)].startswith("CodeRedEnv")
        assert full[("clock", None)].endswith(compact[("clock", None)])
        for name in NODE_NAMES.values():
            assert all(name not in v for (s, _), v in compact.items() if s == "hospitals")
        for section in ("error", "events", "alerts", "calls", "roads", "mutual_aid", "or_status", "legal"):
            assert {k: v for k, v in compact.items() if k[0] == section} == {
                k: v for k, v in full.items() if k[0] == section}, "free text is never rewritten"


def test_compact_units_and_specialists() -> None:
    obs = next(o for o in STATES if any(a["mutual_aid"] for a in o["ambulances"]))
    compact = _by_key(render_lines(obs, compact=True))
    for a in obs["ambulances"]:
        line = compact[("units", a["ambulance_id"])]
        kind_said = a["ambulance_id"].startswith(a["kind"]) and not a["mutual_aid"]
        assert line.startswith(a["ambulance_id"] + (" " if kind_said else f"({a['kind']},MA) "))
    obs = STATES[0]
    compact = _by_key(render_lines(obs, compact=True))
    for h in obs["hospitals"]:
        line = compact[("hospitals", h["hospital_id"])]
        on_call = [k for k, s in h["specialists"].items() if s["state"] == "on_call"]
        assert ":on_call" not in line
        if on_call:
            assert "on_call " in line


def test_bad_observation_raises_a_key_error_not_garbage() -> None:
    obs = dict(STATES[0])
    del obs["hospitals"]
    with pytest.raises(KeyError):
        render_lines(obs)
