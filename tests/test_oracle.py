"""The ``oracle`` ceiling (agents/oracle.py) and the report's normalised column."""

from __future__ import annotations

import os
import statistics

import pytest

from codered_env.agents import BUILTIN_AGENTS, HeuristicAgent, OracleAgent, PlannerAgent, make_agent
from codered_env.agents.oracle import TRUTH, truth_copy
from codered_env.agents.variants import VARIANTS, Variant, VariantHeuristic
from codered_env.evaluation.report import Row, normalised_score
from codered_env.runner import run_episode
from codered_env.sim import CodeRedSim


def _play(sim: CodeRedSim, agent: HeuristicAgent, steps: int | None = None) -> None:
    while not sim.done and (steps is None or steps > 0):
        sim.step(agent.act(sim.observation()))
        steps = None if steps is None else steps - 1


def test_make_agent_builds_the_oracle_but_no_default_list_holds_it() -> None:
    agent = make_agent("oracle", 4, max_candidates=5)
    assert isinstance(agent, OracleAgent) and agent.name == "oracle" and agent.max_candidates == 5
    assert "oracle" not in BUILTIN_AGENTS
    with pytest.raises(ValueError, match="forks"):
        make_agent("oracle", 0, forks=0)


def test_truth_copy_is_the_episode_and_a_fork_is_not() -> None:
    sim = CodeRedSim("task5", 7)
    _play(sim, HeuristicAgent(7), steps=12)
    twin, forks = truth_copy(sim), [sim.fork(k) for k in range(3)]
    _play(sim, HeuristicAgent(7))
    _play(twin, HeuristicAgent(7))
    assert twin.grade() == sim.grade() and twin.observation() == sim.observation()
    for fork in forks:
        _play(fork, HeuristicAgent(7))
    assert any(fork.grade()["raw_score"] != sim.grade()["raw_score"] for fork in forks)


def test_truth_triage_reads_the_hidden_priority() -> None:
    sim = CodeRedSim("task5", 11)
    agent = VariantHeuristic(11, TRUTH, sim)
    triaged = 0
    while not sim.done and triaged < 8:
        action = agent.act(sim.observation())
        if action["action_type"] == "triage_call":
            assert action["priority"] == sim.world.calls[action["call_id"]].true_priority
            triaged += 1
        sim.step(action)
    assert triaged == 8


def test_oracle_is_reproducible() -> None:
    first = run_episode("task1", 1002, OracleAgent(1002))
    second = run_episode("task1", 1002, OracleAgent(1002))
    assert first.actions == second.actions and first.score == second.score


def test_the_search_alone_beats_the_heuristic_and_the_best_of_keeps_the_better_play() -> None:
    seeds = range(1000, 1003)
    heuristic = [run_episode("task2", s, HeuristicAgent(s)).score for s in seeds]
    search = [run_episode("task2", s, OracleAgent(s, best_of=False)).score for s in seeds]
    # process credit only where outcomes are equal (+0.009 measured on these seeds)
    assert statistics.fmean(search) > statistics.fmean(heuristic) + 0.005
    oracle = OracleAgent(1000)
    result = run_episode("task2", 1000, oracle)
    assert result.score == oracle.play_scores[oracle.choice] == max(oracle.play_scores.values())
    assert oracle.search_score == search[0] and result.score >= search[0]


def test_the_best_of_plays_the_best_of_every_play_it_tried() -> None:
    oracle = OracleAgent(3)
    result = run_episode("task1", 3, oracle)
    assert result.score == max(oracle.play_scores.values()) == oracle.play_scores[oracle.choice]
    names = set(oracle.play_scores)
    assert {"search", "planner", "heuristic"} <= names
    assert sum(name.startswith("variant:") for name in names) == len(VARIANTS)
    assert sum(name.startswith("search:") for name in names) == oracle.search_bases


def test_a_variant_bends_the_heuristic_as_it_says() -> None:
    def dispatches(variant: Variant) -> list[tuple[int, str]]:
        sim = CodeRedSim("task4", 5)
        agent = VariantHeuristic(5, variant, sim)
        out = []
        while not sim.done and len(out) < 4:
            action = agent.act(sim.observation())
            if action["action_type"].startswith("dispatch"):
                out.append((sim.clock, action["ambulance_id"]))
            sim.step(action)
        return out

    rule, held, bls = dispatches(Variant()), dispatches(Variant(hold=8)), dispatches(Variant(units="BLS"))
    assert held[0][0] >= rule[0][0] + 8
    assert all(unit.startswith("BLS") for _, unit in bls) and rule != bls
    assert len(VARIANTS) == len(set(VARIANTS)) and Variant() in VARIANTS and TRUTH in VARIANTS


def _variant_play(task: str, seed: int, variant: Variant) -> list[tuple[int, dict]]:
    sim = CodeRedSim(task, seed)
    agent, out = VariantHeuristic(seed, variant, sim), []
    while not sim.done:
        action = agent.act(sim.observation())
        out.append((sim.clock, action))
        sim.step(action)
    return out


def test_random_job_orders_are_seeded_restarts() -> None:
    first = _variant_play("task3", 4, Variant(order="random"))
    again = _variant_play("task3", 4, Variant(order="random"))
    other = _variant_play("task3", 4, Variant(order="random", order_seed=1))
    assert first == again and first != other != _variant_play("task3", 4, Variant())
    assert Variant(order="random", order_seed=3).label.endswith("order=random:3")


def test_held_preparations_wait_their_minutes() -> None:
    kinds = ("prepare_or", "page_specialist", "allocate_blood")

    def preparations(variant: Variant) -> list[int]:
        return [clock for clock, a in _variant_play("task2", 1, variant) if a["action_type"] in kinds]

    rule, held = preparations(Variant()), preparations(Variant(hold_prep=10))
    assert rule and held and held[0] >= rule[0] + 10


def test_held_destinations_are_chosen_on_time_not_after_a_long_wait() -> None:
    # a hold ends when it says: the variant waits in one-minute queries near its release, not
    # with a maintain_plan that could jump past it (as the red team's holds do)
    sim = CodeRedSim("task2", 3)
    agent, assigned, queries = VariantHeuristic(3, Variant(hold_assign=5), sim), {}, 0
    while not sim.done:
        action = agent.act(sim.observation())
        if action["action_type"] == "assign_hospital":
            assigned.setdefault(action["patient_id"], sim.clock)
        queries += action["action_type"] == "query_or_status"
        sim.step(action)
    waited = [assigned[pid] - agent._first_seen[f"assign:{pid}"] for pid in assigned]
    assert assigned and min(waited) == 5 and queries
    assert Variant(hold_assign=5).label.endswith("hold-assign=5")
    assert not [a for _, a in _variant_play("task2", 3, Variant()) if a["action_type"] == "query_or_status"]


def test_a_no_reroute_variant_leaves_a_diverted_destination_to_the_crew() -> None:
    # task3 seed 7017: H2 goes on diversion at t9 with P2 bound for it (tests/sim/test_heuristic_foresight.py)
    def p2_destinations(variant: Variant) -> list[str]:
        return [a["hospital_id"] for _, a in _variant_play("task3", 7017, variant)
                if a["action_type"] == "assign_hospital" and a["patient_id"] == "P2"]

    assert p2_destinations(Variant(reroute=False)) == ["H2"]
    assert p2_destinations(Variant())[0] == "H2" and len(p2_destinations(Variant())) > 1


def test_an_out_of_sync_oracle_drops_its_chosen_play() -> None:
    oracle = OracleAgent(0, max_candidates=2)
    oracle.reset("task2", 1)
    other = CodeRedSim("task2", 2)  # not the episode the oracle was reset on
    script = list(oracle._script)
    played = []
    for _ in range(4):
        played.append(oracle.act(other.observation()))
        other.step(played[-1])
    assert oracle._script == [] and oracle._sim is None
    assert played != script[:4]


def _ladder(task: str, seeds: range) -> tuple[float, float, float]:
    means = []
    for agent in (HeuristicAgent, PlannerAgent, OracleAgent):
        means.append(statistics.fmean(run_episode(task, s, agent(s)).score for s in seeds))
    return means[0], means[1], means[2]


@pytest.mark.parametrize("task", ["task1", "task2"])
def test_oracle_above_planner_above_heuristic(task: str) -> None:
    """On task2 the planner falls below the heuristic on seed 1002 (0.594 against 0.656: a fork's
    estimate of the callers misleads it), so over 1000-1002 only the oracle's place is asserted
    there; on held-out 20000-20009 the planner is above (0.699 against 0.689)."""
    heuristic, planner, oracle = _ladder(task, range(1000, 1003))
    assert oracle >= max(planner, heuristic) and oracle > heuristic, (heuristic, planner, oracle)
    if task == "task1":
        assert planner >= heuristic, (heuristic, planner, oracle)


_TASK3_TIE = pytest.mark.xfail(
    reason="the planner ties the heuristic on task3 (held-out 20000-20009: +0.005 +- 0.013; on "
    "seeds 1000-1002 0.7314 against 0.7345): its heavy-tailed losses are not fully avoided",
    strict=False,
)


_TASK5_TAIL = pytest.mark.xfail(
    reason="the planner is above the heuristic on task5 over ten seeds (20000-20009: +0.037; "
    "7000-7009: +0.070 +- 0.017) but not on seeds 1000-1002 (0.646 against 0.670): a heavy-tailed loss",
    strict=False,
)


@pytest.mark.skipif(os.environ.get("CODERED_SLOW") != "1", reason="slow: set CODERED_SLOW=1")
@pytest.mark.parametrize("task", [pytest.param("task3", marks=_TASK3_TIE), "task4",
                                  pytest.param("task5", marks=_TASK5_TAIL)])
def test_oracle_above_planner_above_heuristic_slow(task: str) -> None:
    heuristic, planner, oracle = _ladder(task, range(1000, 1003))
    assert oracle >= max(planner, heuristic) and oracle > heuristic, (heuristic, planner, oracle)
    assert planner >= heuristic, (heuristic, planner, oracle)


def _row(task: str, agent: str, scores: tuple[float, ...]) -> Row:
    return Row(task, agent, agent, scores, tuple(range(len(scores))), {}, ("2026-12-01",))


def test_normalised_score_spans_random_to_oracle() -> None:
    rows = [_row("task2", "random", (0.2, 0.2)), _row("task2", "oracle", (0.8, 0.8)),
            _row("task2", "heuristic", (0.6, 0.7)), _row("task3", "heuristic", (0.5,))]
    assert [normalised_score(r, rows) for r in rows] == ["0.00", "1.00", "0.75", "—"]
    flat = [_row("task2", "random", (0.5,)), _row("task2", "oracle", (0.5,))]
    assert normalised_score(flat[1], flat) == "—"  # no range to normalise by


def test_report_shows_the_normalised_column(tmp_path) -> None:
    from codered_env.evaluation.report import generate_report
    from codered_env.evaluation.store import EpisodeRecord, EpisodeStore
    from codered_env.evaluation.trajectory import StepRecord, Trajectory

    def record(agent: str, seed: int, score: float) -> EpisodeRecord:
        steps = [StepRecord(1, {"action_type": "maintain_plan"}, score, True)]
        trajectory = Trajectory(task_id="task2", seed=seed, agent=agent, model=agent, steps=steps)
        return EpisodeRecord(agent=agent, model=agent, task_id="task2", seed=seed, score=score,
                             components={"time_score": score}, steps=1, wall_time_s=0.1,
                             trajectory=trajectory.to_jsonl(), package_version="9.9.9",
                             created_at="2026-12-01T10:00:00+00:00")

    db = tmp_path / "ladder.db"
    with EpisodeStore(db) as store:
        for agent, score in (("random", 0.3), ("heuristic", 0.7), ("planner", 0.75), ("oracle", 0.8)):
            store.add(record(agent, 0, score))
    text = generate_report(db, tmp_path / "out", version="9.9.9").markdown_path.read_text()
    assert "| Score (mean ± sample std) | Normalised |" in text
    assert "| task2 | heuristic | heuristic | 1 | 0.700 ± 0.000 | 0.80 |" in text
    assert "| task2 | planner | planner | 1 | 0.750 ± 0.000 | 0.90 |" in text
    lines = [line.split(" | ")[1] for line in text.splitlines() if line.startswith("| task2 |")]
    assert lines[:4] == ["random", "heuristic", "planner", "oracle"]


@pytest.mark.parametrize(("task_id", "seed"), [("task4", 961), ("task5", 962)])
def test_the_oracle_on_one_snapshot_per_decision_plays_as_on_fresh_copies(task_id: str, seed: int) -> None:
    runs = []
    for shared in (True, False):
        agent = OracleAgent(seed, best_of=False)
        if not shared:  # the race before: a fresh truth_copy of the replica for every candidate
            agent._rollout_start = agent.branch  # type: ignore[method-assign]
        values: list[float] = []
        rollout = agent._rollout
        agent._rollout = lambda twin, play=rollout, out=values: out.append(play(twin)) or out[-1]
        result = run_episode(task_id, seed, agent)
        runs.append((result.actions, result.score, values))
    assert len(runs[0][2]) > 10 and runs[0] == runs[1]
