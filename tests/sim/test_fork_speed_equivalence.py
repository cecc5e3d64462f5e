"""The fork's speed-ups draw exactly what the plain code drew (a cheaper fork, the same twin).

The inlined draw helpers must consume the same numbers from the stream as ``random.Random``'s
own methods and return the same values; the shadow schedule that drops the calls a fork has
already passed must leave its stream where the full draw leaves it and build the same later
calls; a fork's copy must not share anything the twin or its parent may change.
"""

from __future__ import annotations

import itertools
import math
import pickle
from random import Random

import pytest

from codered_env.sim import TASK_IDS, CodeRedSim
from codered_env.sim.conditions import CONDITIONS
from codered_env.sim.generator import draw_arrivals, draw_arrivals_after
from codered_env.sim.rng import choice, randbelow, randint, shuffle, weighted_draw
from codered_env.sim.tasks import TASKS
from codered_env.sim.triage import ReportFacts, drawn_report, log_likelihood, parse_report, skip_report

SEEDS = range(300)


def _paired(seed: int) -> tuple[Random, Random]:
    return Random(seed), Random(seed)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 8, 9, 17, 31, 50, 64, 65, 1000])
def test_randbelow_is_random_randbelow(n: int) -> None:
    for seed in SEEDS:
        ours, theirs = _paired(seed)
        assert [randbelow(ours, n) for _ in range(20)] == [theirs._randbelow(n) for _ in range(20)]
        assert ours.getstate() == theirs.getstate()


@pytest.mark.parametrize("bounds", [(0, 0), (1, 50), (-3, 3), (2, 14), (65, 90), (60, 100), (15, 25)])
def test_randint_is_random_randint(bounds: tuple[int, int]) -> None:
    for seed in SEEDS:
        ours, theirs = _paired(seed)
        assert [randint(ours, *bounds) for _ in range(20)] == [theirs.randint(*bounds) for _ in range(20)]
        assert ours.getstate() == theirs.getstate()


def _reference_report(condition: str, place: str, rng: Random) -> tuple[str, str, int]:
    """``drawn_report`` written with ``random.Random``'s own methods (the plain version)."""
    from codered_env.sim import triage as t

    caller = _choices(rng, t.REPORT_CALLER_MIX[condition])
    lo, hi = t.AGE_BANDS[_choices(rng, t.REPORT_AGE_BANDS[condition])]
    age = rng.randint(lo, hi)
    sex = "M" if rng.random() < t.REPORT_SHARE_MALE[condition] else "F"
    reliability = t.REPORT_CALLER_RELIABILITY[caller]
    mentioned = []
    for feature in t.FEATURES:
        present = rng.random() < t.REPORT_FEATURES[condition].get(feature, 0.0)
        if rng.random() < (reliability if present else t._false_mention(feature)):
            mentioned.append(rng.choice(t.FEATURE_PHRASES[feature]))
    rng.shuffle(mentioned)
    symptoms = "; ".join(mentioned) if mentioned else t.NO_SYMPTOM_TEXT
    return f"{age}{sex} at {place}, {t.CALLER_PHRASES[caller]}: {symptoms}", sex, age


@pytest.mark.parametrize("condition", list(CONDITIONS))
def test_reports_and_skipped_reports_draw_like_random(condition: str) -> None:
    for seed in SEEDS:
        ours, theirs, skipped = Random(seed), Random(seed), Random(seed)
        expected = _reference_report(condition, "Koramangala", theirs)
        assert drawn_report(condition, "Koramangala", ours) == expected
        skip_report(condition, skipped)
        assert ours.getstate() == theirs.getstate() == skipped.getstate()


def _spawn_key(spawn: object) -> str:
    return repr(pickle.loads(pickle.dumps(spawn)))


@pytest.mark.parametrize("task_id", TASK_IDS)
@pytest.mark.parametrize("drop_incident_calls", [False, True])
def test_shadow_draw_without_the_past_equals_the_full_draw(task_id: str, drop_incident_calls: bool) -> None:
    """Over many seeds and minutes: the same stream afterwards, the same later calls (ids
    included), the same incident and its start, and every spawn's place in arrival order."""
    task = TASKS[task_id]
    for seed in range(120):
        for minute in (-1, 0, 1, 7, 15, 22, 30, 44, 50, 90):
            full_rng, short_rng = Random(seed), Random(seed)
            patients, _, spawns, incident, mci = draw_arrivals(task, full_rng)
            shadow = draw_arrivals_after(task, short_rng, minute, drop_incident_calls)
            assert full_rng.getstate() == short_rng.getstate()
            kept = [
                s
                for s in spawns
                if (s.call is None or s.reason != "call" or s.at > minute)
                and not (drop_incident_calls and s.reason == "incident call")
            ]
            assert [_spawn_key(s) for s in shadow.spawns] == [_spawn_key(s) for s in kept]
            assert shadow.places == [s.patient.node for s in spawns]
            assert (shadow.incident_node, shadow.mci_patients) == (incident, mci)
            starts = [s.at for s in spawns if s.patient.patient_id in mci]
            starts += [p.appeared_at for p in patients.values() if p.patient_id in mci]
            assert shadow.incident_start == min(starts, default=None)


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_a_copy_shares_nothing_it_may_change(task_id: str) -> None:
    """``private_copy`` shares only the frozen task and the logged actions' entries."""
    sim = CodeRedSim(task_id, 5)
    for _ in range(12):
        sim.step({"action_type": "maintain_plan"})
    twin = sim.private_copy()
    assert twin.task is sim.task and twin.world.task is sim.task
    assert twin.action_log == sim.action_log and twin.action_log is not sim.action_log
    shared = [
        name
        for name, value in vars(sim.world).items()
        if name != "task" and isinstance(value, (list, dict, set)) and value is getattr(twin.world, name)
    ]
    assert shared == []
    assert twin.world.patients.keys() == sim.world.patients.keys()
    assert all(twin.world.patients[k] is not p for k, p in sim.world.patients.items())
    twin.step({"action_type": "maintain_plan"})
    assert len(sim.action_log) == 12 and len(twin.action_log) == 13


def test_draw_helpers_reject_an_empty_range() -> None:
    with pytest.raises(ValueError, match="empty range"):
        randint(Random(0), 3, 2)
    with pytest.raises(ValueError, match="n > 0"):
        randbelow(Random(0), 0)


def _constant_tables() -> list[dict[str, float]]:
    from codered_env.sim import params

    tables = [params.BLOOD_TYPE_FREQUENCY, params.CALL_MIX, params.SURGE_MIX]
    tables += list(params.REPORT_CALLER_MIX.values()) + list(params.REPORT_AGE_BANDS.values())
    return [*tables, {"a": 0.0, "b": 0.1, "c": 0.0, "d": 0.2}, {"only": 3.0}, {"x": 1e-300, "y": 1.0}]


@pytest.mark.parametrize("table", _constant_tables(), ids=lambda t: ",".join(t)[:40])
def test_weighted_draw_is_random_choices(table: dict[str, float]) -> None:
    for seed in range(2000):
        ours, theirs = _paired(seed)
        assert weighted_draw(ours, table) == _choices(theirs, table)
        assert ours.getstate() == theirs.getstate()
    # at and next to every cumulative weight, where rounding decides
    total = sum(table.values())
    for limit in itertools.accumulate(table.values()):
        value = limit / total
        for _ in range(4):
            value = math.nextafter(value, -math.inf)
        for _ in range(9):
            if 0.0 <= value < 1.0:
                drawn = weighted_draw(_Fixed(value), table)
                assert drawn == _choices(_Fixed(value), table) and table[drawn] > 0
            value = math.nextafter(value, math.inf)


def test_choice_and_shuffle_draw_like_random() -> None:
    for seed in SEEDS:
        ours, theirs = _paired(seed)
        items, expected = list("abcdefg"), list("abcdefg")
        shuffle(ours, items)
        theirs.shuffle(expected)
        assert items == expected and choice(ours, items) == theirs.choice(expected)
        assert ours.getstate() == theirs.getstate()


def _choices(rng: Random, table: dict[str, float]) -> str:
    return rng.choices(list(table), list(table.values()))[0]


class _Fixed(Random):
    """A stream whose ``random()`` always returns ``value``."""

    def __init__(self, value: float) -> None:
        super().__init__(0)
        self.value = value

    def random(self) -> float:
        return self.value


def _reference_log_likelihood(condition: str, facts: ReportFacts) -> float:
    """``triage.log_likelihood`` computed feature by feature (the plain version)."""
    from codered_env.sim import triage as t

    caller_p = t.REPORT_CALLER_MIX[condition].get(facts.caller, 0.0)
    band_p = t.REPORT_AGE_BANDS[condition].get(facts.age_band, 0.0)
    male = t.REPORT_SHARE_MALE[condition]
    sex_p = male if facts.sex == "M" else 1.0 - male
    if caller_p <= 0 or band_p <= 0 or sex_p <= 0:
        return -math.inf
    r = t.REPORT_CALLER_RELIABILITY[facts.caller]
    total = math.log(caller_p) + math.log(band_p) + math.log(sex_p)
    for feature in t.FEATURES:
        p = t.REPORT_FEATURES[condition].get(feature, 0.0)
        said = p * r + (1.0 - p) * t._false_mention(feature)
        chance = said if feature in facts.features else 1.0 - said
        if chance <= 0.0:
            return -math.inf
        total += math.log(chance)
    return total


def test_log_likelihood_tables_equal_the_feature_by_feature_sum() -> None:
    """Bit for bit, on reports of every condition and on impossible ones (-inf)."""
    rng = Random(11)
    facts = [parse_report(drawn_report(c, "Indiranagar", rng)[0]) for c in CONDITIONS for _ in range(60)]
    facts += [ReportFacts("patient", 30, "M", frozenset({"pregnant"}))]
    facts += [ReportFacts("family", 5, "F", frozenset())]
    checked = 0
    for fact in facts:
        assert fact is not None
        for condition in CONDITIONS:
            ours, theirs = log_likelihood(condition, fact), _reference_log_likelihood(condition, fact)
            assert ours == theirs or (math.isinf(ours) and math.isinf(theirs) and ours < 0 and theirs < 0)
            checked += math.isinf(theirs)
    assert checked > 0  # the -inf paths were exercised
