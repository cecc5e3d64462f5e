"""Task sampling (RFC 013): integer tiers and groups, seeded samplers, a tier-by-tier curriculum."""

from __future__ import annotations

from collections import Counter

import pytest

from codered_env.sim import TASK_IDS, TASKS, CodeRedSim
from codered_env.sim.sampling import (
    CurriculumSampler,
    Episode,
    TierSampler,
    UniformSampler,
    all_tiers,
    tasks_of_tiers,
)
from codered_env.sim.tasks import DIFFICULTY_NAMES

SEEDS = range(0, 10_000)


def test_tasks_carry_integer_tiers_names_and_groups() -> None:
    assert [TASKS[t].difficulty for t in TASK_IDS] == [0, 1, 2, 2, 3]
    assert [TASKS[t].difficulty_name for t in TASK_IDS] == [
        "beginner", "intermediate", "advanced", "advanced", "expert"]
    assert {TASKS[t].group for t in TASK_IDS} == {"known_patients", "call_queue"}
    for t in TASK_IDS:
        assert TASKS[t].group == ("known_patients" if TASKS[t].phase == 1 else "call_queue")
    spec = TASKS["task5"].as_dict()
    assert (spec["difficulty"], spec["difficulty_name"], spec["group"]) == (3, "expert", "call_queue")
    assert all_tiers() == tuple(range(len(DIFFICULTY_NAMES)))


def test_uniform_sampler_is_seeded_even_and_resumable() -> None:
    first, again = UniformSampler(SEEDS, rng_seed=7), UniformSampler(SEEDS, rng_seed=7)
    draws = first.sample(50)
    assert draws == again.sample(50)
    assert draws != UniformSampler(SEEDS, rng_seed=8).sample(50)
    assert Counter(e.task_id for e in draws) == {t: 10 for t in TASK_IDS}  # rounds of every task
    assert all(e.seed in SEEDS for e in draws)
    state = first.state_dict()
    resumed = UniformSampler(SEEDS, rng_seed=0)
    resumed.load_state_dict(state)
    assert resumed.sample(13) == first.sample(13)


def test_tier_sampler_keeps_to_its_tiers() -> None:
    assert tasks_of_tiers([2]) == ("task3", "task4")
    draws = TierSampler(range(10_000, 11_000), tiers=[2, 3], rng_seed=1).sample(30)
    assert {e.task_id for e in draws} == {"task3", "task4", "task5"}
    assert all(10_000 <= e.seed < 11_000 for e in draws)


@pytest.mark.parametrize("bad", [[], [9], ["2"], [True]])
def test_bad_tiers_are_refused(bad: list[object]) -> None:
    with pytest.raises(ValueError, match="tier"):
        TierSampler(SEEDS, tiers=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("kwargs", [{"seeds": range(0)}, {"seeds": range(-5, 5)}, {"tasks": ("task9",)},
                                    {"tasks": ()}])
def test_bad_sampler_arguments_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        UniformSampler(**{"seeds": SEEDS, **kwargs})  # type: ignore[arg-type]


@pytest.mark.parametrize("n", [-1, 10**6, 2.5, True])
def test_bad_counts_are_refused(n: object) -> None:
    with pytest.raises(ValueError, match="n must be"):
        UniformSampler(SEEDS).sample(n)  # type: ignore[arg-type]


def test_curriculum_advances_a_tier_when_the_window_succeeds() -> None:
    sampler = CurriculumSampler(SEEDS, success_threshold=0.5, rng_seed=3, window=4, advance_rate=0.75,
                                review_share=0.0)
    assert sampler.tier == 0 and {e.task_id for e in sampler.sample(10)} == {"task1"}
    for score in (0.9, 0.2, 0.9):
        sampler.update(Episode("task1", 1), [score])
    assert sampler.tier == 0  # window not full yet
    sampler.update(Episode("task2", 1), [0.9])  # another tier's episode does not count
    assert sampler.tier == 0
    sampler.update(Episode("task1", 2), [0.8])  # 3 of 4 >= 0.5
    assert sampler.tier == 1 and sampler.history == [(5, 1)]
    assert {e.task_id for e in sampler.sample(10)} == {"task2"}
    for _ in range(3):  # tier 1 -> 2 -> 3, then it stays at the last tier
        sampler.update(Episode(tasks_of_tiers([sampler.tier])[0], 0), [1.0, 1.0, 1.0, 1.0])
    assert sampler.tier == 3 and [t for _, t in sampler.history] == [1, 2, 3]


def test_curriculum_reviews_passed_tiers_and_resumes_exactly() -> None:
    sampler = CurriculumSampler(SEEDS, success_threshold=0.5, rng_seed=5, window=2, review_share=0.5)
    sampler.update(Episode("task1", 0), [1.0, 1.0])
    sampler.update(Episode("task2", 0), [1.0, 1.0])
    assert sampler.tier == 2
    tiers = Counter(e.difficulty for e in sampler.sample(400))
    assert set(tiers) == {0, 1, 2} and tiers[2] > tiers[0] + tiers[1] - 80  # about half review
    copy = CurriculumSampler(SEEDS, success_threshold=0.5, window=2, review_share=0.5)
    copy.load_state_dict(sampler.state_dict())
    assert copy.sample(20) == sampler.sample(20) and copy.tier == sampler.tier


def test_sampled_episodes_play() -> None:
    episode = UniformSampler(SEEDS, rng_seed=2).sample(1)[0]
    sim = CodeRedSim(**episode.reset_kwargs())
    assert (sim.task.task_id, sim.seed) == (episode.task_id, episode.seed)


def test_the_documented_curriculum_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "SAMPLING.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S)
    assert code is not None
    exec(compile(code.group(1), "SAMPLING.md", "exec"), {})
    tier, _ = capsys.readouterr().out.split(" ", 1)
    assert int(tier) in all_tiers()


def test_a_sampler_given_city_seeds_draws_a_generated_city_per_episode() -> None:
    from codered_env.sim.citygen import split_seeds
    from codered_env.sim.sampling import CurriculumSampler, TierSampler, UniformSampler

    train = split_seeds("train")
    plain = UniformSampler(range(0, 50), rng_seed=3).sample(20)
    assert {e.city for e in plain} == {"prakashnagar"}
    assert all("city" not in e.reset_kwargs() for e in plain)
    drawn = UniformSampler(range(0, 50), rng_seed=3, cities=train).sample(40)
    assert len({e.city for e in drawn}) > 20 and all(int(e.city[4:]) in train for e in drawn)
    assert drawn == UniformSampler(range(0, 50), rng_seed=3, cities=train).sample(40)
    assert drawn[0].reset_kwargs()["city"] == drawn[0].city == drawn[0].as_dict()["city"]
    assert TierSampler(range(5), [0], cities=range(7, 8)).sample(1)[0].city == "gen-7"
    assert CurriculumSampler(range(5), 0.5, cities=range(9, 10)).sample(1)[0].city == "gen-9"
    with pytest.raises(ValueError, match="cities must be"):
        UniformSampler(range(5), cities=range(0))
