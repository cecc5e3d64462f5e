// The side panels: calls, patients, units, hospital cards, status, grade, log; render() draws a step.
import { $, FADED, NOOP, OFFLINE, OR_LETTER, PLAY, R, S, STATUS_ABBR, TASKS, clear, el, extraFields, fixed4, fmtMin, nice } from "./common.js";
import { drawHospitalMarks, drawPeople, drawRoads, drawUnits } from "./map.js";
import { dispatchForm, dispatchPairs, formsFor, legal } from "./actions.js";

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
    b.addEventListener("click", () => PLAY.selectUnit(a.ambulance_id));
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
export function drawComponents(grade) {
  const table = $("components");
  clear(table);
  if (!grade || !grade.components) return;
  for (const [name, value] of Object.entries(grade.components)) {
    const weight = grade.weights ? grade.weights[name] : null;
    if (value === null && !weight) continue;  // a component this task does not have
    const tr = el("tr", null, null, "component-" + name);
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
    li.append(el("span", "when", "t" + e.t), document.createTextNode(e.text));
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

// The first screen: the task's goal and what scores (from the task menu), redrawn when the task changes.
let briefed = null;
function drawBriefing(taskId) {
  const task = TASKS[taskId];
  $("briefing").hidden = !task;  // a file recorded without the task menu
  if (!task || briefed === taskId) return;
  briefed = taskId;
  $("brief-title").textContent = task.name;
  $("goal").textContent = task.goal;
  $("brief-meta").textContent = task.task_id + " · " + task.difficulty + " · " +
    (task.phase === 2 ? "patients arrive as 108/112 calls" : "every patient known from the start") +
    " · up to " + task.max_steps + " decisions over " + task.horizon_min + " simulated minutes";
  $("scoring").textContent = task.scoring;
  const table = $("scoring-table");
  clear(table);
  task.components.forEach((c) => {
    const tr = el("tr", null, null, "scoring-" + c.name);
    tr.append(el("td", "num", Math.round(100 * c.weight) + "%"), el("td", null, c.what));
    table.appendChild(tr);
  });
  $("penalties").textContent = task.penalties;
}
// What clicking does now: the selected unit, or why a click did nothing; hidden otherwise.
export function drawHint() {
  const text = S.selected ? S.selected + " selected: click a highlighted patient or call (Esc to cancel)." : S.hint;
  $("selection").hidden = S.mode !== "play" || !text;
  $("selection").textContent = text || "";
}

export function render(obs, action, reward, error, events) {
  const pairs = S.mode === "play" ? dispatchPairs() : [];
  const dispatchable = new Set(pairs.map((p) => p.unit));
  const targets = new Set(pairs.filter((p) => p.unit === S.selected).map((p) => p.target));
  drawBriefing(obs.task_id);
  drawHint();
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
export function showControlError(key, message) {
  const host = document.querySelector('[data-control="' + CSS.escape(key) + '"]') ||
    document.querySelector('[data-control="' + CSS.escape(key.split(":").slice(0, 2).join(":")) + '"]');
  const box = el("div", "error", message, "control-error");
  if (host) host.after(box); else $("error").after(box);
}
