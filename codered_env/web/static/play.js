// Live play over the OpenEnv /ws socket: episodes, actions, advice, autoplay and the final grade.
import { $, OFFLINE, PLAY, S, clear, el, eventEntry, fixed4, getJSON, nice, postJSON } from "./common.js";
import { setupMap } from "./map.js";
import { dispatchPairs } from "./actions.js";
import { drawComponents, drawHint, render, showControlError } from "./panels.js";

// ---------------------------------------------------------------- live play
Object.assign(PLAY, { send, selectUnit });
function wsUrl() { return (location.protocol === "https:" ? "wss:" : "ws:") + "//" + location.host + "/ws"; }
function setConn(text) { $("conn").textContent = text; }
function connect() {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl());
    ws.addEventListener("open", () => { S.ws = ws; setConn("connected"); resolve(ws); });
    ws.addEventListener("error", () => reject(new Error("cannot open the /ws connection")));
    ws.addEventListener("message", (event) => {
      const waiter = S.waiters.shift();
      if (waiter) waiter.resolve(JSON.parse(event.data));
    });
    ws.addEventListener("close", () => {
      if (S.ws === ws) S.ws = null;
      setConn("connection closed (it resumes on your next action)");
      S.waiters.splice(0).forEach((w) => w.reject(new Error("the connection closed")));
    });
  });
}
function wsSend(message) {
  return new Promise((resolve, reject) => {
    S.waiters.push({ resolve, reject });
    S.ws.send(JSON.stringify(message));
  });
}
// A closed connection (idle timeout) is re-opened by replaying the actions: episodes are deterministic.
async function wsCall(message) {
  if (!S.ws) {
    await connect();
    if (message.type === "step" && S.obs) {
      await wsSend({ type: "reset", data: { task_id: S.task, seed: S.seed, city: S.city } });
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
// Draw another city's map (from its coordinates; the server says when the city is unknown).
export async function showCity(city) {
  const info = await getJSON("/web/map?city=" + encodeURIComponent(city));
  setupMap(info.map, onMapClick);
  S.mapCity = info.city.id;
  $("city").value = info.city.id === "prakashnagar" ? "prakashnagar" : info.city.id.slice(4);
  $("city").title = info.city.name + " (" + info.city.id + ")";
  $("subtitle").textContent = "You run the ambulance dispatch of " + info.city.name +
    (info.city.id === "prakashnagar" ? ", a fictional Indian city." : ", a generated city (" + info.city.id + ").");
}
export async function newEpisode() {
  stopAutoplay();
  const seed = Number($("seed").value);
  if (!Number.isInteger(seed) || seed < 0 || seed > 4294967295) {
    showGlobalError("seed must be an integer in [0, 4294967295]");
    return;
  }
  const city = ($("city").value || "prakashnagar").trim();
  try {
    if (city !== S.mapCity) await showCity(city);
  } catch (err) {
    showGlobalError(String(err.message || err));
    return;
  }
  S.task = $("task").value;
  S.seed = seed;
  S.city = S.mapCity;
  S.actions = [];
  S.log = [];
  S.selected = null;
  S.hint = null;
  S.grade = null;
  S.suggestion = null;
  S.showSuggestion = false;
  S.finalShown = false;
  S.epoch += 1;
  $("final-card").hidden = true;
  $("suggestion-card").hidden = true;
  setBusy(true);
  try {
    const reply = await wsCall({ type: "reset", data: { task_id: S.task, seed: S.seed, city: S.city } });
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
export function showGlobalError(message) { $("error").hidden = false; $("error").textContent = message; }
function accept(data, action) {
  const obs = data.observation;
  obs.done = Boolean(data.done || obs.done);
  S.obs = obs;
  (obs.events || []).forEach((text) => S.log.push(eventEntry(text, obs.clock_min)));
  if (S.log.length > 400) S.log.splice(0, S.log.length - 400);
  S.lastAction = action;
  S.lastReward = data.reward;
  if (S.selected && !dispatchPairs().some((p) => p.unit === S.selected)) S.selected = null;
  render(obs, action, data.reward, obs.last_action_error, S.log);
  requestAdvice();
  if (obs.done) { stopAutoplay(); showFinal(); }
}
export async function send(action, controlKey) {
  if (S.busy || !S.obs || S.obs.done) return false;
  if (controlKey !== "autoplay") stopAutoplay();
  S.control = controlKey;
  S.selected = null;
  S.hint = null;
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
    const answer = await postJSON("/web/advice", { task_id: S.task, seed: S.seed, city: S.city, actions: S.actions });
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
export function suggest() { S.showSuggestion = true; drawSuggestion(); }
export function applySuggestion() { if (S.suggestion) send(S.suggestion.action, "suggestion"); }
export function selectUnit(id) {
  S.selected = S.selected === id ? null : id;
  S.hint = null;
  if (S.obs) render(S.obs, S.lastAction, S.lastReward, null, S.log);
  else drawHint();
}
function dispatchTo(targetId) {
  const pair = dispatchPairs().find((p) => p.unit === S.selected && p.target === targetId);
  if (!pair) return;
  send({ action_type: pair.type, ambulance_id: pair.unit, [pair.key]: targetId }, "map");
}
export function onMapClick(event) {
  if (S.mode !== "play" || OFFLINE) return;
  const unit = event.target.closest("[data-ambulance]");
  if (unit) {
    const id = unit.dataset.ambulance;
    if (dispatchPairs().some((p) => p.unit === id)) selectUnit(id);
    else { S.hint = id + " cannot be sent now: no legal dispatch for it."; drawHint(); }
    return;
  }
  const target = event.target.closest("[data-target]");
  if (target && S.selected) dispatchTo(target.dataset.target);
}
export async function toggleAutoplay() {
  if (S.autoplay) { stopAutoplay(); return; }
  if (!S.obs || S.obs.done || S.busy) return;
  S.autoplay = true;
  const epoch = S.epoch;
  $("autoplay").classList.add("active");
  $("autoplay").textContent = "Stop autoplay";
  // One action at a time, each asked for on the current state: no future is computed ahead.
  try {
    while (S.autoplay && epoch === S.epoch && S.obs && !S.obs.done) {
      const answer = await postJSON("/web/advice", { task_id: S.task, seed: S.seed, city: S.city, actions: S.actions,
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
export function stopAutoplay() {
  S.autoplay = false;
  $("autoplay").classList.remove("active");
  $("autoplay").textContent = "Autoplay";
}
async function showFinal() {
  if (S.finalShown) return;
  S.finalShown = true;
  const epoch = S.epoch;
  try {
    const mine = await postJSON("/grader", { task_id: S.task, seed: S.seed, city: S.city, actions: S.actions });
    const heuristic = await postJSON("/grader", { task_id: S.task, seed: S.seed, city: S.city, agent: "heuristic" });
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
function scrollable(table) {  // a wide table scrolls inside its card, never the page
  const wrap = el("div", "table-scroll");
  wrap.appendChild(table);
  return wrap;
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
    if (value === null && !(mine.weights || {})[name]) continue;  // a component this task does not have
    const theirs = (heuristic.components || {})[name];
    const show = (v) => (v === null || v === undefined ? "n/a" : Number(v).toFixed(3));
    comps.appendChild(row([[nice(name)], [show((mine.weights || {})[name]), "num"], [show(value), "num"], [show(theirs), "num"]]));
  }
  box.appendChild(scrollable(comps));
  const penalties = Object.entries(mine.penalties || {});
  if (penalties.length) box.appendChild(el("div", "muted", "penalties: " + penalties.map(([k, v]) => k + " " + v).join(", ")));
  const patients = el("table", null, null, "final-patients");
  patients.appendChild(row([["patient"], ["condition"], ["pri"], ["outcome"], ["delay", "num"], ["target", "num"], ["time", "num"]], true));
  (mine.patients || []).forEach((p) => {
    patients.appendChild(row([[p.patient_id], [nice(p.condition)], [p.priority], [nice(p.status) + (p.hospital ? " @" + p.hospital : "")],
      [p.delay_min === null ? "–" : String(p.delay_min), "num"], [String(p.target_min), "num"],
      [Number(p.time_score).toFixed(2), "num"]]));
  });
  box.appendChild(scrollable(patients));
  $("final-card").hidden = false;
}
