// The page's own plumbing: the keyboard, and the open tab and the view in the URL, run once per page (Gradio's page
// script imports this module: webapp/page_script.py). The views are modules of their own (one per tab, mounted by
// views.js); the store they share is store.js.
import {store} from "./store.js";

// The keyboard: each group of choices is one Tab stop, the arrow keys move within it (WAI-ARIA's radio group and
// tabs patterns). Gradio gives every radio of a group its own name, so the browser makes each one a Tab stop of its
// own (37 presses from the text box to the heatmap); here, a radio group (a gr.Radio: its inputs) and the tab bar
// (its role="tab" buttons) keep one member reachable by Tab, the checked or selected one, and the arrows choose the
// next or previous one (a radio is clicked, a tab opened, as a mouse would).
const groups = () => [
  ...[...document.querySelectorAll("fieldset")].map((f) => [...f.querySelectorAll('input[type="radio"]')]),
  ...[...document.querySelectorAll('[role="tablist"]')].map((t) => [...t.querySelectorAll('[role="tab"]')]),
].filter((members) => members.length > 1);
const isOn = (e) => (e.type === "radio" ? e.checked : e.getAttribute("aria-selected") === "true");
const roving = () => {
  for (const members of groups()) {
    const current = members.find((e) => e === document.activeElement) || members.find(isOn) || members[0];
    for (const e of members) {
      const tabindex = e === current ? "0" : "-1";
      if (e.getAttribute("tabindex") !== tabindex) e.setAttribute("tabindex", tabindex);
    }
  }
};
const STEPS = {ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1};
document.addEventListener("keydown", (event) => {
  const step = STEPS[event.key];
  const e = event.target;
  if (!step || event.altKey || event.ctrlKey || event.metaKey || !e.matches?.('input[type="radio"], [role="tab"]')) {
    return;
  }
  const members = groups().find((g) => g.includes(e));
  if (!members) return;
  event.preventDefault();
  const next = members[(members.indexOf(e) + step + members.length) % members.length];
  next.click();
  next.focus();
  roving();
}, true);

// Observers are called once per batch of changes; roving() only writes a tabindex that differs.
new MutationObserver(roving).observe(document.body, {childList: true, subtree: true});
new MutationObserver(roving).observe(document.body, {subtree: true, attributes: true,
                                                     attributeFilter: ["aria-selected", "aria-checked"]});
roving();

// The open tab, in the store (key "tab"): a click on the tab bar (or the arrow keys, which click) writes it; a view
// that writes it opens that tab, as a click on its button would (Gradio names the button "tab-<id>-button").
document.addEventListener("click", (event) => {
  const tab = event.target.closest?.('[role="tablist"] button[data-tab-id]');
  if (tab) store.set({tab: tab.dataset.tabId});
}, true);
const openTab = (id, tries = 0) => {
  const button = document.getElementById(`tab-${id}-button`);
  if (!button) {
    if (tries < 100) setTimeout(() => openTab(id, tries + 1), 50);  // the tab bar is not drawn yet
    return;
  }
  if (button.getAttribute("aria-selected") !== "true") button.click();
};
store.on("tab", openTab);

// The URL: the shown translation's sentence and decoding settings, then each view's setting the store holds, in the
// query string (?text=...&tab=head&view=cross.2.3&scale=own), so that a reload, the back button or a link sent to a
// student shows the same view. The translation box reads the sentence and settings from it when the page loads
// (translation.js, fromUrl); a new sentence is a new history entry, anything else changes the entry in place. Back or
// forward to another sentence puts it in the box and translates it.
const SETTINGS = ["decoding", "beam", "temperature", "top_k", "seed"];
// Each view setting the URL keeps: its parameter -> the store's key, how a parameter is read (null: none of its
// choices, left out, so that nothing from the address reaches the store unchecked) and how a value is written (null:
// the default, left out). Each view then clamps what it is given to its own choices (layers, heads, tokens, boxes).
const KINDS = ["encoder", "decoder", "cross"];
const oneOf = (...choices) => (text) => (choices.includes(text) ? text : null);
const whole = (text) => (/^[1-9]\d{0,2}$/.test(text) ? +text : null);  // 1 to 999
const dotted = (text, parts) => {  // "cross.2.3" -> {kind: "cross", layer: 2, head: 3}: a kind, then `parts` read
  const [kind, ...given] = text.split("."), names = Object.keys(parts), value = {kind};
  if (!KINDS.includes(kind) || given.length !== names.length) return null;
  for (const [i, name] of names.entries()) {
    value[name] = parts[name](given[i]);
    if (value[name] === null) return null;
  }
  return value;
};
const headOrAll = (text) => oneOf("mean", "all")(text) ?? whole(text);
const fromZero = (text) => whole(text) && whole(text) - 1;  // a 1-based position as an index
const PARAMETERS = {
  tab: {key: "tab", read: (text) => (/^[a-z]{1,20}$/.test(text) ? text : null), write: (tab) => tab},
  view: {key: "attention", read: (text) => dotted(text, {layer: whole, head: headOrAll}),
         write: ({kind, layer, head}) => `${kind}.${layer}.${head}`},
  style: {key: "style", read: oneOf("heatmap", "lines"), write: (style) => (style === "heatmap" ? null : style)},
  scale: {key: "scale", read: oneOf("fixed", "own"), write: (scale) => (scale === "fixed" ? null : scale)},
  // Inside one head: the kind, layer, head and query token (1-based in the URL, the store's `query` from 0).
  inside: {key: "head", read: (text) => dotted(text, {layer: whole, head: whole, query: fromZero}),
           write: ({kind, layer, head = 1, query = 0}) => `${kind}.${layer}.${head}.${query + 1}`},
  box: {key: "box", read: (text) => (/^[a-z-]{1,40}$/.test(text) ? text : null), write: (box) => box},
  // The model map's walk: the stack, the token followed and the box reached (both 1-based in the URL).
  walk: {key: "walk", read: (text) => {
    const [stack, position, index] = text.split(".");
    const value = {stack, position: fromZero(position ?? ""), index: fromZero(index ?? "")};
    return ["encoder", "decoder"].includes(stack) && value.position !== null && value.index !== null ? value : null;
  }, write: ({stack, position, index}) => `${stack}.${position + 1}.${index + 1}`},
};
const fromUrl = () => {  // {text, and each parameter's store key: its value}, what the address holds of them
  const query = new URLSearchParams(location.search), read = {text: query.get("text")};
  for (const [name, {key, read: parse}] of Object.entries(PARAMETERS)) {
    const value = query.has(name) ? parse(query.get(name)) : null;
    if (value !== null) read[key] = value;
  }
  return read;
};
const toUrl = () => {
  const query = new URLSearchParams(), request = store.get("translation")?.request;
  if (request) {
    query.set("text", request.text);
    if (request.decoding !== "greedy") {
      for (const name of SETTINGS) query.set(name, request[name]);
    }
  }
  for (const [name, {key, write}] of Object.entries(PARAMETERS)) {
    const value = store.get(key) ?? null, written = value === null ? null : write(value);
    if (written !== null) query.set(name, written);
  }
  return `?${query}`.replace(/%2C/g, ",");
};
const viewsOf = ({text, ...views}) => views;  // what the store takes of `fromUrl`: all but the sentence
store.set(viewsOf(fromUrl()));
const write = () => {  // once a translation is shown: until then the URL is what the page was opened with
  if (!store.get("translation")) return;
  const next = toUrl();
  if (next === location.search) return;
  const newSentence = new URLSearchParams(next).get("text") !== new URLSearchParams(location.search).get("text");
  history[newSentence && location.search ? "pushState" : "replaceState"](null, "", next + location.hash);
};
for (const key of ["translation", ...Object.values(PARAMETERS).map((p) => p.key)]) store.on(key, write);
window.addEventListener("popstate", () => {
  const wanted = fromUrl();
  store.set(viewsOf(wanted));
  const box = document.querySelector("#english textarea");
  if (wanted.text && box && wanted.text !== store.get("translation")?.request?.text) {
    box.value = wanted.text;
    box.dispatchEvent(new Event("input", {bubbles: true}));
    setTimeout(() => document.getElementById("translate")?.click(), 50);
  }
});
