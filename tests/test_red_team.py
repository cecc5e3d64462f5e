"""The red team (bench/redteam/): the family runs and is deterministic, the probe's statistics
find what they should, and (slow, CODERED_SLOW=1) the score keeps the invariants against it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

BENCH = str(Path(__file__).resolve().parent.parent / "bench")
if BENCH not in sys.path:
    sys.path.insert(0, BENCH)

from redteam import probe  # noqa: E402
from redteam.policies import DEFAULT_FAMILY, POLICIES, GreedyRewardAgent, mix_names, policy  # noqa: E402

from codered_env.agents import HeuristicAgent  # noqa: E402
from codered_env.sim import TASK_IDS, CodeRedSim  # noqa: E402
from codered_env.sim.conditions import CONDITIONS  # noqa: E402

SLOW = pytest.mark.skipif(os.environ.get("CODERED_SLOW") != "1", reason="slow: set CODERED_SLOW=1")
# Seeds of their own: the probe's default seeds (1000-1049) stay unseen by every test.
SLOW_SEEDS = range(2000, 2020)
CONFIRM_SEEDS = range(2020, 2060)  # where a violation on SLOW_SEEDS must hold too
ORACLE_SEEDS = range(2000, 2005)


def _actions(name: str, task_id: str, seed: int, steps: int) -> list[dict]:
    agent = policy(name).build(seed)
    sim = CodeRedSim(task_id, seed)
    agent.reset(task_id, seed)
    played = []
    while not sim.done and len(played) < steps:
        played.append(agent.act(sim.observation()))
        sim.step(played[-1])
    return played


@pytest.mark.parametrize("task_id", ["task2", "task4"])
def test_every_cheap_policy_runs_and_is_deterministic(task_id: str) -> None:
    distinct = set()
    for name in DEFAULT_FAMILY:
        first = _actions(name, task_id, 7, 20)
        assert first == _actions(name, task_id, 7, 20), name
        assert first and all(isinstance(a, dict) and "action_type" in a for a in first), name
        distinct.add(repr(first))
    assert len(distinct) > len(DEFAULT_FAMILY) // 3  # the twists do change the play


def test_a_hold_delays_the_dispatch_by_its_minutes() -> None:
    def first_dispatch(name: str) -> int:
        agent, sim = POLICIES[name].build(3), CodeRedSim("task1", 3)
        agent.reset("task1", 3)
        while not sim.done:
            action = agent.act(sim.observation())
            if action["action_type"].startswith("dispatch"):
                return sim.clock
            sim.step(action)
        raise AssertionError(f"{name} never dispatched")

    assert first_dispatch("hold-dispatch-5") == first_dispatch("heuristic") + 5
    assert first_dispatch("hold-dispatch-15") == first_dispatch("heuristic") + 15


def test_a_level_hold_holds_only_those_levels() -> None:
    agent = POLICIES["hold-dispatch-P3-10"].build(0)
    agent.reset("task4", 0)
    agent._now = 30
    assert not agent._dispatch_held({"id": "C1", "priority": "P1"})
    assert agent._dispatch_held({"id": "C2", "priority": "P3"})
    agent._now = 40
    assert not agent._dispatch_held({"id": "C2", "priority": "P3"})  # released after its 10 minutes


def test_the_new_kinds_do_what_their_names_say() -> None:
    triaged = {name: [a for a in _actions(name, "task4", 11, 40) if a["action_type"] == "triage_call"]
               for name in ("random-triage", "P1-or-advice", "triage-then-ignore")}
    assert len({a["priority"] for a in triaged["random-triage"]}) > 1
    assert {a["priority"] for a in triaged["P1-or-advice"]} <= {"P1", "P4"}
    ignored = _actions("triage-then-ignore", "task4", 11, 40)
    assert triaged["triage-then-ignore"] and not any(a["action_type"].startswith("dispatch") for a in ignored)


def test_padding_waits_in_queries_and_gives_the_same_care() -> None:
    plain = [a for a in _actions("heuristic", "task3", 4, 60) if a["action_type"] != "maintain_plan"]
    padded = _actions("pad-waits", "task3", 4, 90)
    assert not any(a["action_type"] == "maintain_plan" for a in padded)
    acting = [a for a in padded if a["action_type"] != "query_or_status"]
    assert any(a["action_type"] == "query_or_status" for a in padded)
    assert acting[:5] == plain[:5]  # the same first decisions, more steps between them


def test_random_mixes_are_named_seeded_and_paired_with_a_delayed_twin() -> None:
    names = mix_names(20, 3)
    assert names == mix_names(20, 3) != mix_names(20, 4) and len(set(names)) == len(names)
    mixes = [n for n in names if "+" not in n]
    twins = {policy(n).base: n for n in names if "+" in n}
    assert len(mixes) == 20 and 0 < len(twins) < 20  # a lazy mix has no delayed twin
    for mix in mixes:
        lazy = "lazy=" in policy(mix).note
        assert policy(mix).base is None and policy(mix).note.count("=") >= 2 and lazy == (mix not in twins)
        if mix in twins:
            assert policy(twins[mix]).hold > 0 and policy(twins[mix]).note == policy(mix).note
            assert names.index(twins[mix]) == names.index(mix) + 1
        else:
            with pytest.raises(KeyError):
                policy(f"{mix}+hold-dispatch-5")
    assert _actions(names[0], "task4", 5, 30) == _actions(names[0], "task4", 5, 30)
    for bad in ("mix3", "mix3.x", "mixer.1", "mix3.1+hold-dispatch-7", "mix3.1+hold-nothing-5",
                "mix3.1+hold-dispatch-x", "mix3.1+halt-dispatch-5", "mix3.1+wait-nothing-5",
                "mix3.1+padded"):
        with pytest.raises(KeyError):
            policy(bad)


def test_a_waiting_twin_holds_all_else_equal_where_a_held_twin_acts_meanwhile() -> None:
    """mix1.10 (the worst hospital) with its dispatches held 5 min, task3 seed 66109: the held
    twin assigns destinations while it holds (earlier than the mix does, when another hospital is
    the worst); the waiting twin waits, then plays the mix's own first actions, each 5 min late."""
    assert mix_names(2, 1, "waiting,held,padded") == [
        "mix1.0", "mix1.0+hold-assign-5", "mix1.0+wait-assign-5", "mix1.0+pad",
        "mix1.1", "mix1.1+hold-prep-5", "mix1.1+wait-prep-5", "mix1.1+pad"]
    assert policy("mix1.1+pad").base is None and "padded" in policy("mix1.1+pad").note
    for bad in ("neither", "held,", ""):
        with pytest.raises(ValueError, match="a comma list of held, waiting, padded"):
            mix_names(2, 1, bad)
    mix, held, waiting = (_actions(n, "task3", 66109, 15) for n in
                          ("mix1.10", "mix1.10+hold-dispatch-5", "mix1.10+wait-dispatch-5"))
    assert [a["action_type"] for a in mix[:5]] == ["dispatch_ambulance"] * 5
    assert [a["action_type"] for a in held[:5]] == ["assign_hospital"] * 5
    assert waiting[:5] == [{"action_type": "query_or_status", "hospital_id": "H1"}] * 5
    assert waiting[5:15] == mix[:10]
    assert {a["hospital_id"] for a in held[:5]} != {a["hospital_id"] for a in mix[5:10]}


def test_the_greedy_maximiser_plays_the_best_one_step_reward_on_its_fork() -> None:
    agent = GreedyRewardAgent(5)
    sim = CodeRedSim("task4", 5)
    agent.reset("task4", 5)
    for _ in range(6):
        observation = sim.observation()
        chosen = agent.act(observation)  # the replica steps only at the next decision
        candidates = agent._candidates(observation, HeuristicAgent(5).act(observation))
        rewards = agent._rewards(agent._sim, candidates)
        assert rewards[candidates.index(chosen)] == max(rewards)
        sim.step(chosen)
    assert agent._sim is not None  # stayed in step with the episode


def _twisted_truth(sim: CodeRedSim, shift: int) -> None:
    """Give every caller no crew has seen another true condition (the same report)."""
    world = sim.world
    people = {p.patient_id: p for p in world.patients.values()}
    people.update({s.patient.patient_id: s.patient for s in world.spawns})
    keys = list(CONDITIONS)
    for p in people.values():
        if not p.visible:
            p.condition = keys[(keys.index(p.condition) + shift) % len(keys)]
            p.reserve, p.onset_min = 0.31, 45 if p.condition == "stroke" else 0
    for call in list(world.calls.values()) + [s.call for s in world.spawns if s.call]:
        call.true_priority = CONDITIONS[people[call.patient_id].condition].true_priority


@pytest.mark.parametrize("seed", [21, 22])
def test_the_greedy_maximiser_never_reads_the_hidden_truth(seed: int) -> None:
    """Two episodes that differ only in unseen callers' truth get the same decisions as long as
    they look the same: the maximiser looks ahead on forks, which hold only what is known (a look
    ahead on exact copies fails this: it sees the on-scene report one step early)."""
    real, twin = CodeRedSim("task4", seed), CodeRedSim("task4", seed)
    _twisted_truth(twin, 3)
    agents = [GreedyRewardAgent(seed), GreedyRewardAgent(seed)]
    for agent in agents:
        agent.reset("task4", seed)
    agents[1]._sim = CodeRedSim("task4", seed)
    _twisted_truth(agents[1]._sim, 3)  # its replica is the twisted episode
    seen: list[list[list[float]]] = [[], []]
    for agent, log in zip(agents, seen, strict=True):
        play = agent._rewards
        agent._rewards = lambda sim, cands, play=play, out=log: out.append(play(sim, cands)) or out[-1]
    decisions = 0
    while not real.done and real.observation() == twin.observation():  # until a crew reports
        action = agents[0].act(real.observation())
        assert agents[1].act(twin.observation()) == action and seen[0] == seen[1], decisions
        real.step(action), twin.step(dict(action))
        decisions += 1
    assert decisions >= 3


def _episode(seed: int, score: float, deaths: float, **parts: float) -> probe.Episode:
    return probe.Episode(seed, score, deaths, 1 - deaths / 100, score, dict(parts))


def test_inversions_are_paired_beyond_two_standard_errors_with_the_component_responsible() -> None:
    heuristic = [_episode(s, 0.70 + 0.01 * (s % 3), 5.0, efficiency=0.1) for s in range(20)]
    buys = [_episode(s, e.score + 0.02 + 0.001 * (s % 2), 6.5 + 0.1 * (s % 2), efficiency=0.12)
            for s, e in enumerate(heuristic)]
    honest = [_episode(s, e.score - 0.02, 4.0, efficiency=0.1) for s, e in enumerate(heuristic)]
    noisy = [_episode(s, e.score + (0.05 if s % 2 else -0.049), 6.0, efficiency=0.1)
             for s, e in enumerate(heuristic)]
    found = probe.inversions({"heuristic": heuristic, "buys": buys, "honest": honest, "noisy": noisy})
    pairs = {(inv["better"], inv["worse"]) for inv in found}
    assert ("buys", "heuristic") in pairs and ("buys", "honest") in pairs
    assert not any(better == "noisy" for better, _ in pairs)  # within 2 SE: not an inversion
    assert not any(better == "honest" for better, _ in pairs)
    top = next(inv for inv in found if inv["better"] == "buys" and inv["worse"] == "heuristic")
    assert top["components"][0][0] == "efficiency"


def test_the_analysis_flags_delay_gains_and_a_punished_reach() -> None:
    results = {
        "heuristic": [_episode(s, 0.7, 5.0) for s in range(10)],
        "hold-dispatch-5": [_episode(s, 0.71, 5.0) for s in range(10)],
    }
    for e in results["heuristic"]:
        e.reach_rewards = [-0.01, 0.002]
    problems = probe.violations(probe.analyse(results))
    assert any(p.startswith("delay gain: hold-dispatch-5") for p in problems)
    assert any(p.startswith("reaching a caller punished") for p in problems)
    assert probe.spearman([1, 2, 3], [10, 30, 20]) == pytest.approx(0.5)


def test_a_delay_gain_shows_the_gain_on_seeds_the_step_budget_ended_neither(capsys) -> None:
    base = [_episode(s, 0.7, 5.0) for s in range(6)]
    twin = [_episode(s, 0.72 if s < 2 else 0.699, 5.0) for s in range(6)]
    for e in base[:2] + twin[:2]:
        e.end = "step_budget"  # its waits spent the budget: fewer decisions left to waste
    for e in base[2:] + twin[2:]:
        e.end = "resolved"
    results = {"heuristic": base, "hold-dispatch-5": twin}
    row = probe.delay_gains(results)[0]
    assert row["gain"] == pytest.approx(0.036 / 6) and row["unbound"] == (4, pytest.approx(-0.001))
    probe.print_task("task1", probe.analyse(results), 6)
    assert "on the 4 seeds the step budget ended neither: -0.0010" in capsys.readouterr().out
    older = [_episode(s, 0.7, 5.0) for s in range(6)]  # a file written before end reasons were kept
    assert probe.delay_gains({"heuristic": older, "hold-dispatch-5": twin})[0]["unbound"] is None


def test_confirming_replays_the_flagged_pairs_and_keeps_what_holds(monkeypatch) -> None:
    found = {("delay", "hold-dispatch-5", "heuristic"): "delay gain: hold-dispatch-5 +0.0100 over heuristic",
             ("score", "waste-pages", "heuristic"): "score inversion: waste-pages > heuristic",
             ("reach",): "reaching a caller punished: ..."}
    played: list[tuple] = []

    def replay(tasks, seeds, names, workers=1, progress=False):
        played.append((tuple(tasks), tuple(seeds), tuple(names)))
        gain = 0.01 if len(played) == 1 else 0.0
        bumped = {n: gain if n == "hold-dispatch-5" else 0.0 for n in names}
        return {tasks[0]: {n: [_episode(s, 0.7 + bumped[n], 5.0) for s in seeds]
                           for n in names}}

    monkeypatch.setattr(probe, "run", replay)
    held = probe.confirm("task1", found, [5, 6, 7], 1)
    assert played[0] == (("task1",), (5, 6, 7), ("heuristic", "hold-dispatch-5", "waste-pages"))
    assert list(held) == [("delay", "hold-dispatch-5", "heuristic"), ("reach",)]
    assert list(probe.confirm("task1", found, [5, 6, 7], 1)) == [("reach",)]
    assert probe.confirm("task1", {("reach",): "x"}, [5], 1) == {("reach",): "x"} and len(played) == 2


def test_the_per_minute_return_discounts_by_the_minutes_each_decision_took(monkeypatch) -> None:
    monkeypatch.setattr(probe, "MINUTE_DISCOUNT", 1.0)
    undiscounted = probe.play("task1", 7, "pad-waits")
    assert undiscounted.ret_minute == pytest.approx(undiscounted.score, abs=1e-9)  # rewards add up
    monkeypatch.setattr(probe, "MINUTE_DISCOUNT", 0.9)
    assert probe.play("task1", 7, "pad-waits").ret_minute == pytest.approx(
        probe.play("task1", 7, "heuristic").ret_minute, abs=0.01), "padding changes no minute's discount"


def test_the_probe_runs_from_the_command_line(tmp_path, capsys) -> None:
    out = tmp_path / "probe.json"
    probe.main(["--tasks", "task1", "--seeds", "7,8", "--policies", "hold-dispatch-5,waste-pages",
                "--json", str(out), "--quiet"])
    text = capsys.readouterr().out
    assert "=== task1 (2 seeds) ===" in text and "delay gains" in text and "summary:" in text
    assert "per-minute return inversions (not judged): 0" in text
    probe.main(["--replay", str(out)])
    again = capsys.readouterr().out
    assert again.split("summary:")[1].split("(")[0] == text.split("summary:")[1].split("(")[0]
    for bad in (["--policies", "no-such-policy"], ["--seeds", "1000-x"], ["--seeds", "7", "--confirm", ","],
                ["--seeds", "7", "--mixes", "1", "--mix-twins", "held,delayed"],
                ["--replay", str(out), "--confirm", "5-6"]):
        with pytest.raises(SystemExit) as stopped:
            probe.main(bad)
        said = capsys.readouterr().err + str(stopped.value.code)
        assert "unknown policies" in said or "error:" in said, bad
    probe.main(["--tasks", "task1", "--seeds", "7", "--policies", "heuristic", "--mixes", "1", "--quiet"])
    assert "mix0.0+" in capsys.readouterr().out


def test_the_summary_prints_when_too_few_policies_to_rank(capsys) -> None:
    line = {"task": "task5", "inversions": 0, "return_inversions": 0, "max_delay_gain": None,
            "spearman_score": None, "spearman_return": None, "reach_negative": 0.4, "reach_mean": 0.01,
            "best_fair": "heuristic", "best_fair_gain": 0.0, "culprits": {}}
    probe.print_summary([line])
    assert "task5 | 0/0 | - | -/- | 40%" in capsys.readouterr().out


@SLOW
@pytest.mark.slow
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_the_score_keeps_its_invariants_against_the_red_team(task_id: str) -> None:
    """A pairwise violation on ``SLOW_SEEDS`` must hold on ``CONFIRM_SEEDS`` too to fail the test
    (the probe's ``--confirm``): with cascades a five-minute hold moves a poor policy's episode by
    up to ±0.4 (task5 nearest-job-first, ± 0.03 over 20 seeds), so one sample's mean alone is noise."""
    results = probe.run([task_id], list(SLOW_SEEDS), list(DEFAULT_FAMILY))[task_id]
    found = probe.keyed_violations(probe.analyse(results))
    assert list(probe.confirm(task_id, found, list(CONFIRM_SEEDS), 1).values()) == []


def test_the_closed_breaks_stay_closed() -> None:
    """A STEMI sent where it cannot be treated so a stroke keeps the cath lab no longer outscores
    worse-hospital play with more deaths (task2: deaths weigh the stake), and holding a mutual-aid
    request back no longer pays (task3: a request is judged when it is made)."""
    seeds = list(range(2100, 2120))
    task2 = probe.run(["task2"], seeds, ["heuristic", "relaxed-transfer", "worst-hospital"])["task2"]
    assert ("score", "relaxed-transfer", "worst-hospital") not in probe.keyed_violations(probe.analyse(task2))
    task3 = probe.run(["task3"], seeds, ["heuristic", "wait-aid-20"])["task3"]
    assert probe.analyse(task3)["delay_gains"][0]["gain"] <= probe.DELAY_GAIN_MAX


@SLOW
@pytest.mark.slow
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_the_oracle_is_above_every_red_team_policy_in_mean(task_id: str) -> None:
    names = [*DEFAULT_FAMILY, "planner", "oracle"]
    analysis = probe.analyse(probe.run([task_id], list(ORACLE_SEEDS), names)[task_id])
    assert analysis["above_ceiling"] == []
