// The city map: the server's static SVG, roads, hospital marks, people and units drawn over it.
import { $, FADED, LIGHT_FILLS, LIGHT_TEXT, OFFLINE, OFF_MAP, OR_LETTER, S, STATUS_ABBR, clear, edgeId, fmtMin, nice, unitNodes } from "./common.js";

let MAP = null;
let svg = null;

function svgEl(tag, attrs, text) {
  const el = document.createElementNS(svg.namespaceURI, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  return el;
}
function tooltip(node, text) { node.appendChild(svgEl("title", {}, text)); }

// ---------------------------------------------------------------- map
export function setupMap(map, onClick) {
  MAP = map;
  const box = $("map-box");
  box.innerHTML = map.svg;  // server-rendered static SVG (roads, nodes); no script inside
  svg = box.querySelector("svg");
  svg.addEventListener("click", onClick);
}
export function drawRoads(obs) {
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
    g.appendChild(svgEl("rect", { x: x, y: 40, width: 14, height: 14, rx: 2, class: "or-" + room.state }));
    const t = svgEl("text", { x: x + 7, y: 51, class: "box-text" + (LIGHT_TEXT.includes(room.state) ? " light" : "") },
      OR_LETTER[room.state] || "?");
    tooltip(t, room.or_id + ": " + nice(room.state) + (room.procedure ? " (" + room.procedure + ")" : ""));
    g.appendChild(t);
  });
  Object.entries(h.specialists || {}).forEach(([specialty, info], i) => {
    const x = 100 + i * 19;
    const box = svgEl("rect", { x: x, y: 40, width: 16, height: 14, rx: 3, class: "spec-" + info.state });
    tooltip(box, nice(specialty) + ": " + nice(info.state));
    g.appendChild(box);
    g.appendChild(svgEl("text", { x: x + 8, y: 51, class: "box-text" + (LIGHT_TEXT.includes(info.state) ? " light" : "") },
      specialty[0].toUpperCase()));
  });
  tooltip(g, h.name + ": " + h.occupancy + "/" + h.capacity + " ED beds");
  return g;
}
export function drawHospitalMarks(obs) {
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
      transform: "rotate(45 " + x + " " + y + ")", class: "pr-" + (d.priority || "none") }));
    g.appendChild(svgEl("text", { class: "person-label", x: x, y: y + 3.5 }, d.call_id));
    tooltip(g, d.call_id + " (" + (d.priority || "not triaged") + ", " + nice(d.status) + "): " + d.report);
    return g;
  }
  const g = svgEl("g", { class: "person patient " + d.status + (FADED.includes(d.status) ? " faded" : "") +
    (isTarget ? " target" : ""), "data-target": item.id, "data-testid": "map-patient-" + item.id });
  const colour = d.status === "deceased" ? "deceased" : d.priority || "none";
  g.appendChild(svgEl("circle", { cx: x, cy: y, r: 12, class: "pr-" + colour }));
  g.appendChild(svgEl("text", { class: "person-label", x: x, y: y + 3.5 }, d.patient_id));
  tooltip(g, d.patient_id + " " + d.label + " (" + d.priority + "): " + nice(d.status));
  return g;
}
export function drawPeople(obs, targets) {
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
export function drawUnits(obs, dispatchable) {
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
    g.querySelector("rect").setAttribute("class", "st-" + a.status);
    const label = g.querySelector("text");
    label.textContent = a.ambulance_id + " " + (STATUS_ABBR[a.status] || "?");
    label.classList.toggle("dark", LIGHT_FILLS.includes(a.status));
    g.querySelector("title").textContent = unitText(a);
    seen.add(a.ambulance_id);
  }
  for (const [id, g] of unitNodes) if (!seen.has(id)) { g.remove(); unitNodes.delete(id); }
}
