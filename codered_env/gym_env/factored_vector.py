"""``CodeRedFactoredVectorEnv``: N factored episodes stepped in one process, each writing its
observation straight into its row of the batch arrays (no per-env copies, dicts or wrappers).
``gymnasium.make_vec("CodeRedFactored-task5-v14", num_envs=N)`` builds it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ..sim.city import City
from .checks import reset_options
from .factored_actions import decode, encode
from .factored_env import RESET_OPTIONS, CityChoice, FactoredCore
from .factored_features import Buffers, factored_observation_space
from .slots import SlotMaxima

_SEED_SPAN = 2**31 - 1


class CodeRedFactoredVectorEnv(VectorEnv):
    """``num_envs`` episodes of one task with the factored interface (``CodeRedFactoredEnv``).

    - ``reset(seed=s)`` starts episode ``i`` with simulation seed ``s + i``; later episodes
      draw their seeds from the env's ``np_random`` (seeded by that reset).
    - ``step(actions)``: ``actions`` is (num_envs, 5). Autoreset as Gymnasium's vector envs:
      ``autoreset_mode=NEXT_STEP`` (default) resets an ended episode at the next ``step``
      (its action ignored, reward 0); ``SAME_STEP`` resets it at once and returns the new
      episode's first observation (every end is terminal, so the final observation is not
      needed for bootstrapping; ``infos["final_score"]`` carries its grade).
    - ``infos``: ``score_preview`` (num_envs,), after ``step`` the simulated ``minutes`` each
      decision took (0 for a reset; per-minute discounting), and for ended episodes ``final_score`` with its
      ``_final_score`` mask. ``legal_actions(i)``, ``encode(i, wire)``, ``decode(i, action)``
      and ``core(i)`` (its ``sim``) are one episode's.
    - ``city``, ``split``, ``num_cities``, ``maxima``: as ``CodeRedFactoredEnv`` (each episode's
      city follows from its seed).
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP}  # noqa: RUF012

    def __init__(
        self,
        num_envs: int = 1,
        task_id: str = "task1",
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        *,
        city: str | int | City | None = None,
        split: str | None = None,
        num_cities: int | None = None,
        maxima: SlotMaxima | str | None = None,
    ) -> None:
        if num_envs < 1:
            raise ValueError("num_envs must be at least 1")
        mode = AutoresetMode(autoreset_mode)
        if mode is AutoresetMode.DISABLED:
            raise ValueError("autoreset_mode must be NEXT_STEP or SAME_STEP")
        self.metadata = {"autoreset_mode": mode}
        self.num_envs = num_envs
        cities = CityChoice(city, split, num_cities, maxima)
        self._buffers = Buffers((num_envs,), cities.maxima)
        self._batch = self._buffers.arrays
        self._cores = [
            FactoredCore(task_id, {k: v[i] for k, v in self._batch.items()}, cities) for i in range(num_envs)
        ]
        self._nvec = self._cores[0].legal.tables.nvec
        self.single_observation_space = factored_observation_space(cities.maxima)
        self.single_action_space = spaces.MultiDiscrete(np.array(self._nvec, np.int64))
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._ended = np.zeros(num_envs, bool)
        self._rewards = np.zeros(num_envs, np.float64)

    def core(self, index: int) -> FactoredCore:
        return self._cores[index]

    def legal_actions(self, index: int) -> np.ndarray:
        return self._cores[index].legal.combos.copy()

    def encode(self, index: int, wire_action: Mapping[str, Any]) -> np.ndarray:
        return encode(wire_action, self._cores[index].features.slots)

    def decode(self, index: int, action: Any) -> dict[str, Any]:
        return decode(np.asarray(action, np.int64).reshape(-1), self._cores[index].features.slots)

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        options = reset_options(options, RESET_OPTIONS)
        self._cores[0].check(options.get("task_id"), options.get("city"))  # every episode's would raise alike
        if isinstance(seed, list) and len(seed) != self.num_envs:
            raise ValueError(f"a list of seeds needs one per episode: {self.num_envs}, not {len(seed)}")
        first = seed[0] if isinstance(seed, list) else seed
        super().reset(seed=first)
        if isinstance(seed, list):
            seeds = seed
        elif seed is not None:
            seeds = [seed + i for i in range(self.num_envs)]
        else:
            seeds = [self._draw_seed() for _ in range(self.num_envs)]
        for core, s in zip(self._cores, seeds, strict=True):
            core.reset(int(s), options.get("task_id"), options.get("city"))
        self._ended.fill(False)
        return self._observation(), self._infos()

    def _action_rows(self, actions: Any) -> Any:
        """One action per episode, as rows (each checked, and refused if malformed, by its episode)."""
        if isinstance(actions, (list, tuple)) and len(actions) == self.num_envs:
            return actions
        shape = (self.num_envs, len(self._nvec))
        try:
            return np.asarray(actions).reshape(shape)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"actions must be {shape[0]} rows of {shape[1]} integers, one per episode: "
                             f"{exc}") from exc

    def _draw_seed(self) -> int:
        return int(self.np_random.integers(0, _SEED_SPAN))

    def step(
        self, actions: Any
    ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        actions = self._action_rows(actions)
        rewards, terminated = self._rewards, np.zeros(self.num_envs, bool)
        rewards.fill(0.0)
        minutes = np.zeros(self.num_envs, np.int64)
        errors = np.full(self.num_envs, None, object)  # why an episode's action was refused
        same_step = self.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
        final: list[tuple[int, float]] = []
        for i, core in enumerate(self._cores):
            if self._ended[i]:  # NEXT_STEP: this call only resets it
                core.reset(self._draw_seed())
                self._ended[i] = False
                continue
            reward, done = core.step(actions[i])
            rewards[i], minutes[i], errors[i] = reward, core.sim.last_minutes, core.action_error
            if done:
                terminated[i] = True
                final.append((i, core.sim.grade()["score"]))
                if same_step:
                    core.reset(self._draw_seed())
                else:
                    self._ended[i] = True
        infos = self._infos()
        infos["minutes"] = minutes
        infos["action_error"] = errors
        if final:
            scores, mask = np.zeros(self.num_envs), np.zeros(self.num_envs, bool)
            for i, score in final:
                scores[i], mask[i] = score, True
            infos["final_score"], infos["_final_score"] = scores, mask
        return self._observation(), rewards.copy(), terminated, np.zeros(self.num_envs, bool), infos

    def _observation(self) -> dict[str, np.ndarray]:
        return self._buffers.copy()

    def _infos(self) -> dict[str, Any]:
        return {"score_preview": np.array([core.sim.score_preview for core in self._cores])}
