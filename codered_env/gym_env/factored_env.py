"""``CodeRedFactoredEnv``: stable entity slots, a ``MultiDiscrete`` factored action space, the
masks inside the observation (docs/GYM.md, "Factored interface")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium import spaces

from ..sim.city import PRAKASHNAGAR, City
from ..sim.citygen import resolve_city, split_seeds
from ..sim.env import CodeRedSim
from .checks import check_task, factored_vector, reset_options, shown
from .factored_actions import FactoredLegal, decode, encode
from .factored_features import Buffers, FactoredFeatures, factored_observation_space
from .slots import GENERATED_MAXIMA, MAXIMA_BY_NAME, PRAKASHNAGAR_MAXIMA, SlotLayout, SlotMaxima, layout_for

RESET_OPTIONS = ("task_id", "city")  # what ``reset(options=...)`` takes
MASKED_OUT = "masked_out_factored_action"  # what an illegal factored action is sent to the simulation as


# mixed into an episode's seed to draw its city (a stream of its own: the simulation's draws
# from the same seed are untouched)
_CITY_DRAW_SALT = 0xC17


def _split_cities(split: str, num_cities: int | None) -> range:
    seeds = split_seeds(split)
    if num_cities is None:
        return seeds
    if isinstance(num_cities, bool) or not isinstance(num_cities, int) or not 1 <= num_cities <= len(seeds):
        valid = f"an integer in 1..{len(seeds)} for split {split!r}"
        raise ValueError(f"num_cities must be {valid}, got {num_cities!r}")
    return seeds[:num_cities]


class CityChoice:
    """Which city each episode plays, and the slot maxima every city of the env fits.

    - ``city``: one city for every episode: ``"prakashnagar"`` (default), a city seed or a
      ``City`` (``citygen.resolve_city``).
    - ``split``: instead, a city drawn per episode from the split's first ``num_cities`` seeds
      (all of them by default) with a generator seeded by the episode's seed: the same seed
      always plays the same city.
    - ``maxima``: a ``SlotMaxima``, ``"prakashnagar"`` or ``"generated"``; by default
      Prakashnagar's for Prakashnagar alone, else the generated range's.

    Bad values raise a ValueError saying what is valid (a city larger than the maxima too)."""

    def __init__(
        self,
        city: str | int | City | None = None,
        split: str | None = None,
        num_cities: int | None = None,
        maxima: SlotMaxima | str | None = None,
    ) -> None:
        if split is not None and city is not None:
            raise ValueError("give either city= (one city) or split= (a city per episode), not both")
        if num_cities is not None and split is None:
            raise ValueError("num_cities= needs split= ('train' or 'test')")
        one = PRAKASHNAGAR.key if city is None else city
        self.city: City | None = None if split is not None else resolve_city(one)
        self.seeds: range | None = None if split is None else _split_cities(split, num_cities)
        self.maxima = self._maxima(maxima)
        if self.city is not None:
            layout_for(self.city, self.maxima)  # a ValueError if the city does not fit

    def _maxima(self, maxima: SlotMaxima | str | None) -> SlotMaxima:
        if isinstance(maxima, SlotMaxima):
            return maxima
        if maxima is None:
            return PRAKASHNAGAR_MAXIMA if self.city is PRAKASHNAGAR else GENERATED_MAXIMA
        if maxima in MAXIMA_BY_NAME:
            return MAXIMA_BY_NAME[maxima]
        names = ", ".join(map(repr, MAXIMA_BY_NAME))
        raise ValueError(f"unknown maxima {maxima!r}; valid: a SlotMaxima, {names}")

    def city_of(self, seed: int, city: str | int | City | None = None) -> City:
        """The city of the episode with this seed (``city``: an override for this episode)."""
        if city is not None:
            chosen = resolve_city(city)
        elif self.seeds is not None:
            rng = np.random.default_rng((_CITY_DRAW_SALT, seed))
            chosen = resolve_city(self.seeds[int(rng.integers(len(self.seeds)))])
        else:
            assert self.city is not None
            chosen = self.city
        layout_for(chosen, self.maxima)  # a ValueError if the city does not fit
        return chosen


class FactoredCore:
    """One episode of the factored interface, writing its observation into given arrays (the
    single env's own, or a vector env's batch rows). Reads only ``CodeRedSim.observation_view``."""

    def __init__(self, task_id: str, out: Mapping[str, np.ndarray], cities: CityChoice | None = None) -> None:
        check_task(task_id)
        self.task_id = task_id
        self.out = out
        self.cities = cities or CityChoice()
        first = self.cities.city_of(0)
        self.sim = CodeRedSim(task_id, 0, city=first)
        self.layout: SlotLayout = layout_for(first, self.cities.maxima)
        self.features = FactoredFeatures(self.layout)
        self.legal = FactoredLegal(self.layout)
        self.action_error: str | None = None

    def check(self, task_id: str | None = None, city: str | int | City | None = None) -> None:
        """Raise as ``reset`` would for this task and city, changing nothing."""
        if task_id is not None:
            check_task(task_id)
        if city is not None:
            self.cities.city_of(0, city)

    def reset(self, seed: int, task_id: str | None = None, city: str | int | City | None = None) -> None:
        """A new episode: ``seed``, and the task and city when given (else the env's)."""
        self.check(task_id)
        chosen = self.cities.city_of(seed, city)
        self.sim = CodeRedSim(task_id or self.task_id, seed, city=chosen)  # bad input raises here
        self.task_id = self.sim.task.task_id
        self.layout = layout_for(chosen, self.cities.maxima)
        self.features.reset(self.out, self.layout)
        self.legal.reset(self.layout)
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
            combo = factored_vector(action, len(self.legal.tables.nvec))
            wire = decode(combo, self.features.slots)
        except (ValueError, TypeError) as exc:
            return {"action_type": MASKED_OUT}, f"invalid factored action {shown(action)}: {exc}"
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
            "minutes": sim.last_minutes,  # per-minute discounting: gamma_minute ** minutes
            "last_action_error": sim.last_error,
            "action_error": self.action_error,
            "step": sim.step_count,
            "clock_min": sim.clock,
            "city": sim.city.key,
        }


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
    - Cities (``CityChoice``): ``city=`` one city for every episode, or ``split=`` (and
      ``num_cities=``) a city per episode drawn from its seed; ``maxima=`` the slots (the
      spaces). ``reset(options={"city": ...})`` plays one episode in a given city;
      ``info["city"]`` names the episode's.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        task_id: str = "task1",
        render_mode: str | None = None,
        *,
        city: str | int | City | None = None,
        split: str | None = None,
        num_cities: int | None = None,
        maxima: SlotMaxima | str | None = None,
    ) -> None:
        self.render_mode = render_mode
        cities = CityChoice(city, split, num_cities, maxima)
        self._buffers = Buffers(maxima=cities.maxima)
        self._out = self._buffers.arrays
        self.core = FactoredCore(task_id, self._out, cities)
        self.action_space = spaces.MultiDiscrete(np.array(self.core.legal.tables.nvec, np.int64))
        self.observation_space = factored_observation_space(cities.maxima)

    @property
    def task_id(self) -> str:
        return self.core.task_id

    @property
    def sim(self) -> CodeRedSim:
        return self.core.sim

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        options = reset_options(options, RESET_OPTIONS)
        kept = self._np_random, self._np_random_seed  # restored if the options are refused
        super().reset(seed=seed)
        sim_seed = seed if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
        try:
            self.core.reset(sim_seed, options.get("task_id"), options.get("city"))
        except (TypeError, ValueError):
            self._np_random, self._np_random_seed = kept
            raise
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
