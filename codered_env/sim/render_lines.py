"""The observation as keyed lines: the data behind ``render_text`` and the LLM prompt's state.

``render_lines(obs)`` returns one :class:`Line` per section head and per entity (call, patient,
unit, hospital), keyed so a consumer can pick, drop or diff lines by what they show instead of
reading text back with regexes; ``lines_text(lines)`` joins them into the text ``render_text``
returns. Options give the compact form of the LLM prompt (``compact``: no task/seed banner, no
hospital names, no unit kind where the id says it, on-call specialists grouped, no empty
``dest -`` / ``blood ?`` fields), without the hospitals' blood stock (``blood_stock=False``) and
without the legal-action line (``legal=False``).

Works on the observation dict alone, so a client can render what a server sent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from .derived import Derived

MAX_EVENTS = 12
#: Sections in the order they are rendered; each shows at most one head line.
SECTIONS: tuple[str, ...] = (
    "clock", "error", "events", "alerts", "calls", "patients", "units", "hospitals", "roads", "map",
    "mutual_aid", "or_status", "legal",
)
#: Sections whose entities are written inside the head line (``UNITS: a; b``), not one per line.
INLINE_SECTIONS: frozenset[str] = frozenset({"units"})
FINISHED_SHOWN = ("treated", "released")
_SHORT_STATE = {
    "idle": "idle",
    "preparing": "prep",
    "ready": "READY",
    "in_use": "busy",
    "out_of_service": "OOS",
}
_SHORT_SPEC = {"cardiology": "cardio", "neurology": "neuro", "trauma_surgery": "trauma", "obstetrics": "obst"}
_KIND_IN_ID = re.compile(r"(ALS|BLS)\d+")


class Line(NamedTuple):
    """One rendered line. ``key`` is the entity's id (``C1``, ``P1``, ``ALS1``, ``H1``) for an
    entity's line and ``None`` for a section's head line (the whole line for one-line sections)."""

    section: str
    key: str | None
    text: str


def _vitals(v: dict[str, Any]) -> str:
    return f"HR{v['hr']} BP{v['sbp']} SpO2 {v['spo2']} GCS{v['gcs']} v{v['score']:.2f}"


def patient_text(p: dict[str, Any], *, compact: bool = False) -> str:
    parts = [f"{p['patient_id']} {p['label']} {p['priority']}"]
    if p["secondary"]:
        parts.append("(secondary)")
    parts.append(f"{p['status']} @{p['node']}")
    if p["ambulance_id"]:
        parts.append(f"unit {p['ambulance_id']}")
    if p["eta_min"] is not None:
        parts.append(f"eta {p['eta_min']}m")
    parts.append(_vitals(p["vitals"]))
    if p["destination"] or not compact:
        parts.append(f"dest {p['destination'] or '-'}")
    if p["blood_type"] or not compact:
        parts.append(f"blood {p['blood_type'] or '?'}")
    if p["waiting_for"]:
        parts.append("waiting: " + ",".join(p["waiting_for"]))
    parts.append(f"{p['minutes_since_call']}m since call")
    return " | ".join(parts)


def _kind_said_by_id(a: dict[str, Any]) -> bool:
    """``ALS1`` says its kind (compact form drops ``(ALS)``); a mutual-aid unit keeps ``(ALS,MA)``."""
    unit_id = a["ambulance_id"]
    return not a["mutual_aid"] and unit_id.startswith(a["kind"]) and bool(_KIND_IN_ID.fullmatch(unit_id))


def unit_text(a: dict[str, Any], *, compact: bool = False) -> str:
    if compact and _kind_said_by_id(a):
        s = f"{a['ambulance_id']} {a['status']} @{a['node']}"
    else:
        s = f"{a['ambulance_id']}({a['kind']}{',MA' if a['mutual_aid'] else ''}) {a['status']} @{a['node']}"
    if a["destination"]:
        s += f"->{a['destination']} eta {a['eta_min']}m"
    if a["busy_min"] is not None:
        s += f" {a['busy_min']}m left"
    job = a["patient_id"] or a["call_id"]
    if job:
        s += f" [{job}]"
    return s + (" HELD(road closed)" if a["held"] else "")


def _room_text(r: dict[str, Any]) -> str:
    return (
        f"{r['or_id']}:{_SHORT_STATE[r['state']]}"
        + (f"({r['procedure']})" if r["procedure"] and r["state"] in ("preparing", "ready") else "")
        + (f"[{r['patient_id']}]" if r["patient_id"] else "")
        + ("(elective)" if r["elective"] else "")
    )


def _specialists_text(specialists: dict[str, dict[str, Any]], compact: bool) -> str:
    """``cardio:present@t40 neuro:on_call``; compact groups each run of on-call specialists
    (``on_call cardio,neuro``)."""
    if not compact:
        return " ".join(
            f"{_SHORT_SPEC.get(k, k)}:{v['state']}" + (f"@t{v['until']}" if v["until"] is not None else "")
            for k, v in specialists.items()
        )
    words: list[str] = []
    run: list[str] = []
    for key, s in specialists.items():
        name = _SHORT_SPEC.get(key, key)
        if s["state"] == "on_call" and s["until"] is None:
            run.append(name)
            continue
        if run:
            words.append("on_call " + ",".join(run))
            run = []
        words.append(f"{name}:{s['state']}" + (f"@t{s['until']}" if s["until"] is not None else ""))
    if run:
        words.append("on_call " + ",".join(run))
    return " ".join(words)


def hospital_text(h: dict[str, Any], *, compact: bool = False, blood_stock: bool = True) -> str:
    name = "" if compact else f" {h['name']}"
    head = f"{h['hospital_id']} T{h['tier']}{name} load {h['occupancy']}/{h['capacity']}"
    if h["crowded"]:
        head += " CROWDED"
    if h["diverted_until"] is not None:
        head += f" DIVERTED->t{h['diverted_until']}"
    ors = " ".join(_room_text(r) for r in h["ors"])
    specs = _specialists_text(h["specialists"], compact)
    blood = " ".join(f"{t}:{n}" for t, n in h["blood"].items())
    parts = [head]
    if ors:
        parts.append("ORs " + ors)
    if specs:
        parts.append(specs)
    parts.append(f"ICU free {h['icu_free']}")
    if blood_stock or not blood:
        parts.append(f"blood {blood or 'none'}")
    return " | ".join(parts)


def call_text(c: dict[str, Any]) -> str:
    unit = f" unit {c['ambulance_id']}" if c["ambulance_id"] else ""
    return (
        f"{c['call_id']} {c['priority'] or 'untriaged'} {c['status']}{unit} @{c['node']} "
        f"waiting {c['waiting_min']}m: {c['report']}"
    )


def legal_text(legal: dict[str, list[dict[str, list[Any]]]], derived: Derived | None = None) -> str:
    """The legal actions on one line; with ``derived``, each action's chunk is made once per
    options list (the kept sections hand out the same list while unchanged)."""
    if derived is None:
        return " ".join(_legal_chunk(name, options) for name, options in legal.items())
    return " ".join([derived.get(options, name, _legal_chunk, name) for name, options in legal.items()])


def _legal_chunk(name: str, options: list[dict[str, list[Any]]]) -> str:
    if name in ("maintain_plan", "query_or_status"):
        return name
    if name in ("allocate_blood", "transfer_blood"):
        return f"{name}({len(options)} options)"
    shown = [", ".join("/".join(map(str, v)) for v in opt.values()) for opt in options]
    return f"{name}({'; '.join(s for s in shown if s)})"


def _clock(obs: dict[str, Any], compact: bool) -> str:
    banner = "" if compact else f"CodeRedEnv {obs['task_id']} seed {obs['seed']} | "
    return (
        f"{banner}t={obs['clock_min']}/{obs['horizon_min']} min"
        f" | step {obs['step']}/{obs['max_steps']} | score {obs['score_preview']:.3f}"
        + (" | DONE" if obs["done"] else "")
    )


def _roads(roads: dict[str, Any]) -> str:
    bits = [f"closed {'-'.join(r['edge'])} until t{r['until']}" for r in roads["closed"]]
    bits += [f"slow x{r['factor']:g} {'-'.join(r['edge'])} until t{r['until']}" for r in roads["congested"]]
    return "ROADS: " + ("; ".join(bits) or "all open") + (" | peak hour" if roads["peak_hour"] else "")


def map_text(public: dict[str, Any]) -> str:
    """A generated city's map on one line (Prakashnagar's observation has none: its map is
    documented): places with their kind, roads with base minutes (``~`` flood-prone)."""
    places = "; ".join(f"{n['node_id']} {n['name']} ({n['kind']})" for n in public["nodes"])
    roads = ", ".join(
        f"{'-'.join(r['edge'])} {r['minutes']:g}m{'~' if r['riverside'] else ''}" for r in public["roads"]
    )
    return f"MAP {public['name']}: {places} | ROADS (base min, ~ floods): {roads}"


def _or_status(q: dict[str, Any]) -> str:
    rooms = "; ".join(
        f"{r['or_id']} {r['state']}"
        + (f" {r['minutes_left']}m left" if r["minutes_left"] is not None else "")
        + (f" ({r['procedure']})" if r["procedure"] else "")
        for r in q["ors"]
    )
    return f"OR STATUS {q['hospital_id']}: {rooms or 'no operating rooms'}"


def _situation(obs: dict[str, Any]) -> Iterator[Line]:
    if obs["last_action_error"]:
        yield Line("error", None, f"LAST ACTION ERROR: {obs['last_action_error']}")
    events = obs["events"][-MAX_EVENTS:]
    if events:
        more = len(obs["events"]) - len(events)
        yield Line("events", None, "EVENTS: " + (f"(+{more} earlier) " if more else "") + "; ".join(events))
    if obs["alerts"]:
        yield Line("alerts", None, "ALERTS: " + "; ".join(obs["alerts"]))


def _entities(
    obs: dict[str, Any], compact: bool, blood_stock: bool, derived: Derived | None
) -> Iterator[Line]:
    if obs["calls"]:
        yield Line("calls", None, "CALLS:")
        yield from (Line("calls", c["call_id"], call_text(c)) for c in obs["calls"])
    patients = [p for p in obs["patients"] if p["status"] not in FINISHED_SHOWN]
    done_ids = [p["patient_id"] for p in obs["patients"] if p["status"] in FINISHED_SHOWN]
    if patients or done_ids:
        yield Line("patients", None, "PATIENTS:" + (f" (done: {', '.join(done_ids)})" if done_ids else ""))
        yield from (Line("patients", p["patient_id"], patient_text(p, compact=compact)) for p in patients)
    units = [Line("units", a["ambulance_id"], unit_text(a, compact=compact)) for a in obs["ambulances"]]
    yield Line("units", None, "UNITS: " + "; ".join(u.text for u in units))
    yield from units
    yield Line("hospitals", None, "HOSPITALS:")
    if derived is not None:  # only the default options: a row's text is then its own
        for h in obs["hospitals"]:
            yield Line("hospitals", h["hospital_id"], derived.get(h, "hospital", hospital_text))
        return
    for h in obs["hospitals"]:
        yield Line("hospitals", h["hospital_id"], hospital_text(h, compact=compact, blood_stock=blood_stock))


def _resources(obs: dict[str, Any], legal: bool, derived: Derived | None) -> Iterator[Line]:
    yield Line("roads", None, _roads(obs["roads"]))
    if obs.get("city"):
        city = obs["city"]
        yield Line("map", None, map_text(city) if derived is None else derived.get(city, "map", map_text))
    ma = obs["mutual_aid"]
    if ma["limit"]:
        pend = ", ".join(f"{r['unit_id']} at t{r['arrives_min']}" for r in ma["pending"])
        arriving = f"; arriving {pend}" if pend else ""
        yield Line("mutual_aid", None, f"MUTUAL AID: {ma['remaining']}/{ma['limit']} left{arriving}")
    if obs["query_result"]:
        yield Line("or_status", None, _or_status(obs["query_result"]))
    if legal and obs["legal_actions"]:
        legal_line = legal_text(obs["legal_actions"], derived)
        yield Line("legal", None, "LEGAL (values in parameter order): " + legal_line)


def render_lines(obs: dict[str, Any], *, compact: bool = False, blood_stock: bool = True,
                 legal: bool = True, derived: Derived | None = None) -> list[Line]:
    """The observation's lines in display order (see the module docstring for the options).
    ``derived`` (an episode's memo, default options only) reuses the lines of parts the views
    handed out before (derived.py): the same text, made once."""
    if derived is not None and (compact or not blood_stock):
        raise ValueError("derived lines are kept for the default options only")
    return [
        Line("clock", None, _clock(obs, compact)),
        *_situation(obs),
        *_entities(obs, compact, blood_stock, derived),
        *_resources(obs, legal, derived),
    ]


def lines_text(lines: Iterable[Line]) -> str:
    """The text of ``lines``: head lines as they are, entity lines indented by one space, the
    entities of an inline section (units) only inside their head line."""
    out = []
    for line in lines:
        if line.key is None:
            out.append(line.text)
        elif line.section not in INLINE_SECTIONS:
            out.append(" " + line.text)
    return "\n".join(out)
