// How much each head matters (the model directory's head_importance.json; heads.py, importance_view): per kind, a
// layers x heads heatmap of the dev BLEU lost when that head alone is switched off, red where the translation gets
// worse without it, on one scale for all kinds. A head clicked ticks its box among the heads to switch off (clicked
// again, unticks it); the mouse over a head says its BLEU with and without it.
import {exposeForTests} from "../store.js";
import {diverging, drawHeatmap, cellAt} from "../views.js";

export function mount({element, props}) {
  element.querySelector(".view-mount").innerHTML = '<div class="importance-view"><div class="importance-maps"></div></div>';
  const view = element.querySelector(".importance-view");
  const data = props.setup;  // {bleu, limit, kinds: [[kind, title, drop (layers x heads)]]} (heads.py: importance_data)
  view.querySelector(".importance-maps").innerHTML = data.kinds.map(([kind]) =>
    `<figure class="importance-map" data-kind="${kind}"><canvas></canvas></figure>`).join("");
  for (const [kind, title, drop] of data.kinds) {
    const canvas = view.querySelector(`.importance-map[data-kind="${kind}"] canvas`);
    const box = drawHeatmap(canvas, drop, drop.map((_, i) => `layer ${i + 1}`), drop[0].map((_, h) => `head ${h + 1}`), {
      title, cell: 46, vmin: -data.limit, vmax: data.limit, color: (v) => diverging(v / data.limit), annotate: 1,
    });
    exposeForTests(canvas, {__box: box});
    const head = (event) => {
      const cell = cellAt(box, event);
      return cell && cell.row !== undefined && cell.col !== undefined ? cell : null;
    };
    canvas.addEventListener("click", (event) => {
      const cell = head(event);
      if (!cell) return;
      // Gradio's public structure: a gr.CheckboxGroup is native checkboxes, each named after its choice's value.
      document.querySelector(`#off-${kind} input[type="checkbox"][name="${kind} L${cell.row + 1} H${cell.col + 1}"]`)
        ?.click();
    });
    canvas.addEventListener("mousemove", (event) => {
      const cell = head(event);
      const d = cell ? drop[cell.row][cell.col] : null;
      canvas.title = cell ? `${kind} layer ${cell.row + 1} · head ${cell.col + 1}: BLEU ${data.bleu.toFixed(1)} → ${
        (data.bleu - d).toFixed(1)} without it (drop ${d.toFixed(2)}); click to tick it` : "";
      canvas.style.cursor = cell ? "pointer" : "default";
    });
  }
}
