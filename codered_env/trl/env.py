"""CodeRedEnv as a tool environment for TRL's ``GRPOTrainer(environment_factory=...)``.

TRL builds one ``CodeRedToolEnv`` per rollout, calls ``reset(**row)`` with the dataset row (its
string is appended to the prompt), exposes every public method except ``reset``/``get_reward`` as
a tool (schema from the type hints and the Google-style docstring), and scores the rollout with
``get_reward()``. This module does not import TRL: the class is plain Python over ``CodeRedSim``.

Tool replies are compact: the clock, the reward of the decision, a refusal if any, the events
since the last decision, and only the lines of the state that changed (time counters such as
minutes-since-call, ETAs and displayed vitals do not count as a change; vitals bands are in the
events). ``view_full_state`` returns the whole text observation whenever the model wants it.

Usage (needs a GPU and a real chat model; see examples/grpo_codered.py)::

    from trl import GRPOConfig, GRPOTrainer
    from codered_env.trl import CodeRedToolEnv, episode_dataset

    trainer = GRPOTrainer(model="Qwen/Qwen3-1.7B", train_dataset=episode_dataset(["task1"], range(200)),
                          environment_factory=CodeRedToolEnv, args=GRPOConfig(...))
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any, Literal

from ..sim import TASK_IDS, TASKS, CodeRedSim

HospitalId = Literal["H1", "H2", "H3"]
Priority = Literal["P1", "P2", "P3", "P4"]
Procedure = Literal["cath_lab", "trauma_surgery", "stroke_intervention", "general"]
Specialty = Literal["cardiology", "neurology", "trauma_surgery", "obstetrics"]
BloodType = Literal["O-", "O+", "A-", "A+", "B-", "B+", "AB-", "AB+"]

SYSTEM_PROMPT = (
    "You coordinate emergency medical services in a city: dispatch ambulances, triage calls, choose "
    "hospitals, prepare operating rooms, page specialists, manage blood and mutual aid. Every tool call "
    "is one decision and costs one simulated minute (maintain_plan waits for the next event). Use the "
    "ids shown in the state. The episode ends when everyone is cared for, at the time horizon or when "
    "the decision budget is spent; you are scored on patient outcomes and resource use."
)

# Minute counters that change every step without anything happening; not a "change" for replies.
_TICKING = re.compile(
    r"\d+m since call|waiting \d+m|eta \d+m|\d+m left|HR\d+ BP\d+ SpO2 \d+ GCS\d+ v[\d.]+"
)


def episode_dataset(
    task_ids: Iterable[str] = TASK_IDS, seeds: Iterable[int] = range(100)
) -> list[dict[str, Any]]:
    """Rows ``{"prompt": [...], "task_id": t, "seed": s}`` for every task and seed, for a TRL dataset
    (``datasets.Dataset.from_list(episode_dataset(...))``); ``reset(**row)`` starts that episode."""
    rows = []
    for task_id in task_ids:
        if task_id not in TASKS:
            raise ValueError(f"unknown task_id {task_id!r}; valid: {', '.join(TASK_IDS)}")
        for seed in seeds:
            prompt = [{"role": "system", "content": SYSTEM_PROMPT},
                      {"role": "user", "content": f"{TASKS[task_id].name}: {TASKS[task_id].description}\n"}]
            rows.append({"prompt": prompt, "task_id": task_id, "seed": int(seed)})
    return rows


def iter_episode_rows(task_ids: Iterable[str] = TASK_IDS, start_seed: int = 0) -> Iterator[dict[str, Any]]:
    """An endless stream of rows (seeds ``start_seed``, ``start_seed + 1``, ... per task in turn)."""
    seed = start_seed
    tasks = list(task_ids)
    while True:
        yield from episode_dataset(tasks, [seed])
        seed += 1


def _keyed_lines(text: str) -> dict[str, str]:
    """The state text as {entity key: line}, one key per patient, call, unit, hospital, section."""
    out: dict[str, str] = {}
    for line in text.splitlines()[1:]:
        if line.startswith(("EVENTS:", "LAST ACTION ERROR:")):
            continue
        if line.startswith("UNITS: "):
            for unit in line[len("UNITS: "):].split("; "):
                out[f"unit {unit.split('(')[0]}"] = "UNIT " + unit
            continue
        out[line.split(" (")[0].split(":")[0].strip().split(" ")[0]] = line.strip()
    return out


class CodeRedToolEnv:
    """One CodeRedEnv episode driven by tool calls (for ``GRPOTrainer(environment_factory=...)``).

    ``reset(task_id=..., seed=...)`` starts the episode and returns its full state text; each tool
    is one decision and returns what changed; ``get_reward()`` is the final grade in [0.01, 0.99]
    (if the model stops calling tools early, the world plays on without decisions, then is graded).
    Invalid calls never raise: the reply says what was wrong and what is valid, as the simulation
    does, and the decision still costs its minute.
    """

    def __init__(self, task_id: str = "task1", seed: int = 0, base_url: str | None = None) -> None:
        self.base_url = base_url
        self.sim = CodeRedSim(task_id, seed)
        self._shown: dict[str, str] = {}
        self.rewards: list[float] = []
        self.tool_calls = 0
        self.refused_calls = 0

    # ------------------------------------------------------------------ TRL contract
    def reset(self, task_id: str | None = None, seed: int | None = None, **row: Any) -> str:
        """Start the episode of a dataset row (extra columns such as ``prompt`` are ignored)."""
        task_id = task_id if task_id is not None else self.sim.task.task_id
        self.sim = CodeRedSim(task_id, int(seed) if seed is not None else 0)
        self.rewards = []
        self.tool_calls = self.refused_calls = 0
        text = self.sim.render_text()
        self._shown = _keyed_lines(text)
        return "\n" + text

    def get_reward(self) -> float:
        """The episode's final grade (finishing the episode first if the model stopped early)."""
        self.sim.finish()
        return float(self.sim.grade()["score"])

    # ------------------------------------------------------------------ tools
    def dispatch_ambulance(self, ambulance_id: str, patient_id: str) -> str:
        """Phase 1: send an available or returning ambulance to a known patient awaiting a unit.

        Args:
            ambulance_id: A unit id from UNITS, e.g. "ALS1", "ALS2", "BLS1".."BLS3" or a mutual-aid unit.
            patient_id: A patient id from PATIENTS with status awaiting_unit, e.g. "P1".

        Returns:
            What changed after the decision.
        """
        return self._act(action_type="dispatch_ambulance", ambulance_id=ambulance_id, patient_id=patient_id)

    def dispatch_als(self, ambulance_id: str, call_id: str) -> str:
        """Phase 2: send an ALS (paramedic) unit to a pending call.

        Args:
            ambulance_id: An available ALS unit id, e.g. "ALS1".
            call_id: A pending call id from CALLS, e.g. "C3".

        Returns:
            What changed after the decision.
        """
        return self._act(action_type="dispatch_als", ambulance_id=ambulance_id, call_id=call_id)

    def dispatch_bls(self, ambulance_id: str, call_id: str) -> str:
        """Phase 2: send a BLS (basic) unit to a pending call.

        Args:
            ambulance_id: An available BLS unit id, e.g. "BLS2".
            call_id: A pending call id from CALLS, e.g. "C3".

        Returns:
            What changed after the decision.
        """
        return self._act(action_type="dispatch_bls", ambulance_id=ambulance_id, call_id=call_id)

    def triage_call(self, call_id: str, priority: Priority) -> str:
        """Phase 2: classify a call from the caller's report (P4 closes it with advice, no unit).

        Args:
            call_id: A pending or dispatched call id from CALLS, e.g. "C1".
            priority: P1 immediate, P2 urgent, P3 non-urgent, P4 advice only (no unit).

        Returns:
            What changed after the decision.
        """
        return self._act(action_type="triage_call", call_id=call_id, priority=priority)

    def assign_hospital(self, patient_id: str, hospital_id: HospitalId) -> str:
        """Choose the destination hospital of a patient not yet delivered.

        Args:
            patient_id: A patient id from PATIENTS, e.g. "P2".
            hospital_id: An open hospital (not on diversion).

        Returns:
            What changed after the decision.
        """
        return self._act(action_type="assign_hospital", patient_id=patient_id, hospital_id=hospital_id)

    def prepare_or(self, hospital_id: HospitalId, procedure: Procedure) -> str:
        """Start preparing an idle operating room for a procedure (wasted if unused for long).

        Args:
            hospital_id: The hospital.
            procedure: The procedure to set up.

        Returns:
            What changed after the decision.
        """
        return self._act(action_type="prepare_or", hospital_id=hospital_id, procedure=procedure)

    def page_specialist(self, hospital_id: HospitalId, specialty: Specialty) -> str:
        """Page an on-call specialist to come in (arrives after a delay, stays for a while).

        Args:
            hospital_id: The hospital.
            specialty: The specialist.

        Returns:
            What changed after the decision.
        """
        return self._act(action_type="page_specialist", hospital_id=hospital_id, specialty=specialty)

    def preempt_or(self, hospital_id: HospitalId, or_id: str) -> str:
        """Stop an elective case to free its operating room (costs an elective cancellation).

        Args:
            hospital_id: The hospital.
            or_id: An operating room shown busy(elective) at that hospital, e.g. "OR2".

        Returns:
            What changed after the decision.
        """
        return self._act(action_type="preempt_or", hospital_id=hospital_id, or_id=or_id)

    def allocate_blood(
        self, patient_id: str, hospital_id: HospitalId, blood_type: BloodType, units: int
    ) -> str:
        """Reserve blood units at a hospital for a patient (O- is safe before the type is known).

        Args:
            patient_id: A patient id from PATIENTS, e.g. "P1".
            hospital_id: The hospital holding the stock.
            blood_type: A compatible type in stock.
            units: Number of units, 1 to 6.

        Returns:
            What changed after the decision.
        """
        return self._act(action_type="allocate_blood", patient_id=patient_id, hospital_id=hospital_id,
                         blood_type=blood_type, units=units)

    def transfer_blood(self, from_hospital_id: HospitalId, to_hospital_id: HospitalId, blood_type: BloodType,
                       units: int) -> str:
        """Send blood units by courier from one hospital to another.

        Args:
            from_hospital_id: Source hospital.
            to_hospital_id: Destination hospital, reachable by road.
            blood_type: A type in stock at the source.
            units: Number of units, 1 to 6.

        Returns:
            What changed after the decision.
        """
        return self._act(action_type="transfer_blood", from_hospital_id=from_hospital_id,
                         to_hospital_id=to_hospital_id, blood_type=blood_type, units=units)

    def request_mutual_aid(self, target_id: str = "") -> str:
        """Request an ambulance from a neighbouring district (limited; arrives after a delay).

        Args:
            target_id: A patient awaiting a unit or a pending call ("P4", "C2") it goes to; "" for none.

        Returns:
            What changed after the decision.
        """
        if target_id:
            return self._act(action_type="request_mutual_aid", target_id=target_id)
        return self._act(action_type="request_mutual_aid")

    def query_blood_type(self, patient_id: str) -> str:
        """Ask the lab for a patient's blood type (the result arrives after a delay).

        Args:
            patient_id: A patient id from PATIENTS whose blood type is "?", e.g. "P1".

        Returns:
            What changed after the decision.
        """
        return self._act(action_type="query_blood_type", patient_id=patient_id)

    def query_or_status(self, hospital_id: HospitalId) -> str:
        """Show a hospital's operating rooms with the minutes left on each.

        Args:
            hospital_id: The hospital.

        Returns:
            What changed after the decision, with the OR status.
        """
        return self._act(action_type="query_or_status", hospital_id=hospital_id)

    def maintain_plan(self) -> str:
        """Make no new decision: time runs on to the next event (at most 10 minutes).

        Returns:
            What changed meanwhile.
        """
        return self._act(action_type="maintain_plan")

    def view_full_state(self) -> str:
        """Show the whole current state (all patients, calls, units, hospitals, roads, legal actions).

        This is not a decision: no time passes.

        Returns:
            The full state text.
        """
        text = self.sim.render_text()
        self._shown = _keyed_lines(text)
        return text

    # ------------------------------------------------------------------ helpers
    def _act(self, **action: Any) -> str:
        if self.sim.done:
            return f"The episode is over (final grade {self.sim.grade()['score']:.3f}); no more decisions."
        result = self.sim.step(action)
        self.rewards.append(result.reward)
        self.tool_calls += 1
        self.refused_calls += result.error is not None
        return self._reply(result.reward, result.error)

    def _reply(self, reward: float, error: str | None) -> str:
        obs = self.sim.observation()
        text = self.sim.render_text()
        head = (f"t={obs['clock_min']}/{obs['horizon_min']} step {obs['step']}/{obs['max_steps']} "
                f"score {obs['score_preview']:.3f} ({reward:+.3f})")
        lines = [head + (" | DONE" if obs["done"] else "")]
        if error:
            lines.append(f"REFUSED: {error}")
        if obs["events"]:
            lines.append("EVENTS: " + "; ".join(obs["events"]))
        now = _keyed_lines(text)
        for key, line in now.items():
            old = self._shown.get(key)
            if old is None or _TICKING.sub("", old) != _TICKING.sub("", line):
                lines.append(line)
        gone = [k for k in self._shown if k not in now and not k.startswith(("OR", "LEGAL"))]
        if gone:
            lines.append("GONE: " + ", ".join(gone))
        if obs["done"]:
            lines.append(f"EPISODE OVER ({self.sim.end_reason}): final grade {self.sim.grade()['score']:.3f}")
        self._shown = now
        return "\n".join(lines)
