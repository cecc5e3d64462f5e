"""A saved factored policy keeps the slot maxima it was built for: ``load_policy`` rebuilds
those shapes (Prakashnagar's for a file that names none) and ``factored:PATH`` plays in a mirror
with the same slots, in the episode's city.

Skips cleanly without PyTorch (the ``rl`` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from codered_env.agents import make_agent  # noqa: E402
from codered_env.agents.factored import load_policy, make_policy, save_policy  # noqa: E402
from codered_env.factored_ppo import FactoredConfig, greedy_grades, train_factored  # noqa: E402
from codered_env.gym_env import GENERATED_MAXIMA, PRAKASHNAGAR_MAXIMA  # noqa: E402
from codered_env.gym_env.slots import maxima_as_config  # noqa: E402
from codered_env.runner import LocalEnv, play, raise_agent_errors  # noqa: E402
from codered_env.sim.citygen import resolve_city  # noqa: E402

LARGE_CITY = 1  # a generated city with more units than Prakashnagar's slots
SMALL_CITY = 0  # a generated city that fits Prakashnagar's slots


def _played_score(agent: Any, task_id: str, seed: int, city: Any) -> float:
    """The grade of ``agent`` on (task, seed) in ``city``; any agent error is raised."""
    env = LocalEnv(text=False, city=city)
    play(env, agent, task_id, seed, on_agent_error=raise_agent_errors)
    return float(env.grade([])["score"])


def test_the_cities_are_the_sizes_the_tests_need() -> None:
    assert PRAKASHNAGAR_MAXIMA.problems(resolve_city(LARGE_CITY))
    assert not PRAKASHNAGAR_MAXIMA.problems(resolve_city(SMALL_CITY))


@pytest.mark.parametrize("maxima", [PRAKASHNAGAR_MAXIMA, GENERATED_MAXIMA], ids=["prakashnagar", "generated"])
def test_a_saved_policy_loads_with_its_slots(tmp_path: Path, maxima: Any) -> None:
    torch.manual_seed(0)
    policy = make_policy(8, maxima)
    path = tmp_path / "policy.pt"
    save_policy(policy, path, {"task_id": "task1", "hidden": 999})
    config = torch.load(path, weights_only=True)["config"]
    assert config == {"task_id": "task1", "hidden": 8, "maxima": maxima_as_config(maxima),
                      "type_first": False}
    loaded, _ = load_policy(path)
    assert loaded.maxima == maxima and loaded.hidden == 8
    saved = policy.state_dict()
    assert all(torch.equal(saved[k], v) for k, v in loaded.state_dict().items())


def test_a_file_without_maxima_is_prakashnagar_s(tmp_path: Path) -> None:
    old, wide, named = tmp_path / "old.pt", tmp_path / "wide.pt", tmp_path / "named.pt"
    torch.save({"state_dict": make_policy(8).state_dict(), "config": {"hidden": 8}}, old)
    assert load_policy(old)[0].maxima == PRAKASHNAGAR_MAXIMA
    generated = make_policy(8, GENERATED_MAXIMA).state_dict()
    torch.save({"state_dict": generated, "config": {"hidden": 8}}, wide)
    with pytest.raises(ValueError, match="do not fit"):  # the shapes need the stored maxima
        load_policy(wide)
    torch.save({"state_dict": generated, "config": {"hidden": 8, "maxima": "generated"}}, named)
    assert load_policy(named)[0].maxima == GENERATED_MAXIMA


FIELDS = maxima_as_config(GENERATED_MAXIMA)


@pytest.mark.parametrize(
    "value",
    ["huge", 7, [9, 5, 3, 64], {"units": 9}, {**FIELDS, "units": 0}, {**FIELDS, "units": True},
     {**FIELDS, "ors": 3.0}, {**FIELDS, "extra": 1}],
)
def test_malformed_maxima_are_a_clear_error(tmp_path: Path, value: Any) -> None:
    path = tmp_path / "policy.pt"
    torch.save({"state_dict": make_policy(8).state_dict(), "config": {"hidden": 8, "maxima": value}}, path)
    with pytest.raises(ValueError, match=r"config\.maxima: unknown slot maxima .*valid: 'prakashnagar', "
                                         r"'generated', or a mapping of units, hospitals, ors, cases"):
        load_policy(path)


def test_a_run_s_slots_must_be_known_and_match_init_from(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="valid: 'prakashnagar', 'generated'"):
        train_factored(FactoredConfig(maxima="huge", out_dir=str(tmp_path / "bad")), log=lambda line: None)
    start = tmp_path / "start.pt"
    save_policy(make_policy(8), start)
    config = FactoredConfig(hidden=8, maxima="generated", init_from=str(start), out_dir=str(tmp_path / "run"))
    with pytest.raises(ValueError, match=r"init_from .* has the slots"):
        train_factored(config, log=lambda line: None)


def test_a_generated_slots_run_plays_any_city_as_factored_path(tmp_path: Path) -> None:
    config = FactoredConfig(task_id="task1", total_steps=0, hidden=8, maxima="generated",
                            eval_seeds=[10_000], out_dir=str(tmp_path))
    train_factored(config, log=lambda line: None)
    saved = torch.load(tmp_path / "policy.pt", weights_only=True)["config"]
    assert saved["maxima"] == maxima_as_config(GENERATED_MAXIMA) and saved["task_id"] == "task1"
    agent = make_agent(f"factored:{tmp_path / 'policy.pt'}")
    for city in (LARGE_CITY, "prakashnagar", LARGE_CITY):  # the mirror follows each episode's city
        score = _played_score(agent, "task1", 10_000, city)
        assert agent.env.sim.city.key == resolve_city(city).key
        assert score == pytest.approx(greedy_grades(agent.policy, "task1", [10_000], [city])[0])


def test_a_prakashnagar_policy_refuses_a_city_its_slots_cannot_hold(tmp_path: Path) -> None:
    path = tmp_path / "policy.pt"
    save_policy(make_policy(8), path)
    agent = make_agent(f"factored:{path}")
    with pytest.raises(ValueError, match=r"cannot play city 'gen-1' with the slots .*7 units \(at most 5\)"):
        _played_score(agent, "task1", 0, LARGE_CITY)
    with pytest.raises(ValueError, match="cannot play city 1 with the slots"):
        agent.reset("task1", 0, city=LARGE_CITY)
    assert _played_score(agent, "task1", 0, SMALL_CITY) == pytest.approx(
        greedy_grades(agent.policy, "task1", [0], [SMALL_CITY])[0]
    )
