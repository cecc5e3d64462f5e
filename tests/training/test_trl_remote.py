"""``CodeRedToolEnv(base_url=...)`` against a real uvicorn server: the same tool replies and rewards
as in-process, one WebSocket session per episode, released after the reward, at the next reset and
when the instance is dropped (a server with two slots would refuse a third), and a session lost to
the server's idle timeout is replayed transparently."""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codered_env.agents import make_agent
from codered_env.client import CodeRedEnv
from codered_env.sim import CodeRedSim, grade_episode
from codered_env.trl import CodeRedToolEnv

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from support_server import RunningServer, launch

IDLE_TIMEOUT_S = 2.0


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    """``uvicorn codered_env.server.app:app`` with two WebSocket slots and a short idle timeout."""
    env = {"MAX_CONCURRENT_ENVS": "2", "CODERED_WS_IDLE_TIMEOUT_S": str(IDLE_TIMEOUT_S)}
    handle = launch(env, argv=[sys.executable, "-m", "uvicorn", "codered_env.server.app:app"])
    try:
        yield handle
    finally:
        handle.stop()


def heuristic_actions(task_id: str, seed: int) -> list[dict[str, Any]]:
    sim, agent = CodeRedSim(task_id, seed), make_agent("heuristic", seed)
    agent.reset(task_id, seed)
    actions = []
    while not sim.done:
        actions.append(agent.act(sim.observation()))
        sim.step(actions[-1])
    return actions


def play(env: CodeRedToolEnv, task_id: str, seed: int, actions: list[dict[str, Any]]) -> list[str]:
    replies = [env.reset(task_id=task_id, seed=seed, prompt=[])]
    for action in actions:
        params = {k: v for k, v in action.items() if k != "action_type"}
        replies.append(getattr(env, action["action_type"])(**params))
    return replies


@pytest.mark.parametrize(("task_id", "seed"), [("task1", 0), ("task2", 1), ("task3", 2), ("task4", 3),
                                               ("task5", 4)])
def test_heuristic_replayed_remotely_gets_the_in_process_replies_and_score(
    server: RunningServer, task_id: str, seed: int
) -> None:
    actions = heuristic_actions(task_id, seed)
    score = grade_episode(task_id, seed, actions)["score"]
    local, remote = CodeRedToolEnv(), CodeRedToolEnv(base_url=server.base_url)
    remote_replies = play(remote, task_id, seed, actions)
    assert remote_replies == play(local, task_id, seed, actions)
    assert "EPISODE OVER" in remote_replies[-1]
    assert remote.maintain_plan() == local.maintain_plan()  # "the episode is over", no decision
    assert remote.rewards == local.rewards
    assert sum(remote.rewards) == pytest.approx(score, abs=1e-9)
    assert remote.get_reward() == local.get_reward() == score


def test_a_rollout_stopped_early_is_graded_like_in_process(server: RunningServer) -> None:
    actions = heuristic_actions("task2", 5)[:4]
    local, remote = CodeRedToolEnv(), CodeRedToolEnv(base_url=server.base_url)
    assert play(remote, "task2", 5, actions) == play(local, "task2", 5, actions)
    assert remote.get_reward() == local.get_reward()  # the world plays on without decisions
    assert local.get_reward() == local.sim.grade()["score"] and local.sim.end_reason == "stopped"


def test_bad_calls_are_refused_remotely_too(server: RunningServer) -> None:
    local, remote = CodeRedToolEnv(), CodeRedToolEnv(base_url=server.base_url)
    for env in (local, remote):
        env.reset(task_id="task1", seed=0)
    # a wrong id reaches the simulation on both paths: the same refusal, the minute passes
    assert remote.assign_hospital(patient_id="P99", hospital_id="H1") == \
        local.assign_hospital(patient_id="P99", hospital_id="H1")
    # a value the wire schema refuses never reaches the server: same message, no minute passes
    reply = remote.allocate_blood(patient_id="P1", hospital_id="H1", blood_type="O-", units=99)
    assert "REFUSED: invalid allocate_blood: units" in reply and reply.startswith("t=1/150 step 1/30")
    assert "REFUSED: invalid allocate_blood: units" in local.allocate_blood(
        patient_id="P1", hospital_id="H1", blood_type="O-", units=99)
    with pytest.raises(TypeError):
        remote.triage_call(call_id="C1")  # a missing argument: TRL reports a failed tool call
    assert remote.refused_calls == 2 and remote.tool_calls == 2


def test_sessions_are_released_so_two_slots_serve_many_rollouts(server: RunningServer) -> None:
    actions = heuristic_actions("task1", 1)[:3]
    reused = CodeRedToolEnv(base_url=server.base_url)
    for _ in range(4):  # one instance, reset again and again (TRL reuses its pool)
        play(reused, "task1", 1, actions)
    for _ in range(4):  # instances dropped mid-episode, as when TRL discards its pool
        play(CodeRedToolEnv(base_url=server.base_url), "task1", 1, actions)
        gc.collect()
    with CodeRedToolEnv(base_url=server.base_url) as scoped:
        play(scoped, "task1", 1, actions)
    finished = CodeRedToolEnv(base_url=server.base_url)
    play(finished, "task1", 1, actions)
    finished.get_reward()  # releases its session at once
    reused._release()
    two = [CodeRedToolEnv(base_url=server.base_url) for _ in range(2)]
    for env in two:  # nothing leaked: both slots are free
        assert "CodeRedEnv task1 seed 1" in env.reset(task_id="task1", seed=1)
    # a third session is refused while both are held (a client that does not wait for a slot)
    probe = CodeRedEnv(base_url=server.base_url, reconnect_timeout_s=0).sync()
    with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
        probe.reset(task_id="task1", seed=1)
    for env in two:
        env._release()


def test_a_session_lost_to_the_idle_timeout_is_replayed(server: RunningServer) -> None:
    actions = heuristic_actions("task3", 0)[:6]
    local, remote = CodeRedToolEnv(), CodeRedToolEnv(base_url=server.base_url)
    expected = play(local, "task3", 0, actions)
    replies = play(remote, "task3", 0, actions[:3])
    time.sleep(IDLE_TIMEOUT_S + 1.0)  # the server closes the idle session
    for action in actions[3:]:
        params = {k: v for k, v in action.items() if k != "action_type"}
        replies.append(getattr(remote, action["action_type"])(**params))
    assert replies == expected
    assert remote.get_reward() == local.get_reward()
