// A view of the page alone in a document (an <iframe srcdoc> of a notebook's output cell: webapp/notebook.py), with
// no Gradio and no server: `notebookHost(setup)` gives a view's script what a gr.HTML's js_on_load gets (`element`,
// `props`, `watch`, `trigger`, `server`) and `start()` shows the translation, as the page's carrier would.
// `setup`: {payload, view: the view's own setup (props.setup; the Python side's, e.g. attention.setup), store: the
// other store keys to set first, clicks: [[radio name, value], ...] chosen after the translation is drawn, answers:
// event -> {fields: the question's fields that pick an answer, found: [answer, ...], missing: what to call for an
// answer not computed}}. An event the view triggers is answered from `answers`, echoing the question's `translation`,
// as the server would answer it; a question no answer fits names, under the view, the call that computes it.
const notebookHost = (setup) => {
  const element = document.getElementById("view"), note = document.getElementById("view-note");
  const props = {value: null, setup: setup.view}, watchers = [];
  const watch = (name, callback) => name === "value" && watchers.push(callback);
  const answer = (value) => setTimeout(() => {
    props.value = value;
    watchers.forEach((callback) => callback());
  });
  const trigger = (event, question) => {
    const {fields, found, missing} = setup.answers[event] ?? {fields: [], found: [], missing: event};
    const fits = found.find((a) => fields.every((field) => String(a[field]) === String(question[field])));
    note.hidden = Boolean(fits);
    if (fits) return answer({...fits, translation: question.translation});
    note.textContent = `Not computed for this notebook view: ${missing.replace(/\{(\w+)\}/g,
      (_, field) => JSON.stringify(question[field]))}`;
  };
  const server = {};
  const start = () => {
    const store = globalThis.translatorStore;
    store.set(setup.store);
    store.set({translation: setup.payload});
    for (const [name, value] of setup.clicks) {
      element.querySelector(`input[name="${name}"][value="${value}"]`)?.click();
    }
  };
  // The frame as tall as the view, wherever the notebook lets the frame be reached (a sandboxed one keeps its height
  // and scrolls).
  new ResizeObserver(() => {
    if (window.frameElement) window.frameElement.style.height = `${document.documentElement.scrollHeight + 4}px`;
  }).observe(document.body);
  return {environment: [element, props, watch, trigger, server], start};
};
