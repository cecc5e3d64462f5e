// CodeRedEnv dispatch console: play a live episode over the OpenEnv /ws socket, or replay one.
// No inline handlers and no eval: every listener is attached here (strict CSP friendly).
// Entry module; the panels are ES modules beside it (no build step).
import { $, EMBEDDED, NOOP, OFFLINE, R, S, TASKS, el, getJSON, setCatalogue } from "./common.js";
import { setupMap } from "./map.js";
import { dispatchPairs } from "./actions.js";
import { drawComponents, render, showControlError } from "./panels.js";
import { applySuggestion, newEpisode, onMapClick, selectUnit, send, showGlobalError, stopAutoplay, suggest, toggleAutoplay } from "./play.js";
import { loadFrames, loadStored, loadTrajectory, pause, play, replayMine, showFrame } from "./replay.js";

// ---------------------------------------------------------------- modes and keys
function setMode(mode) {
  S.mode = mode;
  $("mode-play").setAttribute("aria-pressed", String(mode === "play"));
  $("mode-replay").setAttribute("aria-pressed", String(mode === "replay"));
  $("play-bar").hidden = mode !== "play";
  $("replay-bar").hidden = mode !== "replay";
  $("brief-how").hidden = mode !== "play";
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
function toggleZoom() {
  const zoomed = document.querySelector(".map-card").classList.toggle("zoomed");
  $("map-zoom").setAttribute("aria-pressed", String(zoomed));
  $("map-zoom").textContent = zoomed ? "Fit map" : "Zoom map";
}
function wire() {
  $("map-zoom").addEventListener("click", toggleZoom);
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
    TASKS[t.task_id] = t;
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
    setupMap(data.map, onMapClick);
    (data.tasks || []).forEach((t) => { TASKS[t.task_id] = t; });
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
    const city = params.get("city") || "prakashnagar";
    const [info, catalogue] = await Promise.all([getJSON("/web/map?city=" + encodeURIComponent(city)),
      getJSON("/web/actions")]);
    setCatalogue(catalogue);
    setupMap(info.map, onMapClick);
    S.mapCity = S.city = info.city.id;
    $("city").value = info.city.id === "prakashnagar" ? "prakashnagar" : info.city.id.slice(4);
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
