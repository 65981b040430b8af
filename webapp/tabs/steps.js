// "Decoding step by step": the step panel (step_panel.js) of each translation, drawn in the page; and the panel that
// sets a gradient attribution beside the cross-attention. The attribution is the one thing asked of the server: when
// its panel opens or its method changes (ask("attribute"), answered by steps.attribute with the numbers of every step
// at once), so that moving the step afterwards redraws here, with no request. A new translation clears it.
import {store} from "../store.js";
import {nameSentence, escapeHtml, drawHeatmap, radioGroup, chosen} from "../views.js";
import {stepPanel} from "./step_panel.js";

export function mount({element, props, ask}) {
  // the view's markup: the step panel (drawn by step_panel.js), then the attribution panel, closed
  element.querySelector(".view-mount").innerHTML = `<div class="steps-view">
<p class="steps-empty"><i>Translate a sentence above: its decoding steps appear here.</i></p>
<div class="step-root"></div>
<details class="attribution-panel" id="attribution-panel">
<summary>Attention is not explanation: compare with a gradient attribution</summary>
<div class="attribution-help">${props.setup.help}</div>
<div class="attribution-controls"></div>
<p class="attribution-status" aria-live="polite"></p>
<figure class="attribution-figure" id="attribution" hidden><figcaption></figcaption><canvas></canvas></figure>
</details></div>`;
  const root = element.querySelector(".steps-view");
  const details = root.querySelector(".attribution-panel");
  const figure = root.querySelector(".attribution-figure"), status = root.querySelector(".attribution-status");
  const METHODS = [["gradient_x_input", "gradient × input"], ["integrated_gradients", "integrated gradients"]];
  root.querySelector(".attribution-controls").innerHTML =
    radioGroup("attribution-method", "Attribution", METHODS, METHODS[0][0]);
  const method = () => chosen(root, "attribution-method");
  let current = null;  // the payload shown
  let results = {};  // method -> the attribution of the sentence shown

  const signed = (rho) => (rho === null ? "undefined" : `${rho >= 0 ? "+" : ""}${rho.toFixed(2)}`);

  const drawAttribution = (step) => {  // the chosen token's two rows: cross-attention (mean) and the attribution
    const a = results[method()];
    figure.hidden = !a;
    if (!a) return;
    const row = Math.min(step, a.output_tokens.length) - 1, rho = a.agreement[row];
    figure.querySelector("figcaption").innerHTML = `Step ${row + 1}: where the decoder looked vs what the choice of ${
      escapeHtml(a.output_tokens[row])} depended on<br><small>rank agreement (Spearman ρ) ${signed(rho)}${
      rho === null ? " (one source token)" : ""} · over the sentence ${signed(a.mean_agreement)} · ${
      a.seconds.toFixed(2)} s</small>`;
    drawHeatmap(figure.querySelector("canvas"), [a.attention[row], a.scores[row]],
                ["cross-attention (mean)", a.method_name], a.source_tokens, {xTitle: "English source token"});
    figure.dataset.step = row + 1;
    figure.dataset.method = a.method;
  };

  const panel = stepPanel(root.querySelector(".step-root"), "step", drawAttribution);

  const askForAttribution = () => {  // the open panel's method, computed once per sentence and method
    if (!details.open || !current) return;
    if (results[method()]) {
      status.textContent = "";
      drawAttribution(panel.step());
      return;
    }
    figure.hidden = true;
    status.textContent = "Computing the attribution of every step…";
    ask("attribute", {method: method()}).then(drawAnswer);
  };
  details.addEventListener("toggle", askForAttribution);
  root.querySelector(".attribution-controls").addEventListener("change", askForAttribution);
  status.addEventListener("click", (event) => event.target.closest("button") && askForAttribution());

  const drawAnswer = (answer) => {  // the server's answer: drawn if it is about the sentence shown
    const a = answer?.attribution;
    const same = (x, y) => x.length === y.length && x.every((t, i) => t === y[i]);
    if (!a || !current || !same(a.source_tokens, current.source_tokens)
        || !same(a.target_tokens, current.target_tokens)) return;
    results[a.method] = a;
    if (a.method === method()) {
      status.textContent = "";
      drawAttribution(panel.step());
    }
  };

  store.on("translation", (payload) => {
    current = payload;
    nameSentence(root, payload);
    results = {};
    figure.hidden = true;
    status.innerHTML = payload && details.open ? 'A new sentence: <button type="button" class="attribution-ask">'
      + "Compute its attribution</button>" : "";
    root.querySelector(".steps-empty").hidden = !!payload;
    root.querySelector(".step-root").hidden = !payload;
    if (payload) panel.show(payload);
    else panel.clear();
  });
}
