"""Compact text rendering of an observation for LLM prompts.

Everything a dispatcher needs, one line per entity, no JSON punctuation. Works on the
observation dict alone, so a client can render what a server sent.
"""

from __future__ import annotations

from typing import Any

MAX_EVENTS = 12
_SHORT_STATE = {
    "idle": "idle",
    "preparing": "prep",
    "ready": "READY",
    "in_use": "busy",
    "out_of_service": "OOS",
}
_SHORT_SPEC = {"cardiology": "cardio", "neurology": "neuro", "trauma_surgery": "trauma", "obstetrics": "obst"}


def _vitals(v: dict[str, Any]) -> str:
    return f"HR{v['hr']} BP{v['sbp']} SpO2 {v['spo2']} GCS{v['gcs']} v{v['score']:.2f}"


def _patient_line(p: dict[str, Any]) -> str:
    parts = [f"{p['patient_id']} {p['label']} {p['priority']}"]
    if p["secondary"]:
        parts.append("(secondary)")
    parts.append(f"{p['status']} @{p['node']}")
    if p["ambulance_id"]:
        parts.append(f"unit {p['ambulance_id']}")
    if p["eta_min"] is not None:
        parts.append(f"eta {p['eta_min']}m")
    parts.append(_vitals(p["vitals"]))
    parts.append(f"dest {p['destination'] or '-'}")
    parts.append(f"blood {p['blood_type'] or '?'}")
    if p["waiting_for"]:
        parts.append("waiting: " + ",".join(p["waiting_for"]))
    parts.append(f"{p['minutes_since_call']}m since call")
    return " | ".join(parts)


def _unit_line(a: dict[str, Any]) -> str:
    s = f"{a['ambulance_id']}({a['kind']}{',MA' if a['mutual_aid'] else ''}) {a['status']} @{a['node']}"
    if a["destination"]:
        s += f"->{a['destination']} eta {a['eta_min']}m"
    if a["busy_min"] is not None:
        s += f" {a['busy_min']}m left"
    job = a["patient_id"] or a["call_id"]
    if job:
        s += f" [{job}]"
    return s + (" HELD(road closed)" if a["held"] else "")


def _hospital_line(h: dict[str, Any]) -> str:
    head = f"{h['hospital_id']} T{h['tier']} {h['name']} load {h['occupancy']}/{h['capacity']}"
    if h["crowded"]:
        head += " CROWDED"
    if h["diverted_until"] is not None:
        head += f" DIVERTED->t{h['diverted_until']}"
    ors = " ".join(
        f"{r['or_id']}:{_SHORT_STATE[r['state']]}"
        + (f"({r['procedure']})" if r["procedure"] and r["state"] in ("preparing", "ready") else "")
        + (f"[{r['patient_id']}]" if r["patient_id"] else "")
        + ("(elective)" if r["elective"] else "")
        for r in h["ors"]
    )
    specs = " ".join(
        f"{_SHORT_SPEC.get(k, k)}:{v['state']}" + (f"@t{v['until']}" if v["until"] is not None else "")
        for k, v in h["specialists"].items()
    )
    blood = " ".join(f"{t}:{n}" for t, n in h["blood"].items())
    parts = [head]
    if ors:
        parts.append("ORs " + ors)
    if specs:
        parts.append(specs)
    parts.append(f"ICU free {h['icu_free']}")
    parts.append(f"blood {blood or 'none'}")
    return " | ".join(parts)


def _legal_line(legal: dict[str, list[dict[str, list[Any]]]]) -> str:
    chunks = []
    for name, options in legal.items():
        if name in ("maintain_plan", "query_or_status"):
            chunks.append(name)
            continue
        if name in ("allocate_blood", "transfer_blood"):
            chunks.append(f"{name}({len(options)} options)")
            continue
        shown = [", ".join("/".join(map(str, v)) for v in opt.values()) for opt in options]
        chunks.append(f"{name}({'; '.join(s for s in shown if s)})")
    return " ".join(chunks)


def render_text(obs: dict[str, Any]) -> str:
    lines = [
        f"CodeRedEnv {obs['task_id']} seed {obs['seed']} | t={obs['clock_min']}/{obs['horizon_min']} min"
        f" | step {obs['step']}/{obs['max_steps']} | score {obs['score_preview']:.3f}"
        + (" | DONE" if obs["done"] else "")
    ]
    if obs["last_action_error"]:
        lines.append(f"LAST ACTION ERROR: {obs['last_action_error']}")
    events = obs["events"][-MAX_EVENTS:]
    if events:
        more = len(obs["events"]) - len(events)
        lines.append("EVENTS: " + (f"(+{more} earlier) " if more else "") + "; ".join(events))
    if obs["alerts"]:
        lines.append("ALERTS: " + "; ".join(obs["alerts"]))
    if obs["calls"]:
        lines.append("CALLS:")
        for c in obs["calls"]:
            tri = c["priority"] or "untriaged"
            unit = f" unit {c['ambulance_id']}" if c["ambulance_id"] else ""
            lines.append(
                f" {c['call_id']} {tri} {c['status']}{unit} @{c['node']} "
                f"waiting {c['waiting_min']}m: {c['report']}"
            )
    patients = [p for p in obs["patients"] if p["status"] not in ("treated", "released")]
    done_ids = [p["patient_id"] for p in obs["patients"] if p["status"] in ("treated", "released")]
    if patients or done_ids:
        lines.append("PATIENTS:" + (f" (done: {', '.join(done_ids)})" if done_ids else ""))
        lines.extend(" " + _patient_line(p) for p in patients)
    lines.append("UNITS: " + "; ".join(_unit_line(a) for a in obs["ambulances"]))
    lines.append("HOSPITALS:")
    lines.extend(" " + _hospital_line(h) for h in obs["hospitals"])
    roads = obs["roads"]
    road_bits = [f"closed {'-'.join(r['edge'])} until t{r['until']}" for r in roads["closed"]]
    road_bits += [
        f"slow x{r['factor']:g} {'-'.join(r['edge'])} until t{r['until']}" for r in roads["congested"]
    ]
    lines.append(
        "ROADS: " + ("; ".join(road_bits) or "all open") + (" | peak hour" if roads["peak_hour"] else "")
    )
    ma = obs["mutual_aid"]
    if ma["limit"]:
        pend = ", ".join(f"{r['unit_id']} at t{r['arrives_min']}" for r in ma["pending"])
        lines.append(
            f"MUTUAL AID: {ma['remaining']}/{ma['limit']} left" + (f"; arriving {pend}" if pend else "")
        )
    if obs["query_result"]:
        q = obs["query_result"]
        rooms = "; ".join(
            f"{r['or_id']} {r['state']}"
            + (f" {r['minutes_left']}m left" if r["minutes_left"] is not None else "")
            + (f" ({r['procedure']})" if r["procedure"] else "")
            for r in q["ors"]
        )
        lines.append(f"OR STATUS {q['hospital_id']}: {rooms or 'no operating rooms'}")
    if obs["legal_actions"]:
        lines.append("LEGAL (values in parameter order): " + _legal_line(obs["legal_actions"]))
    return "\n".join(lines)

