"""The Gymnasium adapter (codered_env/gym_env/): spaces, masking, determinism, rewards, episode end."""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")
from gymnasium.utils.env_checker import check_env  # noqa: E402

from codered_env import gym_env  # noqa: E402
from codered_env.agents import make_agent  # noqa: E402
from codered_env.gym_env import CodeRedGymEnv, enumerate_actions  # noqa: E402
from codered_env.gym_env import rows as gym_rows  # noqa: E402
from codered_env.gym_env import schema as gym_schema  # noqa: E402
from codered_env.sim import TASK_IDS, TASKS  # noqa: E402


def masked_random_episode(env: CodeRedGymEnv, seed: int, rng: np.random.Generator) -> dict[str, Any]:
    """One episode of a uniform policy over the legal indices; checks every step on the way."""
    obs, info = env.reset(seed=seed)
    total, steps = 0.0, 0
    while True:
        assert env.observation_space.contains(obs)
        index = int(rng.choice(np.flatnonzero(info["action_mask"])))
        chosen = env.wire_action(index)
        obs, reward, terminated, truncated, info = env.step(index)
        assert info["last_action_error"] is None, (index, info["last_action_error"])
        assert env.sim.action_log[-1] == chosen
        total, steps = total + reward, steps + 1
        if terminated or truncated:
            assert env.observation_space.contains(obs)
            return {"total": total, "info": info, "steps": steps, "truncated": truncated}


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_check_env_passes(task_id: str) -> None:
    check_env(CodeRedGymEnv(task_id), skip_render_check=True)
    check_env(gymnasium.make(f"CodeRedEnv-{task_id}-v16", render_mode="ansi").unwrapped)


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_masked_in_indices_are_accepted_and_rewards_sum_to_score(task_id: str) -> None:
    env, rng, steps = CodeRedGymEnv(task_id), np.random.default_rng(11), 0
    seed = 0
    while steps < 300:
        episode = masked_random_episode(env, seed, rng)
        assert episode["total"] == pytest.approx(episode["info"]["grade"]["score"], abs=1e-9)
        steps, seed = steps + episode["steps"], seed + 1


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_every_legal_index_is_accepted_and_nothing_else_is_listed(task_id: str) -> None:
    env, rng = CodeRedGymEnv(task_id, info_actions=True), np.random.default_rng(3)
    _, info = env.reset(seed=2)
    for step in range(40):
        legal = np.flatnonzero(info["action_mask"])
        assert legal[0] == 0 and list(legal) == list(range(len(info["actions"])))
        # the lazy decoding is the reference enumeration of the structured observation
        assert info["actions"] == enumerate_actions(env.sim.observation()["legal_actions"])[:256]
        if step % 5 == 0:
            for index in legal:
                probe = copy.deepcopy(env)
                probe.step(int(index))
                assert probe.sim.last_error is None, info["actions"][index]
        _, _, terminated, truncated, info = env.step(int(rng.choice(legal)))
        if terminated or truncated:
            break


@pytest.mark.parametrize("task_id", ["task1", "task4"])
def test_masked_out_index_is_an_invalid_action(task_id: str) -> None:
    env = CodeRedGymEnv(task_id)
    _, info = env.reset(seed=1)
    n_legal = int(info["action_mask"].sum())
    with pytest.raises(IndexError, match="not legal"):
        env.wire_action(n_legal)
    assert n_legal < 255 and not info["action_mask"][n_legal]
    clock = env.sim.clock
    obs, _, _, _, info = env.step(n_legal)
    assert info["last_action_error"] is not None
    assert str(n_legal) in info["last_action_error"]
    assert env.sim.grade()["penalties"].get("invalid_action") == 1
    assert (
        env.sim.clock == clock + 1 and obs["global"][gym_env.GLOBAL_FEATURES.index("last_action_error")] == 1
    )
    assert not info["action_mask"][255]
    env.step(255)
    assert env.sim.grade()["penalties"].get("invalid_action") == 2


def test_truncation_to_max_actions_keeps_the_most_useful_types_first() -> None:
    env = CodeRedGymEnv("task3", max_actions=8, info_actions=True)
    obs, info = env.reset(seed=0)
    assert len(info["actions"]) == 8 and info["action_mask"].sum() == 8
    assert info["actions"][0] == {"action_type": "maintain_plan"}
    assert {a["action_type"] for a in info["actions"][1:]} == {"dispatch_ambulance"}
    assert env.observation_space.contains(obs)


def test_enumeration_expands_options_and_keeps_canonical_blood_units() -> None:
    legal = {
        "query_or_status": [{"hospital_id": ["H1", "H2"]}],
        "allocate_blood": [
            {
                "patient_id": ["P1"],
                "hospital_id": ["H1"],
                "blood_type": ["O-", "O+"],
                "units": [1, 2, 3, 4, 5],
            }
        ],
        "request_mutual_aid": [{}, {"target_id": ["P2"]}],
        "assign_hospital": [{"patient_id": ["P1", "P2"], "hospital_id": ["H1", "H3"]}],
        "maintain_plan": [{}],
    }
    actions = enumerate_actions(legal)
    types = [a["action_type"] for a in actions]
    assert (
        types
        == ["maintain_plan"]
        + ["assign_hospital"] * 4
        + ["allocate_blood"] * 6
        + ["request_mutual_aid"] * 2
        + ["query_or_status"] * 2
    )
    assert sorted({a["units"] for a in actions if "units" in a}) == [1, 2, 4]
    assert actions[1] == {"action_type": "assign_hospital", "patient_id": "P1", "hospital_id": "H1"}
    assert {"action_type": "request_mutual_aid"} in actions


def run_indices(task_id: str, seed: int, indices: list[int]) -> tuple[list[dict], list[float]]:
    env = CodeRedGymEnv(task_id)
    obs, _ = env.reset(seed=seed)
    frames, rewards = [obs], []
    for index in indices:
        obs, reward, terminated, truncated, _ = env.step(index)
        frames.append(obs)
        rewards.append(reward)
        if terminated or truncated:
            break
    return frames, rewards


@pytest.mark.parametrize("task_id", ["task2", "task5"])
def test_same_seed_same_indices_same_episode(task_id: str) -> None:
    indices = [int(i) for i in np.random.default_rng(5).integers(0, 12, size=80)]
    frames_a, rewards_a = run_indices(task_id, 9, indices)
    frames_b, rewards_b = run_indices(task_id, 9, indices)
    assert rewards_a == rewards_b and len(frames_a) == len(frames_b)
    for a, b in zip(frames_a, frames_b, strict=True):
        assert all(np.array_equal(a[k], b[k]) for k in a)
    frames_c, _ = run_indices(task_id, 10, indices)
    assert not all(np.array_equal(frames_a[0][k], frames_c[0][k]) for k in frames_a[0])


def test_unseeded_reset_draws_the_sim_seed_from_np_random() -> None:
    first, second = CodeRedGymEnv("task4"), CodeRedGymEnv("task4")
    first.reset(seed=123)
    second.reset(seed=123)
    assert first.sim.seed == 123
    first.reset()
    second.reset()
    assert first.sim.seed == second.sim.seed


def test_options_switch_the_task() -> None:
    env = CodeRedGymEnv("task1")
    obs, _ = env.reset(seed=0, options={"task_id": "task4"})
    assert env.sim.task.task_id == "task4" and obs["global"][gym_env.GLOBAL_FEATURES.index("phase2")] == 1
    with pytest.raises(ValueError, match="unknown task_id"):
        env.reset(seed=0, options={"task_id": "task9"})


@pytest.mark.parametrize("task_id", ["task1", "task3"])
def test_masked_random_beats_noop(task_id: str) -> None:
    env, rng = CodeRedGymEnv(task_id), np.random.default_rng(0)
    random_scores, noop_scores = [], []
    for seed in range(5):
        random_scores.append(masked_random_episode(env, seed, rng)["info"]["grade"]["score"])
        env.reset(seed=seed)
        while True:
            _, _, terminated, truncated, info = env.step(0)
            if terminated or truncated:
                noop_scores.append(info["grade"]["score"])
                break
    assert np.mean(random_scores) > np.mean(noop_scores) + 0.05


def test_episode_end_reasons() -> None:
    env = CodeRedGymEnv("task1")
    env.reset(seed=0)
    while True:  # noop: maintain_plan jumps up to 10 min, so the 150-min horizon comes first
        _, _, terminated, truncated, info = env.step(0)
        if terminated or truncated:
            break
    assert (terminated, truncated, info["termination_reason"]) == (True, False, "horizon")
    assert env.sim.step_count < TASKS["task1"].max_steps

    agent = make_agent("heuristic")
    agent.reset("task1", 0)
    _, info = env.reset(seed=0)
    while True:
        wire = agent.act(env.sim.observation())
        actions = env.legal_wire_actions()
        index = actions.index(wire) if wire in actions else 0
        _, _, terminated, truncated, info = env.step(index)
        if terminated or truncated:
            break
    assert (terminated, truncated, info["termination_reason"]) == (True, False, "resolved")
    final = ("in_treatment", "treated", "released", "deceased")
    assert all(p["status"] in final for p in env.sim.observation()["patients"])

    # the step budget ends the episode for good: the last reward already holds the played-out
    # rest of the world, so it is terminal (bootstrapping it would add a value never fitted)
    episode = masked_random_episode(CodeRedGymEnv("task4"), 0, np.random.default_rng(1))
    assert not episode["truncated"] and episode["info"]["termination_reason"] == "step_budget"
    assert episode["steps"] == TASKS["task4"].max_steps
    old = masked_random_episode(CodeRedGymEnv("task4", truncate_on_step_budget=True), 0,
                                np.random.default_rng(1))
    assert old["truncated"] and old["info"]["termination_reason"] == "step_budget"
    assert old["total"] == episode["total"]


def _hidden_caller(env: CodeRedGymEnv) -> str:
    """Step a phase-2 episode until some caller with an open call is still hidden; its patient id."""
    for _ in range(30):
        calls = env.sim.world.calls.values()
        hidden = [c.patient_id for c in calls if c.status in ("pending", "dispatched")]
        if hidden:
            return hidden[0]
        env.step(0)
    raise AssertionError("no open call appeared")


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return all(np.array_equal(a[k], b[k]) for k in a)


def test_hidden_caller_condition_does_not_change_the_observation() -> None:
    env = CodeRedGymEnv("task4")
    env.reset(seed=3)
    patient_id = _hidden_caller(env)
    world = env.sim.world
    assert not world.patients[patient_id].visible
    before = env._observe()
    twin = copy.deepcopy(env)
    hidden = twin.sim.world.patients[patient_id]
    hidden.condition = "anxiety" if hidden.condition != "anxiety" else "stemi"
    hidden.reserve, hidden.blood_type = 0.11, "AB+"
    twin.sim.world.spawns.clear()  # no future call either
    assert _same(before, twin._observe())
    # once the crew has seen the caller, the same facts do show (so the comparison above can fail)
    hidden.visible = True
    assert not np.array_equal(before["patients"], twin._observe()["patients"])


def test_unknown_blood_type_and_reserve_of_visible_patients_stay_hidden() -> None:
    env = CodeRedGymEnv("task3")
    env.reset(seed=1)
    twin = copy.deepcopy(env)
    for p in twin.sim.world.patients.values():
        if p.visible and not p.blood_type_known and p.reserve_at_treatment is None:
            p.blood_type = "AB-" if p.blood_type != "AB-" else "O+"
    assert _same(env._observe(), twin._observe())


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_features_agree_with_the_structured_observation(task_id: str) -> None:
    """Invariants between the world-built features and ``CodeRedSim.observation()`` (robust to
    new observation fields: counts, slots, one-hots and per-slot masks, not exact values)."""
    env, rng = CodeRedGymEnv(task_id), np.random.default_rng(7)
    obs, info = env.reset(seed=5)
    col = {name: {f: i for i, f in enumerate(getattr(gym_schema, f"{name.upper()}_FEATURES"))}
           for name in ("ambulance", "patient", "call", "hospital")}
    for _ in range(25):
        structured = env.sim.observation()
        legal = structured["legal_actions"]
        assert env.observation_space.contains(obs)
        patients, calls = structured["patients"][:16], structured["calls"][:16]
        assert obs["patients"][:, 0].sum() == len(patients) and obs["calls"][:, 0].sum() == len(calls)
        assert obs["ambulances"][:, 0].sum() == min(7, len(structured["ambulances"]))
        for row, p in zip(obs["patients"], patients, strict=False):
            assert row[col["patient"][f"status_{p['status']}"]] == 1
            assert row[col["patient"][f"condition_{p['condition']}"]] == 1
            waiting = {pid for o in legal.get("dispatch_ambulance", []) for pid in o["patient_id"]}
            assert row[col["patient"]["can_dispatch_to"]] == (p["patient_id"] in waiting)
        for row, c in zip(obs["calls"], calls, strict=False):
            assert row[col["call"]["pending"]] == (c["status"] == "pending")
            triage = {cid for o in legal.get("triage_call", []) for cid in o["call_id"]}
            assert row[col["call"]["can_triage"]] == (c["call_id"] in triage)
        for row, a in zip(obs["ambulances"], structured["ambulances"], strict=False):
            assert row[col["ambulance"][f"status_{a['status']}"]] == 1
        n_legal = len(enumerate_actions(legal) if legal else [0])
        assert info["action_mask"].sum() == min(256, n_legal)
        counts = obs["actions"][:, 0] * 256
        assert round(float(counts.sum())) == min(256, n_legal)
        obs, _, terminated, truncated, info = env.step(int(rng.integers(info["action_mask"].sum())))
        if terminated or truncated:
            break


def test_observation_is_compact() -> None:
    space = CodeRedGymEnv("task5").observation_space
    size = sum(int(np.prod(box.shape)) for box in space.values())
    assert size < 2500 and "action_types" not in space


def test_info_carries_the_actions_only_on_request() -> None:
    _, info = CodeRedGymEnv("task2").reset(seed=0)
    assert "actions" not in info
    env = CodeRedGymEnv("task2", info_actions=True)
    _, info = env.reset(seed=0)
    assert info["actions"] == env.legal_wire_actions()
    assert info["actions"][0] == {"action_type": "maintain_plan"}


@pytest.mark.parametrize("mode", ["rgb_array", "human", None])
def test_render_modes_other_than_ansi_do_not_crash(mode: str | None) -> None:
    env = gymnasium.make("CodeRedEnv-task1-v16", render_mode=mode)
    env.reset(seed=0)
    env.step(0)
    assert env.unwrapped.render() is None


def test_make_render_and_action_masks_through_wrappers() -> None:
    ids = [f"CodeRedEnv-{t}-v16" for t in TASK_IDS] + [f"CodeRedFactored-{t}-v14" for t in TASK_IDS]
    ids += [f"CodeRedFactored-gen-{t}-v14" for t in TASK_IDS] + [f"CodeRedEnv-gen-{t}-v16" for t in TASK_IDS]
    assert gym_env.register_envs() == gym_env.register_envs() == ids
    env = gymnasium.make("CodeRedEnv-task3-v16", render_mode="ansi")
    _, info = env.reset(seed=0)
    assert env.render() == env.unwrapped.sim.render_text()
    mask = env.unwrapped.action_masks()
    assert mask.dtype == bool and np.array_equal(mask, info["action_mask"].astype(bool))
    assert info["action_mask"].dtype == np.int8 and info["action_mask"].shape == (256,)
    assert CodeRedGymEnv("task1").render() is None
    assert "actions" not in info


def test_missing_gymnasium_gives_a_clear_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gymnasium", None)
    path = Path(gym_env.__file__)
    spec = importlib.util.spec_from_file_location("codered_env._gym_env_without_gymnasium", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with pytest.raises(ImportError, match="pip install gymnasium"):
        spec.loader.exec_module(module)


def test_simulation_core_does_not_import_gymnasium() -> None:
    root = Path(gym_env.__file__).parents[1] / "sim"  # the package codered_env/gym_env/ sits beside sim/
    offenders = [p.name for p in root.glob("*.py") if "gymnasium" in p.read_text()]
    assert offenders == []


def _cue_columns(report: str) -> set[str]:
    row = gym_rows._report_row(report)
    return {name for name in gym_env.CALL_FEATURES if name.startswith("cue_") and row[gym_schema._C[name]]}


def test_report_cues_are_the_report_models_features() -> None:
    from codered_env.sim.triage import CALLER_PHRASES, FEATURE_PHRASES, NO_SYMPTOM_TEXT, callback_report

    column_of = {f: f"cue_{name}" for name, features in gym_schema.REPORT_CUES for f in features}
    for feature, phrases in FEATURE_PHRASES.items():
        for phrase in phrases:
            report = f"45F at Old City, family calling: {phrase}"
            assert _cue_columns(report) == {column_of[feature]}, phrase
            nested = callback_report(callback_report(report, "C1"), "C4")
            assert gym_rows._report_row(nested)[gym_schema._C["callback"]] == 1.0
            assert _cue_columns(nested) == {column_of[feature]}, "cues read under callback prefixes"
    bystander = f"70M at Hitech City, {CALLER_PHRASES['bystander']}: {NO_SYMPTOM_TEXT}"
    assert _cue_columns(bystander) == {f"cue_{gym_schema.BYSTANDER_CUE}"}
    row = gym_rows._report_row(bystander)
    assert (row[gym_schema._C["age"]], row[gym_schema._C["male"]]) == (pytest.approx(0.70), 1.0)
    assert not any(gym_rows._report_row("not a report from the model: chest pain"))


def test_task_features_tell_every_task_apart() -> None:
    """v1: the step-budget and horizon features are divided by the largest values in the task
    table, so tasks 3-5 no longer all read 1.0 (v0 divided the budget by 60)."""
    names = ("max_steps", "horizon", "phase2", "mutual_aid_limit")
    columns = [gym_env.GLOBAL_FEATURES.index(name) for name in names]
    budget = columns[0]
    seen, task_rows = {}, {}
    for task_id in TASK_IDS:
        env = gymnasium.make(f"CodeRedEnv-{task_id}-v16")
        obs, _ = env.reset(seed=0)
        seen[task_id] = float(obs["global"][budget])
        task_rows[task_id] = tuple(float(obs["global"][c]) for c in columns)
        assert seen[task_id] == pytest.approx(TASKS[task_id].max_steps / gym_schema.LARGEST_STEP_BUDGET)
        env.close()
    assert len(set(seen.values())) == len({t.max_steps for t in TASKS.values()})
    assert len(set(task_rows.values())) == len(TASK_IDS)  # the task features tell every task apart
    assert max(seen.values()) == 1.0


# ---------------------------------------------------------------- the focused action set (learners)
def _heuristic_until(env: CodeRedGymEnv, task_id: str, seed: int, done: Any, limit: int = 200) -> None:
    """Play the heuristic's actions through ``env`` (any action set) until ``done(env)``."""
    agent = make_agent("heuristic", seed)
    agent.reset(task_id, seed)
    env.reset(seed=seed)
    for _ in range(limit):
        if done(env):
            return
        action = agent.act(env.sim.observation())
        env.sim.step(action)
        env._observe()
    raise AssertionError("the condition never held")


def _full_legal_keys(env: CodeRedGymEnv) -> set[str]:
    return {repr(sorted(a.items())) for a in enumerate_actions(env.sim.observation()["legal_actions"])}


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_focused_actions_are_a_legal_subset_and_accepted(task_id: str) -> None:
    env, rng = CodeRedGymEnv(task_id, actions="focused"), np.random.default_rng(5)
    full = CodeRedGymEnv(task_id)
    for seed in (0, 1):
        _, info = env.reset(seed=seed)
        full.reset(seed=seed)
        while True:
            focused = env.legal_wire_actions()
            assert focused[0] == {"action_type": "maintain_plan"}
            assert {repr(sorted(a.items())) for a in focused} <= _full_legal_keys(env)
            assert len(focused) <= int(full.action_masks().sum()) or full.sim.clock != env.sim.clock
            _, _, terminated, _, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
            assert info["last_action_error"] is None
            if terminated:
                break


def test_focused_set_drops_same_priority_retriage() -> None:
    env = CodeRedGymEnv("task5", actions="focused")
    _heuristic_until(env, "task5", 0, lambda e: any(c.priority for c in e.sim.world.calls.values()
                                                    if c.status in ("pending", "dispatched")))
    triaged = {c.call_id: c.priority for c in env.sim.world.calls.values()
               if c.priority and c.status in ("pending", "dispatched")}
    full = {repr(sorted(a.items())) for a in enumerate_actions(env.sim.observation()["legal_actions"])}
    offered = [a for a in env.legal_wire_actions() if a["action_type"] == "triage_call"]
    for call_id, priority in triaged.items():
        same = {"action_type": "triage_call", "call_id": call_id, "priority": priority}
        assert repr(sorted(same.items())) in full  # legal in the simulation ...
        assert same not in offered  # ... but not offered to the learner
        assert any(a["call_id"] == call_id for a in offered)  # the other levels are


def test_focused_blood_actions_serve_visible_needs_only() -> None:
    from codered_env.sim.conditions import CONDITIONS
    from codered_env.sim.types import FINAL_PATIENT_STATES

    env = CodeRedGymEnv("task3", actions="focused")

    def bleeding_with_destination(e: CodeRedGymEnv) -> bool:
        return any(p.visible and CONDITIONS[p.condition].needs_blood and p.destination
                   and p.status not in FINAL_PATIENT_STATES for p in e.sim.world.patients.values())

    _heuristic_until(env, "task3", 0, bleeding_with_destination)
    world = env.sim.world
    full_types = {a["action_type"] for a in enumerate_actions(env.sim.observation()["legal_actions"])}
    assert {"transfer_blood", "allocate_blood"} <= full_types
    needy = {p.patient_id for p in world.patients.values()
             if p.visible and CONDITIONS[p.condition].needs_blood}
    destinations = {world.patients[p].destination for p in needy}
    offered = env.legal_wire_actions()
    assert any(a["action_type"] == "allocate_blood" for a in offered)  # the need is served
    for action in offered:
        if action["action_type"] in ("allocate_blood", "query_blood_type"):
            assert action["patient_id"] in needy
        if action["action_type"] == "allocate_blood" and world.patients[action["patient_id"]].destination:
            assert action["hospital_id"] == world.patients[action["patient_id"]].destination
        if action["action_type"] == "transfer_blood":
            assert action["to_hospital_id"] in destinations


def test_focused_set_reads_no_hidden_blood_type_or_caller() -> None:
    env = CodeRedGymEnv("task3", actions="focused")
    env.reset(seed=1)
    for _ in range(15):
        env.step(0)
    twin = copy.deepcopy(env)
    for p in twin.sim.world.patients.values():
        if not p.blood_type_known:
            p.blood_type = "AB-" if p.blood_type != "AB-" else "O+"
    twin._observe()
    env._observe()
    assert twin.legal_wire_actions() == env.legal_wire_actions()
    phase2 = CodeRedGymEnv("task4", actions="focused")
    phase2.reset(seed=3)
    hidden = phase2.sim.world.patients[_hidden_caller(phase2)]
    twin2 = copy.deepcopy(phase2)
    twin2.sim.world.patients[hidden.patient_id].condition = "trauma_haemorrhage"
    assert _same(phase2._observe(), twin2._observe())
    assert twin2.legal_wire_actions() == phase2.legal_wire_actions()


def test_unknown_action_set_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="focused"):
        CodeRedGymEnv("task1", actions="smart")


def test_focused_set_drops_same_destination_and_or_queries() -> None:
    env = CodeRedGymEnv("task3", actions="focused")
    _heuristic_until(env, "task3", 0, lambda e: any(p.destination and p.status == "transporting"
                                                    for p in e.sim.world.patients.values()))
    full = enumerate_actions(env.sim.observation()["legal_actions"])
    offered = env.legal_wire_actions()
    assert any(a["action_type"] == "query_or_status" for a in full)
    assert not any(a["action_type"] == "query_or_status" for a in offered)
    for p in env.sim.world.patients.values():
        if p.destination and p.status == "transporting":
            same = {"action_type": "assign_hospital", "patient_id": p.patient_id,
                    "hospital_id": p.destination}
            assert same in full and same not in offered
