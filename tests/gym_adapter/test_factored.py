"""The factored interface (``CodeRedFactored-taskN-v14``): masks exact against the simulation's
legal actions, stable slots, nothing hidden shown, invalid actions refused, the vector env equal
to single episodes, rows kept while unchanged equal to rows written afresh, and the flat env's
``action_args`` coding."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import gymnasium
import numpy as np
import pytest

from codered_env.gym_env import (
    CASE_COLUMNS,
    NVEC,
    CodeRedFactoredEnv,
    CodeRedFactoredVectorEnv,
    CodeRedGymEnv,
)
from codered_env.gym_env.factored_actions import OFFSETS, TYPE_INDEX, _OptionCoder
from codered_env.gym_env.factored_env import MASKED_OUT
from codered_env.gym_env.factored_features import ALL_TYPES
from codered_env.gym_env.slots import MAX_CASES
from codered_env.sim import CodeRedSim
from codered_env.sim.conditions import CONDITIONS
from codered_env.sim.legal import legal_actions
from codered_env.sim.tasks import TASK_IDS

N_TYPES = NVEC[0]


def _concrete(sim: CodeRedSim) -> list[dict[str, Any]]:
    """Every concrete legal action of ``sim`` (every blood unit count), from the simulation's own
    legal actions (no memo), maintain_plan included."""
    out = []
    for action_type, options in legal_actions(sim.world).items():
        for option in options:
            names = list(option)
            for combo in itertools.product(*(option[n] for n in names)):
                out.append({"action_type": action_type, **dict(zip(names, combo, strict=True))})
    return out


def _check_masks(
    env: CodeRedFactoredEnv, obs: dict[str, np.ndarray], info: dict[str, Any], where: str
) -> None:
    legal = env.legal_actions()
    rows = {tuple(int(v) for v in r) for r in legal}
    assert len(rows) == len(legal), (where, "duplicate legal vectors")
    expected = _concrete(env.sim)
    assert {tuple(env.encode(w).tolist()) for w in expected} == rows, where
    assert len(expected) == len(rows), where
    for w in expected:
        assert env.decode(env.encode(w)) == w, (where, w)
    types = np.zeros((N_TYPES, sum(NVEC[1:])), bool)
    for r in rows:
        for k in range(1, len(NVEC)):
            types[r[0], OFFSETS[k] - N_TYPES + r[k]] = True
    assert obs["type_masks"].dtype == np.bool_ and np.array_equal(obs["type_masks"], types), where
    flat = np.concatenate([types.any(axis=1), types.any(axis=0)])
    assert obs["action_mask"].dtype == np.bool_ and np.array_equal(obs["action_mask"], flat), where
    assert np.array_equal(info["action_mask"], flat) and np.array_equal(env.action_masks(), flat), where


def _type_first(env: CodeRedFactoredEnv, rng: np.random.Generator) -> np.ndarray:
    legal = env.legal_actions()
    types = np.unique(legal[:, 0])
    rows = legal[legal[:, 0] == types[rng.integers(len(types))]]
    return rows[rng.integers(len(rows))]


class _SlotWatch:
    """Checks that a slot, once it names an entity, keeps naming it (a call's slot may go on to
    name the patient that call became)."""

    def __init__(self) -> None:
        self.seen: dict[str, list[str | None]] = {}

    def check(self, env: CodeRedFactoredEnv, info: dict[str, Any], where: str) -> None:
        patients = {p["patient_id"]: p for p in env.sim.observation()["patients"]}
        for group, names in info["slots"].items():
            before = self.seen.get(group)
            if before is not None:
                for k, (old, new) in enumerate(zip(before, names, strict=True)):
                    if old is None or old == new:
                        continue
                    assert group == "case" and old.startswith("C") and new in patients, (
                        where,
                        group,
                        k,
                        old,
                        new,
                    )
                    assert patients[new]["call_id"] == old, (where, k, old, new)
            self.seen[group] = list(names)
        for k, name in enumerate(info["slots"]["case"]):
            if name in patients:  # the slot's row describes that very patient
                case = env.unwrapped.core.out["cases"][k]
                assert case[CASE_COLUMNS.index(f"condition_{patients[name]['condition']}")] == 1.0, (where, k)


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_masks_exact_and_slots_stable_under_random_play(task_id: str) -> None:
    env = CodeRedFactoredEnv(task_id)
    rng = np.random.default_rng(7)
    for seed in (0, 1):
        obs, info = env.reset(seed=seed)
        watch, done, step = _SlotWatch(), False, 0
        while not done:
            where = f"{task_id} seed {seed} step {step}"
            _check_masks(env, obs, info, where)
            watch.check(env, info, where)
            assert env.observation_space.contains(obs), where
            assert not env.core.features.slots.unslotted, where
            action = _type_first(env, rng) if rng.random() < 0.9 else env.action_space.sample()
            obs, _, done, truncated, info = env.step(action)
            assert not truncated
            step += 1
        assert info["termination_reason"] in ("resolved", "horizon", "step_budget")
        assert info["action_mask"][:N_TYPES].tolist() == [True] + [False] * (N_TYPES - 1)


def _advise_all(env: CodeRedFactoredEnv) -> dict[str, Any]:
    for call in env.sim.observation()["calls"]:
        if call["priority"] is None and call["status"] == "pending":
            return {"action_type": "triage_call", "call_id": call["call_id"], "priority": "P4"}
    return {"action_type": "maintain_plan"}


def test_case_slots_suffice_when_every_caller_is_advised() -> None:
    """Advising every caller brings the most callbacks (new calls): the declared maximum holds."""
    env = CodeRedFactoredEnv("task5")
    for seed in range(4):
        env.reset(seed=seed)
        done = False
        while not done:
            _, _, done, _, _ = env.step(env.encode(_advise_all(env)))
        assert not env.core.features.slots.unslotted and len(env.core.features.slots) <= MAX_CASES


def _twist(sim: CodeRedSim, shift: int) -> None:
    """Every caller no crew has seen gets another true condition (the same report)."""
    world = sim.world
    keys = list(CONDITIONS)
    people = {p.patient_id: p for p in world.patients.values()}
    people.update({s.patient.patient_id: s.patient for s in world.spawns})
    for p in people.values():
        if not p.visible:
            other = keys[(keys.index(p.condition) + shift) % len(keys)]
            p.condition, p.reserve, p.blood_type = other, 0.31, "AB-"
    for call in list(world.calls.values()) + [s.call for s in world.spawns if s.call]:
        call.true_priority = CONDITIONS[people[call.patient_id].condition].true_priority


@pytest.mark.parametrize("task_id", ["task4", "task5"])
def test_hidden_truth_of_unseen_callers_never_shows(task_id: str) -> None:
    assert_hidden_truth_never_shows(task_id)


def assert_hidden_truth_never_shows(task_id: str, **env_kwargs: Any) -> None:
    """Twin episodes whose unseen callers' truth differs give identical observations, legal
    vectors, slots and rewards until a crew sees a patient (``env_kwargs``: e.g. the city)."""
    compared = 0
    for seed in (1000, 1001):
        real, twin = CodeRedFactoredEnv(task_id, **env_kwargs), CodeRedFactoredEnv(task_id, **env_kwargs)
        obs_a, info_a = real.reset(seed=seed)
        twin.reset(seed=seed)
        _twist(twin.sim, shift=3 + seed % 5)
        twin.core._observe()  # the observation of the twisted world
        obs_b, info_b = twin._obs(), twin.core.info()
        rng = np.random.default_rng(seed)
        while not real.sim.done:
            for key in obs_a:
                assert obs_a[key].tobytes() == obs_b[key].tobytes(), (seed, key)
            assert np.array_equal(real.legal_actions(), twin.legal_actions())
            assert info_a["slots"] == info_b["slots"]
            compared += 1
            action = _type_first(real, rng)
            obs_a, r_a, *_, info_a = real.step(action)
            obs_b, r_b, *_, info_b = twin.step(action)
            if any(p.visible for env in (real, twin) for p in env.sim.world.patients.values()):
                break  # a crew's on-scene report may differ from here on
            assert r_a == r_b
    assert compared > 10


def test_invalid_actions_are_refused_with_a_clear_error() -> None:
    env = CodeRedFactoredEnv("task5")
    env.reset(seed=3)
    for _ in range(5):
        env.step(env.encode({"action_type": "maintain_plan"}))
    bad = [
        [99, 0, 0, 0, 0],  # type out of range
        [1, 0, 0],  # too few components
        [TYPE_INDEX["triage_call"], 0, MAX_CASES - 1, 0, 0],  # an empty case slot
        [TYPE_INDEX["prepare_or"], 0, 0, 0, 0] if not _legal_type(env, "prepare_or") else [0, 0, 0, 0, 1],
        "not an action",
    ]
    for action in bad:
        twin = copy.deepcopy(env.sim)
        clock = env.sim.clock
        _, _, _, _, info = env.step(action)
        assert info["action_error"] and ("factored action" in info["action_error"]), action
        assert info["last_action_error"] is not None
        assert env.sim.clock == clock + 1
        twin.step({"action_type": MASKED_OUT})
        assert env.sim.observation() == twin.observation(), action
    with pytest.raises(ValueError, match="component"):
        env.decode([99, 0, 0, 0, 0])
    with pytest.raises(ValueError, match="unknown action_type"):
        env.encode({"action_type": "fly"})
    with pytest.raises(ValueError, match="no slot"):
        env.encode({"action_type": "dispatch_als", "ambulance_id": "ALS1", "call_id": "C999"})


def _legal_type(env: CodeRedFactoredEnv, name: str) -> bool:
    return bool(env.action_masks()[TYPE_INDEX[name]])


def test_vector_env_equals_single_episodes_and_autoresets() -> None:
    vec = gymnasium.make_vec("CodeRedFactored-task2-v14", num_envs=3)
    assert isinstance(vec, CodeRedFactoredVectorEnv)
    singles = [CodeRedFactoredEnv("task2") for _ in range(3)]
    obs, _ = vec.reset(seed=20)
    single_obs = [env.reset(seed=20 + i)[0] for i, env in enumerate(singles)]
    rng = np.random.default_rng(0)
    ended = [False] * 3
    for _ in range(60):
        for i in range(3):
            if not ended[i]:
                for key in obs:
                    assert obs[key][i].tobytes() == single_obs[i][key].tobytes(), (i, key)
        actions = np.stack([vec.legal_actions(i)[rng.integers(len(vec.legal_actions(i)))] for i in range(3)])
        for i in range(3):
            assert (vec.encode(i, vec.decode(i, actions[i])) == actions[i]).all()
        obs, rewards, terminated, truncated, infos = vec.step(actions)
        assert not truncated.any()
        for i, env in enumerate(singles):
            if ended[i]:
                continue
            single_obs[i], reward, done, _, info = env.step(actions[i])
            assert rewards[i] == reward
            assert infos["minutes"][i] == info["minutes"] == env.unwrapped.sim.last_minutes >= 1
            if done:
                assert terminated[i] and infos["_final_score"][i]
                ended[i] = True
    assert any(ended)


def test_same_step_autoreset_returns_the_next_episode() -> None:
    vec = CodeRedFactoredVectorEnv(2, "task1", autoreset_mode="SameStep")
    vec.reset(seed=0)
    done_seen = 0
    for _ in range(200):
        actions = np.zeros((2, len(NVEC)), np.int64)  # wait
        obs, _, terminated, _, _ = vec.step(actions)
        for i in np.flatnonzero(terminated):
            assert obs["global"][i][1] == 0.0  # step_frac of a fresh episode
            done_seen += 1
    assert done_seen >= 2
    with pytest.raises(ValueError):
        CodeRedFactoredVectorEnv(0)


def test_same_seed_same_actions_same_bytes() -> None:
    runs = []
    for _ in range(2):
        env, rng, out = CodeRedFactoredEnv("task5"), np.random.default_rng(1), []
        env.reset(seed=5)
        for _ in range(40):
            obs, reward, done, _, _ = env.step(_type_first(env, rng))
            out.append((b"".join(a.tobytes() for a in obs.values()), reward))
            if done:
                break
        runs.append(out)
    assert runs[0] == runs[1]


def _forget_what_was_written(env: CodeRedFactoredEnv) -> None:
    """Drop what the writer and the masks keep to skip unchanged rows: the next step writes every
    row and every type's mask, and codes every option, afresh."""
    features, legal = env.core.features, env.core.legal
    features._unit_rows = [None] * len(features._unit_rows)
    features._hospital_rows = [None] * len(features._hospital_rows)
    features._hospital_parts = [None] * len(features._hospital_parts)
    features._patient_written = [None] * len(features._patient_written)
    features._travel_inputs = None
    features._episode = None
    legal._memo.clear()
    legal._coder = _OptionCoder(legal.tables)


@pytest.mark.parametrize("task_id", ["task2", "task5"])
def test_rows_kept_while_unchanged_equal_rows_written_every_step(task_id: str) -> None:
    """The rows, travel minutes and masks an env writes only when they changed are those it
    would write afresh at every step."""
    kept, fresh = CodeRedFactoredEnv(task_id), CodeRedFactoredEnv(task_id)
    write = fresh.core.features.write
    fresh.core.features.write = lambda view, out, changed: write(view, out, ALL_TYPES)  # every can_* column
    rng = np.random.default_rng(3)
    for seed in (0, 1):
        kept.reset(seed=seed)
        fresh.reset(seed=seed)
        done, step = False, 0
        while not done:
            action = _type_first(kept, rng)
            _forget_what_was_written(fresh)
            obs, _, done, _, _ = kept.step(action)
            expected, *_ = fresh.step(action)
            for key, array in obs.items():
                assert array.tobytes() == expected[key].tobytes(), (task_id, seed, step, key)
            assert np.array_equal(kept.legal_actions(), fresh.legal_actions()), (task_id, seed, step)
            step += 1


@pytest.mark.parametrize("task_id", ["task3", "task5"])
def test_flat_action_args_are_the_factored_coding_and_change_nothing(task_id: str) -> None:
    plain, flat = CodeRedGymEnv(task_id), CodeRedGymEnv(task_id, action_args=True)
    factored = CodeRedFactoredEnv(task_id)
    rng = np.random.default_rng(2)
    obs_p, _ = plain.reset(seed=9)
    obs_f, info = flat.reset(seed=9)
    _, info_x = factored.reset(seed=9)
    for _ in range(60):
        for key in obs_p:
            assert obs_p[key].tobytes() == obs_f[key].tobytes(), key
        n = int(info["action_mask"].sum())
        args = info["action_args"]
        assert (args[n:] == -1).all() and (args[:n] >= 0).all()
        legal = {tuple(r) for r in factored.legal_actions().tolist()}
        assert {tuple(r) for r in args[:n].tolist()} <= legal
        for i in range(n):
            assert factored.decode(args[i]) == flat.wire_action(i)
        index = int(rng.integers(n))
        obs_p, *_ = plain.step(index)
        obs_f, _, done, _, info = flat.step(index)
        _, _, _, _, info_x = factored.step(args[index])
        assert info_x["action_error"] is None
        if done:
            break
    with pytest.raises(RuntimeError, match="action_args=True"):
        plain.action_args()


def test_registered_ids_and_spaces() -> None:
    env = gymnasium.make("CodeRedFactored-task4-v14")
    assert isinstance(env.action_space, gymnasium.spaces.MultiDiscrete)
    assert env.action_space.nvec.tolist() == list(NVEC)
    obs, info = env.reset(seed=0)
    vec = gymnasium.vector.SyncVectorEnv([lambda: gymnasium.make("CodeRedFactored-task4-v14")] * 2)
    _, infos = vec.reset(seed=0)  # the infos merge across envs
    assert infos["action_mask"].shape == (2, sum(NVEC))
    assert obs["action_mask"].shape == (sum(NVEC),) and obs["action_mask"].dtype == np.bool_
    assert set(info["slots"]) == {"unit", "case", "hospital"} and len(info["slots"]["case"]) == MAX_CASES
    from gymnasium.utils.env_checker import check_env

    check_env(CodeRedFactoredEnv("task1"), skip_render_check=True)
