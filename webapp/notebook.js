// A view of the page alone in a document (an <iframe srcdoc> of a notebook's output cell: webapp/notebook.py), with
// no Gradio and no server: `showView(setup, view)` mounts the view's module (`view`, its exports) with what a gr.HTML
// would give it (`element`, `props`, `watch`, `ask`), then shows the translation, as the page's carrier would.
// `setup`: {payload, view: the view's own setup (props.setup; the Python side's, e.g. attention.setup), store: the
// other store keys to set first, clicks: [[radio name, value], ...] chosen after the translation is drawn, answers:
// question -> {fields: the question's fields that pick an answer, found: [answer, ...], missing: what to call for an
// answer not computed}}. A question the view asks is answered from `answers`, echoing the question's `translation`,
// as the server would answer it; a question no answer fits names, under the view, the call that computes it.
import {store} from "./store.js";

export const showView = (setup, view) => {
  const element = document.getElementById("view"), note = document.getElementById("view-note");
  const props = {value: null, setup: setup.view};
  const watch = () => {};  // no event of the server's writes into a notebook's view
  const ask = (name, question) => {
    const {fields, found, missing} = setup.answers[name] ?? {fields: [], found: [], missing: name};
    const fits = found.find((a) => fields.every((field) => String(a[field]) === String(question[field])));
    note.hidden = Boolean(fits);
    if (fits) return Promise.resolve({...fits, translation: question.translation});
    note.textContent = `Not computed for this notebook view: ${missing.replace(/\{(\w+)\}/g,
      (_, field) => JSON.stringify(question[field]))}`;
    return new Promise(() => {});  // never answered, as a question the server refuses
  };
  view.mount({element, props, watch, ask});
  store.set(setup.store);
  store.set({translation: setup.payload});
  for (const [name, value] of setup.clicks) {
    element.querySelector(`input[name="${name}"][value="${value}"]`)?.click();
  }
  // The frame as tall as the view, wherever the notebook lets the frame be reached (a sandboxed one keeps its height
  // and scrolls).
  new ResizeObserver(() => {
    if (window.frameElement) window.frameElement.style.height = `${document.documentElement.scrollHeight + 4}px`;
  }).observe(document.body);
};
