"""OpenEnv's Task API: train seeds and held-out evaluation seeds (10000+), in process and over HTTP."""

from __future__ import annotations

import httpx
import pytest
from support_server import RunningServer, ws_call
from websockets.sync.client import connect

from codered_env.server.environment import CodeRedEnvironment
from codered_env.server.task_api import (
    SPLITS,
    get_task,
    get_task_range,
    list_splits,
    num_tasks,
    sample_tasks,
)
from codered_env.sim import TASK_IDS
from codered_env.train import EVAL_SEED_BASE


def test_splits_separate_training_seeds_from_held_out_evaluation_seeds() -> None:
    assert [s["name"] for s in list_splits()] == ["train", "eval"]
    train = {(t["task_id"], t["seed"]) for t in get_task_range("train", 0, 1000)}
    held_out = {(t["task_id"], t["seed"]) for t in get_task_range("eval", 0, 1000)}
    assert not train & held_out
    assert max(seed for _, seed in train) < EVAL_SEED_BASE <= min(seed for _, seed in held_out)
    assert num_tasks("train") == len(SPLITS["train"].seeds) * len(TASK_IDS)
    last = get_task("eval", num_tasks("eval") - 1)
    assert last["seed"] == SPLITS["eval"].seeds[-1] and last["task_id"] == TASK_IDS[-1]
    assert [get_task("eval", i)["task_id"] for i in range(5)] == list(TASK_IDS)  # prefixes are even


@pytest.mark.parametrize(("split", "index"), [("eval", -1), ("eval", 5000), ("eval", True), ("train", "3")])
def test_out_of_range_indices_are_refused(split: str, index: object) -> None:
    with pytest.raises(IndexError):
        get_task(split, index)  # type: ignore[arg-type]


def test_reset_plays_the_task_at_a_split_index() -> None:
    env = CodeRedEnvironment()
    env.reset(split="eval", index=8)
    spec = env.get_task("eval", 8)
    assert (env.state.task_id, env.state.seed) == (spec["task_id"], spec["seed"]) == ("task4", 10001)
    for bad in ({"split": "holdout"}, {"split": "eval", "index": 10**6}, {"split": "eval", "seed": 1}):
        with pytest.raises(ValueError):
            env.reset(**bad)


def test_task_routes_and_websocket_reset(server: RunningServer) -> None:
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        assert http.get("/list_environments").json() == ["codered_env"]
        assert http.get("/codered_env/splits").json() == list_splits()
        assert http.post("/codered_env/num_tasks", json={"split": "eval"}).json() == {"num_tasks": 5000}
        task = http.post("/codered_env/task", json={"split": "eval", "index": 3}).json()["task"]
        assert task == get_task("eval", 3)
        assert len(http.post("/codered_env/tasks", json={"split": "train"}).json()["tasks"]) == 100
        assert http.post("/codered_env/task", json={"split": "eval", "index": 5000}).status_code == 400
        assert http.post("/codered_env/task", json={"split": "nope", "index": 0}).status_code == 404
        assert http.post("/codered_env/task", json={"split": "eval"}).status_code == 422
    with connect(server.ws_url, open_timeout=30) as ws:
        ws_call(ws, {"type": "reset", "data": {"split": "eval", "index": 3}})
        state = ws_call(ws, {"type": "state"})["data"]
        assert (state["task_id"], state["seed"]) == (task["task_id"], task["seed"])


def test_task_specs_carry_rfc_013_sampling_keys_and_samples_are_split_tasks() -> None:
    spec = get_task("eval", 4)
    assert (spec["difficulty"], spec["difficulty_name"], spec["group"]) == (3, "expert", "call_queue")
    drawn = sample_tasks("eval", 12, rng_seed=4, tiers=[2])
    assert drawn == sample_tasks("eval", 12, rng_seed=4, tiers=[2])
    assert {t["task_id"] for t in drawn} == {"task3", "task4"}
    assert all(t == get_task("eval", t["index"]) for t in drawn)  # each is the split's own task
    assert len({t["task_id"] for t in sample_tasks("train", 10)}) == 5


def test_sample_route(server: RunningServer) -> None:
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        body = {"split": "eval", "n": 6, "rng_seed": 1, "tiers": [0]}
        reply = http.post("/codered_env/sample", json=body)
        assert reply.status_code == 200 and reply.json()["tasks"] == sample_tasks("eval", 6, 1, [0])
        bad_tier = {"split": "eval", "n": 2, "tiers": [7]}
        assert http.post("/codered_env/sample", json=bad_tier).status_code == 400
        assert http.post("/codered_env/sample", json={"split": "nope", "n": 2}).status_code == 404
        assert http.post("/codered_env/sample", json={"split": "eval", "n": 5000}).status_code == 422
