// Legal actions as forms and buttons on the rows they concern (labels from the catalogue).
import { HOSPITAL_FIRST, MAX_BUTTONS, NOOP, PLAY, S, VERB, el, nice } from "./common.js";

// ---------------------------------------------------------------- legal actions
export function legal() { return (S.mode === "play" && S.obs && !S.obs.done && S.obs.legal_actions) || {}; }
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
export function dispatchPairs() {
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
      b.addEventListener("click", () => PLAY.send(base, wrap.dataset.control));
      wrap.appendChild(b);
    } else if (free.length === 1 && option[free[0]].length <= MAX_BUTTONS) {
      option[free[0]].forEach((value) => {
        const b = el("button", "small", String(value), "act-" + type + "-" + value);
        b.title = nice(type) + " " + free[0] + "=" + value;
        b.addEventListener("click", () => PLAY.send(Object.assign({}, base, { [free[0]]: value }), wrap.dataset.control));
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
        PLAY.send(action, wrap.dataset.control);
      });
      wrap.appendChild(b);
    }
  });
  return wrap;
}
export function formsFor(kind, fixedParams, key, parent) {
  for (const [type, options] of typesFor(kind)) {
    let params = fixedParams;
    if (type === "transfer_blood" && "hospital_id" in fixedParams) params = { from_hospital_id: fixedParams.hospital_id };
    if (options.some((o) => o.ambulance_id)) continue;  // dispatching has its own form (dispatchForm)
    const form = actionForm(type, options, params, key);
    if (form) parent.appendChild(form);
  }
}
export function dispatchForm(targetId, key, parent) {
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
