"""A policy saved by ``codered train --interface factored`` as an ordinary agent:
``make_agent("factored:PATH")`` (``codered eval --agents factored:PATH``).

The policy network (``make_policy``; trained by codered_env/factored_ppo.py) reads the factored
Gymnasium interface's arrays (``CodeRedFactoredEnv``, docs/GYM.md) and scores every legal
component vector. As the ``ppo:PATH`` agent, the agent keeps a *mirror* episode: a
``CodeRedFactoredEnv`` reset with the episode's task and seed and advanced with the agent's own
actions (episodes are deterministic); every step checks that the observation it was given matches
the mirror's and raises if not. It plays greedily: the most likely legal vector.

A saved policy records the slot maxima it was built for (``config["maxima"]``; a file without
them is Prakashnagar's), and the agent's mirror uses those slots. An episode's city is read from
its first observation; a city that does not fit the slots is a ValueError.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from ..sim.city import PRAKASHNAGAR, city_key_of
from .base import MAINTAIN, code_fingerprint
from .ppo import check_mirror

#: The observation arrays the policy reads (the masks are replaced by the legal vectors).
INPUTS = (
    "global",
    "units",
    "cases",
    "hospitals",
    "unit_case_minutes",
    "case_hospital_minutes",
    "unit_present",
    "case_present",
)

#: Rank of the pair terms (the scorer's products of two components' row embeddings).
PAIR_RANK = 16
#: The pair terms (``<group>_with_<other>``): a row group's small projection meets the other
#: component's through a bilinear form per action type, or a learnt embedding per type and value
#: for the parameter. The forms and embeddings start at zero: a fresh policy scores as the
#: additive terms alone.
ROW_PAIRS = (("unit_with_case", "case_with_unit"), ("case_with_hospital", "hospital_with_case"))
PARAMETER_PAIRS = ("case_with_parameter", "hospital_with_parameter")


def policy_torch(user: str = "a factored policy") -> Any:
    """The ``torch`` module (an ImportError with the install hint, naming ``user``, when the ``rl``
    extra is missing)."""
    from .._optional import require

    require("rl", user)
    import torch

    return torch


def make_policy(hidden: int = 128, maxima: Any = None, type_first: bool = False) -> Any:
    """A fresh ``FactoredPolicy`` (a ``torch.nn.Module``) for the spaces of ``maxima`` (a
    ``SlotMaxima``; Prakashnagar's by default). Its weights do not depend on the number of
    slots, only on the columns and the parameter codes. ``hidden``, ``maxima`` and ``type_first``
    stay on the module as attributes (``save_policy`` stores them).

    ``type_first``: the policy picks an action type among the legal ones, then a vector of that
    type (log p = log softmax of the type logits + log softmax of the other terms within the
    type), instead of one softmax over every legal vector. Summed over the vectors, a type's
    probability grows with its number of legal combinations: an untrained policy moves blood
    (hundreds of vectors) far more often than it waits with ``maintain_plan`` (one)."""
    torch = policy_torch()
    from torch import nn

    from ..gym_env.factored_actions import action_tables
    from ..gym_env.factored_features import shapes
    from ..gym_env.slots import PRAKASHNAGAR_MAXIMA, layout_for
    from ..sim.city import PRAKASHNAGAR

    maxima = maxima or PRAKASHNAGAR_MAXIMA
    SHAPES = shapes(maxima)
    nvec = action_tables(layout_for(PRAKASHNAGAR, maxima)).nvec
    n_types, n_params = nvec[0], nvec[4]

    def mlp(n_in: int, n_out: int) -> nn.Module:
        return nn.Sequential(nn.Linear(n_in, hidden), nn.Tanh(), nn.Linear(hidden, n_out), nn.Tanh())


    class FactoredPolicy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.units = mlp(SHAPES["units"][0][1], hidden)
            self.cases = mlp(SHAPES["cases"][0][1], hidden)
            self.hospitals = mlp(SHAPES["hospitals"][0][1], hidden)
            self.globals = mlp(SHAPES["global"][0][0], hidden)
            self.trunk = mlp(4 * hidden, hidden)
            self.type_head = nn.Linear(hidden, n_types)
            self.unit_head = nn.Linear(2 * hidden, n_types)
            self.case_head = nn.Linear(2 * hidden, n_types)
            self.hospital_head = nn.Linear(2 * hidden, n_types)
            self.param_head = nn.Linear(hidden, n_types * n_params)
            self.travel = nn.Parameter(torch.zeros(2, n_types))
            self.value_head = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))
            sides = [*(name for pair in ROW_PAIRS for name in pair), *PARAMETER_PAIRS]
            self.pairs = nn.ModuleDict({name: nn.Linear(hidden, PAIR_RANK) for name in sides})
            self.pair_forms = nn.Parameter(torch.zeros(len(ROW_PAIRS), n_types, PAIR_RANK, PAIR_RANK))
            self.param_pairs = nn.Parameter(torch.zeros(len(PARAMETER_PAIRS), n_types, n_params, PAIR_RANK))
            self.hidden, self.maxima, self.type_first = hidden, maxima, type_first

        def forward(self, obs: dict[str, Any], legal: Any, legal_mask: Any) -> tuple[Any, Any]:
            """Logits (B, K) of the padded legal vectors ``legal`` (B, K, 5) (-inf where
            ``legal_mask`` is False) and the value (B,)."""
            units = self.units(obs["units"])
            cases = self.cases(obs["cases"])
            hospitals = self.hospitals(obs["hospitals"])
            unit_w = obs["unit_present"].unsqueeze(-1)
            case_w = obs["case_present"].unsqueeze(-1)
            pooled = [
                self.globals(obs["global"]),
                (units * unit_w).sum(1) / unit_w.sum(1).clamp(min=1),
                (cases * case_w).sum(1) / case_w.sum(1).clamp(min=1),
                hospitals.mean(1),
            ]
            trunk = self.trunk(torch.cat(pooled, -1))

            def with_trunk(rows: Any) -> Any:
                return torch.cat([rows, trunk.unsqueeze(1).expand(-1, rows.shape[1], -1)], -1)

            param_s = self.param_head(trunk).view(-1, n_types, n_params)
            b = torch.arange(legal.shape[0]).unsqueeze(1).expand(-1, legal.shape[1])
            t, u, c, h, p = legal.unbind(-1)
            type_logits = self.type_head(trunk)
            logits = (
                self.unit_head(with_trunk(units))[b, u, t]
                + self.case_head(with_trunk(cases))[b, c, t]
                + self.hospital_head(with_trunk(hospitals))[b, h, t]
                + param_s[b, t, p]
                + self.travel[0, t] * obs["unit_case_minutes"][b, u, c]
                + self.travel[1, t] * obs["case_hospital_minutes"][b, c, h]
                + self._pair_scores({"unit": (units, u), "case": (cases, c), "hospital": (hospitals, h)},
                                    b, t, p)
            )
            if self.type_first:
                logits = _type_first(logits, type_logits, t, legal_mask)
            else:
                logits = logits + type_logits[b, t]
            logits = logits.masked_fill(~legal_mask, float("-inf"))
            return logits, self.value_head(trunk).squeeze(-1)

        def _pair_scores(self, rows: dict[str, tuple[Any, Any]], b: Any, t: Any, p: Any) -> Any:
            """The pair terms of each legal vector (B, K); ``rows``: per group, its row
            encodings and each vector's index into them."""

            def encoded(name: str) -> tuple[Any, Any]:
                rows_of, index = rows[name.split("_")[0]]
                return self.pairs[name](rows_of), index  # (B, N, rank), (B, K)

            total = 0
            for k, (left, right) in enumerate(ROW_PAIRS):
                rows_l, index_l = encoded(left)
                rows_r, index_r = encoded(right)
                # every row through every type's form at once: (B, N, types, rank)
                formed = torch.einsum("bnr,tqr->bntq", rows_l, self.pair_forms[k])
                total = total + (formed[b, index_l, t] * rows_r[b, index_r]).sum(-1)
            for k, name in enumerate(PARAMETER_PAIRS):
                rows_of, index = encoded(name)
                total = total + (rows_of[b, index] * self.param_pairs[k, t, p]).sum(-1)
            return total

    def _type_first(rest: Any, type_logits: Any, t: Any, legal_mask: Any) -> Any:
        """log p(type) + log p(vector | type) of each legal vector (B, K)."""
        of_type = (t.unsqueeze(-1) == torch.arange(n_types)) & legal_mask.unsqueeze(-1)  # (B, K, T)
        # finite fills: an absent type's log-sum-exp must not make NaN gradients
        within = torch.logsumexp(rest.unsqueeze(-1).masked_fill(~of_type, -1e9), 1)  # (B, T)
        type_logp = torch.log_softmax(type_logits.masked_fill(~of_type.any(1), -1e9), -1)
        return (type_logp - within).gather(1, t) + rest

    return FactoredPolicy()


def batch_inputs(observations: list[dict[str, np.ndarray]], legal: list[np.ndarray]) -> tuple[Any, Any, Any]:
    """Stack observations and pad their legal vectors: (obs tensors, legal (B, K, 5), mask (B, K))."""
    return batch_arrays({k: np.stack([o[k] for o in observations]) for k in INPUTS}, legal)


#: The case-slot axis of each input with one (a case slot's row, presence and travel minutes).
CASE_AXIS = {"cases": 1, "case_present": 1, "unit_case_minutes": 2, "case_hospital_minutes": 1}


def batch_arrays(arrays: dict[str, np.ndarray], legal: list[np.ndarray]) -> tuple[Any, Any, Any]:
    """``batch_inputs`` of observations already stacked (``INPUTS``, leading batch axis). Case
    slots fill from the first one, so the slots after the last one in use in the batch are cut:
    they are absent (out of the pooling) and no legal vector names them; the scores are the same."""
    torch = policy_torch()
    padded, mask = pad_legal(legal)
    present = arrays["case_present"].any(0)
    used = max(int(np.flatnonzero(present)[-1]) + 1 if present.any() else 1, int(padded[..., 2].max()) + 1)
    obs = {}
    for k in INPUTS:
        array = arrays[k]
        if k in CASE_AXIS:
            array = array.take(np.arange(used), axis=CASE_AXIS[k])
        obs[k] = torch.as_tensor(array, dtype=torch.float32)
    return obs, torch.as_tensor(padded), torch.as_tensor(mask)


def pad_legal(legal: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The legal vectors of each sample padded to the longest (B, K, 5) and their mask (B, K)."""
    lengths = np.array([len(x) for x in legal])
    mask = np.arange(lengths.max()) < lengths[:, None]
    padded = np.zeros((*mask.shape, legal[0].shape[1]), np.int64)
    padded[mask] = np.concatenate(legal)
    return padded, mask


def save_policy(policy: Any, path: str | Path, config: dict[str, Any] | None = None) -> None:
    """Write ``policy`` to ``path`` as ``load_policy`` reads it: the weights and ``config`` (plain
    values) with the policy's ``hidden`` and slot ``maxima`` (integers)."""
    from ..gym_env.slots import maxima_as_config

    torch = policy_torch()
    stored = {**(config or {}), "hidden": policy.hidden, "maxima": maxima_as_config(policy.maxima),
              "type_first": policy.type_first}
    torch.save({"state_dict": policy.state_dict(), "config": stored}, path)


def load_policy(path: str | Path) -> tuple[Any, str]:
    """The policy saved at ``path`` (``policy.pt`` of ``codered train --interface factored``) in
    eval mode, built for the slot maxima the file names (Prakashnagar's when it names none), and
    the file's SHA-256; a ValueError saying what is wrong with the file."""
    torch = policy_torch()
    path = Path(path)
    hint = "give the policy.pt written by codered train --interface factored"
    if not path.is_file():
        raise ValueError(f"factored policy file not found: {path} ({hint})")
    data = path.read_bytes()
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several kinds for a file it cannot read
        raise ValueError(f"{path} is not a saved factored policy ({hint}): {exc}") from None
    config = saved.get("config") if isinstance(saved, dict) else None
    if not isinstance(config, dict) or "state_dict" not in saved:
        raise ValueError(f"{path} has no state_dict and config: not a factored policy ({hint})")
    hidden = config.get("hidden")
    if not isinstance(hidden, int) or hidden < 1:
        raise ValueError(f"{path}: config.hidden must be a positive integer, got {hidden!r}")
    type_first = config.get("type_first", False)  # files written before the option: False
    if not isinstance(type_first, bool):
        raise ValueError(f"{path}: config.type_first must be true or false, got {type_first!r}")
    policy = make_policy(hidden, _saved_maxima(path, config), type_first)
    try:
        policy.load_state_dict(saved["state_dict"])
    except (RuntimeError, TypeError, AttributeError) as exc:
        raise ValueError(
            f"{path}: the weights do not fit this version's factored policy (retrain it): {exc}"
        ) from None
    policy.eval()
    return policy, hashlib.sha256(data).hexdigest()


def _saved_maxima(path: Path, config: dict[str, Any]) -> Any:
    from ..gym_env.slots import maxima_from_config

    try:
        return maxima_from_config(config.get("maxima"))
    except ValueError as exc:
        raise ValueError(f"{path}: config.maxima: {exc}") from None


class FactoredAgent:
    """Greedy factored policy loaded from a ``policy.pt`` saved by ``codered train --interface factored``."""

    def __init__(self, path: str | Path) -> None:
        self.policy, self.checkpoint_sha256 = load_policy(path)
        self.maxima = self.policy.maxima
        self.name = f"factored:{path}"
        self.env: Any = None  # the mirror (a CodeRedFactoredEnv with the policy's slots), made at reset
        self._obs: dict[str, np.ndarray] | None = None
        self._task: tuple[str, int] | None = None
        self._unplayable: str | None = None  # why this episode's city cannot be mirrored

    def fingerprint(self) -> dict[str, Any]:
        """The checkpoint's content and the interface's code (a change to either replays)."""
        return {
            **code_fingerprint(self, "codered_env.gym_env"),
            "checkpoint_sha256": self.checkpoint_sha256,
        }

    def reset(self, task_id: str, seed: int, city: Any = PRAKASHNAGAR.key) -> None:
        """A new mirror episode (``city``: its name, a city seed or a ``City``; an episode's first
        observation names its city too, and the mirror moves there if it differs)."""
        self._task, self._unplayable = (task_id, seed), None
        self._mirror(city)

    def _mirror(self, city: Any) -> None:
        from ..gym_env import CodeRedFactoredEnv

        assert self._task is not None
        task_id, seed = self._task
        try:
            if self.env is None:
                self.env = CodeRedFactoredEnv(task_id, city=city, maxima=self.maxima)
            self._obs, _ = self.env.reset(seed=seed, options={"task_id": task_id, "city": city})
        except ValueError as exc:
            self._unplayable = (f"{self.name} cannot play city {city!r} with the slots it was trained "
                                f"for ({self.maxima}): {exc}")
            raise ValueError(self._unplayable) from None

    def _follow_city(self, observation: dict[str, Any]) -> None:
        key = city_key_of(observation)
        if key == self.env.sim.city.key:
            return
        if observation.get("step") != 0:
            raise RuntimeError(f"factored agent: the episode diverged from its mirror (city: {key!r} != "
                               f"{self.env.sim.city.key!r})")
        self._mirror(key)

    def act(self, observation: dict[str, Any]) -> dict[str, Any]:
        if self._unplayable is not None:
            raise ValueError(self._unplayable)
        if self._obs is None:
            return dict(MAINTAIN)
        self._follow_city(observation)
        sim = self.env.sim
        if sim.done:
            return dict(MAINTAIN)
        check_mirror("factored agent", observation, sim)
        torch = policy_torch()
        legal = self.env.legal_actions()
        with torch.no_grad():
            logits, _ = self.policy(*batch_inputs([self._obs], [legal]))
        action = legal[int(logits[0].argmax())]
        wire = self.env.decode(action)
        self._obs, *_ = self.env.step(action)
        return wire
