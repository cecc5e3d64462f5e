// Shared by every panel: element lookup, constants, the live (S) and replay (R) state, DOM and fetch functions.

export const $ = (id) => document.getElementById(id);
export const EMBEDDED = $("episode-data");
export const OFFLINE = EMBEDDED !== null;
export const STATUS_ABBR = { available: "AV", en_route: "ER", on_scene: "OS", transporting: "TR",
  at_hospital: "AH", returning: "RT" };
// Colours are CSS classes (console.css: st-<status>, pr-<priority>, or-<state>, spec-<state>),
// shared by the map, the lists and the legend.
export const OR_LETTER = { idle: "I", preparing: "P", ready: "R", in_use: "U", out_of_service: "X" };
export const LIGHT_TEXT = ["ready", "in_use", "out_of_service", "present"];  // OR and specialist states on dark fills
export const OFF_MAP = ["transporting", "transferring"];
export const FADED = ["treated", "released"];
// Verbs and the no-op's name come from the server's action catalogue (GET /web/actions).
export let VERB = {};
export let NOOP = null;
export const HOSPITAL_FIRST = ["allocate_blood"];  // placed on the hospital card although it names a patient
export const MAX_BUTTONS = 8;
export const LIGHT_FILLS = ["en_route", "transporting"];  // statuses whose fill needs dark text

// What the play module does on a click (send an action, select a unit): it fills this in, so
// the panels and forms call it without importing play.js, which imports them (no import circle).
export const PLAY = { send: null, selectUnit: null };

// The task menu with each task's goal and scoring (GET /web/map, or the offline file's copy).
export const TASKS = {};

export const unitNodes = new Map();
export const S = { mode: "play", ws: null, waiters: [], task: "task1", seed: 0, city: "prakashnagar",
  mapCity: "prakashnagar", actions: [], obs: null,
  control: null, selected: null, log: [], busy: false, autoplay: false, queue: [], grade: null,
  suggestion: null, showSuggestion: false, adviceSeq: 0, epoch: 0, finalShown: false, error: null, hint: null };
export const R = { frames: [], index: 0, timer: null, source: "" };

export function el(tag, cls, text, testid) {
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
export function extraFields(item) {
  const parts = Object.entries(item).filter(([k, v]) => !SHOWN.has(k) && v !== null && v !== undefined &&
    !(Array.isArray(v) && !v.length) && !(typeof v === "object" && !Array.isArray(v) && !Object.keys(v).length))
    .map(([k, v]) => nice(k) + ": " + (typeof v === "object" ? JSON.stringify(v) : String(v)));
  return parts.length ? el("div", "muted extra", parts.join(" · ")) : null;
}
// An event line "t12 ALS1 dispatched ..." carries its own minute: keep it, once, as the stamp.
const EVENT_STAMP = /^t(\d+)\s+/;
export function eventEntry(text, clockMin) {
  const stamp = EVENT_STAMP.exec(text);
  return stamp ? { t: Number(stamp[1]), text: text.slice(stamp[0].length) } : { t: clockMin, text };
}
export function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
export function fmtMin(m) { return m === null || m === undefined ? "–" : m + " min"; }
export function edgeId(a, b) { return a < b ? a + "-" + b : b + "-" + a; }
export function nice(s) { return String(s).replace(/_/g, " "); }
export function fixed4(x) { return typeof x === "number" ? x.toFixed(4) : "–"; }

export async function postJSON(path, body) {
  const response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body) });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const detail = typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail || data);
    throw new Error(path + " answered " + response.status + ": " + detail);
  }
  return data;
}
export async function getJSON(path) {
  const response = await fetch(path);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(path + " answered " + response.status + ": " + JSON.stringify(data.detail));
  return data;
}

// Verbs and the no-op come from the server's catalogue at start (GET /web/actions).
export function setCatalogue(catalogue) {
  VERB = Object.fromEntries(catalogue.actions.map((a) => [a.name, a.verb]));
  NOOP = catalogue.noop;
}
