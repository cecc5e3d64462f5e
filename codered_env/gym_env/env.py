"""``CodeRedGymEnv``: the Gymnasium environment (masked Discrete actions over a Dict observation)."""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium import spaces

from ..sim.env import CodeRedSim
from .actions import LegalMemo, Segment, decode_action, index_legal
from .checks import check_task, flat_index, reset_options, shown
from .factored_actions import NVEC, encode
from .features import FeatureBuilder, observation_space
from .focus import ACTION_SETS, focus_legal
from .slots import SlotTable


class CodeRedGymEnv(gymnasium.Env):
    """CodeRedEnv as a Gymnasium environment with a masked ``Discrete`` action space.

    One episode of ``CodeRedSim(task_id, seed)``. The full specification (action enumeration,
    every observation feature, reward, episode end, info keys) is docs/GYM.md.

    - Actions: ``Discrete(max_actions)``; index 0 is ``maintain_plan``, then the legal concrete
      actions in ``ACTION_ORDER`` (see ``enumerate_actions``). The legal indices are always a
      prefix ``0..n-1``: ``action_masks()`` (bool) and ``info["action_mask"]`` (int8).
      ``wire_action(i)`` is what index ``i`` does now; ``info["actions"]`` lists them all only
      when built with ``info_actions=True`` (vector envs deep-copy infos every step). An index
      not legal now, or anything but an integer, is refused (``gym_env.checks``): one minute
      passes and ``info["action_error"]`` says why; nothing raises.
    - Observation: a ``Dict`` of float32 arrays in [0, 1] (``observation_space()``), built by
      ``FeatureBuilder`` from the visible state only.
    - Reward: the change of the running score preview times the task's pace factor (sim/pace.py);
      an episode's rewards sum to its grade.
    - End: ``terminated=True`` for every end, the step budget included (the simulation plays the
      rest of the world before the last reward, so nothing is left to bootstrap);
      ``info["termination_reason"]`` is ``resolved``, ``horizon`` or ``step_budget``. With
      ``truncate_on_step_budget=True`` a budget end is reported as ``truncated`` (the old
      behaviour; value bootstrapping then adds a value no update ever fits).
    - ``actions="focused"`` (for learners; default ``"full"``): the enumeration covers only the
      legal actions that can change something or serve a visible need (``gym_env.focus``): no
      re-triage to the same priority, blood only for patients who need it. Every index is still
      a legal action; only fewer of them are offered.
    - ``action_args=True``: ``info["action_args"]`` (and ``action_args()``) gives each legal
      index's action in the factored coding, on stable slots (the same information the
      factored interface's components carry).
    - Rendering: ``"ansi"`` returns ``CodeRedSim.render_text()``; any other mode (SB3 passes
      ``"rgb_array"``) is accepted and ``render()`` warns and returns ``None``, as Gymnasium's own
      environments do for a mode they cannot draw.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        task_id: str = "task1",
        render_mode: str | None = None,
        max_actions: int = 256,
        *,
        info_actions: bool = False,
        truncate_on_step_budget: bool = False,
        actions: str = "full",
        action_args: bool = False,
    ) -> None:
        check_task(task_id)
        if max_actions < 1:
            raise ValueError("max_actions must be at least 1")
        if actions not in ACTION_SETS:
            raise ValueError(f"unknown actions {actions!r}; valid: {', '.join(ACTION_SETS)}")
        self.actions = actions
        self.task_id = task_id
        self.render_mode = render_mode
        self.max_actions = max_actions
        self.info_actions = info_actions
        self.truncate_on_step_budget = truncate_on_step_budget
        # the factored coding of every legal index (``info["action_args"]``), on stable slots
        self._slots: SlotTable | None = SlotTable() if action_args else None
        self.action_space = spaces.Discrete(max_actions)
        self.observation_space = observation_space()
        self._features = FeatureBuilder(max_actions)
        self.sim = CodeRedSim(task_id, 0)
        self._segments: list[Segment] = []
        self._legal_memo: LegalMemo = {}
        self._n_legal = 1
        self._masks: dict[int, np.ndarray] = {}  # n -> the mask of 0..n-1 (at most max_actions + 1)
        self._end_reason: str | None = None

    # -------------------------------------------------------------- gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        options = reset_options(options, ("task_id",))
        task_id = options.get("task_id", self.task_id)
        check_task(task_id)
        super().reset(seed=seed)
        self.task_id = task_id
        sim_seed = seed if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
        self.sim = self._new_sim(task_id, sim_seed, options)
        self._end_reason = None
        self._legal_memo.clear()
        if self._slots is not None:
            self._slots = SlotTable()
        return self._observe(), self._info()

    def _new_sim(self, task_id: str, sim_seed: int, options: dict[str, Any]) -> CodeRedSim:
        """The episode's simulation (on Prakashnagar; the procedural family draws a city)."""
        return CodeRedSim(task_id, sim_seed)

    def step(self, action: int) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        index = flat_index(action)
        action_error = self._action_error(action, index)
        result = self.sim.step(self._wire(index))
        obs = self._observe()
        info = self._info()
        info["last_action_error"] = result.error  # also set when the episode was already over
        info["action_error"] = action_error
        terminated = truncated = False
        if result.done:
            reason = self._end_reason = self._end_reason or self.sim.end_reason
            truncated = self.truncate_on_step_budget and reason == "step_budget"
            terminated = not truncated
            info["termination_reason"] = reason
            info["grade"] = self.sim.grade()
        return obs, float(result.reward), terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Legal indices now (the sb3-contrib MaskablePPO convention), as a boolean array."""
        return self._prefix_mask(self._n_legal).copy()

    def _prefix_mask(self, n: int) -> np.ndarray:
        """The read-only boolean mask of the indices ``0..n-1`` (kept per ``n``; callers copy it)."""
        mask = self._masks.get(n)
        if mask is None:
            mask = self._masks[n] = np.zeros(self.max_actions, dtype=bool)
            mask[:n] = True
            mask.flags.writeable = False
        return mask

    def wire_action(self, index: int) -> dict[str, Any]:
        """The wire action index ``index`` stands for now (``IndexError`` if it is not legal)."""
        if not 0 <= index < self._n_legal:
            raise IndexError(f"action index {index} is not legal now; legal: 0..{self._n_legal - 1}")
        return decode_action(self._segments, index)

    def legal_wire_actions(self) -> list[dict[str, Any]]:
        """Every legal index's wire action, in index order."""
        return [decode_action(self._segments, i) for i in range(self._n_legal)]

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self.sim.render_text()
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode; use render_mode='ansi'")
        else:
            gymnasium.logger.warn(f"render_mode {self.render_mode!r} is not supported (only 'ansi')")
        return None

    # -------------------------------------------------------------- helpers
    def _observe(self) -> dict[str, np.ndarray]:
        view = self.sim.observation_view()
        legal = view["legal_actions"]  # empty once the episode is over
        if legal and self.actions == "focused":
            legal = focus_legal(view, legal)
        if self._slots is not None:
            self._slots.update(view["calls"], view["patients"])
        index = index_legal(legal, self._legal_memo)
        self._segments, self._n_legal = index.segments, min(index.total, self.max_actions)
        return self._features.build(view, index, self._n_legal)

    def _info(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "action_mask": self._prefix_mask(self._n_legal).astype(np.int8),
            "score_preview": self.sim.score_preview,
            "last_action_error": self.sim.last_error,
            "step": self.sim.step_count,
            "clock_min": self.sim.clock,
            "minutes": self.sim.last_minutes,  # per-minute discounting: gamma_minute ** minutes
        }
        if self.info_actions:
            info["actions"] = self.legal_wire_actions()
        if self._slots is not None:
            info["action_args"] = self.action_args()
        return info

    def action_args(self) -> np.ndarray:
        """Per index, its action in the factored coding (``CodeRedFactored`` ids, docs/GYM.md):
        (type, unit slot, case slot, hospital slot, parameter) on slots that keep their entity
        for the whole episode; -1 rows for indices not legal now. Needs ``action_args=True``."""
        if self._slots is None:
            raise RuntimeError("build the env with action_args=True to get the factored coding")
        table = np.full((self.max_actions, len(NVEC)), -1, np.int64)
        for i in range(self._n_legal):
            table[i] = encode(decode_action(self._segments, i), self._slots)
        return table

    def _action_error(self, action: Any, index: int | None) -> str | None:
        """Why ``action`` is refused, in the adapter's terms (None: it is legal)."""
        legal = f"legal: 0..{self._n_legal - 1} (info['action_mask'])"
        if index is None:
            return f"action {shown(action)} is not an integer index; {legal}"
        if self.sim.done:
            return "the episode is over: reset() starts the next"
        return None if 0 <= index < self._n_legal else f"action index {index} is not legal now; {legal}"

    def _wire(self, index: int | None) -> dict[str, Any]:
        if index is not None and 0 <= index < self._n_legal and not self.sim.done:
            return decode_action(self._segments, index)
        return {"action_type": f"masked_out_gym_action_{'invalid' if index is None else index}"}
