"""``CodeRedGenGymEnv``: the flat Gymnasium interface on generated cities (``CodeRedEnv-gen-taskN``),
a city per episode drawn from a split, or one fixed city."""

from __future__ import annotations

from typing import Any

from ..sim.city import City
from ..sim.citygen import resolve_city, split_seeds
from ..sim.env import CodeRedSim
from .env import CodeRedGymEnv
from .gen_features import GenFeatureBuilder, check_city_fits, gen_observation_space


class CodeRedGenGymEnv(CodeRedGymEnv):
    """``CodeRedGymEnv`` on generated cities, with an observation padded to the generator's maxima.

    - ``split`` (``"train"`` default, or ``"test"``: ``citygen.CITY_SPLITS``): each ``reset`` draws
      a city seed of that split from the environment's generator (``reset(seed=s)`` fixes the city
      and the episode together); ``city`` (a city seed, ``"gen-<seed>"``, ``"prakashnagar"`` or a
      ``City``) plays that one city instead. ``info["city"]`` names the episode's city.
    - Actions: the same masked ``Discrete`` index into the legal actions as ``CodeRedGymEnv``
      (city-independent by construction); ``action_args`` is not offered (its slots are
      Prakashnagar's).
    - Observation: ``gen_features.gen_observation_space()`` (docs/GYM.md, "Generated cities").
    """

    def __init__(self, task_id: str = "task1", render_mode: str | None = None, max_actions: int = 256, *,
                 split: str = "train", city: str | int | City | None = None, **kwargs: Any) -> None:
        if kwargs.get("action_args"):
            raise ValueError("action_args is not offered on generated cities (its slots are Prakashnagar's)")
        self.split = split
        self._seeds = split_seeds(split)
        self.fixed_city: City | None = None if city is None else resolve_city(city)
        if self.fixed_city is not None:
            check_city_fits(self.fixed_city)
        super().__init__(task_id, render_mode, max_actions, **kwargs)
        self.observation_space = gen_observation_space()
        self._features = GenFeatureBuilder(max_actions)
        self.sim = self._new_sim(self.task_id, 0, {})

    def _new_sim(self, task_id: str, sim_seed: int, options: dict[str, Any]) -> CodeRedSim:
        city = self.fixed_city
        if city is None:
            city = resolve_city(int(self._seeds[int(self.np_random.integers(len(self._seeds)))]))
        self._features.use_city(city)
        return CodeRedSim(task_id, sim_seed, city=city)

    def _info(self) -> dict[str, Any]:
        info = super()._info()
        info["city"] = self.sim.city.key
        return info
