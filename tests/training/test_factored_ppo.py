"""The factored interface's reference learner for a few steps: behaviour cloning, PPO, the
outputs, and a policy that never gives probability to an action that is not legal.

Skips cleanly without PyTorch (the ``rl`` extra)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

torch = pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")

from codered_env.agents.factored import INPUTS  # noqa: E402
from codered_env.cli import app  # noqa: E402
from codered_env.factored_ppo import (  # noqa: E402
    FactoredConfig,
    _advantages,
    _type_weights,
    batch_inputs,
    behaviour_clone,
    heuristic_demonstrations,
    learner_rewards,
    make_policy,
    step_discounts,
    train_factored,
)
from codered_env.gym_env import CodeRedFactoredEnv  # noqa: E402
from codered_env.gym_env.factored_actions import TYPE_INDEX  # noqa: E402
from codered_env.gym_env.factored_features import SHAPES  # noqa: E402


def test_policy_scores_only_legal_vectors_and_clones_the_heuristic() -> None:
    data = heuristic_demonstrations("task2", [0, 1])
    assert len(data) > 20
    env = CodeRedFactoredEnv("task2")
    env.reset(seed=0)
    for _, legal, target in data[:5]:
        assert 0 <= target < len(legal)
    torch.manual_seed(0)
    policy = make_policy(16)
    obs, legal, mask = batch_inputs([d[0] for d in data[:8]], [d[1] for d in data[:8]])
    logits, values = policy(obs, legal, mask)
    probs = torch.softmax(logits, -1)
    assert (
        values.shape == (8,) and torch.all(probs[~mask] == 0) and torch.allclose(probs.sum(-1), torch.ones(8))
    )
    report = behaviour_clone(policy, data, epochs=3, lr=1e-3, rng=np.random.default_rng(0))
    assert report["train_samples"] + report["held_out_samples"] == len(data)
    assert 0.0 <= report["accuracy_waits"] <= 1.0


def test_type_first_policy_chooses_a_legal_type_then_a_vector_of_it(tmp_path: Path) -> None:
    from codered_env.agents.factored import load_policy, save_policy
    from codered_env.factored_ppo import _initial_policy

    data = heuristic_demonstrations("task5", [0])[:16]
    obs, legal, mask = batch_inputs([d[0] for d in data], [d[1] for d in data])
    torch.manual_seed(0)
    policy = make_policy(16, type_first=True)
    with torch.no_grad():  # a zero type head: every legal type gets 1 / (legal types)
        policy.type_head.weight.zero_()
        policy.type_head.bias.zero_()
    logits, _ = policy(obs, legal, mask)
    probs = torch.softmax(logits, -1).detach()
    assert torch.all(probs[~mask] == 0) and torch.allclose(probs.sum(-1), torch.ones(len(data)))
    types, checked = legal[..., 0], 0
    for b in range(len(data)):
        wait = (types[b] == TYPE_INDEX["maintain_plan"]) & mask[b]
        if wait.any():
            legal_types = types[b][mask[b]].unique()
            assert float(probs[b][wait].sum()) == pytest.approx(1 / len(legal_types), abs=1e-5)
            checked += 1
    assert checked > len(data) // 2
    logits.exp().sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in policy.parameters() if p.grad is not None)

    save_policy(policy, tmp_path / "policy.pt")
    loaded, _ = load_policy(tmp_path / "policy.pt")
    assert loaded.type_first and torch.allclose(loaded(obs, legal, mask)[0], logits, equal_nan=True)
    start = FactoredConfig(task_id="task5", init_from=str(tmp_path / "policy.pt"), out_dir=str(tmp_path))
    with pytest.raises(ValueError, match="has type_first=True, this run type_first=False"):
        _initial_policy(start)
    saved = torch.load(tmp_path / "policy.pt", weights_only=True)
    saved["config"]["type_first"] = "yes"
    torch.save(saved, tmp_path / "bad.pt")
    with pytest.raises(ValueError, match=r"config\.type_first must be true or false, got 'yes'"):
        load_policy(tmp_path / "bad.pt")


def test_training_run_writes_its_outputs(tmp_path: Path) -> None:
    config = FactoredConfig(
        task_id="task1",
        total_steps=64,
        n_envs=2,
        n_steps=16,
        minibatch=16,
        hidden=16,
        bc_episodes=2,
        bc_epochs=1,
        eval_every=32,
        eval_seeds=[10_000, 10_001],
        out_dir=str(tmp_path),
    )
    result = train_factored(config, log=lambda line: None)
    assert [row["steps"] for row in result["curve"]] == [0, 32, 64]
    assert 0.0 < result["final"]["mean"] < 1.0 and 0.0 < result["heuristic"] < 1.0
    assert set(result["bc"]) >= {"accuracy_waits", "accuracy_decisions", "grade", "ratio_to_heuristic"}
    assert json.loads((tmp_path / "run.json").read_text())["config"]["task_id"] == "task1"
    saved = torch.load(tmp_path / "policy.pt")
    policy = make_policy(16)
    policy.load_state_dict(saved["state_dict"])


def test_cli_trains_the_factored_interface(tmp_path: Path) -> None:
    args = [
        "train",
        "--interface",
        "factored",
        "--task",
        "task1",
        "--steps",
        "32",
        "--envs",
        "2",
        "--eval-every",
        "1000",
        "--eval-seeds",
        "10000-10001",
        "--out",
        str(tmp_path),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.strip().splitlines()[-1])["final"]["steps"] >= 32
    bad = CliRunner().invoke(app, ["train", "--interface", "tabular", "--out", str(tmp_path)])
    assert bad.exit_code != 0 and "valid: flat, factored" in bad.output


def test_type_weights_balance_the_action_types() -> None:
    data = heuristic_demonstrations("task1", [0, 1])
    types = np.array([int(legal[target, 0]) for _, legal, target in data])
    assert (types == 0).sum() > (types != 0).sum()  # waits dominate the heuristic's decisions
    flat, inverse = _type_weights(data, 0.0), _type_weights(data, 1.0)
    assert np.allclose(flat, 1.0) and np.isclose(inverse.mean(), 1.0)
    per_type = {t: inverse[types == t].sum() for t in set(types.tolist())}
    assert np.allclose(list(per_type.values()), next(iter(per_type.values())))  # equal total per type


def test_relabelling_plays_the_learner_and_labels_with_the_heuristic() -> None:
    torch.manual_seed(0)
    waiter = make_policy(16)
    with torch.no_grad():  # a policy that always waits: its states differ from the heuristic's
        waiter.type_head.bias[0] = 1e6
    own = heuristic_demonstrations("task1", [3], policy=waiter)
    expert = heuristic_demonstrations("task1", [3])
    assert len(own) != len(expert)
    assert any(target != 0 for _, _, target in own)  # the heuristic would have acted there


def test_warm_start_with_relabelling_and_init_from(tmp_path: Path) -> None:
    config = FactoredConfig(task_id="task1", total_steps=0, hidden=16, bc_episodes=2, bc_epochs=1,
                            bc_dagger_rounds=1, bc_dagger_episodes=1, eval_seeds=[10_000],
                            out_dir=str(tmp_path / "bc"))
    result = train_factored(config, log=lambda line: None)
    assert len(result["bc"]["rounds"]) == 2 and result["bc"]["training_seeds"] == [0, 2]
    assert result["curve"] == []
    again = FactoredConfig(task_id="task1", total_steps=0, hidden=16, bc_episodes=0, eval_seeds=[10_000],
                           init_from=str(tmp_path / "bc" / "policy.pt"), out_dir=str(tmp_path / "again"))
    train_factored(again, log=lambda line: None)
    first, second = (torch.load(tmp_path / d / "policy.pt")["state_dict"] for d in ("bc", "again"))
    assert all(torch.equal(first[k], second[k]) for k in first)


def _uncut(observations: list[dict[str, np.ndarray]]) -> dict[str, torch.Tensor]:
    return {k: torch.as_tensor(np.stack([o[k] for o in observations]), dtype=torch.float32) for k in INPUTS}


def test_cutting_unused_case_slots_keeps_every_score() -> None:
    data = heuristic_demonstrations("task3", [0])[::7][:12]
    observations, legal = [d[0] for d in data], [d[1] for d in data]
    obs, padded, mask = batch_inputs(observations, legal)
    assert obs["cases"].shape[1] < SHAPES["cases"][0][0]  # slots were cut
    lengths = np.array([[len(x)] for x in legal])
    assert torch.equal(mask, torch.as_tensor(np.arange(padded.shape[1]) < lengths))
    torch.manual_seed(0)
    policy = make_policy(16)
    with torch.no_grad():
        policy.pair_forms.normal_()
        policy.param_pairs.normal_()
        cut_logits, cut_values = policy(obs, padded, mask)
        logits, values = policy(_uncut(observations), padded, mask)
    assert torch.allclose(cut_logits, logits, atol=1e-5) and torch.allclose(cut_values, values, atol=1e-5)


def test_pair_terms_start_at_zero_and_score_case_and_hospital_jointly() -> None:
    """A fresh policy scores a case and a hospital additively; the pair terms make the score of
    an assignment depend on both (the heuristic's hospital follows from the patient's needs)."""
    obs = next(d[0] for d in heuristic_demonstrations("task3", [0]) if d[0]["case_present"][:2].all())
    grid = np.array([[TYPE_INDEX["assign_hospital"], 0, c, h, 0] for c in (0, 1) for h in (0, 1)])
    torch.manual_seed(0)
    policy = make_policy(16)

    def interaction() -> float:
        with torch.no_grad():
            s = policy(*batch_inputs([obs], [grid]))[0][0]
        return float(s[0] + s[3] - s[1] - s[2])  # (c1, h1) + (c2, h2) - (c1, h2) - (c2, h1)

    assert interaction() == pytest.approx(0.0, abs=1e-6)
    with torch.no_grad():
        policy.pair_forms.normal_()
    assert abs(interaction()) > 1e-4


def test_per_minute_discount_makes_splitting_a_wait_worth_nothing() -> None:
    """One decision of 3 minutes and three of 1 minute, the same rewards at the same minutes:
    the same discounted return at the start (GAE with lambda 1 and zero values)."""
    config = FactoredConfig(gamma_minute=0.9)
    long_wait = np.array([[0.0], [1.0]]), np.array([[3.0], [1.0]])
    short_waits = np.array([[0.0], [0.0], [0.0], [1.0]]), np.array([[1.0], [1.0], [1.0], [1.0]])
    starts = []
    for rewards, minutes in (long_wait, short_waits):
        zeros, dones = np.zeros_like(rewards), np.zeros_like(rewards)
        dones[-1] = 1.0
        adv = _advantages(rewards, zeros, dones, np.zeros(1), step_discounts(config, minutes), 1.0)
        starts.append(float(adv[0, 0]))
    assert starts[0] == pytest.approx(starts[1]) == pytest.approx(0.9**3)
    per_decision = FactoredConfig(gamma_minute=None, gamma=0.9)
    assert step_discounts(per_decision, np.array([[3.0]])) == 0.9


def test_annealed_learning_rate_falls_to_zero_by_the_end(tmp_path: Path) -> None:
    config = FactoredConfig(task_id="task1", total_steps=128, n_envs=2, n_steps=16, anneal_lr=True,
                            eval_every=10_000, eval_seeds=[10_000], out_dir=str(tmp_path))
    seen: list[float] = []
    original = torch.optim.Adam.step

    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(self.param_groups[0]["lr"])
        return original(self, *args, **kwargs)

    torch.optim.Adam.step = spy  # type: ignore[method-assign]
    try:
        train_factored(config, log=lambda _line: None)
    finally:
        torch.optim.Adam.step = original  # type: ignore[method-assign]
    assert seen[0] == pytest.approx(config.learning_rate)
    assert seen == sorted(seen, reverse=True) and seen[-1] < config.learning_rate / 2


def test_selection_keeps_the_policy_best_on_the_validation_seeds(tmp_path: Path) -> None:
    config = FactoredConfig(task_id="task1", total_steps=96, n_envs=2, n_steps=16, minibatch=16, hidden=16,
                            learning_rate=0.05, eval_every=32, eval_seeds=[10_000, 10_001],
                            select_seeds=[30_000, 30_001], out_dir=str(tmp_path))
    result = train_factored(config, log=lambda _line: None)
    curve = result["curve"]
    assert [row["steps"] for row in curve] == [0, 32, 64, 96] and all("validation" in row for row in curve)
    best = max(curve, key=lambda row: row["validation"])  # first of equals, as the run keeps it
    assert result["final"] == best
    from codered_env.agents.factored import load_policy
    from codered_env.factored_ppo import greedy_grades

    kept, _ = load_policy(tmp_path / "policy.pt")
    grades = greedy_grades(kept, "task1", config.eval_seeds)
    assert round(sum(grades) / len(grades), 4) == best["mean"]


def test_validation_seeds_may_not_be_evaluation_seeds(tmp_path: Path) -> None:
    shared = r"must not include an evaluation seed \(eval_seeds\): 10001 in both"
    with pytest.raises(ValueError, match=shared):
        FactoredConfig(task_id="task1", total_steps=32, eval_seeds=[10_000, 10_001], select_seeds=[10_001],
                       out_dir=str(tmp_path / "run"))
    assert not (tmp_path / "run").exists()


def test_reward_scale_multiplies_the_rewards_the_learner_sees(tmp_path: Path, monkeypatch: Any) -> None:
    import codered_env.factored_ppo as ppo

    seen: list[np.ndarray] = []
    original = ppo._advantages

    def spy(rewards: np.ndarray, *args: Any) -> np.ndarray:
        seen.append(rewards.copy())
        return original(rewards, *args)

    monkeypatch.setattr(ppo, "_advantages", spy)
    for scale, cost in ((1.0, 0.0), (7.0, 0.0), (7.0, 0.002)):
        config = FactoredConfig(task_id="task1", total_steps=32, n_envs=2, n_steps=16, minibatch=16,
                                hidden=16, reward_scale=scale, decision_cost=cost, eval_every=10_000,
                                eval_seeds=[10_000], out_dir=str(tmp_path / f"x{scale:g}-{cost:g}"))
        train_factored(config, log=lambda _line: None)
    plain, scaled, priced = seen  # the first rollout: the same untrained policy, the same episodes
    assert np.abs(plain).max() > 0 and np.allclose(scaled, 7.0 * plain)
    assert np.allclose(priced, 7.0 * (plain - 0.002))
    with pytest.raises(ValueError, match="reward_scale must be > 0"):
        FactoredConfig(reward_scale=0.0)


def test_a_decision_costs_the_learner_its_price_and_leaves_the_sum_of_waits_alone() -> None:
    """The price comes off every step before scaling: three one-minute decisions cost three
    times one decision of three minutes, the environment's rewards being the same."""
    config = FactoredConfig(decision_cost=0.002, reward_scale=10.0)
    rewards = np.array([[0.01], [-0.004]])
    assert np.allclose(learner_rewards(config, rewards), [[0.08], [-0.06]])
    assert np.array_equal(learner_rewards(FactoredConfig(), rewards), rewards)
    one, three = learner_rewards(config, np.zeros((1, 1))), learner_rewards(config, np.zeros((3, 1)))
    assert three.sum() == pytest.approx(3 * one.sum()) and one.sum() < 0
    with pytest.raises(ValueError, match="decision_cost must be >= 0"):
        FactoredConfig(decision_cost=-0.001)
