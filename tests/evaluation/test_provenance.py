"""Provenance in the evaluation store: a stored episode is reused only when the agent and the
simulation that would play it now are the ones that played it (issue 25).

The retrain-into-the-same-path check runs twice: with a cheap fake checkpoint agent (no torch:
its "policy file" names the agent to delegate to, and its fingerprint hashes the file like the PPO
agent's) and, when the ``rl`` extra is installed, with a real MaskablePPO checkpoint.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import codered_env.agents as agents_module
import codered_env.agents.base as agents_base
import codered_env.agents.oracle as oracle_module
from codered_env.agents import HeuristicAgent, NoopAgent, PlannerAgent
from codered_env.agents.base import code_fingerprint
from codered_env.agents.oracle import OracleAgent
from codered_env.cli import app
from codered_env.evaluation import evaluate as evaluate_module
from codered_env.evaluation import provenance
from codered_env.evaluation.evaluate import run_evaluation
from codered_env.evaluation.report import generate_report, summarize
from codered_env.evaluation.store import SCHEMA_VERSION, EpisodeStore
from codered_env.runner import run_episode

TASK = "task1"


class CheckpointAgent:
    """A stand-in for ``ppo:PATH``: the file names the policy (``noop`` or ``heuristic``)."""

    name = "ckpt"

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        data = self.path.read_bytes()
        self._digest = hashlib.sha256(data).hexdigest()
        self._policy = HeuristicAgent() if json.loads(data)["policy"] == "heuristic" else NoopAgent()

    def fingerprint(self) -> dict[str, Any]:
        return {**code_fingerprint(self), "checkpoint_sha256": self._digest}

    def reset(self, task_id: str, seed: int) -> None:
        self._policy.reset(task_id, seed)

    def act(self, observation: dict[str, Any]) -> dict[str, Any]:
        return self._policy.act(observation)


@pytest.fixture
def checkpoint_agents(monkeypatch: pytest.MonkeyPatch) -> None:
    real = agents_module.make_agent

    def make_agent(name: str, seed: int = 0, **kwargs: Any) -> Any:
        if name.startswith("ckpt:"):
            return CheckpointAgent(name[len("ckpt:"):])
        return real(name, seed, **kwargs)

    monkeypatch.setattr(agents_module, "make_agent", make_agent)


def _scores(summary: Any) -> list[float]:
    return [e["score"] for e in summary.episodes()]


def test_retrained_checkpoint_at_the_same_path_is_re_evaluated(tmp_path: Path,
                                                               checkpoint_agents: None) -> None:
    db, ckpt = tmp_path / "eval.db", tmp_path / "best.zip"
    spec, seeds = f"ckpt:{ckpt}", [0, 1]
    ckpt.write_text(json.dumps({"policy": "noop"}))
    first = run_evaluation([spec], [TASK], seeds, db_path=db, progress=None)
    assert first.ran == 2 and _scores(first) == [0.01, 0.01]

    ckpt.write_text(json.dumps({"policy": "heuristic"}))  # "retrained" into the same path
    second = run_evaluation([spec], [TASK], seeds, db_path=db, progress=None)
    fresh = [run_episode(TASK, s, HeuristicAgent(s)).score for s in seeds]
    assert (second.ran, second.skipped, second.stale_rerun) == (2, 0, 2)
    assert _scores(second) == fresh  # the new policy's scores, not the stored ones
    with EpisodeStore(db) as store:
        assert len(store) == 2 and [r.score for r in store.records()] == fresh

    again = run_evaluation([spec], [TASK], seeds, db_path=db, progress=None)
    assert (again.ran, again.skipped) == (0, 2) and _scores(again) == fresh


def test_simulation_change_reruns_unless_stale_rows_are_accepted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "eval.db"
    assert run_evaluation(["noop"], [TASK], [0, 1], db_path=db, progress=None).ran == 2
    with EpisodeStore(db) as store:
        row = store.records()[0]
    assert row.sim_fingerprint == provenance.sim_fingerprint()
    assert json.loads(row.agent_fingerprint or "{}")["agent"] == "NoopAgent"

    for module in (provenance, evaluate_module):
        monkeypatch.setattr(module, "sim_fingerprint", lambda: "0123456789abcdef")
    stale = run_evaluation(["noop"], [TASK], [0, 1], db_path=db, progress=None, reuse="stale")
    assert (stale.ran, stale.skipped, stale.stale_reused) == (0, 2, 2)
    assert all("simulation changed" in (e.detail or "") for e in stale.events)

    rerun = run_evaluation(["noop"], [TASK], [0, 1], db_path=db, progress=None)
    assert (rerun.ran, rerun.stale_rerun) == (2, 2)
    with EpisodeStore(db) as store:
        assert {r.sim_fingerprint for r in store.records()} == {"0123456789abcdef"}
    with pytest.raises(ValueError, match="reuse policy"):
        run_evaluation(["noop"], [TASK], [0], db_path=db, progress=None, reuse="sometimes")


def test_planner_budget_is_part_of_its_fingerprint(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "eval.db"
    assert run_evaluation(["planner"], [TASK], [0], db_path=db, progress=None).ran == 1
    assert run_evaluation(["planner"], [TASK], [0], db_path=db, progress=None).skipped == 1
    smaller = PlannerAgent(0, forks=2).fingerprint()
    assert smaller["forks"] == 2 and smaller != PlannerAgent(0).fingerprint()
    defaults = list(PlannerAgent.__init__.__defaults__ or ())
    defaults[1] = 2  # (seed, forks, max_candidates, min_gain, z): the default budget changes
    monkeypatch.setattr(PlannerAgent.__init__, "__defaults__", tuple(defaults))
    rerun = run_evaluation(["planner"], [TASK], [0], db_path=db, progress=None)
    assert (rerun.ran, rerun.stale_rerun) == (1, 1)
    with EpisodeStore(db) as store:
        (row,) = store.records()
    assert json.loads(row.agent_fingerprint or "{}")["forks"] == 2
    assert evaluate_module.stale_reason(row, "{}", provenance.sim_fingerprint()) == "agent changed"


def test_code_fingerprints_follow_the_source() -> None:
    heuristic = HeuristicAgent().fingerprint()
    assert heuristic["agent"] == "HeuristicAgent" and len(heuristic["code"]) == 16
    assert HeuristicAgent(triage=False).fingerprint() != heuristic
    assert NoopAgent().fingerprint()["code"] != heuristic["code"]
    assert provenance.agent_fingerprint(agents_module.RandomAgent(3)) == \
        provenance.agent_fingerprint(agents_module.RandomAgent(4))  # seed is part of the key
    assert re.fullmatch(r"[0-9a-f]{16}", provenance.sim_fingerprint())


def _old_schema_db(path: Path) -> None:
    """A schema-2 database (before provenance) holding one noop episode with a wrong score."""
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema_version', '2');
        CREATE TABLE episodes (id INTEGER PRIMARY KEY AUTOINCREMENT, agent TEXT NOT NULL,
            model TEXT NOT NULL, task_id TEXT NOT NULL, seed INTEGER NOT NULL,
            package_version TEXT NOT NULL, score REAL NOT NULL, raw_score REAL,
            components TEXT NOT NULL, steps INTEGER NOT NULL,
            invalid_actions INTEGER NOT NULL DEFAULT 0, agent_errors INTEGER NOT NULL DEFAULT 0,
            wall_time_s REAL NOT NULL, trajectory TEXT NOT NULL, llm_stats TEXT,
            prompt_tokens INTEGER, completion_tokens INTEGER, created_at TEXT NOT NULL,
            UNIQUE (agent, model, task_id, seed, package_version));
    """)
    from codered_env.evaluation.trajectory import package_version

    conn.execute("INSERT INTO episodes (agent, model, task_id, seed, package_version, score, "
                 "components, steps, wall_time_s, trajectory, created_at) VALUES "
                 "('noop','noop',?,0,?,0.5,'{}',1,0.1,'','2026-01-01T00:00:00+00:00')",
                 (TASK, package_version()))
    conn.commit()
    conn.close()


def test_old_databases_are_migrated_and_their_rows_count_as_stale(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    _old_schema_db(db)
    with EpisodeStore(db) as store:
        (row,) = store.records()
        assert row.score == 0.5 and row.agent_fingerprint is None and row.sim_fingerprint is None
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT value FROM meta").fetchone()[0] == SCHEMA_VERSION
    conn.close()
    report = generate_report(db, tmp_path / "report")
    assert "stored before fingerprints" in report.markdown

    summary = run_evaluation(["noop"], [TASK], [0], db_path=db, progress=None)
    assert (summary.ran, summary.stale_rerun, _scores(summary)) == (1, 1, [0.01])
    stale = evaluate_module.stale_reason(row, "{}", provenance.sim_fingerprint())
    assert stale == "stored before fingerprints"


def test_report_never_mixes_simulations_in_one_cell(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "eval.db"
    real = provenance.sim_fingerprint()[:8]
    run_evaluation(["random"], [TASK], [0, 1], db_path=db, progress=None)
    monkeypatch.setattr(provenance, "sim_fingerprint", lambda: "feedfacefeedface")
    monkeypatch.setattr(evaluate_module, "sim_fingerprint", lambda: "feedfacefeedface")
    run_evaluation(["random"], [TASK], [2, 3], db_path=db, progress=None, reuse="stale")
    with EpisodeStore(db) as store:
        records = store.records()
    rows = summarize(records)
    assert {(r.seeds, r.sim_fingerprint) for r in rows} == {((0, 1), real), ((2, 3), "feedface")}
    assert all(r.variant for r in rows) and len({r.label for r in rows}) == 2
    text = generate_report(db, tmp_path / "report").markdown
    assert "2 different simulations" in text and "sim feedface" in text
    assert "Provenance" in text and "RandomAgent" in text


def test_cli_reuse_option_and_messages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "eval.db"
    args = ["eval", "--agents", "noop", "--tasks", TASK, "--seeds", "0", "--db", str(db)]
    assert CliRunner().invoke(app, args).exit_code == 0
    monkeypatch.setattr(provenance, "sim_fingerprint", lambda: "feedfacefeedface")
    monkeypatch.setattr(evaluate_module, "sim_fingerprint", lambda: "feedfacefeedface")
    result = CliRunner().invoke(app, [*args, "--reuse", "stale"])
    assert result.exit_code == 0 and "reused 1 stale episode" in result.stderr
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0 and "re-ran 1 stale stored episode" in result.stderr
    bad = CliRunner().invoke(app, [*args, "--reuse", "sometimes"])
    assert bad.exit_code == 2 and "--reuse" in bad.output


def test_real_ppo_checkpoint_retrained_into_the_same_path(tmp_path: Path) -> None:
    """The held-out scenario with a real (tiny) MaskablePPO; skipped without the rl extra."""
    pytest.importorskip("torch")
    pytest.importorskip("sb3_contrib")
    out, db = tmp_path / "ppo", tmp_path / "eval.db"
    train = ["train", "--task", TASK, "--envs", "1", "--eval-every", "256", "--eval-seeds",
             "10000", "--out", str(out), "--steps", "256"]
    runner = CliRunner()
    evaluate = ["eval", "--agents", f"ppo:{out / 'final.zip'}", "--tasks", TASK, "--seeds", "0-1",
                "--db", str(db), "--json"]
    assert runner.invoke(app, [*train, "--seed", "0"]).exit_code == 0
    first = runner.invoke(app, evaluate)
    assert first.exit_code == 0, first.output
    digest = hashlib.sha256((out / "final.zip").read_bytes()).hexdigest()
    assert runner.invoke(app, [*train, "--seed", "7", "--steps", "512"]).exit_code == 0
    assert hashlib.sha256((out / "final.zip").read_bytes()).hexdigest() != digest
    second = runner.invoke(app, evaluate)
    assert second.exit_code == 0 and "re-ran 2 stale" in second.stderr
    fresh = runner.invoke(app, [*evaluate[:-3], "--db", str(tmp_path / "fresh.db"), "--json"])
    assert [e["score"] for e in json.loads(second.stdout)] == \
        [e["score"] for e in json.loads(fresh.stdout)]


def test_sim_fingerprint_covers_the_simulation_subpackages() -> None:
    names = {path.relative_to(provenance._SIM_DIR).as_posix() for path in provenance.sim_source_files()}
    assert {"params.py", "state.py", "tick.py", "dynamics/physiology.py", "dynamics/care.py"} <= names


def test_search_agents_fingerprints_cover_the_modules_they_play(monkeypatch: pytest.MonkeyPatch) -> None:
    # a stored planner or oracle episode must not be reused after the heuristic's destination rule
    # or the oracle's variant library changed
    read: list[tuple[str, ...]] = []
    real = agents_base.source_digest
    monkeypatch.setattr(agents_base, "source_digest", lambda *names: read.append(names) or real(*names))
    monkeypatch.setattr(oracle_module, "source_digest", lambda *names: read.append(names) or real(*names))
    for agent in (HeuristicAgent(), PlannerAgent(), OracleAgent()):
        read.clear()
        agent.fingerprint()
        covered = {name for names in read for name in names}
        assert {"codered_env.agents.destination", "codered_env.agents.hospital_rooms"} <= covered
    assert "codered_env.agents.variants" in covered  # the oracle's, last
