// The translation box's code in the page (webapp/translation.py): the carrier, which puts each translation's payload
// in the store, and what the box's events run in the browser before they reach the server.
import {store} from "./store.js";

// The carrier (views.carrier): each reference the translate event writes into its value ({key}, or null) fetched as
// the payload (ask("payload")) and put in the store; the latest reference wins over a fetch still under way. A
// payload that does not come: the message, and no translation in the store (every view says there is none), rather
// than the views of another sentence.
export function mount({element, props, watch, ask}) {
  let asked = 0;
  const publish = async (reference) => {
    const mine = ++asked;
    const payload = reference?.key ? await ask("payload", reference.key) : null;
    if (mine !== asked) return;
    const missing = Boolean(reference?.key) && !payload?.source_tokens;
    element.replaceChildren(...(missing ? [Object.assign(document.createElement("p"), {
      className: "payload-missing", role: "alert", textContent: props.setup.missing})] : []));
    store.set({translation: missing ? null : payload});
  };
  watch("value", () => publish(props.value));
  if (props.value) publish(props.value);
}

// The page's load: the box and the decoding controls as the URL's query string says (page.js writes it: text,
// decoding, beam, temperature, top_k, seed), each value one its control offers (`choices`, the decodings; `ranges`,
// each number's [lowest, highest, whole numbers only]: webapp/translation.py's CONTROL_RANGES), else as they are: a
// value Gradio refuses comes back as a message the page renders as HTML.
export const fromUrl = (choices, ranges, text, decoding, beam, temperature, topK, seed) => {
  const query = new URLSearchParams(location.search), number = (name, value) => {
    const given = Number(query.get(name)), [low, high, whole] = ranges[name];
    const offered = Number.isFinite(given) && low <= given && given <= high && (!whole || Number.isInteger(given));
    return query.has(name) && offered ? given : value;
  };
  const chosen = query.get("decoding");
  return [query.get("text") ?? text, choices.includes(chosen) ? chosen : decoding, number("beam", beam),
          number("temperature", temperature), number("top_k", topK), number("seed", seed)];
};

// An experiment's inputs (every experiment event's js): the sentence and decoding settings of the translation the page
// shows (the store's), not the box or controls changed since; "" (nothing to run on) before a translation. The
// controls a decoding does not use keep their values (in range for the sliders).
export const shownTranslation = (text, decoding, beam, temperature, topK, seed, ...rest) => {
  const shown = store.get("translation")?.request;
  if (!shown) return ["", decoding, beam, temperature, topK, seed, ...rest];
  const sampled = shown.decoding === "sampling";
  return [shown.text, shown.decoding, shown.decoding === "beam" ? shown.beam : beam,
          sampled ? shown.temperature : temperature, sampled ? shown.top_k : topK, sampled ? shown.seed : seed,
          ...rest];
};

// An example clicked: `sentence` goes into the box (the event's output), then Translate is pressed once the box shows
// it (a tick later).
export const pressTranslate = (sentence) => {
  setTimeout(() => document.getElementById("translate")?.click(), 50);
  return sentence;
};
