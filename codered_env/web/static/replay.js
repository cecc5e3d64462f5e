// Replay: stepping through recorded frames (a trajectory file, a stored agent's episode or mine).
import { $, R, S, eventEntry, getJSON, postJSON } from "./common.js";
import { showCity } from "./play.js";
import { drawComponents, render } from "./panels.js";

// ---------------------------------------------------------------- replay
export function showFrame(i) {
  if (!R.frames.length) return;
  R.index = Math.max(0, Math.min(R.frames.length - 1, i));
  const frame = R.frames[R.index];
  const events = (frame.observation.events || []).map((text) => eventEntry(text, frame.observation.clock_min));
  render(frame.observation, frame.action, frame.reward, frame.error, events);
  $("slider").max = R.frames.length - 1;
  $("slider").value = R.index;
  $("first").disabled = $("prev").disabled = R.index === 0;
  $("next").disabled = $("last").disabled = R.index === R.frames.length - 1;
  if (R.index === R.frames.length - 1) pause();
}
export function loadFrames(frames, source) {
  pause();
  R.frames = frames;
  R.source = source;
  $("replay-error").hidden = true;
  drawComponents(null);
  showFrame(0);
}
export function play() {
  if (R.index >= R.frames.length - 1) showFrame(0);
  pause();
  R.timer = setInterval(() => showFrame(R.index + 1), 1000 / Number($("speed").value));
  $("play").textContent = "Pause";
}
export function pause() {
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
export async function loadTrajectory(file) {
  try {
    const trajectory = parseTrajectory(await file.text());
    const city = trajectory.header.city || "prakashnagar";
    if (city !== S.mapCity) await showCity(city);
    const answer = await postJSON("/web/frames", { task_id: trajectory.header.task_id,
      seed: trajectory.header.seed, city, actions: trajectory.actions });
    const recorded = trajectory.end && typeof trajectory.end.score === "number" ? trajectory.end.score : null;
    loadFrames(answer.frames, "trajectory " + file.name + " (" + trajectory.header.agent + ")" +
      (recorded === null ? "" : ", recorded score " + recorded.toFixed(4)));
  } catch (err) {
    replayError(String(err.message || err));
  }
}
export async function loadStored(taskId, seed, agent) {
  try {
    const city = ($("city").value || "prakashnagar").trim();
    if (city !== S.mapCity) await showCity(city);
    const answer = await getJSON("/web/episode?task_id=" + encodeURIComponent(taskId) + "&seed=" +
      encodeURIComponent(seed) + "&agent=" + encodeURIComponent(agent) + "&city=" + encodeURIComponent(S.mapCity));
    loadFrames(answer.frames, agent + " agent");
  } catch (err) {
    replayError(String(err.message || err));
  }
}
export async function replayMine() {
  if (!S.obs) { replayError("play an episode first"); return; }
  try {
    if (S.city !== S.mapCity) await showCity(S.city);
    const answer = await postJSON("/web/frames", { task_id: S.task, seed: S.seed, city: S.city, actions: S.actions });
    loadFrames(answer.frames, "your episode");
  } catch (err) {
    replayError(String(err.message || err));
  }
}
