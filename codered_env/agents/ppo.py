"""A saved MaskablePPO policy (``codered train``) as an ordinary agent: ``make_agent("ppo:PATH")``.

The policy was trained on the Gymnasium adapter's features, which ``FeatureBuilder`` reads from a
simulation's world (visible facts only). The agent protocol hands over the observation dict, so
the agent keeps a *mirror* episode: ``CodeRedSim(task_id, seed)`` from ``reset`` advanced with
the agent's own actions. Episodes are deterministic, so the mirror equals the real episode; every
step checks that the observation it was given matches the mirror's (clock, step, patients, calls)
and raises if not, instead of acting on a wrong state. The mirror's features show nothing the
observation does not (tests/test_gym_env.py perturbs hidden state to check).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base import MAINTAIN, code_fingerprint

if TYPE_CHECKING:
    from ..sim.env import CodeRedSim


class PPOAgent:
    """Greedy MaskablePPO policy loaded from a ``.zip`` saved by ``codered train``."""

    def __init__(self, path: str | Path, deterministic: bool = True) -> None:
        from .._optional import require

        require("rl", "a ppo:PATH agent")
        from sb3_contrib import MaskablePPO

        path = Path(path)
        if not path.is_file():
            raise ValueError(f"ppo policy file not found: {path} (give the .zip saved by codered train)")
        self.checkpoint_sha256: str | None = hashlib.sha256(path.read_bytes()).hexdigest()
        try:
            model = MaskablePPO.load(path, device="cpu")
        except (AssertionError, ValueError, KeyError, OSError) as exc:  # sb3 asserts on a foreign zip
            raise ValueError(f"not a policy saved by codered train: {path} ({type(exc).__name__}: {exc}); "
                             "a factored policy.pt plays as factored:PATH") from None
        self._use(model, f"ppo:{path}", deterministic)

    @classmethod
    def from_model(cls, model: Any, name: str = "ppo", deterministic: bool = True) -> PPOAgent:
        """The agent of a policy in memory (``codered train`` evaluates its model this way)."""
        agent = cls.__new__(cls)
        agent.checkpoint_sha256 = None  # no file: not stored or reused by the evaluation store
        agent._use(model, name, deterministic)
        return agent

    def _use(self, model: Any, name: str, deterministic: bool) -> None:
        from ..gym_env import CodeRedGymEnv

        self.model = model
        self.name = name
        self.deterministic = deterministic
        # the action set the policy was trained on (``codered train`` stores it in the model;
        # models saved before it existed used the full set)
        self.env = CodeRedGymEnv(actions=getattr(model, "codered_actions", "full"))
        self._obs: Any = None

    def fingerprint(self) -> dict[str, Any]:
        """The checkpoint's content (retraining into the same path changes it), the feature code
        and the greedy/sampled switch."""
        return {**code_fingerprint(self, "codered_env.gym_env"),
                "checkpoint_sha256": self.checkpoint_sha256, "deterministic": self.deterministic}

    def reset(self, task_id: str, seed: int) -> None:
        self.env.task_id = task_id
        self._obs, _ = self.env.reset(seed=seed)

    def act(self, observation: dict[str, Any]) -> dict[str, Any]:
        sim = self.env.sim
        if sim.done:
            return dict(MAINTAIN)
        check_mirror("ppo agent", observation, sim)
        action, _ = self.model.predict(self._obs, action_masks=self.env.action_masks(),
                                       deterministic=self.deterministic)
        index = int(action)
        wire = self.env.wire_action(index)
        self._obs, *_ = self.env.step(index)
        return wire


def check_mirror(who: str, observation: dict[str, Any], sim: CodeRedSim) -> None:
    """Raise if ``observation`` is not the mirror episode ``sim``'s now (task, clock, step, the
    patients' and calls' ids and statuses)."""
    mirror = sim.observation()
    for key in ("task_id", "clock_min", "step"):
        if observation.get(key, mirror[key]) != mirror[key]:
            raise RuntimeError(f"{who}: the episode diverged from its mirror ({key}: "
                               f"{observation.get(key)!r} != {mirror[key]!r}); call reset(task, seed) "
                               "first and send every chosen action unchanged")
    for key, id_key in (("patients", "patient_id"), ("calls", "call_id")):
        given = [(e[id_key], e["status"]) for e in observation.get(key, [])]
        if given != [(e[id_key], e["status"]) for e in mirror[key]]:
            raise RuntimeError(f"{who}: the episode diverged from its mirror ({key})")
