// The heads tab's two views, drawn in the page (heads.py builds them; the result draws its steps with step_panel.js):
// - the diagnostics: one kind's heads as a layers × heads grid, each cell its number for the measure chosen and its
//   plain-words pattern, from the payload (kind and measure answered here, no request); a head clicked opens it in the
//   Attention tab (the store's "attention" and "tab");
// - the switch-off result: the comparison and the step panel of the run with heads switched off, which the server sends
//   as this view's value (heads.switch_heads_off); a new translation clears it here (it was another sentence's).
import {store} from "../store.js";
import {nameSentence, escapeHtml, viridis, MASKED, radioGroup, chosen} from "../views.js";
import {stepPanel} from "./step_panel.js";

export function mount({element, props, watch}) {
  const setup = props.setup, mount = element.querySelector(".view-mount");  // heads.py: diagnostics_setup, result_setup
  if (setup.view === "diagnostics") {
    mount.innerHTML = '<div class="diagnostics-view"><div class="diagnostics-controls"></div>'
      + '<div class="diagnostics-grid"></div></div>';
    const diagnostics = element.querySelector(".diagnostics-view");
    const {kinds, measures} = setup;
    diagnostics.querySelector(".diagnostics-controls").innerHTML =
      radioGroup("diagnosed-kind", "Attention", kinds, "cross") + radioGroup("measure", "Colour by", measures, "entropy");
    const grid = diagnostics.querySelector(".diagnostics-grid");
    const number = (v) => (v === null || v === undefined ? "–" : v.toFixed(2));
    let payload = null;

    const draw = () => {
      if (!payload) {
        grid.innerHTML = "<p><i>Translate a sentence above: its heads appear here.</i></p>";
        return;
      }
      const kind = chosen(diagnostics, "diagnosed-kind"), measure = chosen(diagnostics, "measure");
      const stats = payload.diagnostics[kind], values = stats[measure];
      const title = Object.fromEntries(kinds)[kind], label = Object.fromEntries(measures);
      const cell = (layer, head) => {
        const v = values[layer][head], words = stats.labels[layer][head];
        const hover = measures.map(([m, name]) => `${name}: ${number(stats[m]?.[layer]?.[head])}`).join("\n");
        const colour = v === null ? MASKED : viridis(v);
        return `<td><button type="button" class="diagnostics-cell" data-layer="${layer + 1}" data-head="${head + 1}"
          style="background: ${colour}; color: ${v !== null && v > 0.6 ? "#111" : v === null ? "#111" : "#fff"}"
          title="layer ${layer + 1} · head ${head + 1} (click to open)\n${escapeHtml(hover)}${words ? `\n${
          escapeHtml(words)}` : ""}"><span class="diagnostics-number">${number(v)}</span><span
          class="diagnostics-label">${escapeHtml(words)}</span></button></td>`;
      };
      grid.innerHTML = `<table class="diagnostics-table" data-kind="${kind}" data-measure="${measure}"><caption>${
        escapeHtml(title)}: ${escapeHtml(label[measure])}, per head, for this sentence<br><small>click a head to open it
        in the Attention tab</small></caption><tr><th></th>${values[0].map((_, h) => `<th scope="col">head ${h + 1}</th>`)
        .join("")}</tr>${values.map((row, l) => `<tr><th scope="row">layer ${l + 1}</th>${
        row.map((_, h) => cell(l, h)).join("")}</tr>`).join("")}</table>`;
    };

    diagnostics.addEventListener("change", draw);
    grid.addEventListener("click", (event) => {
      const button = event.target.closest(".diagnostics-cell");
      if (!button) return;
      store.set({attention: {kind: chosen(diagnostics, "diagnosed-kind"), layer: +button.dataset.layer,
                             head: +button.dataset.head}, tab: "attention"});
    });
    store.on("translation", (next) => {
      payload = next;
      nameSentence(diagnostics, payload);
      draw();
    });
    return;
  }

  mount.innerHTML = `<div class="heads-off-view"><div class="heads-off-message">${setup.not_yet}</div>
    <div class="heads-off-steps" id="ablation-steps" hidden></div></div>`;
  const result = element.querySelector(".heads-off-view");
  const message = result.querySelector(".heads-off-message"), stepsRoot = result.querySelector(".heads-off-steps");
  const notYet = message.innerHTML;
  const panel = stepPanel(stepsRoot, "ablation-step");
  const clear = () => {
    message.innerHTML = notYet;
    stepsRoot.hidden = true;
    panel.clear();
  };
  watch("value", () => {  // a switch-off's answer: the comparison, and the steps of the run with the heads off
    const answer = props.value;
    if (!answer) return clear();
    message.innerHTML = answer.comparison;
    stepsRoot.hidden = !answer.payload;
    if (answer.payload) panel.show(answer.payload);
    else panel.clear();
  });
  store.on("translation", clear);
}
