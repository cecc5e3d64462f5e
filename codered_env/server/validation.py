"""OpenEnv's runtime-validation telemetry on ``WS /ws`` (RFC 008 level 2 graders).

A validator starts the server with ``OPENENV_VALIDATION_TOKEN`` (32..256 characters) and opens a
socket with ``{"type": "validation_open", "data": {"schema_version": 1, "token": ...}}`` as its
first message; the reply carries a per-socket ``capability``. It then plays an ordinary episode
(``reset``/``step``/``state``) and reads the evidence with ``{"type": "validation_read", "data":
{"schema_version": 1, "capability": ...}}``, answered by ``{"type": "validation", "data": ...}``:

* ``seed``: the reset's requested seed and whether the episode was built from it;
* ``trajectory``: every reset/step/state request and reply of the socket as the server sent it
  (``source: "openenv-server"``), for comparison with the validator's own transcript;
* ``rubric`` and ``attribution``: the per-step rubric tree (below) after the last reset/step,
  and its scores at every step, whose root equals the step's emitted reward.

The per-step rubric explains a step reward, the change of the running score times the task's
pace factor (sim/pace.py), from two ``grade()`` previews (before and after the step; the final
grade after the last one), so it holds for any rubric whose score is
``sum(weight x component) - mutual_aid_penalty``::

    root                         weighted_sum, weights [1, -1, 1]: the emitted step reward
    ├── root.components          weighted_sum of the component changes, weights = the grade's
    │   ├── root.components.time_score ...   effective weights (normalised to sum to 1)
    ├── root.mutual_aid_penalty  change of the mutual-aid penalty (weight -1: subtracted)
    └── root.pace_clamp_and_rounding  reward minus the two above: the pace factor's share, where
                                 the running score was clamped (to [0, 1]; the final score to
                                 [0.01, 0.99]) and the grade's 4-decimal rounding (tests check it
                                 is exactly that)

The final-score tree (rubric_tree.py) is unchanged beside it. Without the token, in production
mode (``OPENENV_MODE=production``), on a socket attached to an MCP session, after the socket's
first reset/step/state, or with a wrong token, ``validation_open`` gets one generic error that
never echoes what was sent; an ordinary client never sees any of this.
"""

from __future__ import annotations

import json
import math
import os
import secrets
from dataclasses import dataclass, field
from typing import Any

TOKEN_ENV = "OPENENV_VALIDATION_TOKEN"
TOKEN_CHARS = (32, 256)  # OpenEnv's bounds for the token and the capability
FRAME_TYPES = ("validation_open", "validation_read")
RECORDED = ("reset", "step", "state")
MAX_RECORDS = 1000  # design choice: 5 x the longest task's budget with a state after each step
MAX_TELEMETRY_BYTES = 8 * 1024 * 1024  # OpenEnv's bound on one snapshot
DENIED = "Validation unavailable or unauthorized"
ROOT_WEIGHTS = (1.0, -1.0, 1.0)  # components, mutual-aid penalty, pace + clamp + rounding
PENALTY_KEY = "mutual_aid_penalty"


@dataclass
class Telemetry:
    """One socket's validation evidence (built by ``validation_open``)."""

    capability: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    seed: dict[str, Any] | None = None
    rubric: list[dict[str, Any]] = field(default_factory=list)
    rubric_error: str | None = None
    attribution: list[dict[str, Any]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    complete: bool = True
    reason: str | None = None
    last_grade: dict[str, Any] | None = None
    size: int = 0

    def snapshot(self) -> dict[str, Any]:
        return {"schema_version": 1, "seed": self.seed, "rubric": self.rubric,
                "rubric_error": self.rubric_error, "attribution": self.attribution,
                "trajectory": {"schema_version": 1, "source": "openenv-server",
                               "records": self.records, "complete": self.complete,
                               "reason": self.reason}}


@dataclass
class SocketValidation:
    """Per-socket state: whether an episode operation happened, and the telemetry if opened."""

    started: bool = False
    telemetry: Telemetry | None = None


def _error() -> str:
    return json.dumps({"type": "error", "data": {"message": DENIED, "code": "VALIDATION_ERROR"}})


def _secret(data: Any, key: str) -> str | None:
    """``data[key]`` when ``data`` is exactly ``{"schema_version": 1, key: <bounded string>}``."""
    if not isinstance(data, dict) or set(data) != {"schema_version", key}:
        return None
    version, value = data["schema_version"], data[key]
    if type(version) is not int or version != 1 or not isinstance(value, str):
        return None
    return value if TOKEN_CHARS[0] <= len(value) <= TOKEN_CHARS[1] else None


def _enabled() -> str | None:
    token = os.environ.get(TOKEN_ENV, "")
    production = os.environ.get("OPENENV_MODE", "").strip().lower() == "production"
    return token if not production and TOKEN_CHARS[0] <= len(token) <= TOKEN_CHARS[1] else None


def handles(message: dict[str, Any]) -> bool:
    return message.get("type") in FRAME_TYPES


def answer(state: SocketValidation, message: dict[str, Any], attached: bool) -> str:
    """The reply to a ``validation_open`` or ``validation_read`` frame."""
    if set(message) != {"type", "data"}:
        return _error()
    if message["type"] == "validation_open":
        token, expected = _secret(message["data"], "token"), _enabled()
        if (token is None or expected is None or attached or state.started
                or state.telemetry is not None
                or not secrets.compare_digest(token.encode(), expected.encode())):
            return _error()
        state.telemetry = Telemetry()
        return json.dumps({"type": "validation_open",
                           "data": {"schema_version": 1, "capability": state.telemetry.capability}})
    capability = _secret(message["data"], "capability")
    telemetry = state.telemetry
    if (capability is None or telemetry is None
            or not secrets.compare_digest(capability.encode(), telemetry.capability.encode())):
        return _error()
    return json.dumps({"type": "validation", "data": telemetry.snapshot()}, allow_nan=False)


def observe(state: SocketValidation, message: dict[str, Any], reply: str, env: Any) -> None:
    """After a ``reset``/``step``/``state`` frame: record it when telemetry is open (errors are
    not operations: OpenEnv's server records only what it answered)."""
    kind = message.get("type")
    if kind not in RECORDED:
        return
    state.started = True
    telemetry = state.telemetry
    if telemetry is None or not telemetry.complete:
        return
    response = json.loads(reply)
    if response.get("type") not in ("observation", "state"):
        return
    try:
        _record(telemetry, kind, message, response, env)
    except (TypeError, ValueError, KeyError, RuntimeError) as exc:
        telemetry.rubric_error = f"rubric introspection unavailable ({type(exc).__name__})"


def _record(telemetry: Telemetry, kind: str, message: dict[str, Any], response: dict[str, Any],
            env: Any) -> None:
    record = {"operation": kind, "request": json.loads(json.dumps(message)), "response": response}
    size = len(json.dumps(record, allow_nan=False))
    if len(telemetry.records) >= MAX_RECORDS or telemetry.size + size > MAX_TELEMETRY_BYTES:
        telemetry.complete, telemetry.reason = False, "session telemetry budget exceeded"
        return
    telemetry.size += size
    telemetry.records.append(record)
    if kind == "reset":
        data = message.get("data") or {}
        requested = isinstance(data, dict) and "seed" in data
        value = data.get("seed") if requested else None
        telemetry.seed = {"requested": requested, "value": value,
                          "accepted": requested and env.state.seed == value}
        telemetry.last_grade = env.grade()
        telemetry.rubric = step_rubric(telemetry.last_grade, None, None)
    elif kind == "step":
        before, after = telemetry.last_grade, env.grade()
        nodes = step_rubric(after, before, response["data"]["reward"])
        telemetry.last_grade = after
        telemetry.rubric = nodes
        telemetry.attribution.append({"step_index": len(telemetry.attribution), "rubric": nodes})


def _weights(grade: dict[str, Any]) -> dict[str, float]:
    raw = {name: float(w) for name, w in grade["weights"].items()}
    total = sum(raw.values())
    if not math.isfinite(total) or total <= 0:
        raise ValueError("the grade's weights do not add up to a positive number")
    return {name: w / total for name, w in raw.items()}


def _value(grade: dict[str, Any], name: str) -> float:
    value = grade["components"].get(name)
    return 0.0 if value is None else float(value)


def _node(name: str, class_name: str, children: list[str], aggregation: str, config: dict[str, Any],
          score: float | None) -> dict[str, Any]:
    return {"name": name, "class_name": f"{__name__}.{class_name}", "children": children,
            "aggregation": aggregation, "config": config, "config_available": True,
            "score": score, "evaluated": score is not None}


def step_rubric(after: dict[str, Any], before: dict[str, Any] | None,
                reward: float | None) -> list[dict[str, Any]]:
    """The per-step rubric tree as OpenEnv's telemetry nodes (module docstring); unevaluated
    (scores ``None``) without a step, i.e. after a reset."""
    weights = _weights(after)
    names = list(weights)
    evaluated = before is not None and reward is not None
    change = {n: _value(after, n) - _value(before, n) if evaluated else None  # type: ignore[arg-type]
              for n in names}
    components = penalty = rounding = None
    if evaluated:
        components = 0.0
        for n in names:  # the validator's order of summation
            components += change[n] * weights[n]  # type: ignore[operator]
        penalty = float(after[PENALTY_KEY]) - float(before[PENALTY_KEY])  # type: ignore[index]
        rounding = float(reward) - (components - penalty)  # type: ignore[arg-type]
    root_score = None
    if evaluated:
        root_score = 0.0
        for weight, part in zip(ROOT_WEIGHTS, (components, penalty, rounding), strict=True):
            root_score += part * weight  # type: ignore[operator]
    nodes = [
        _node("root", "StepReward",
              ["root.components", "root.mutual_aid_penalty", "root.pace_clamp_and_rounding"],
              "weighted_sum", {"weights": list(ROOT_WEIGHTS)}, root_score),
        _node("root.components", "ComponentChanges", [f"root.components.{n}" for n in names],
              "weighted_sum", {"weights": [weights[n] for n in names]}, components),
    ]
    nodes += [_node(f"root.components.{n}", "ComponentChange", [], "leaf",
                    {"measures": f"change of grade components.{n}"}, change[n]) for n in names]
    nodes += [
        _node("root.mutual_aid_penalty", "PenaltyChange", [], "leaf",
              {"measures": "change of grade mutual_aid_penalty"}, penalty),
        _node("root.pace_clamp_and_rounding", "PaceClampAndRounding", [], "leaf",
              {"measures": "step reward minus the weighted changes: the pace factor's share, "
                           "the score's clamp and the grade's 4-decimal rounding"}, rounding),
    ]
    return nodes
