"""The flat Gymnasium family on generated cities (``CodeRedEnv-gen-taskN-v16``): padded schema,
exact masks against the simulation's legal actions, hidden truth, determinism, clear errors."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")
from gymnasium.utils.env_checker import check_env  # noqa: E402

from codered_env.gym_env import CodeRedGenGymEnv, enumerate_actions, gen_features, gen_schema  # noqa: E402
from codered_env.sim import TASK_IDS  # noqa: E402
from codered_env.sim.city import PRAKASHNAGAR  # noqa: E402
from codered_env.sim.citygen import CITY_SPLITS, generate_city  # noqa: E402
from codered_env.sim.conditions import CONDITIONS  # noqa: E402
from codered_env.sim.env import CodeRedSim  # noqa: E402

CITIES = (5, 1, 100_007)  # 5, 2 and 4 hospitals


def _random_steps(env: CodeRedGenGymEnv, seed: int, steps: int, probe_every: int = 0) -> float:
    """Play uniformly over the mask; every index must be accepted and the mask must be exactly
    the enumeration of the simulation's legal actions. Returns the rewards' sum."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    total = 0.0
    for step in range(steps):
        assert env.observation_space.contains(obs)
        legal = np.flatnonzero(info["action_mask"])
        reference = enumerate_actions(env.sim.observation()["legal_actions"])[:env.max_actions]
        assert list(legal) == list(range(len(reference)))
        assert env.legal_wire_actions() == reference
        if probe_every and step % probe_every == 0:
            for index in legal:
                probe = copy.deepcopy(env.sim)
                probe.step(env.wire_action(int(index)))
                assert probe.last_error is None, reference[index]
        obs, reward, terminated, _, info = env.step(int(rng.choice(legal)))
        assert info["last_action_error"] is None
        total += reward
        if terminated:
            assert total == pytest.approx(info["grade"]["score"], abs=1e-9)
            break
    return total


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_masks_are_exact_on_generated_cities(task_id: str) -> None:
    for k, city in enumerate(CITIES):
        _random_steps(CodeRedGenGymEnv(task_id, city=city), seed=k, steps=10)


def test_every_masked_in_index_is_accepted_on_a_generated_city() -> None:
    _random_steps(CodeRedGenGymEnv("task4", city=CITIES[0]), seed=4, steps=7, probe_every=6)


@pytest.mark.slow
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_whole_random_episodes_on_drawn_cities(task_id: str) -> None:
    env = CodeRedGenGymEnv(task_id, split="test")
    for seed in range(4):
        _random_steps(env, seed=seed, steps=10_000, probe_every=25)
        assert env.sim.done


def test_check_env_and_registered_ids() -> None:
    check_env(CodeRedGenGymEnv("task3", city=41), skip_render_check=True)
    for task_id in TASK_IDS:
        env = gymnasium.make(f"CodeRedEnv-gen-{task_id}-v16", split="test")
        _, info = env.reset(seed=5)
        assert generate_city(int(info["city"].removeprefix("gen-"))).seed in CITY_SPLITS["test"]
        env.close()


def test_split_draws_cities_of_that_split_and_seed_fixes_the_city() -> None:
    for split, seeds in CITY_SPLITS.items():
        env = CodeRedGenGymEnv("task1", split=split)
        drawn = {env.reset(seed=s)[1]["city"] for s in range(12)}
        assert len(drawn) > 6 and all(int(c.removeprefix("gen-")) in seeds for c in drawn)
    env = CodeRedGenGymEnv("task1")
    assert env.reset(seed=9)[1]["city"] == env.reset(seed=9)[1]["city"]


def test_same_seed_same_episode_byte_for_byte() -> None:
    a, b = CodeRedGenGymEnv("task4"), CodeRedGenGymEnv("task4")
    obs_a, info_a = a.reset(seed=17)
    obs_b, info_b = b.reset(seed=17)
    rng = np.random.default_rng(0)
    for _ in range(30):
        assert info_a["city"] == info_b["city"]
        assert all(obs_a[k].tobytes() == obs_b[k].tobytes() for k in obs_a)
        index = int(rng.choice(np.flatnonzero(info_a["action_mask"])))
        obs_a, r_a, done, _, info_a = a.step(index)
        obs_b, r_b, _, _, info_b = b.step(index)
        assert r_a == r_b
        if done:
            break


def test_padding_and_presence_follow_the_city() -> None:
    for seed in CITIES:
        city = generate_city(seed)
        obs, _ = CodeRedGenGymEnv("task2", city=seed).reset(seed=1)
        present = {name: int(obs[name][:, 0].sum()) for name in ("hospitals", "ambulances", "roads")}
        assert present == {"hospitals": len(city.hospital_ids), "ambulances": len(city.unit_ids),
                           "roads": len(city.edges)}
        assert not obs["hospitals"][len(city.hospital_ids):].any()
        assert not obs["roads"][len(city.edges):].any()


def test_no_column_is_named_after_a_city_id() -> None:
    names = (gen_schema.GEN_AMBULANCE_FEATURES + gen_schema.GEN_PATIENT_FEATURES
             + gen_schema.GEN_CALL_FEATURES + gen_schema.GEN_HOSPITAL_FEATURES + gen_schema.GEN_ROAD_FEATURES)
    ids = set()
    for city in (PRAKASHNAGAR, *(generate_city(s) for s in CITIES)):
        ids |= set(city.node_ids) | set(city.hospital_ids) | set(city.unit_ids)
    assert not [n for n in names if set(n.split("_")) & ids]
    assert "node_N1" not in names and not set(["node", "N1"]).isdisjoint(ids)  # the check can fail


def test_travel_minutes_are_the_road_network_now() -> None:
    env = CodeRedGenGymEnv("task5", city=100_007)
    obs, _ = env.reset(seed=2)
    view, net = env.sim.observation(), env.sim.world.net
    assert [h["hospital_id"] for h in view["hospitals"]] == list(env.sim.city.hospital_ids)
    for i, amb in enumerate(view["ambulances"]):
        for k, hospital in enumerate(view["hospitals"]):
            expected = min(1.0, net.minutes(amb["node"], hospital["node"]) / gen_schema.TRAVEL_SCALE_MIN)
            assert obs["unit_minutes"][i, gen_schema.MAX_CALLS + k] == pytest.approx(expected, abs=1e-6)


def _twist(sim: CodeRedSim, shift: int) -> None:
    """Every caller no crew has seen gets another true condition, reserve and blood type."""
    world = sim.world
    keys = list(CONDITIONS)
    people = {p.patient_id: p for p in world.patients.values()}
    people.update({s.patient.patient_id: s.patient for s in world.spawns})
    for p in people.values():
        if not p.visible:
            p.condition = keys[(keys.index(p.condition) + shift) % len(keys)]
            p.reserve, p.blood_type = 0.31, "AB-"
    for call in list(world.calls.values()) + [s.call for s in world.spawns if s.call]:
        call.true_priority = CONDITIONS[people[call.patient_id].condition].true_priority


@pytest.mark.parametrize("task_id", ["task4", "task5"])
def test_hidden_truth_of_unseen_callers_never_shows_on_a_generated_city(task_id: str) -> None:
    compared = 0
    for seed in (1000, 1001):
        real, twin = CodeRedGenGymEnv(task_id, city=41), CodeRedGenGymEnv(task_id, city=41)
        obs_a, info_a = real.reset(seed=seed)
        twin.reset(seed=seed)
        _twist(twin.sim, shift=3 + seed % 5)
        obs_b, info_b = twin._observe(), twin._info()
        rng = np.random.default_rng(seed)
        while not real.sim.done:
            assert all(obs_a[k].tobytes() == obs_b[k].tobytes() for k in obs_a), seed
            assert np.array_equal(info_a["action_mask"], info_b["action_mask"])
            compared += 1
            index = int(rng.choice(np.flatnonzero(info_a["action_mask"])))
            obs_a, r_a, *_, info_a = real.step(index)
            obs_b, r_b, *_, info_b = twin.step(index)
            if any(p.visible for env in (real, twin) for p in env.sim.world.patients.values()):
                break  # a crew's on-scene report may differ from here on
            assert r_a == r_b
    assert compared > 5


def test_a_seen_caller_does_show_so_the_hidden_truth_test_can_fail() -> None:
    env = CodeRedGenGymEnv("task4", city=41)
    env.reset(seed=1000)
    for _ in range(40):
        hidden = [c.patient_id for c in env.sim.world.calls.values() if c.status in ("pending", "dispatched")]
        if hidden:
            break
        env.step(0)
    before = env._observe()
    twin = copy.deepcopy(env)
    twin.sim.world.patients[hidden[0]].visible = True
    assert not np.array_equal(before["patients"], twin._observe()["patients"])


def test_unknown_blood_type_of_visible_patients_stays_hidden() -> None:
    env = CodeRedGenGymEnv("task3", city=3)
    env.reset(seed=1)
    twin = copy.deepcopy(env)
    changed = 0
    for p in twin.sim.world.patients.values():
        if p.visible and not p.blood_type_known and p.reserve_at_treatment is None:
            p.blood_type, changed = ("AB-" if p.blood_type != "AB-" else "O+"), changed + 1
    assert changed
    a, b = env._observe(), twin._observe()
    assert all(a[k].tobytes() == b[k].tobytes() for k in a)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"split": "dev"}, "unknown city split 'dev'; valid: train, test"),
    ({"city": -1}, "unknown city -1; valid"),
    ({"city": "gen-x"}, "unknown city 'gen-x'; valid"),
    ({"action_args": True}, "action_args is not offered"),
])
def test_bad_city_split_or_option_is_a_clear_error(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        CodeRedGenGymEnv("task1", **kwargs)


def test_a_city_beyond_the_declared_maxima_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gen_features, "MAX_GEN_HOSPITALS", 3)
    message = r"does not fit the CodeRedEnv-gen schema: 4 hospitals \(at most 3\)"
    with pytest.raises(ValueError, match=message):
        CodeRedGenGymEnv("task1", city=100_007)


def test_declared_maxima_hold_the_generators_ranges() -> None:
    from codered_env.sim.cityparams import FLEET_RANGE, HOSPITALS_RANGE
    assert HOSPITALS_RANGE[1] == gen_schema.MAX_GEN_HOSPITALS
    assert FLEET_RANGE[1] <= gen_schema.MAX_GEN_UNITS
    for seed in range(0, 1000, 37):
        gen_features.check_city_fits(generate_city(seed))


def test_docs_table_is_the_schema() -> None:
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "docs" / "GYM.md").read_text(encoding="utf-8")
    section = text.split("## Flat interface on generated cities", 1)[1].split("\n## ", 1)[0]
    shapes = dict(re.findall(r"^\| `(\w+)` \| \(([\d, ]+)\) \|", section, re.M))
    assert shapes == {name: ", ".join(map(str, shape)).rstrip(",") + ("," if len(shape) == 1 else "")
                      for name, shape in gen_schema.GEN_SHAPES}
    total = sum(int(np.prod(shape)) for _, shape in gen_schema.GEN_SHAPES)
    assert f"({total:,} values)" in section
