// The step panel, drawn in the page from a translation's payload (webapp/payload.py), by the steps tab (steps.js)
// and by the heads tab for the run with heads switched off (heads.js): ◀ slider ▶, the tokens the decoder sees with
// the one it chose marked, the next-token candidates as bars (with sampling: at temperature 1 beside the distribution
// drawn from), where the decoder looked in the English sentence (cross-attention, layers × tokens, mean over heads)
// and, under beam search, the beam after the step. Every control is answered here, with no request to the server.
import {unpack, escapeHtml, drawHeatmap, chipsHtml} from "../views.js";

const stepPanelHtml = (name) => `<div class="step-panel" id="${name}-panel" data-step="0" data-steps="0">
  <div class="step-controls">
    <button type="button" class="step-prev" aria-label="Previous step">◀ Previous</button>
    <input type="range" class="step-slider" id="${name}" min="1" max="1" value="1" step="1"
      aria-label="Step (one per generated token)">
    <span class="step-label" aria-live="polite"></span>
    <button type="button" class="step-next" aria-label="Next step">Next ▶</button>
  </div>
  <div class="step-prefix" id="${name}-prefix"></div>
  <div class="step-figures">
    <figure class="step-candidates" id="${name}-candidates"><figcaption></figcaption><div class="bars"></div></figure>
    <figure class="step-attention" id="${name}-attention"><figcaption></figcaption><canvas></canvas></figure>
  </div>
  <div class="step-beam" id="${name}-beam" hidden></div>
</div>`;

// Bars of probabilities: `rows` [{token, values: [p, ...], chosen}], one bar per value (`series`: [{name, cls}]).
const barsHtml = (rows, series) => `${series.length > 1 ? `<div class="bar-legend">${series.map((s) =>
  `<span class="bar ${s.cls}"></span>${escapeHtml(s.name)}`).join(" ")}</div>` : ""}<table class="bars-table">${
  rows.map((row) => `<tr class="bar-row${row.chosen ? " chosen" : ""}" data-token="${escapeHtml(row.token)}">
  <th scope="row">${escapeHtml(row.token)}</th><td>${row.values.map((p, i) => `<div class="bar-line"><span
  class="bar ${series[i].cls}${row.chosen && i === row.values.length - 1 ? " chosen" : ""}" style="width: ${
  (100 * p).toFixed(1)}%"></span><span class="bar-value" data-p="${p}">${(100 * p).toFixed(1)}%</span></div>`)
  .join("")}</td></tr>`).join("")}</table>`;

// The candidates of a step (1-based): [{token, values, chosen}] and the caption; with sampling, the tokens of both
// distributions ordered by their probability at temperature 1 (dividing logits by a temperature keeps the order).
const candidateRows = (payload, step, chosen) => {
  const atOne = payload.candidates[step - 1];
  if (!payload.sampling) {
    const rows = atOne.map(([token, p]) => ({token, values: [p], chosen: token === chosen}));
    const missing = rows.some((r) => r.chosen) ? "" : ` (${chosen} is not among them)`;
    return {rows, series: [{name: "probability", cls: "blue"}],
            caption: `Step ${step}: top ${rows.length} next tokens, chosen in orange${missing}`};
  }
  const one = new Map(atOne), drawn = new Map(payload.sampled_from[step - 1]);
  const tokens = [...new Set([...one.keys(), ...drawn.keys()])]
    .sort((a, b) => (one.get(b) ?? drawn.get(b) ?? 0) - (one.get(a) ?? drawn.get(a) ?? 0));
  const {temperature, top_k: topK} = payload.sampling;
  const label = `temperature ${temperature}${topK ? `, top-${topK}` : ""}`;
  return {rows: tokens.map((token) => ({token, values: [one.get(token) ?? 0, drawn.get(token) ?? 0],
                                        chosen: token === chosen})),
          series: [{name: "temperature 1", cls: "grey"}, {name: `${label} (drawn from)`, cls: "blue"}],
          caption: `Step ${step}: the next token drawn at ${label} (orange: the one drawn)`};
};

// A hypothesis of the beam: its tokens, the last in bold.
const hypothesisHtml = (tokens) => (tokens.length
  ? tokens.map((t, i) => (i === tokens.length - 1 ? `<b>${escapeHtml(t)}</b>` : escapeHtml(t))).join(" ")
  : "<i>(empty)</i>");
const rankHtml = (rank) => (rank === 1 ? "the most probable"
  : `<span class="not-top">number ${rank} at its step</span>`);

// The beam after a step (1-based; beyond the last, the last): the hypotheses kept, best first, with their summed
// log-probabilities and the rank their last token had at its step, those that ended at this step with their
// length-normalised scores, and the winner; rows on the winner's path marked.
const beamHtml = (beam, step) => {
  const shownStep = Math.min(step, beam.steps.length), shown = beam.steps[shownStep - 1];
  const winner = beam.winner.tokens, same = (a, b) => a.length === b.length && a.every((t, i) => t === b[i]);
  const onPath = (h) => same(h.tokens, winner.slice(0, h.tokens.length));
  const live = shown.live.map((h, i) => `<tr class="${onPath(h) ? "on-path" : ""}"><td>${i + 1}</td><td>${
    hypothesisHtml(h.tokens)}</td><td>${h.score.toFixed(2)}</td><td>${rankHtml(h.rank)}</td></tr>`).join("");
  const ended = shown.finished.map((h) => `<tr class="${same(h.tokens, winner) ? "winner" : ""}"><td>${
    hypothesisHtml(h.tokens)} &lt;/s&gt;</td><td>${h.score.toFixed(2)}</td><td>${h.normalised.toFixed(3)}</td></tr>`)
    .join("");
  const finished = ended ? `<table class="beam"><tr><th>ended here</th><th>score</th><th>score ÷ length penalty</th>`
    + `</tr>${ended}</table>` : "<p>No hypothesis ended at this step.</p>";
  return `<div class="beam-view"><p><b>Winner</b> (best score ÷ length penalty, α = ${beam.alpha}): ${
    escapeHtml(beam.winner.text)} — ${beam.winner.normalised.toFixed(3)}</p><p><b>Beam after step ${shownStep}</b> (${
    shown.live.length} of ${beam.beam} kept, best first; score = sum of the log-probabilities; marked: on the winner's `
    + `path)</p><table class="beam"><tr><th>#</th><th>hypothesis</th><th>score</th><th>its last token was</th></tr>${
    live}</table>${finished}</div>`;
};

// The panel in `root` (an element): `name` prefixes its element ids; `onStep(step, payload)` is called after each
// step drawn. Returns {show(payload), step(), clear()}: show draws step 1 of a payload, its slider's maximum set at
// the same time (a view never shows a step of another sentence).
export const stepPanel = (root, name, onStep = () => {}) => {
  root.innerHTML = stepPanelHtml(name);
  const $ = (selector) => root.querySelector(selector);
  const slider = $(".step-slider"), panel = $(".step-panel");
  let payload = null, means = null;

  const draw = (step) => {
    if (!payload) return;
    const steps = payload.target_tokens.length;
    step = Math.max(1, Math.min(steps, Math.round(step) || 1));
    slider.value = step;
    const prefix = payload.target_tokens.slice(0, step), chosen = payload.output_tokens[step - 1];
    $(".step-label").textContent = `step ${step} of ${steps}`;
    $(".step-prefix").innerHTML = chipsHtml([...prefix, chosen], `step ${step}`, prefix.length);
    const {rows, series, caption} = candidateRows(payload, step, chosen);
    $(".step-candidates figcaption").textContent = caption;
    $(".step-candidates .bars").innerHTML = barsHtml(rows, series);
    if (!means) {  // once per payload: each decoder layer's cross-attention, mean over heads (queries x keys)
      const cross = unpack(payload.attention.cross);
      means = Array.from({length: cross.layers}, (_, layer) => cross.mean(layer));
    }
    $(".step-attention figcaption").textContent = `Step ${step}: cross-attention while choosing ${chosen}`;
    drawHeatmap($(".step-attention canvas"), means.map((map) => map[step - 1]),
                means.map((_, i) => `layer ${i + 1}`), payload.source_tokens,
                {xTitle: "Key: English source token (columns)", yTitle: "decoder layer", vmax: 1});
    const beam = $(".step-beam");
    beam.hidden = !payload.beam;
    beam.innerHTML = payload.beam ? beamHtml(payload.beam, step) : "";
    panel.dataset.step = step;
    onStep(step, payload);
  };

  $(".step-prev").addEventListener("click", () => draw(+slider.value - 1));
  $(".step-next").addEventListener("click", () => draw(+slider.value + 1));
  slider.addEventListener("input", () => draw(+slider.value));
  return {
    show: (next) => {
      payload = next;
      means = null;
      slider.max = Math.max(next.target_tokens.length, 1);
      panel.dataset.steps = next.target_tokens.length;
      draw(1);
    },
    step: () => +slider.value,
    clear: () => {
      payload = null;
      means = null;
      panel.dataset.step = panel.dataset.steps = "0";
    },
  };
};
