"""The factored interface on generated cities (``city=``, ``split=``, ``CodeRedFactored-gen-taskN``):
masks exact against the simulation's legal actions, slots padded to the declared maxima, hidden
truth never shown, the city draw and the episode deterministic, bad choices refused."""

from __future__ import annotations

import itertools
from typing import Any

import gymnasium
import numpy as np
import pytest
from test_factored import _concrete, _type_first, assert_hidden_truth_never_shows

from codered_env.gym_env import (
    GENERATED_MAXIMA,
    NVEC,
    PRAKASHNAGAR_MAXIMA,
    CodeRedFactoredEnv,
    CodeRedFactoredVectorEnv,
)
from codered_env.gym_env.factored_actions import TYPE_INDEX
from codered_env.gym_env.factored_features import case_columns
from codered_env.gym_env.slots import MUTUAL_AID_IDS
from codered_env.sim.citygen import generate_city, split_seeds

# a small city (3 units, 2 hospitals), a large one (9 units, 5 hospitals) and two held-out ones
CITIES = (split_seeds("train")[106], split_seeds("train")[40], split_seeds("test")[0], split_seeds("test")[3])


def _small_and_large() -> None:
    sizes = {c: (len(generate_city(c).fleet), len(generate_city(c).hospitals)) for c in CITIES[:2]}
    assert sizes == {CITIES[0]: (3, 2), CITIES[1]: (9, 5)}, sizes


def _check_masks(env: CodeRedFactoredEnv, obs: dict[str, np.ndarray], where: str) -> None:
    """The legal vectors are exactly the simulation's concrete legal actions, and both masks
    are what those vectors mark (the layout's ``nvec``)."""
    nvec, offsets = env.core.legal.tables.nvec, env.core.legal.tables.offsets
    legal = env.legal_actions()
    rows = {tuple(int(v) for v in r) for r in legal}
    expected = _concrete(env.sim)
    assert len(rows) == len(legal) == len(expected), where
    assert {tuple(env.encode(w).tolist()) for w in expected} == rows, where
    for w in expected:
        assert env.decode(env.encode(w)) == w, (where, w)
    types = np.zeros((nvec[0], sum(nvec[1:])), bool)
    for r in rows:
        for k in range(1, len(nvec)):
            types[r[0], offsets[k] - nvec[0] + r[k]] = True
    assert np.array_equal(obs["type_masks"], types), where
    assert np.array_equal(obs["action_mask"], np.concatenate([types.any(axis=1), types.any(axis=0)])), where


def _check_slots(
    env: CodeRedFactoredEnv, obs: dict[str, np.ndarray], info: dict[str, Any], where: str
) -> None:
    city = env.sim.city
    units, hospitals = info["slots"]["unit"], info["slots"]["hospital"]
    assert units[: len(city.fleet)] == list(city.unit_ids), where
    assert units[len(city.fleet) : GENERATED_MAXIMA.units] == [None] * (
        GENERATED_MAXIMA.units - len(city.fleet)
    )
    assert units[GENERATED_MAXIMA.units :] == list(MUTUAL_AID_IDS), where
    assert hospitals == [*city.hospital_ids, *[None] * (GENERATED_MAXIMA.hospitals - len(city.hospitals))], (
        where
    )
    empty_units = [k for k, u in enumerate(units) if u is None]
    assert not obs["unit_present"][empty_units].any() and not obs["units"][empty_units].any(), where
    empty_hospitals = list(range(len(city.hospitals), GENERATED_MAXIMA.hospitals))
    assert not obs["hospitals"][empty_hospitals].any(), where
    assert not obs["case_hospital_minutes"][:, empty_hospitals].any(), where
    shown = {a["ambulance_id"] for a in env.sim.observation()["ambulances"]}
    assert {units[k] for k in np.flatnonzero(obs["unit_present"])} == shown, where
    cols = case_columns(GENERATED_MAXIMA)
    for k, name in enumerate(info["slots"]["case"]):
        patient = next((p for p in env.sim.observation()["patients"] if p["patient_id"] == name), None)
        if patient is not None and patient["destination"] is not None:
            slot = hospitals.index(patient["destination"])
            assert obs["cases"][k][cols.index(f"dest_H{slot + 1}")] == 1.0, (where, k)


def _play_checked(task_id: str, city: int, seed: int, max_steps: int) -> int:
    env = CodeRedFactoredEnv(task_id, city=city)
    obs, info = env.reset(seed=seed)
    rng, step, done = np.random.default_rng(seed), 0, False
    while not done and step < max_steps:
        where = f"{task_id} city {city} seed {seed} step {step}"
        _check_masks(env, obs, where)
        _check_slots(env, obs, info, where)
        assert env.observation_space.contains(obs), where
        obs, _, done, _, info = env.step(_type_first(env, rng))
        assert info["action_error"] is None, where
        step += 1
    return step


@pytest.mark.parametrize(
    ("task_id", "city"), [("task3", CITIES[0]), ("task5", CITIES[1]), ("task2", CITIES[2])]
)
def test_masks_exact_and_slots_padded_on_generated_cities(task_id: str, city: int) -> None:
    _small_and_large()
    assert _play_checked(task_id, city, seed=1, max_steps=8) == 8


@pytest.mark.slow
@pytest.mark.parametrize(
    ("task_id", "city"), list(itertools.product(("task1", "task3", "task4", "task5"), CITIES))
)
def test_masks_exact_over_whole_episodes_on_generated_cities(task_id: str, city: int) -> None:
    _play_checked(task_id, city, seed=2, max_steps=10_000)


@pytest.mark.parametrize("task_id", ["task4", "task5"])
def test_hidden_truth_never_shows_on_a_generated_city(task_id: str) -> None:
    assert_hidden_truth_never_shows(task_id, city=CITIES[2])


def _bytes_of(env: CodeRedFactoredEnv, seed: int, steps: int) -> list[Any]:
    obs, info = env.reset(seed=seed)
    rng, out = np.random.default_rng(seed), [info["city"]]
    for _ in range(steps):
        obs, reward, done, _, info = env.step(_type_first(env, rng))
        out.append((b"".join(a.tobytes() for a in obs.values()), reward))
        if done:
            break
    return out


def test_the_city_draw_and_the_episode_are_deterministic() -> None:
    a, b = (CodeRedFactoredEnv("task3", split="train", num_cities=10) for _ in range(2))
    assert _bytes_of(a, 7, 12) == _bytes_of(b, 7, 12)
    drawn = {a.core.cities.city_of(s).key for s in range(40)}
    assert drawn <= {f"gen-{c}" for c in split_seeds("train")[:10]} and len(drawn) >= 6
    one = CodeRedFactoredEnv("task1", split="test", num_cities=1)
    assert {one.reset(seed=s)[1]["city"] for s in range(3)} == {f"gen-{split_seeds('test')[0]}"}
    # seeded once, later episodes' seeds and cities follow
    c, d = (CodeRedFactoredEnv("task1", split="test") for _ in range(2))
    c.reset(seed=3)
    d.reset(seed=3)
    assert [c.reset()[1]["city"] for _ in range(3)] == [d.reset()[1]["city"] for _ in range(3)]


def test_vector_env_equals_single_episodes_on_a_split() -> None:
    vec = gymnasium.make_vec("CodeRedFactored-gen-task2-v14", num_envs=2)
    assert isinstance(vec, CodeRedFactoredVectorEnv)
    singles = [CodeRedFactoredEnv("task2", split="train") for _ in range(2)]
    obs, _ = vec.reset(seed=40)
    single_obs = [env.reset(seed=40 + i)[0] for i, env in enumerate(singles)]
    rng = np.random.default_rng(0)
    for _ in range(12):
        for i in range(2):
            for key in obs:
                assert obs[key][i].tobytes() == single_obs[i][key].tobytes(), (i, key)
        actions = np.stack([vec.legal_actions(i)[rng.integers(len(vec.legal_actions(i)))] for i in range(2)])
        obs, rewards, terminated, _, _ = vec.step(actions)
        if terminated.any():
            break
        for i, env in enumerate(singles):
            single_obs[i], reward, _, _, _ = env.step(actions[i])
            assert rewards[i] == reward


def test_spaces_follow_the_maxima() -> None:
    plain = gymnasium.make("CodeRedFactored-task3-v14")
    assert plain.action_space.nvec.tolist() == list(NVEC) == [14, 7, 64, 3, 144]
    assert {k: v.shape for k, v in plain.observation_space.items()} == {
        "global": (14,),
        "units": (7, 14),
        "cases": (64, 82),
        "hospitals": (3, 50),
        "unit_case_minutes": (7, 64),
        "case_hospital_minutes": (64, 3),
        "unit_present": (7,),
        "case_present": (64,),
        "action_mask": (232,),
        "type_masks": (14, 218),
    }
    gen = gymnasium.make("CodeRedFactored-gen-task3-v14")
    units = GENERATED_MAXIMA.units + len(MUTUAL_AID_IDS)
    assert gen.action_space.nvec.tolist()[:4] == [
        14,
        units,
        GENERATED_MAXIMA.cases,
        GENERATED_MAXIMA.hospitals,
    ]
    assert gen.observation_space["units"].shape[0] == units
    assert CodeRedFactoredEnv("task1").observation_space == plain.observation_space
    # Prakashnagar in the generated slots: the policy of a generated-city env plays it too
    wide = CodeRedFactoredEnv("task1", city="prakashnagar", maxima="generated")
    assert wide.observation_space == gen.observation_space
    obs, info = wide.reset(seed=0)
    assert info["city"] == "prakashnagar" and wide.observation_space.contains(obs)
    _check_masks(wide, obs, "prakashnagar, generated maxima")


def test_bad_city_choices_are_refused_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown city"):
        CodeRedFactoredEnv("task1", city="atlantis")
    with pytest.raises(ValueError, match="does not fit"):
        CodeRedFactoredEnv("task1", city=CITIES[1], maxima=PRAKASHNAGAR_MAXIMA)
    with pytest.raises(ValueError, match="not both"):
        CodeRedFactoredEnv("task1", city=3, split="train")
    with pytest.raises(ValueError, match="unknown city split"):
        CodeRedFactoredEnv("task1", split="validation")
    with pytest.raises(ValueError, match="num_cities"):
        CodeRedFactoredEnv("task1", split="test", num_cities=10_000)
    with pytest.raises(ValueError, match="unknown maxima"):
        CodeRedFactoredEnv("task1", maxima="huge")
    assert CodeRedFactoredEnv("task1", city=0).reset(seed=0)[1]["city"] == "gen-0"  # seed 0 is a city
    env = CodeRedFactoredEnv("task1")
    env.reset(seed=4)
    before = (env.sim, env.sim.observation())
    with pytest.raises(ValueError, match="does not fit"):
        env.reset(seed=5, options={"city": CITIES[1]})
    assert (env.sim, env.sim.observation()) == before  # nothing changed


def test_an_empty_slot_decodes_to_a_clear_error() -> None:
    env = CodeRedFactoredEnv("task1", city=CITIES[0])
    env.reset(seed=0)
    empty_unit = env.core.layout.unit_ids.index(None)
    with pytest.raises(ValueError, match="holds no unit"):
        env.decode([TYPE_INDEX["dispatch_als"], empty_unit, 0, 0, 0])
    empty_hospital = env.core.layout.hospital_ids.index(None)
    with pytest.raises(ValueError, match="holds no hospital"):
        env.decode([TYPE_INDEX["query_or_status"], 0, 0, empty_hospital, 0])
    _, _, _, _, info = env.step([TYPE_INDEX["query_or_status"], 0, 0, empty_hospital, 0])
    assert "invalid factored action" in info["action_error"]
