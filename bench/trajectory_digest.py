"""A SHA-256 digest of many whole episodes: the guard for speed work that must change nothing.

Plays every task x ``--seeds`` seeds with several policies and hashes everything an agent or a
trainer can see along the way:

- ``noop``, ``random``, ``heuristic`` and ``invalid`` (the random agent with a malformed or
  illegal action every 4th step) through ``CodeRedSim``: per step the reward, done flag, error,
  the observation dict (JSON, sorted keys), ``render_text()`` and the running ``grade()``;
  the final grade at the end.
- ``gym``: a masked uniform-random policy through ``gymnasium.make("CodeRedEnv-<task>-v16")``
  (even seeds built with ``info_actions=True`` and rendered each step, odd seeds plain): per
  step every feature array (dtype, shape, bytes), the reward, terminated/truncated, the info
  dict (mask bytes, actions list) and ``render()``; 10% of the actions are masked-out indices.
- every 7th heuristic step a ``fork`` played two steps (its observations and grades).

Record the digest before an optimisation and compare after it::

    uv run python bench/trajectory_digest.py            # per (policy, task) digests + the total
    uv run python bench/trajectory_digest.py --seeds 5  # quicker
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from random import Random
from typing import Any

import gymnasium
import numpy as np

from codered_env.agents import make_agent
from codered_env.gym_env.registration import flat_id  # the import registers the ids
from codered_env.sim import TASK_IDS, CodeRedSim

SIM_POLICIES = ("noop", "random", "heuristic", "invalid")
_BAD_ACTIONS: tuple[Any, ...] = (
    {"action_type": "dispatch_ambulance", "ambulance_id": "A99", "patient_id": "P1"},
    {"action_type": "assign_hospital", "patient_id": "P404", "hospital_id": "H1"},
    {"action_type": "warp_drive"},
    "maintain_plan",
    {"action_type": "allocate_blood", "patient_id": "P1", "hospital_id": "H1", "blood_type": "O-",
     "units": 9},
    {"action_type": "triage_call", "call_id": "C1", "priority": "P9"},
)


def _dump(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, default=repr).encode()


def sim_episode(task_id: str, seed: int, policy: str, h: Any) -> None:
    sim = CodeRedSim(task_id, seed)
    agent = make_agent("random" if policy == "invalid" else policy, seed)
    agent.reset(task_id, seed)
    bad = Random(f"digest:{task_id}:{seed}")
    h.update(_dump(sim.observation()))
    h.update(sim.render_text().encode())
    step = 0
    while not sim.done:
        obs = sim.observation()
        action = agent.act(obs)
        if policy == "invalid" and step % 4 == 3:
            action = bad.choice(_BAD_ACTIONS)
        out = sim.step(action)
        step += 1
        h.update(_dump([out.reward, out.done, out.error, sim.end_reason]))
        h.update(_dump(sim.observation()))
        h.update(sim.render_text().encode())
        h.update(_dump(sim.grade()))
        if policy == "heuristic" and step % 7 == 0 and not sim.done:
            _fork(sim, step, h)
    h.update(_dump(sim.grade()))
    h.update(_dump(sim.action_log))


def _fork(sim: CodeRedSim, step: int, h: Any) -> None:
    """A planning fork played a few steps on (caches must not leak between parent and twin)."""
    twin = sim.fork(step)
    for action in ({"action_type": "maintain_plan"}, {"action_type": "query_or_status", "hospital_id": "H1"}):
        if twin.done:
            break
        out = twin.step(action)
        h.update(_dump([out.reward, out.done, out.error, twin.observation(), twin.grade()]))
    h.update(_dump(sim.observation()))


def _features(obs: dict[str, np.ndarray], h: Any) -> None:
    for key in sorted(obs):
        arr = obs[key]
        h.update(f"{key}:{arr.dtype}:{arr.shape}".encode())
        h.update(np.ascontiguousarray(arr).tobytes())


def _info(info: dict[str, Any], h: Any) -> None:
    plain = {k: v for k, v in info.items() if not isinstance(v, np.ndarray)}
    h.update(_dump(plain))
    for k in sorted(info):
        if isinstance(info[k], np.ndarray):
            h.update(k.encode() + info[k].tobytes())


def gym_episode(task_id: str, seed: int, h: Any) -> None:
    """Even seeds list the actions in info and render each step; odd seeds do neither (so
    nothing but the adapter itself touches the simulation between steps)."""
    verbose = seed % 2 == 0
    env = gymnasium.make(flat_id(task_id), info_actions=verbose, render_mode="ansi" if verbose else None)
    inner = env.unwrapped
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    _features(obs, h)
    _info(info, h)
    done = False
    while not done:
        mask = inner.action_masks()
        h.update(mask.tobytes())
        n = int(mask.sum())
        action = int(rng.integers(n)) if rng.random() < 0.9 else int(rng.integers(inner.max_actions))
        obs, reward, terminated, truncated, info = env.step(action)
        _features(obs, h)
        h.update(_dump([float(reward), bool(terminated), bool(truncated)]))
        _info(info, h)
        if verbose:
            h.update((env.render() or "").encode())
        done = terminated or truncated
    env.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--tasks", default=",".join(TASK_IDS))
    args = parser.parse_args()
    total = hashlib.sha256()
    start = time.perf_counter()
    for policy in (*SIM_POLICIES, "gym"):
        for task_id in args.tasks.split(","):
            h = hashlib.sha256()
            for seed in range(args.seeds):
                if policy == "gym":
                    gym_episode(task_id, seed, h)
                else:
                    sim_episode(task_id, seed, policy, h)
            digest = h.hexdigest()
            total.update(digest.encode())
            print(f"{policy:9s} {task_id}  {digest}", flush=True)
    print(f"TOTAL {total.hexdigest()}  ({args.seeds} seeds, {time.perf_counter() - start:.0f}s)")


if __name__ == "__main__":
    main()
