// Shared by every panel: element lookup, constants, the live (S) and replay (R) state, DOM and fetch helpers.

export const $ = (id) => document.getElementById(id);
export const EMBEDDED = $("episode-data");
export const OFFLINE = EMBEDDED !== null;
export const STATUS_ABBR = { available: "AV", en_route: "ER", on_scene: "OS", transporting: "TR",
  at_hospital: "AH", returning: "RT" };
export const STATUS_FILL = { available: "#009e73", en_route: "#e69f00", on_scene: "#d55e00",
  transporting: "#cc79a7", at_hospital: "#0072b2", returning: "#6b7280" };
export const PRIORITY_FILL = { P1: "#d55e00", P2: "#e69f00", P3: "#c9bc1f", P4: "#009e73" };
export const OR_FILL = { idle: "#d1d5db", preparing: "#e69f00", ready: "#009e73", in_use: "#0072b2",
  out_of_service: "#111827" };
export const OR_LETTER = { idle: "I", preparing: "P", ready: "R", in_use: "U", out_of_service: "X" };
export const SPEC_FILL = { on_call: "#e5e7eb", paged: "#fde68a", present: "#009e73", unavailable: "#fee2e2" };
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

export const unitNodes = new Map();
export const S = { mode: "play", ws: null, waiters: [], task: "task1", seed: 0, actions: [], obs: null,
  control: null, selected: null, log: [], busy: false, autoplay: false, queue: [], grade: null,
  suggestion: null, showSuggestion: false, adviceSeq: 0, epoch: 0, finalShown: false, error: null };
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
