"use strict";
// CodeRedEnv dispatch console: play a live episode over the OpenEnv /ws socket, or replay one.
// No inline handlers and no eval: every listener is attached here (strict CSP friendly).
(function () {
  const $ = (id) => document.getElementById(id);
  const EMBEDDED = $("episode-data");
  const OFFLINE = EMBEDDED !== null;
  const STATUS_ABBR = { available: "AV", en_route: "ER", on_scene: "OS", transporting: "TR",
    at_hospital: "AH", returning: "RT" };
  const STATUS_FILL = { available: "#009e73", en_route: "#e69f00", on_scene: "#d55e00",
    transporting: "#cc79a7", at_hospital: "#0072b2", returning: "#6b7280" };
  const PRIORITY_FILL = { P1: "#d55e00", P2: "#e69f00", P3: "#c9bc1f", P4: "#009e73" };
  const OR_FILL = { idle: "#d1d5db", preparing: "#e69f00", ready: "#009e73", in_use: "#0072b2",
    out_of_service: "#111827" };
  const OR_LETTER = { idle: "I", preparing: "P", ready: "R", in_use: "U", out_of_service: "X" };
  const SPEC_FILL = { on_call: "#e5e7eb", paged: "#fde68a", present: "#009e73", unavailable: "#fee2e2" };
  const OFF_MAP = ["transporting", "transferring"];
  const FADED = ["treated", "released"];
  // Verbs and the no-op's name come from the server's action catalogue (GET /web/actions).
  let VERB = {};
  let NOOP = null;
  const HOSPITAL_FIRST = ["allocate_blood"];  // placed on the hospital card although it names a patient
  const MAX_BUTTONS = 8;
  const LIGHT_FILLS = ["en_route", "transporting"];  // statuses whose fill needs dark text

  let MAP = null;
  let svg = null;
  const unitNodes = new Map();
  const S = { mode: "play", ws: null, waiters: [], task: "task1", seed: 0, actions: [], obs: null,
    control: null, selected: null, log: [], busy: false, autoplay: false, queue: [], grade: null,
    suggestion: null, showSuggestion: false, adviceSeq: 0, epoch: 0, finalShown: false, error: null };
  const R = { frames: [], index: 0, timer: null, source: "" };

  // ---------------------------------------------------------------- DOM helpers
  function svgEl(tag, attrs, text) {
    const el = document.createElementNS(svg.namespaceURI, tag);
    for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
    if (text !== undefined) el.textContent = text;
    return el;
  }
  function el(tag, cls, text, testid) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = text;
    if (testid) node.dataset.testid = testid;
    return node;
  }
  // Fields the rows show themselves; any other field (added by a newer simulation) is listed
  // under the row, so the console shows what it gets without knowing it in advance.
  const SHOWN = new Set(["patient_id", "call_id", "ambulance_id", "label", "condition", "priority", "status",
    "node", "vitals", "ambulance_id", "destination", "hospital", "eta_min", "waiting_for", "blood_type",
    "report", "received_min", "waiting_min", "kind", "mutual_aid", "next_node", "busy_min", "held",
    "secondary", "blood_reserved", "minutes_since_call", "treatment_start_min", "patient_id"]);
  function extraFields(item) {
    const parts = Object.entries(item).filter(([k, v]) => !SHOWN.has(k) && v !== null && v !== undefined &&
      !(Array.isArray(v) && !v.length) && !(typeof v === "object" && !Array.isArray(v) && !Object.keys(v).length))
      .map(([k, v]) => nice(k) + ": " + (typeof v === "object" ? JSON.stringify(v) : String(v)));
    return parts.length ? el("div", "muted extra", parts.join(" · ")) : null;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function tooltip(node, text) { node.appendChild(svgEl("title", {}, text)); }
  function fmtMin(m) { return m === null || m === undefined ? "–" : m + " min"; }
  function edgeId(a, b) { return a < b ? a + "-" + b : b + "-" + a; }
  function nice(s) { return String(s).replace(/_/g, " "); }
  function fixed4(x) { return typeof x === "number" ? x.toFixed(4) : "–"; }

  async function postJSON(path, body) {
    const response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body) });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      const detail = typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail || data);
      throw new Error(path + " answered " + response.status + ": " + detail);
    }
    return data;
  }
  async function getJSON(path) {
    const response = await fetch(path);
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(path + " answered " + response.status + ": " + JSON.stringify(data.detail));
    return data;
  }

  // ---------------------------------------------------------------- map
  function setupMap(map) {
    MAP = map;
    const box = $("map-box");
    box.innerHTML = map.svg;  // server-rendered static SVG (roads, nodes); no script inside
    svg = box.querySelector("svg");
    svg.addEventListener("click", onMapClick);
  }
  function drawRoads(obs) {
    for (const group of svg.querySelectorAll("#layer-roads .road")) {
      group.classList.remove("closed", "congested");
      group.querySelector(".road-flag").textContent = "";
    }
    const mark = (road, cls, text) => {
      const group = $("road-" + edgeId(road.edge[0], road.edge[1]));
      if (!group) return;
      group.classList.add(cls);
      group.querySelector(".road-flag").textContent = text + " until t" + road.until;
    };
    (obs.roads.closed || []).forEach((road) => mark(road, "closed", "✕ closed"));
    (obs.roads.congested || []).forEach((road) => mark(road, "congested", "×" + Number(road.factor).toFixed(1)));
  }
  function hospitalMark(h) {
    const node = MAP.nodes[h.node];
    const offset = MAP.cards[h.hospital_id] || [30, -20];
    const diverted = h.diverted_until !== null && h.diverted_until !== undefined;
    const g = svgEl("g", { class: "hmark" + (diverted ? " diverted" : "") + (h.crowded ? " crowded" : ""),
      transform: "translate(" + (node.x + offset[0]) + "," + (node.y + offset[1]) + ")",
      "data-testid": "map-hospital-" + h.hospital_id });
    g.appendChild(svgEl("rect", { class: "frame", width: 182, height: 62, rx: 7 }));
    const flags = (diverted ? " DIVERTED" : "") + (h.crowded ? " ! crowded" : "");
    g.appendChild(svgEl("text", { class: "title", x: 8, y: 15 }, h.hospital_id + " tier " + h.tier + flags));
    g.appendChild(svgEl("text", { x: 8, y: 31 }, "ED " + h.occupancy + "/" + h.capacity + " · ICU free " + h.icu_free));
    (h.ors || []).forEach((room, i) => {
      const x = 8 + i * 17;
      g.appendChild(svgEl("rect", { x: x, y: 40, width: 14, height: 14, rx: 2, fill: OR_FILL[room.state] || "#d1d5db" }));
      const t = svgEl("text", { x: x + 7, y: 51, "text-anchor": "middle", "font-weight": 700,
        fill: room.state === "idle" || room.state === "preparing" ? "#1f2937" : "#fff" }, OR_LETTER[room.state] || "?");
      tooltip(t, room.or_id + ": " + nice(room.state) + (room.procedure ? " (" + room.procedure + ")" : ""));
      g.appendChild(t);
    });
    Object.entries(h.specialists || {}).forEach(([specialty, info], i) => {
      const x = 100 + i * 19;
      const box = svgEl("rect", { x: x, y: 40, width: 16, height: 14, rx: 3, fill: SPEC_FILL[info.state] || "#e5e7eb" });
      tooltip(box, nice(specialty) + ": " + nice(info.state));
      g.appendChild(box);
      g.appendChild(svgEl("text", { x: x + 8, y: 51, "text-anchor": "middle", "font-weight": 700,
        fill: info.state === "present" ? "#fff" : "#374151" }, specialty[0].toUpperCase()));
    });
    tooltip(g, h.name + ": " + h.occupancy + "/" + h.capacity + " ED beds");
    return g;
  }
  function drawHospitalMarks(obs) {
    const layer = $("layer-hospitals");
    clear(layer);
    obs.hospitals.forEach((h) => layer.appendChild(hospitalMark(h)));
  }
  function peopleByNode(obs) {
    const groups = {};
    const add = (node, item) => { (groups[node] = groups[node] || []).push(item); };
    obs.calls.forEach((c) => add(c.node, { kind: "call", id: c.call_id, data: c }));
    obs.patients.filter((p) => !OFF_MAP.includes(p.status)).forEach((p) =>
      add(p.node, { kind: "patient", id: p.patient_id, data: p }));
    return groups;
  }
  function personMarker(item, x, y, targets) {
    const d = item.data;
    const isTarget = targets.has(item.id);
    if (item.kind === "call") {
      const g = svgEl("g", { class: "person call " + d.status + (isTarget ? " target" : ""),
        "data-target": item.id, "data-testid": "map-call-" + item.id });
      g.appendChild(svgEl("rect", { x: x - 10, y: y - 10, width: 20, height: 20,
        transform: "rotate(45 " + x + " " + y + ")", fill: PRIORITY_FILL[d.priority] || "#9ca3af" }));
      g.appendChild(svgEl("text", { class: "person-label", x: x, y: y + 3.5 }, d.call_id));
      tooltip(g, d.call_id + " (" + (d.priority || "not triaged") + ", " + nice(d.status) + "): " + d.report);
      return g;
    }
    const g = svgEl("g", { class: "person patient " + d.status + (FADED.includes(d.status) ? " faded" : "") +
      (isTarget ? " target" : ""), "data-target": item.id, "data-testid": "map-patient-" + item.id });
    const fill = d.status === "deceased" ? "#111827" : PRIORITY_FILL[d.priority] || "#9ca3af";
    g.appendChild(svgEl("circle", { cx: x, cy: y, r: 12, fill: fill }));
    g.appendChild(svgEl("text", { class: "person-label", x: x, y: y + 3.5 }, d.patient_id));
    tooltip(g, d.patient_id + " " + d.label + " (" + d.priority + "): " + nice(d.status));
    return g;
  }
  function drawPeople(obs, targets) {
    const layer = $("layer-people");
    clear(layer);
    for (const [nodeId, items] of Object.entries(peopleByNode(obs))) {
      const node = MAP.nodes[nodeId];
      if (!node) continue;
      items.forEach((item, i) => {
        const row = Math.floor(i / 6);
        const inRow = Math.min(6, items.length - row * 6);
        const x = node.x + ((i % 6) - (inRow - 1) / 2) * 26;
        const y = node.y - 40 - row * 26;
        layer.appendChild(personMarker(item, x, y, targets));
      });
    }
  }
  function unitPositions(obs) {
    const slots = {};
    const out = {};
    for (const a of obs.ambulances) {
      const key = a.next_node ? edgeId(a.node, a.next_node) + ">" + a.node : a.node;
      const k = (slots[key] = (slots[key] || 0) + 1) - 1;
      const from = MAP.nodes[a.node];
      if (!from) continue;
      const to = a.next_node ? MAP.nodes[a.next_node] : null;
      if (!to) {
        out[a.ambulance_id] = { x: from.x + 52 + Math.floor(k / 2) * 62, y: from.y - 11 + (k % 2) * 22 };
        continue;
      }
      const dx = to.x - from.x, dy = to.y - from.y;
      const len = Math.hypot(dx, dy) || 1;
      const shift = 13 + k * 22;
      out[a.ambulance_id] = { x: from.x + 0.42 * dx - (dy / len) * shift, y: from.y + 0.42 * dy + (dx / len) * shift };
    }
    return out;
  }
  function unitText(a) {
    let text = a.ambulance_id + " (" + a.kind + (a.mutual_aid ? ", mutual aid" : "") + "): " + nice(a.status) +
      " at " + a.node;
    if (a.next_node) text += ", heading to " + a.next_node;
    if (a.destination) text += ", destination " + a.destination + " in " + fmtMin(a.eta_min);
    if (a.patient_id) text += ", patient " + a.patient_id;
    if (a.call_id) text += ", call " + a.call_id;
    if (a.held) text += ", HELD (no open route)";
    return text;
  }
  function drawUnits(obs, dispatchable) {
    const positions = unitPositions(obs);
    const seen = new Set();
    for (const a of obs.ambulances) {
      let g = unitNodes.get(a.ambulance_id);
      if (!g) {
        g = svgEl("g", { class: "unit", "data-ambulance": a.ambulance_id, "data-testid": "map-unit-" + a.ambulance_id });
        g.appendChild(svgEl("rect", { x: -29, y: -10, width: 58, height: 20, rx: 4 }));
        g.appendChild(svgEl("text", { class: "unit-label", x: 0, y: 4 }));
        g.appendChild(svgEl("title"));
        unitNodes.set(a.ambulance_id, g);
        $("layer-units").appendChild(g);
      }
      const pos = positions[a.ambulance_id] || { x: 0, y: 0 };
      g.style.transform = "translate(" + pos.x + "px," + pos.y + "px)";
      const live = S.mode === "play" && !OFFLINE;
      g.setAttribute("class", "unit " + a.status + (a.mutual_aid ? " mutual" : "") +
        (S.selected === a.ambulance_id ? " selected" : "") + (live && !dispatchable.has(a.ambulance_id) ? " dim" : ""));
      g.querySelector("rect").setAttribute("fill", STATUS_FILL[a.status] || "#6b7280");
      const label = g.querySelector("text");
      label.textContent = a.ambulance_id + " " + (STATUS_ABBR[a.status] || "?");
      label.classList.toggle("dark", LIGHT_FILLS.includes(a.status));
      g.querySelector("title").textContent = unitText(a);
      seen.add(a.ambulance_id);
    }
    for (const [id, g] of unitNodes) if (!seen.has(id)) { g.remove(); unitNodes.delete(id); }
  }

  // ---------------------------------------------------------------- legal actions
  function legal() { return (S.mode === "play" && S.obs && !S.obs.done && S.obs.legal_actions) || {}; }
  function matches(option, fixedParams) {
    return Object.entries(fixedParams).every(([k, v]) => Array.isArray(option[k]) && option[k].includes(v));
  }
  function placement(type, options) {
    const params = new Set(options.flatMap((o) => Object.keys(o)));
    if (type === NOOP) return "advance";
    if (params.has("call_id")) return "call";
    if (params.has("patient_id") && !HOSPITAL_FIRST.includes(type)) return "patient";
    if (params.has("hospital_id") || params.has("from_hospital_id")) return "hospital";
    return "other";
  }
  function typesFor(kind) {
    return Object.entries(legal()).filter(([type, options]) => placement(type, options) === kind);
  }
  // Units that some legal action would send to target (a patient or call id).
  function dispatchPairs() {
    const pairs = [];
    for (const [type, options] of Object.entries(legal())) {
      for (const o of options) {
        if (!o.ambulance_id) continue;
        const targets = o.patient_id || o.call_id || [];
        const key = o.patient_id ? "patient_id" : "call_id";
        o.ambulance_id.forEach((unit) => targets.forEach((t) => pairs.push({ type, unit, target: t, key })));
      }
    }
    return pairs;
  }
  function actionForm(type, options, fixedParams, key) {
    const chosen = options.filter((o) => matches(o, fixedParams));
    if (!chosen.length) return null;
    const wrap = el("div", "form", null, "act-" + type);
    wrap.dataset.control = key + ":" + type;
    wrap.appendChild(el("span", "verb", VERB[type] || nice(type)));
    chosen.forEach((option) => {
      const free = Object.keys(option).filter((p) => !(p in fixedParams));
      const base = Object.assign({ action_type: type }, fixedParams);
      if (free.length === 0) {
        const b = el("button", "small", VERB[type] || nice(type), "act-" + type + "-go");
        b.addEventListener("click", () => send(base, wrap.dataset.control));
        wrap.appendChild(b);
      } else if (free.length === 1 && option[free[0]].length <= MAX_BUTTONS) {
        option[free[0]].forEach((value) => {
          const b = el("button", "small", String(value), "act-" + type + "-" + value);
          b.title = nice(type) + " " + free[0] + "=" + value;
          b.addEventListener("click", () => send(Object.assign({}, base, { [free[0]]: value }), wrap.dataset.control));
          wrap.appendChild(b);
        });
      } else {
        const selects = free.map((p) => {
          const s = el("select", null, null, "param-" + p);
          s.setAttribute("aria-label", p);
          option[p].forEach((v) => { const o = el("option", null, String(v)); o.value = JSON.stringify(v); s.appendChild(o); });
          wrap.appendChild(s);
          return [p, s];
        });
        const b = el("button", "small", "go", "act-" + type + "-go");
        b.addEventListener("click", () => {
          const action = Object.assign({}, base);
          selects.forEach(([p, s]) => { action[p] = JSON.parse(s.value); });
          send(action, wrap.dataset.control);
        });
        wrap.appendChild(b);
      }
    });
    return wrap;
  }
  function formsFor(kind, fixedParams, key, parent) {
    for (const [type, options] of typesFor(kind)) {
      let params = fixedParams;
      if (type === "transfer_blood" && "hospital_id" in fixedParams) params = { from_hospital_id: fixedParams.hospital_id };
      if (options.some((o) => o.ambulance_id)) continue;  // dispatching has its own form (dispatchForm)
      const form = actionForm(type, options, params, key);
      if (form) parent.appendChild(form);
    }
  }
  function dispatchForm(targetId, key, parent) {
    const pairs = dispatchPairs().filter((p) => p.target === targetId);
    if (!pairs.length) return;
    const types = [...new Set(pairs.map((p) => p.type))];
    types.forEach((type) => {
      const units = pairs.filter((p) => p.type === type).map((p) => p.unit);
      const idKey = pairs[0].key;
      const form = actionForm(type, [{ ambulance_id: units, [idKey]: [targetId] }], { [idKey]: targetId }, key);
      if (form) parent.appendChild(form);
    });
  }

  // ---------------------------------------------------------------- panels
  function fillList(list, items, render, emptyText) {
    clear(list);
    if (!items.length) { list.appendChild(el("li", "empty", emptyText)); return; }
    items.forEach((item) => list.appendChild(render(item)));
  }
  function priorityTag(priority, deceased) {
    return deceased ? el("span", "tag deceased", "✝ " + (priority || ""))
      : el("span", "tag pr-" + (priority || "none"), priority || "?");
  }
  function callRow(c, targets) {
    const li = el("li", targets.has(c.call_id) ? "target" : "", null, "call-" + c.call_id);
    li.dataset.target = c.call_id;
    const head = el("div", "head");
    head.append(el("span", "id", c.call_id), priorityTag(c.priority));
    const detail = el("span", "detail", c.report);
    detail.appendChild(el("div", "muted", nice(c.status) + (c.ambulance_id ? " · " + c.ambulance_id + " en route" : "") +
      " · waiting " + c.waiting_min + " min"));
    head.appendChild(detail);
    li.appendChild(head);
    const extraCall = extraFields(c);
    if (extraCall) li.appendChild(extraCall);
    formsFor("call", { call_id: c.call_id }, "call:" + c.call_id, li);
    dispatchForm(c.call_id, "call:" + c.call_id, li);
    return li;
  }
  function patientRow(p, targets) {
    const li = el("li", targets.has(p.patient_id) ? "target" : "", null, "patient-" + p.patient_id);
    li.dataset.target = p.patient_id;
    const head = el("div", "head");
    head.append(el("span", "id", p.patient_id), priorityTag(p.priority, p.status === "deceased"));
    const detail = el("span", "detail", p.label);
    const bar = el("span", "vitals");
    const fill = el("span");
    const score = p.vitals ? p.vitals.score : 0;
    fill.style.width = 100 * score + "%";
    fill.style.background = score > 0.66 ? "#009e73" : score > 0.33 ? "#e69f00" : "#d55e00";
    bar.appendChild(fill);
    bar.title = "vitals score " + score;
    detail.appendChild(bar);
    detail.appendChild(el("span", "muted", " vitals " + Number(score).toFixed(2)));
    let where = nice(p.status);
    if (p.ambulance_id && !FADED.includes(p.status)) where += " · " + p.ambulance_id;
    if (p.hospital) where += " · at " + p.hospital; else if (p.destination) where += " · to " + p.destination;
    if (p.eta_min !== null && p.eta_min !== undefined) where += " · ETA " + fmtMin(p.eta_min);
    if (p.blood_type) where += " · blood " + p.blood_type;
    if (p.waiting_for && p.waiting_for.length) where += " · waiting for " + p.waiting_for.join(", ");
    detail.appendChild(el("div", "muted", where, "patient-status-" + p.patient_id));
    head.appendChild(detail);
    li.appendChild(head);
    const extraPatient = extraFields(p);
    if (extraPatient) li.appendChild(extraPatient);
    dispatchForm(p.patient_id, "patient:" + p.patient_id, li);
    formsFor("patient", { patient_id: p.patient_id }, "patient:" + p.patient_id, li);
    return li;
  }
  function unitRow(a, dispatchable) {
    const li = el("li", S.selected === a.ambulance_id ? "selected" : "", null, "unit-" + a.ambulance_id);
    const head = el("div", "head");
    const chip = el("span", "chip st-" + a.status, STATUS_ABBR[a.status] || "?");
    head.append(el("span", "id", a.ambulance_id), chip);
    const detail = el("span", "detail", a.kind + (a.mutual_aid ? " · mutual aid" : "") + " · " + nice(a.status) +
      " at " + a.node + (a.destination ? " → " + a.destination + " in " + fmtMin(a.eta_min) : "") + (a.held ? " · HELD" : ""));
    head.appendChild(detail);
    if (S.mode === "play" && !OFFLINE && dispatchable.has(a.ambulance_id)) {
      const b = el("button", "small" + (S.selected === a.ambulance_id ? " active" : ""), "select", "select-" + a.ambulance_id);
      b.addEventListener("click", () => selectUnit(a.ambulance_id));
      head.appendChild(b);
    }
    li.appendChild(head);
    const extraUnit = extraFields(a);
    if (extraUnit) li.appendChild(extraUnit);
    return li;
  }
  function hospitalCard(h) {
    const diverted = h.diverted_until !== null && h.diverted_until !== undefined;
    const card = el("div", "hospital" + (diverted ? " diverted" : "") + (h.crowded ? " crowded" : ""), null,
      "hospital-" + h.hospital_id);
    card.appendChild(el("h3", null, h.hospital_id + " · " + h.name + " · tier " + h.tier +
      (diverted ? " · DIVERTED until t" + h.diverted_until : "") + (h.crowded ? " · ! crowded" : "")));
    const ors = (h.ors || []).map((r) => r.or_id + " " + (OR_LETTER[r.state] || "?") + " " + nice(r.state) +
      (r.procedure ? " (" + r.procedure + ")" : "")).join(", ");
    const specialists = Object.entries(h.specialists || {}).map(([s, i]) => nice(s) + " " + nice(i.state)).join(", ");
    const blood = Object.entries(h.blood || {}).map(([t, n]) => t + ":" + n).join(" ");
    card.appendChild(el("div", "facts", "ED " + h.occupancy + "/" + h.capacity + " · ICU free " + h.icu_free));
    card.appendChild(el("div", "facts", "ORs: " + (ors || "none")));
    card.appendChild(el("div", "facts", "specialists: " + (specialists || "none")));
    card.appendChild(el("div", "facts", "blood: " + (blood || "none"), "blood-" + h.hospital_id));
    formsFor("hospital", { hospital_id: h.hospital_id }, "hospital:" + h.hospital_id, card);
    return card;
  }
  function drawStatus(obs, reward) {
    $("clock").textContent = "t+" + obs.clock_min + " min";
    $("step").textContent = obs.step + " / " + obs.max_steps;
    $("score").textContent = fixed4(obs.score_preview);
    $("clock-bar").style.width = Math.min(100, (100 * obs.clock_min) / obs.horizon_min) + "%";
    const source = S.mode === "replay" ? " · " + R.source + " · frame " + R.index + " of " + (R.frames.length - 1) : "";
    $("status-line").textContent = obs.task_id + " seed " + obs.seed + " · horizon t+" + obs.horizon_min +
      " min · phase " + obs.phase + (obs.roads.peak_hour ? " · peak hour" : "") + source;
    $("done-banner").hidden = !obs.done;
    $("done-banner").textContent = "Episode over: final score " + fixed4(obs.score_preview);
    const rewardBox = $("reward");
    rewardBox.className = reward > 1e-9 ? "reward-pos" : reward < -1e-9 ? "reward-neg" : "muted";
    rewardBox.textContent = reward === null || reward === undefined ? "" :
      "reward " + (reward >= 0 ? "+" : "") + reward.toFixed(4);
  }
  function drawComponents(grade) {
    const table = $("components");
    clear(table);
    if (!grade || !grade.components) return;
    for (const [name, value] of Object.entries(grade.components)) {
      const tr = el("tr", null, null, "component-" + name);
      const weight = grade.weights ? grade.weights[name] : null;
      tr.appendChild(el("td", null, nice(name)));
      const barCell = el("td");
      const bar = el("span", "cbar");
      bar.style.width = value === null ? "0" : Math.round(60 * value) + "px";
      barCell.appendChild(bar);
      tr.appendChild(barCell);
      tr.appendChild(el("td", "num", value === null ? "n/a" : Number(value).toFixed(3)));
      tr.appendChild(el("td", "num muted", weight === null || weight === undefined ? "" : "×" + Number(weight).toFixed(2)));
      table.appendChild(tr);
    }
  }
  function drawAction(action, error) {
    const box = $("action");
    clear(box);
    if (action === null || action === undefined) {
      box.appendChild(el("span", "muted", "No action yet."));
    } else {
      box.appendChild(el("div", "action-type", action.action_type || String(action)));
      for (const [k, v] of Object.entries(action)) if (k !== "action_type") box.appendChild(el("span", "param", k + " = " + v));
    }
    $("error").hidden = !error;
    $("error").textContent = error ? error : "";
  }
  function drawLog(entries) {
    const list = $("events");
    clear(list);
    if (!entries.length) { list.appendChild(el("li", "empty", "nothing yet")); return; }
    entries.forEach((e) => {
      const li = el("li");
      li.append(el("span", "when", "t+" + e.t), document.createTextNode(e.text));
      list.appendChild(li);
    });
    list.scrollTop = list.scrollHeight;
  }
  function drawOther(obs) {
    const aid = obs.mutual_aid || { used: 0, limit: 0, pending: [] };
    const pending = (aid.pending || []).map((r) => r.unit_id + " arrives t" + r.arrives_min).join(", ");
    $("mutual-aid").textContent = aid.used + " of " + aid.limit + " mutual-aid units requested" +
      (pending ? " · pending: " + pending : "");
    const box = $("other-actions");
    clear(box);
    formsFor("other", {}, "other", box);
  }

  function render(obs, action, reward, error, events) {
    const pairs = S.mode === "play" ? dispatchPairs() : [];
    const dispatchable = new Set(pairs.map((p) => p.unit));
    const targets = new Set(pairs.filter((p) => p.unit === S.selected).map((p) => p.target));
    drawRoads(obs);
    drawHospitalMarks(obs);
    drawPeople(obs, targets);
    drawUnits(obs, dispatchable);
    drawStatus(obs, reward);
    drawAction(action, error);
    drawLog(events);
    fillList($("alerts"), obs.alerts || [], (a) => el("li", "", a), "no active alerts");
    fillList($("calls"), obs.calls, (c) => callRow(c, targets), obs.phase === 2 ? "no open calls" : "phase 1: no call queue");
    fillList($("patients"), obs.patients, (p) => patientRow(p, targets), "no patient known yet");
    fillList($("units"), obs.ambulances, (a) => unitRow(a, dispatchable), "no units");
    const hospitals = $("hospitals");
    clear(hospitals);
    obs.hospitals.forEach((h) => hospitals.appendChild(hospitalCard(h)));
    drawOther(obs);
    $("advance").disabled = S.mode !== "play" || !(NOOP in legal()) || S.busy;
    if (error && S.control) showControlError(S.control, error);
  }
  function showControlError(key, message) {
    const host = document.querySelector('[data-control="' + CSS.escape(key) + '"]') ||
      document.querySelector('[data-control="' + CSS.escape(key.split(":").slice(0, 2).join(":")) + '"]');
    const box = el("div", "error", message, "control-error");
    if (host) host.after(box); else $("error").after(box);
  }

  // ---------------------------------------------------------------- live play
  function wsUrl() { return (location.protocol === "https:" ? "wss:" : "ws:") + "//" + location.host + "/ws"; }
  function setConn(text) { $("conn").textContent = text; }
  function connect() {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(wsUrl());
      ws.addEventListener("open", () => { S.ws = ws; setConn("connected"); resolve(ws); });
      ws.addEventListener("error", () => reject(new Error("cannot open the /ws session")));
      ws.addEventListener("message", (event) => {
        const waiter = S.waiters.shift();
        if (waiter) waiter.resolve(JSON.parse(event.data));
      });
      ws.addEventListener("close", () => {
        if (S.ws === ws) S.ws = null;
        setConn("session closed (it resumes on your next action)");
        S.waiters.splice(0).forEach((w) => w.reject(new Error("the session closed")));
      });
    });
  }
  function wsSend(message) {
    return new Promise((resolve, reject) => {
      S.waiters.push({ resolve, reject });
      S.ws.send(JSON.stringify(message));
    });
  }
  // A closed session (idle timeout) is re-created by replaying the actions: episodes are deterministic.
  async function wsCall(message) {
    if (!S.ws) {
      await connect();
      if (message.type === "step" && S.obs) {
        await wsSend({ type: "reset", data: { task_id: S.task, seed: S.seed } });
        for (const action of S.actions) await wsSend({ type: "step", data: action });
      }
    }
    return wsSend(message);
  }
  function setBusy(busy) {
    S.busy = busy;
    document.body.classList.toggle("busy", busy);
    $("advance").disabled = busy || !S.obs || S.obs.done;
  }
  async function newEpisode() {
    stopAutoplay();
    const seed = Number($("seed").value);
    if (!Number.isInteger(seed) || seed < 0 || seed > 4294967295) {
      showGlobalError("seed must be an integer in [0, 4294967295]");
      return;
    }
    S.task = $("task").value;
    S.seed = seed;
    S.actions = [];
    S.log = [];
    S.selected = null;
    S.grade = null;
    S.suggestion = null;
    S.showSuggestion = false;
    S.finalShown = false;
    S.epoch += 1;
    $("final-card").hidden = true;
    $("suggestion-card").hidden = true;
    setBusy(true);
    try {
      const reply = await wsCall({ type: "reset", data: { task_id: S.task, seed: S.seed } });
      if (reply.type === "error") throw new Error(reply.data.message || reply.data.code);
      S.control = null;
      accept(reply.data, null);
    } catch (err) {
      showGlobalError(String(err.message || err));
    } finally {
      setBusy(false);
      if (S.obs) render(S.obs, null, null, null, S.log);
    }
  }
  function showGlobalError(message) { $("error").hidden = false; $("error").textContent = message; }
  function accept(data, action) {
    const obs = data.observation;
    obs.done = Boolean(data.done || obs.done);
    S.obs = obs;
    (obs.events || []).forEach((text) => S.log.push({ t: obs.clock_min, text }));
    if (S.log.length > 400) S.log.splice(0, S.log.length - 400);
    S.lastAction = action;
    S.lastReward = data.reward;
    if (S.selected && !dispatchPairs().some((p) => p.unit === S.selected)) S.selected = null;
    render(obs, action, data.reward, obs.last_action_error, S.log);
    requestAdvice();
    if (obs.done) { stopAutoplay(); showFinal(); }
  }
  async function send(action, controlKey) {
    if (S.busy || !S.obs || S.obs.done) return false;
    if (controlKey !== "autoplay") stopAutoplay();
    S.control = controlKey;
    S.selected = null;
    setBusy(true);
    try {
      const reply = await wsCall({ type: "step", data: action });
      if (reply.type === "error") {
        // Schema errors: the server did not step, nothing changed.
        const details = (reply.data.errors || []).map((e) => e.msg || JSON.stringify(e)).join("; ");
        const message = (reply.data.message || reply.data.code) + (details ? ": " + details : "");
        render(S.obs, action, null, null, S.log);
        showGlobalError(message);
        showControlError(controlKey, message);
        return false;
      }
      S.actions.push(action);
      accept(reply.data, action);
      return true;
    } catch (err) {
      showGlobalError(String(err.message || err));
      return false;
    } finally {
      setBusy(false);
      $("advance").disabled = !S.obs || S.obs.done;
    }
  }
  async function requestAdvice() {
    const seq = ++S.adviceSeq;
    try {
      const answer = await postJSON("/web/advice", { task_id: S.task, seed: S.seed, actions: S.actions });
      if (seq !== S.adviceSeq || S.mode !== "play") return;
      S.grade = answer.grade;
      S.suggestion = answer.suggestion;
      drawComponents(answer.grade);
      drawSuggestion();
    } catch (err) {
      if (seq === S.adviceSeq) $("status-line").textContent = String(err.message || err);
    }
  }
  function drawSuggestion() {
    const card = $("suggestion-card");
    card.hidden = !S.showSuggestion;
    const box = $("suggestion");
    clear(box);
    if (!S.suggestion) { box.appendChild(el("span", "muted", "The episode is over.")); $("apply-suggestion").disabled = true; return; }
    const action = S.suggestion.action;
    box.appendChild(el("div", "action-type", action.action_type, "suggested-action"));
    for (const [k, v] of Object.entries(action)) if (k !== "action_type") box.appendChild(el("span", "param", k + " = " + v));
    box.appendChild(el("div", "suggest-reason", S.suggestion.reason, "suggestion-reason"));
    $("apply-suggestion").disabled = false;
  }
  function suggest() { S.showSuggestion = true; drawSuggestion(); }
  function applySuggestion() { if (S.suggestion) send(S.suggestion.action, "suggestion"); }
  function selectUnit(id) {
    S.selected = S.selected === id ? null : id;
    $("selection").textContent = S.selected ? S.selected + " selected: click a highlighted patient or call (or Esc)."
      : "Click a unit (or press 1–9), then a patient or call to dispatch it.";
    if (S.obs) render(S.obs, S.lastAction, S.lastReward, null, S.log);
  }
  function dispatchTo(targetId) {
    const pair = dispatchPairs().find((p) => p.unit === S.selected && p.target === targetId);
    if (!pair) return;
    send({ action_type: pair.type, ambulance_id: pair.unit, [pair.key]: targetId }, "map");
  }
  function onMapClick(event) {
    if (S.mode !== "play" || OFFLINE) return;
    const unit = event.target.closest("[data-ambulance]");
    if (unit) {
      const id = unit.dataset.ambulance;
      if (dispatchPairs().some((p) => p.unit === id)) selectUnit(id);
      else $("selection").textContent = id + " cannot be dispatched now (no legal dispatch for it).";
      return;
    }
    const target = event.target.closest("[data-target]");
    if (target && S.selected) dispatchTo(target.dataset.target);
  }
  async function toggleAutoplay() {
    if (S.autoplay) { stopAutoplay(); return; }
    if (!S.obs || S.obs.done || S.busy) return;
    S.autoplay = true;
    const epoch = S.epoch;
    $("autoplay").classList.add("active");
    $("autoplay").textContent = "Stop autoplay";
    // One action at a time, each asked for on the current state: no future is computed ahead.
    try {
      while (S.autoplay && epoch === S.epoch && S.obs && !S.obs.done) {
        const answer = await postJSON("/web/advice", { task_id: S.task, seed: S.seed, actions: S.actions,
          agent: $("autoplay-agent").value });
        if (!answer.suggestion || !S.autoplay || epoch !== S.epoch) break;
        if (!(await send(answer.suggestion.action, "autoplay"))) break;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    } catch (err) {
      showGlobalError(String(err.message || err));
    }
    stopAutoplay();
  }
  function stopAutoplay() {
    S.autoplay = false;
    $("autoplay").classList.remove("active");
    $("autoplay").textContent = "Autoplay";
  }
  async function showFinal() {
    if (S.finalShown) return;
    S.finalShown = true;
    const epoch = S.epoch;
    try {
      const mine = await postJSON("/grader", { task_id: S.task, seed: S.seed, actions: S.actions });
      const heuristic = await postJSON("/grader", { task_id: S.task, seed: S.seed, agent: "heuristic" });
      if (epoch !== S.epoch) return;
      drawFinal(mine, heuristic);
    } catch (err) {
      showGlobalError(String(err.message || err));
    }
  }
  function row(cells, header) {
    const tr = el("tr");
    cells.forEach(([text, cls]) => tr.appendChild(el(header ? "th" : "td", cls || "", text)));
    return tr;
  }
  function drawFinal(mine, heuristic) {
    const box = $("final");
    clear(box);
    const versus = el("div", "versus");
    versus.append(document.createTextNode("Your score "), el("b", null, fixed4(mine.score), "final-score"),
      document.createTextNode(" · heuristic on the same seed "), el("b", null, fixed4(heuristic.score), "heuristic-score"));
    box.appendChild(versus);
    const comps = el("table", null, null, "final-components");
    comps.appendChild(row([["component"], ["weight", "num"], ["you", "num"], ["heuristic", "num"]], true));
    for (const [name, value] of Object.entries(mine.components || {})) {
      const theirs = (heuristic.components || {})[name];
      const show = (v) => (v === null || v === undefined ? "n/a" : Number(v).toFixed(3));
      comps.appendChild(row([[nice(name)], [show((mine.weights || {})[name]), "num"], [show(value), "num"], [show(theirs), "num"]]));
    }
    box.appendChild(comps);
    const penalties = Object.entries(mine.penalties || {});
    if (penalties.length) box.appendChild(el("div", "muted", "penalties: " + penalties.map(([k, v]) => k + " " + v).join(", ")));
    const patients = el("table", null, null, "final-patients");
    patients.appendChild(row([["patient"], ["condition"], ["pri"], ["outcome"], ["delay", "num"], ["target", "num"], ["time", "num"]], true));
    (mine.patients || []).forEach((p) => {
      patients.appendChild(row([[p.patient_id], [nice(p.condition)], [p.priority], [nice(p.status) + (p.hospital ? " @" + p.hospital : "")],
        [p.delay_min === null ? "–" : String(p.delay_min), "num"], [String(p.target_min), "num"],
        [Number(p.time_score).toFixed(2), "num"]]));
    });
    box.appendChild(patients);
    $("final-card").hidden = false;
  }

  // ---------------------------------------------------------------- replay
  function showFrame(i) {
    if (!R.frames.length) return;
    R.index = Math.max(0, Math.min(R.frames.length - 1, i));
    const frame = R.frames[R.index];
    const events = (frame.observation.events || []).map((text) => ({ t: frame.observation.clock_min, text }));
    render(frame.observation, frame.action, frame.reward, frame.error, events);
    $("slider").max = R.frames.length - 1;
    $("slider").value = R.index;
    $("first").disabled = $("prev").disabled = R.index === 0;
    $("next").disabled = $("last").disabled = R.index === R.frames.length - 1;
    if (R.index === R.frames.length - 1) pause();
  }
  function loadFrames(frames, source) {
    pause();
    R.frames = frames;
    R.source = source;
    $("replay-error").hidden = true;
    drawComponents(null);
    showFrame(0);
  }
  function play() {
    if (R.index >= R.frames.length - 1) showFrame(0);
    pause();
    R.timer = setInterval(() => showFrame(R.index + 1), 1000 / Number($("speed").value));
    $("play").textContent = "Pause";
  }
  function pause() {
    if (R.timer !== null) clearInterval(R.timer);
    R.timer = null;
    $("play").textContent = "Play";
  }
  function replayError(message) { $("replay-error").hidden = false; $("replay-error").textContent = message; }
  function parseTrajectory(text) {
    const lines = text.split(/\r?\n/).filter((line) => line.trim());
    if (!lines.length) throw new Error("the file is empty");
    const records = lines.map((line, n) => {
      try { return JSON.parse(line); } catch (err) { throw new Error("line " + (n + 1) + " is not JSON"); }
    });
    const header = records[0];
    if (header.type !== "header" || header.format !== "codered-trajectory/1") {
      throw new Error("the first line must be a codered-trajectory/1 header (the file inference.py --trajectory writes)");
    }
    const steps = records.filter((r) => r.type === "step");
    const end = records.find((r) => r.type === "end");
    return { header, actions: steps.map((r) => r.action), end };
  }
  async function loadTrajectory(file) {
    try {
      const trajectory = parseTrajectory(await file.text());
      const answer = await postJSON("/web/frames", { task_id: trajectory.header.task_id,
        seed: trajectory.header.seed, actions: trajectory.actions });
      const recorded = trajectory.end && typeof trajectory.end.score === "number" ? trajectory.end.score : null;
      loadFrames(answer.frames, "trajectory " + file.name + " (" + trajectory.header.agent + ")" +
        (recorded === null ? "" : ", recorded score " + recorded.toFixed(4)));
    } catch (err) {
      replayError(String(err.message || err));
    }
  }
  async function loadStored(taskId, seed, agent) {
    try {
      const answer = await getJSON("/web/episode?task_id=" + encodeURIComponent(taskId) + "&seed=" +
        encodeURIComponent(seed) + "&agent=" + encodeURIComponent(agent));
      loadFrames(answer.frames, agent + " agent");
    } catch (err) {
      replayError(String(err.message || err));
    }
  }
  async function replayMine() {
    if (!S.obs) { replayError("play an episode first"); return; }
    try {
      const answer = await postJSON("/web/frames", { task_id: S.task, seed: S.seed, actions: S.actions });
      loadFrames(answer.frames, "your episode");
    } catch (err) {
      replayError(String(err.message || err));
    }
  }

  // ---------------------------------------------------------------- modes and keys
  function setMode(mode) {
    S.mode = mode;
    $("mode-play").setAttribute("aria-pressed", String(mode === "play"));
    $("mode-replay").setAttribute("aria-pressed", String(mode === "replay"));
    $("play-bar").hidden = mode !== "play";
    $("replay-bar").hidden = mode !== "replay";
    $("selection").hidden = mode !== "play";
    $("other-card").hidden = false;
    $("final-card").hidden = mode !== "play" || !S.finalShown;
    $("suggestion-card").hidden = mode !== "play" || !S.showSuggestion;
    if (mode === "play") {
      pause();
      if (S.obs) { render(S.obs, S.lastAction, S.lastReward, null, S.log); drawComponents(S.grade); }
    } else {
      stopAutoplay();
      S.selected = null;
      if (R.frames.length) showFrame(R.index);
      else if (S.obs) replayMine();
      else loadStored($("task").value, $("seed").value || 0, $("stored-agent").value);
    }
  }
  function onKey(event) {
    const tag = event.target.tagName;
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key;
    const play = S.mode === "play" && !OFFLINE;
    const actions = play ? {
      " ": () => $("advance").click(), s: suggest, a: applySuggestion, p: toggleAutoplay, n: newEpisode,
      Escape: () => { if (S.selected) selectUnit(S.selected); },
    } : {
      ArrowRight: () => $("next").click(), ArrowLeft: () => $("prev").click(), " ": () => $("play").click(),
      Home: () => $("first").click(), End: () => $("last").click(),
    };
    if (!OFFLINE) actions.r = () => setMode(S.mode === "play" ? "replay" : "play");
    if (play && /^[1-9]$/.test(key) && S.obs) {
      const unit = S.obs.ambulances[Number(key) - 1];
      if (unit && dispatchPairs().some((p) => p.unit === unit.ambulance_id)) selectUnit(unit.ambulance_id);
      event.preventDefault();
      return;
    }
    const handler = actions[key.length === 1 ? key.toLowerCase() : key];
    if (handler) { event.preventDefault(); handler(); }
  }
  function wire() {
    $("mode-play").addEventListener("click", () => setMode("play"));
    $("mode-replay").addEventListener("click", () => setMode("replay"));
    $("reset").addEventListener("click", newEpisode);
    $("advance").addEventListener("click", () => send({ action_type: NOOP }, "advance"));
    $("suggest").addEventListener("click", suggest);
    $("apply-suggestion").addEventListener("click", applySuggestion);
    $("autoplay").addEventListener("click", toggleAutoplay);
    $("custom-send").addEventListener("click", () => {
      let action;
      try { action = JSON.parse($("custom-action").value); } catch (err) {
        showControlError("custom", "not JSON: " + err.message);
        return;
      }
      send(action, "custom");
    });
    $("slider").addEventListener("input", (e) => { pause(); showFrame(Number(e.target.value)); });
    $("first").addEventListener("click", () => { pause(); showFrame(0); });
    $("prev").addEventListener("click", () => { pause(); showFrame(R.index - 1); });
    $("next").addEventListener("click", () => { pause(); showFrame(R.index + 1); });
    $("last").addEventListener("click", () => { pause(); showFrame(R.frames.length - 1); });
    $("play").addEventListener("click", () => (R.timer === null ? play() : pause()));
    $("speed").addEventListener("change", () => { if (R.timer !== null) play(); });
    $("trajectory-file").addEventListener("change", (e) => { if (e.target.files.length) loadTrajectory(e.target.files[0]); });
    $("load-stored").addEventListener("click", () => loadStored($("task").value, $("seed").value || 0, $("stored-agent").value));
    $("replay-mine").addEventListener("click", replayMine);
    document.addEventListener("keydown", onKey);
  }
  function fillTasks(tasks, chosen) {
    const select = $("task");
    tasks.forEach((t) => {
      const o = el("option", null, t.task_id + " · " + t.name + " (phase " + t.phase + ", " + t.max_steps + " steps)");
      o.value = t.task_id;
      select.appendChild(o);
    });
    if (tasks.some((t) => t.task_id === chosen)) select.value = chosen;
  }
  async function start() {
    wire();
    if (OFFLINE) {
      const data = JSON.parse(EMBEDDED.textContent);
      setupMap(data.map);
      $("title").textContent = data.title;
      $("subtitle").textContent = "Offline replay of what the agent saw, one decision per step.";
      document.querySelector(".modes").hidden = true;
      $("loaders").hidden = true;
      R.frames = data.frames;  // before setMode, which would otherwise ask the server for frames
      setMode("replay");
      loadFrames(data.frames, "recorded episode");
      return;
    }
    const params = new URLSearchParams(location.search);
    try {
      const [info, catalogue] = await Promise.all([getJSON("/web/map"), getJSON("/web/actions")]);
      VERB = Object.fromEntries(catalogue.actions.map((a) => [a.name, a.verb]));
      NOOP = catalogue.noop;
      setupMap(info.map);
      fillTasks(info.tasks, params.get("task_id") || "task1");
    } catch (err) {
      showGlobalError(String(err.message || err));
      return;
    }
    if (params.get("seed") !== null) $("seed").value = params.get("seed");
    if (params.get("agent")) $("stored-agent").value = params.get("agent");
    if (params.get("mode") === "replay") {
      setMode("replay");
    } else {
      await newEpisode();
    }
  }
  start();
})();
