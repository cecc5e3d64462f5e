"""What a dispatcher reads of a hospital's rooms in the observation: which rooms can host a
procedure, which are in service or ready, and when an out-of-service room is announced back
(the public equipment-failure alert)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

Row = dict[str, Any]


class Rooms(NamedTuple):
    """A hospital's rooms that can host a procedure: all of them, those in service, and whether
    one is ready or being readied with nobody in it; when none is in service, those whose
    announced repair comes within the episode and the minutes until the first of them is back."""

    capable: list[Row]
    in_service: list[Row]
    free_ready: bool
    repaired: tuple[Row, ...] = ()
    repair_min: float | None = None


#: An OR failure's alert: "<hospital> <room> (<label>) equipment failure (until ~t<minute>)"
#: (the public disruption notice, observation ``alerts``).
_OR_FAILURE_ALERT = re.compile(r"^(\S+) (\S+) \(.*\) equipment failure \(until ~t(\d+)\)$")


def or_repairs(alerts: list[str]) -> dict[tuple[str, str], int]:
    """(hospital, room) -> the minute an out-of-service room is announced back, from the alerts."""
    repairs = {}
    for text in alerts:
        m = _OR_FAILURE_ALERT.match(text)
        if m:
            repairs[m[1], m[2]] = int(m[3])
    return repairs


class RepairsOnDemand:
    """``or_repairs`` of one observation's alerts, read when a rule first asks (rooms out of
    service are rare: most decisions read no alert)."""

    __slots__ = ("_obs", "_repairs")

    def __init__(self, obs: Mapping[str, Any]) -> None:
        self._obs = obs
        self._repairs: dict[tuple[str, str], int] | None = None

    def until(self, hospital_id: str, or_id: str) -> int | None:
        if self._repairs is None:
            self._repairs = or_repairs(self._obs.get("alerts") or [])
        return self._repairs.get((hospital_id, or_id))


def rooms_for(h: Row, procedure: str) -> Rooms:
    capable, in_service, free_ready = [], [], False
    for r in h["ors"]:
        if procedure in r["procedures"]:
            capable.append(r)
            if r["state"] != "out_of_service":
                in_service.append(r)
            if r["state"] in ("ready", "preparing") and r["patient_id"] is None:
                free_ready = True
    return Rooms(capable, in_service, free_ready)


def ready_rooms(h: Row, procedure: str) -> int:
    """The hospital's rooms ready or being readied for ``procedure``, nobody in them yet."""
    ready = 0
    for r in h["ors"]:
        if r["procedure"] == procedure and r["state"] in ("preparing", "ready") and r["patient_id"] is None:
            ready += 1
    return ready
