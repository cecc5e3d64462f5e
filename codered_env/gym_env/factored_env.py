"""``CodeRedFactoredEnv``: stable entity slots, a ``MultiDiscrete`` factored action space, the
masks inside the observation (docs/GYM.md, "Factored interface")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium import spaces

from ..sim.env import CodeRedSim
from ..sim.tasks import TASK_IDS, TASKS
from .factored_actions import NVEC, FactoredLegal, decode, encode
from .factored_features import Buffers, FactoredFeatures, factored_observation_space

MASKED_OUT = "masked_out_factored_action"  # what an illegal factored action is sent to the simulation as


def _check_task(task_id: str) -> None:
    if task_id not in TASKS:
        raise ValueError(f"unknown task_id {task_id!r}; valid: {', '.join(TASK_IDS)}")


class FactoredCore:
    """One episode of the factored interface, writing its observation into given arrays (the
    single env's own, or a vector env's batch rows). Reads only ``CodeRedSim.observation_view``."""

    def __init__(self, task_id: str, out: Mapping[str, np.ndarray]) -> None:
        _check_task(task_id)
        self.task_id = task_id
        self.out = out
        self.sim = CodeRedSim(task_id, 0)
        self.features = FactoredFeatures()
        self.legal = FactoredLegal()
        self.action_error: str | None = None

    def reset(self, seed: int, task_id: str | None = None) -> None:
        if task_id is not None:
            _check_task(task_id)
            self.task_id = task_id
        self.sim = CodeRedSim(self.task_id, seed)
        self.features.reset(self.out)
        self.legal.reset()
        self.action_error = None
        self._observe()

    def _observe(self) -> None:
        view = self.sim.observation_view()
        self.features.update_slots(view)
        flat, types = self.out["action_mask"], self.out["type_masks"]
        if self.sim.done:
            changed = self.legal.finish(flat, types)  # only the wait is marked once the episode is over
        else:
            changed = self.legal.update(view["legal_actions"], self.features.slots.slot_of, flat, types)
        self.features.write(view, self.out, changed)

    def step(self, action: Any) -> tuple[float, bool]:
        """Play one factored action; returns (reward, done). An illegal one is refused (the
        simulation's minute passes, the world is otherwise unchanged: as the flat interface);
        ``action_error`` says why."""
        wire, self.action_error = self._wire(action)
        result = self.sim.step(wire)
        self._observe()
        return float(result.reward), result.done

    def _wire(self, action: Any) -> tuple[dict[str, Any], str | None]:
        try:
            combo = np.asarray(action, np.int64).reshape(len(NVEC))
            wire = decode(combo, self.features.slots)
        except (ValueError, TypeError) as exc:
            return {"action_type": MASKED_OUT}, f"invalid factored action {_as_list(action)}: {exc}"
        if self.sim.done or not self.legal.contains(combo):
            return {"action_type": MASKED_OUT}, (
                f"factored action {combo.tolist()} ({wire}) is not legal now: pick the type from "
                "action_mask[:n_types] and each component from type_masks[type]"
            )
        return wire, None

    def info(self, obs: Mapping[str, np.ndarray] | None = None) -> dict[str, Any]:
        """The step's info; its masks are ``obs``'s arrays when given (a copy otherwise)."""
        sim, masks = self.sim, obs if obs is not None else self.out
        return {
            "action_mask": masks["action_mask"] if obs else masks["action_mask"].copy(),
            "type_masks": masks["type_masks"] if obs else masks["type_masks"].copy(),
            "slots": {group: list(names) for group, names in self.features.slots.names().items()},
            "score_preview": sim.score_preview,
            "last_action_error": sim.last_error,
            "action_error": self.action_error,
            "step": sim.step_count,
            "clock_min": sim.clock,
        }


def _as_list(action: Any) -> Any:
    try:
        return np.asarray(action).tolist()
    except (ValueError, TypeError):
        return repr(action)


class CodeRedFactoredEnv(gymnasium.Env):
    """CodeRedEnv with stable entity slots and a factored ``MultiDiscrete`` action space.

    The full reference (every column, the component coding, masks, reward, episode end) is
    docs/GYM.md, "Factored interface". In short:

    - Action: ``MultiDiscrete(NVEC)``: (action type, unit slot, case slot, hospital slot,
      parameter); a type ignores the components it does not use (they encode as 0).
    - Observation: a ``Dict`` of slot rows (``units``, ``cases``, ``hospitals``), travel minutes
      (``unit_case_minutes``, ``case_hospital_minutes``), presence masks and the bool masks
      ``action_mask`` (legal types, then per component the values some legal action uses) and
      ``type_masks`` (per type, the values of each component its legal actions use: exact for
      the chosen type). ``legal_actions()`` lists every legal component vector.
    - ``encode(wire_action)`` and ``decode(action)`` convert both ways; ``info["slots"]``
      names the entity in each slot.
    - Reward, start and end as ``CodeRedGymEnv``: the change of the score preview, every end
      ``terminated``; an illegal action is refused (``info["action_error"]``), its minute passes.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, task_id: str = "task1", render_mode: str | None = None) -> None:
        self.render_mode = render_mode
        self.action_space = spaces.MultiDiscrete(np.array(NVEC, np.int64))
        self.observation_space = factored_observation_space()
        self._buffers = Buffers()
        self._out = self._buffers.arrays
        self.core = FactoredCore(task_id, self._out)

    @property
    def task_id(self) -> str:
        return self.core.task_id

    @property
    def sim(self) -> CodeRedSim:
        return self.core.sim

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        sim_seed = seed if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
        self.core.reset(sim_seed, (options or {}).get("task_id"))
        obs = self._obs()
        return obs, self.core.info(obs)

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        reward, done = self.core.step(action)
        obs = self._obs()
        info = self.core.info(obs)
        if done:
            info["termination_reason"] = self.sim.end_reason
            info["grade"] = self.sim.grade()
        return obs, reward, done, False, info

    def _obs(self) -> dict[str, np.ndarray]:
        return self._buffers.copy()

    def action_masks(self) -> np.ndarray:
        """The flat component masks (sb3-contrib's MaskablePPO convention for ``MultiDiscrete``)."""
        return self._out["action_mask"].copy()

    def legal_actions(self) -> np.ndarray:
        """Every legal component vector now (rows; ``maintain_plan`` first)."""
        return self.core.legal.combos.copy()

    def encode(self, wire_action: Mapping[str, Any]) -> np.ndarray:
        """The factored action of a wire action (a ValueError if an id has no slot or a value has
        no code); legal or not."""
        return encode(wire_action, self.core.features.slots)

    def decode(self, action: Sequence[int] | np.ndarray) -> dict[str, Any]:
        """The wire action of a factored action (a ValueError naming a wrong component)."""
        return decode(np.asarray(action, np.int64).reshape(-1), self.core.features.slots)

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self.sim.render_text()
        gymnasium.logger.warn("render() supports only render_mode='ansi'")
        return None
