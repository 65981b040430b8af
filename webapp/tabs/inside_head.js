// "Inside one head": one head's arithmetic for one query token, drawn in the page. The controls (kind, layer, head,
// query token) are answered here; the numbers of one head, for every query token at once, come from the server in
// one request (ask("head_numbers"), answered by inside_head.py), asked only while
// the tab is in view: when it opens, when the kind, layer or head change, when a translation arrives while it is
// shown. A click on another query token is drawn from those numbers, with no request. The head and query token shown
// are the store's "head" ({kind, layer, head, query}: another view writes it to show a layer here; the URL keeps it).
import {store} from "../store.js";
import {
  nameSentence, escapeHtml, rgb, RDBU, diverging, MASKED, ORANGE, sizedCanvas, readableScale, pointerAt,
  keepRadioGroup,
} from "../views.js";

export function mount({element, ask}) {
  element.querySelector(".view-mount").innerHTML = `<div class="inside-head" aria-label="Inside one head" data-state="empty">
<p class="ih-empty">Translate a sentence to look inside one of its heads.</p></div>`;
  const root = element.querySelector(".inside-head");
  const state = {payload: null, kind: "cross", layer: 1, head: 1, query: 0, asked: null};
  const answered = new Map();  // question -> the numbers of that head, for the translation shown
  const GREY = MASKED;

  // --- What is shown and what is asked -------------------------------------------------------------------------
  const shape = (kind) => state.payload.attention[kind].shape;  // [layers, heads, queries, keys]
  const rowTokens = (kind) => state.payload[`${state.payload.kinds[kind].rows}_tokens`];
  const question = () => `${state.payload?.id}|${state.kind}|${state.layer}|${state.head}`;
  const questionOf = (d) => `${d.translation}|${d.kind}|${d.layer}|${d.head}`;
  const visible = () => (element.checkVisibility
    ? element.checkVisibility({visibilityProperty: true, opacityProperty: true})
    : element.offsetParent !== null) && element.getClientRects().length > 0;

  const askForHead = () => {  // one request for the chosen head, unless drawn, on its way, or out of view
    if (!state.payload || answered.has(question()) || state.asked === question() || !visible()) return;
    state.asked = question();
    ask("head_numbers", {translation: state.payload.id, kind: state.kind, layer: state.layer, head: state.head})
      .then(drawAnswer);
  };

  const clampChoices = () => {  // a shallower kind: its last layer; a shorter row of tokens: its first token
    const [layers, heads] = shape(state.kind);
    state.layer = Math.max(1, Math.min(state.layer, layers));
    state.head = Math.max(1, Math.min(state.head, heads));
    if (!(state.query >= 0 && state.query < rowTokens(state.kind).length)) state.query = 0;
  };
  const CHOICES = ["kind", "layer", "head", "query"];
  const publish = () => {  // the choices into the store's "head", where they differ
    const shown = store.get("head");
    if (CHOICES.some((name) => shown?.[name] !== state[name])) {
      store.set({head: Object.fromEntries(CHOICES.map((name) => [name, state[name]]))});
    }
  };

  // --- Numbers and colours -------------------------------------------------------------------------------------
  const fmt = (v, digits = 3) => (v === null || v === -Infinity ? "−∞" : v.toFixed(digits).replace("-", "−"));
  const maxAbs = (rows) => Math.max(1e-9, ...rows.flat().map(Math.abs));

  // A matrix of signed numbers drawn on a canvas: one row per label, one column per dimension, blue-white-red on
  // [-scale, scale]; `marked` rows outlined in orange, `slot` ([first, last] columns) outlined, `separators` lines
  // between column groups. The mouse over a cell writes its number in the readout below.
  const drawMatrix = (figure, rows, labels, options = {}) => {
    const canvas = figure.querySelector("canvas"), readout = figure.querySelector(".ih-readout");
    const ctx = canvas.getContext("2d"), font = "12px ui-monospace, monospace";
    ctx.font = font;
    const cols = rows[0]?.length || 0, scale = options.scale ?? maxAbs(rows);
    const rowH = options.rowH ?? 16, left = Math.ceil(Math.max(0, ...labels.map((l) => ctx.measureText(l).width))) + 10;
    // The columns as wide as the figure's room allows (a phone: narrower, not the whole drawing shrunk), the labels
    // never shown under 10 px: a strip with no room left scrolls sideways in its box.
    const room = Math.min(options.width ?? 480, (figure.closest(".ih-panel").clientWidth || Infinity) - left - 4);
    const cell = Math.max(options.minCell ?? 6, Math.min(16, room / Math.max(cols, 1)));
    const [width, height] = [left + cell * cols + 4, rowH * rows.length + 4];
    sizedCanvas(canvas, width, height, readableScale(12));  // the same context, its state (font) reset
    rows.forEach((row, i) => row.forEach((v, j) => {
      ctx.fillStyle = options.hidden?.[i] ? GREY : diverging(v / scale);
      ctx.fillRect(left + j * cell, 2 + i * rowH, cell + 0.3, rowH - 1);
    }));
    ctx.font = font;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    labels.forEach((label, i) => {
      ctx.fillStyle = options.hidden?.[i] ? "#6b7280" : options.marked?.includes(i) ? "#b45309" : "#222";
      ctx.fillText(label, left - 6, 2 + (i + 0.5) * rowH);
    });
    ctx.strokeStyle = "#222";
    ctx.lineWidth = 1;
    for (const c of options.separators || []) {
      ctx.beginPath();
      ctx.moveTo(left + c * cell, 0);
      ctx.lineTo(left + c * cell, height);
      ctx.stroke();
    }
    ctx.strokeStyle = ORANGE;
    ctx.lineWidth = 3;
    for (const i of options.marked || []) ctx.strokeRect(left + 1, 3 + i * rowH, cell * cols - 2, rowH - 3);
    if (options.slot) ctx.strokeRect(left + options.slot[0] * cell, 1, (options.slot[1] - options.slot[0] + 1) * cell, height - 2);
    if (store.testing) canvas.dataset.values = JSON.stringify(rows);  // what is drawn, for the tests only
    canvas.onmousemove = (event) => {
      const [x, y] = pointerAt(canvas, event);
      const [i, j] = [Math.floor((y - 2) / rowH), Math.floor((x - left) / cell)];
      readout.textContent = i >= 0 && i < rows.length && j >= 0 && j < cols
        ? `${labels[i].trim()} · dimension ${(options.firstColumn ?? 0) + j}: ${fmt(rows[i][j], 4)}` : "";
    };
    canvas.onmouseleave = () => { readout.textContent = ""; };
  };

  // The colour key of the strips of a panel: blue for −scale, white for 0, red for +scale.
  const RDBU_CSS = `linear-gradient(to right, ${RDBU.map(rgb).join(", ")})`;
  const legend = (name, scale, what) => {  // scale null: each strip its own (−max to +max)
    const slot = root.querySelector(`.ih-legend[data-for="${name}"]`);
    const [low, high] = scale === null ? ["−max", "+max"] : [fmt(-scale, 2), `+${fmt(scale, 2)}`];
    slot.dataset.scale = scale ?? "own";
    slot.innerHTML = `<span class="ih-legend-end">${low}</span><span class="ih-legend-bar" style="background: ${
      RDBU_CSS}"></span><span class="ih-legend-end">${high}</span><span class="ih-legend-note">${what}: blue
      below 0, white 0, red above 0; point at a cell to read its number</span>`;
  };

  const figureHtml = (name, caption) => `<div class="ih-matrix" data-name="${name}"><span class="ih-caption">${
    caption}</span><div class="ih-scroll"><canvas role="img" aria-label="${escapeHtml(caption.replace(/<[^>]+>/g, ""))}"></canvas></div>
    <span class="ih-readout" aria-live="polite"></span></div>`;
  const figure = (name) => root.querySelector(`.ih-matrix[data-name="${name}"]`);

  // --- The page's parts ----------------------------------------------------------------------------------------
  const drawControls = () => {  // each group redrawn only when its choices change (keepRadioGroup)
    const p = state.payload, [layers, heads] = shape(state.kind), controls = root.querySelector(".ih-controls");
    if (!controls.querySelector("[data-group]")) {
      controls.innerHTML = ["ih-kind", "ih-layer", "ih-head"].map((g) => `<span data-group="${g}"></span>`).join("");
    }
    const group = (name) => controls.querySelector(`[data-group="${name}"]`);
    keepRadioGroup(group("ih-kind"), "ih-kind", "Attention",
      Object.entries(p.kinds).map(([k, spec]) => [k, spec.title]), state.kind);
    keepRadioGroup(group("ih-layer"), "ih-layer", "Layer",
      Array.from({length: layers}, (_, i) => [i + 1, `${i + 1}`]), state.layer);
    keepRadioGroup(group("ih-head"), "ih-head", "Head", Array.from({length: heads}, (_, i) => [i + 1, `${i + 1}`]),
      state.head);
    keepRadioGroup(root.querySelector(".ih-queries"), "ih-query", "Query token (click one)",
      rowTokens(state.kind).map((t, i) => [i, t]), state.query);
  };

  const scoreTable = (d, i) => {  // per key: q·k, ÷ √d_k, M, − max, exp, weight; then Σ exp and Σ w
    const hidden = d.masked[i], w = d.weights[i], exps = d.exps[i], root_d_k = Math.sqrt(d.d_k);
    const visibleScaled = d.scaled[i].filter((_, j) => !hidden[j]);
    const top = Math.max(...visibleScaled), sum = exps.reduce((s, e) => s + e, 0);
    const best = w.indexOf(Math.max(...w));
    const rows = d.key_tokens.map((token, j) => `<tr class="${hidden[j] ? "ih-hidden" : j === best ? "ih-top" : ""}">
      <td class="ih-key">${escapeHtml(token)}</td><td>${fmt(d.scores[i][j])}</td><td>${fmt(d.scaled[i][j])}</td>
      <td>${hidden[j] ? "−∞" : "0"}</td><td>${hidden[j] ? "−∞" : fmt(d.scaled[i][j] - top)}</td>
      <td class="ih-exp">${fmt(exps[j], 4)}</td><td class="ih-weight"><div class="ih-w"><span class="ih-bar"
      style="width: ${(w[j] * 60).toFixed(1)}px"></span><span>${fmt(w[j])}</span></div></td></tr>`).join("");
    const sumWeights = w.reduce((s, v) => s + v, 0);
    return `<p>The largest visible score is <b>max = ${fmt(top)}</b> (key <code>${escapeHtml(d.key_tokens[
      d.scaled[i].indexOf(top)])}</code>). Softmax subtracts it from every score before exp, as softmax
      implementations do: exp(s_j − max) is then at most 1, so it cannot overflow (exp(89) is already too large for
      float32) and the weights do not change — the factor exp(−max) is in every exp and in their sum, so it cancels.</p>
      <div class="ih-scroll"><table class="ih-table" aria-label="From score to weight, one row per key">
      <thead><tr><th class="ih-key">key j</th><th>q·k</th><th>s = q·k ÷ ${fmt(root_d_k, 2)}</th><th>M</th>
      <th>s + M − max</th><th>exp(s + M − max)</th><th>w = exp ÷ Σ</th></tr></thead><tbody>${rows}</tbody>
      <tfoot><tr><td class="ih-key">Σ</td><td></td><td></td><td></td><td></td>
      <td class="ih-exp-sum">Σ exp = ${fmt(sum, 4)}</td><td class="ih-weight-sum">Σ w = ${fmt(sumWeights)}</td></tr>
      </tfoot></table></div>`;
  };

  const weightedSum = (d, i) => {  // each value row scaled by its weight, the largest contributions marked, their sum
    const w = d.weights[i], hidden = d.masked[i];
    const rows = d.v.map((v, j) => v.map((x) => w[j] * x));
    const size = rows.map((r) => Math.sqrt(r.reduce((s, x) => s + x * x, 0)));
    const order = size.map((s, j) => j).filter((j) => !hidden[j] && w[j] > 0).sort((a, b) => size[b] - size[a]);
    const marked = order.filter((j) => size[j] >= 0.25 * size[order[0]]).slice(0, 3);  // the largest w_j v_j
    const sum = d.v[0].map((_, c) => rows.reduce((s, r) => s + r[c], 0));
    const difference = Math.max(...sum.map((x, c) => Math.abs(x - d.output[i][c])));
    return {rows, marked, sum, difference,
            labels: d.key_tokens.map((t, j) => `${t}  ${hidden[j] ? "hidden" : `${fmt(w[j])} ×`}`)};
  };

  const formula = (d, i, top) => {
    const p = state.payload, token = d.query_tokens[i];
    const chosenToken = d.kind === "encoder" ? "" : ` From this position the decoder chose <code>${
      escapeHtml(p.output_tokens[i] ?? "")}</code>.`;
    const hidden = d.masked[i].reduce((s, m) => s + m, 0);
    const why = d.kind === "decoder" ? ": later positions, not yet written at this one" : "";
    return `<h4>softmax(q·Kᵀ / √d_k + M) · V</h4>
      <p>Query <code>${escapeHtml(token)}</code> (position ${i + 1}).${chosenToken}</p><ul>
      <li><b>q = x W_Q + b_Q</b>: the top strip of ①, d_k = ${d.d_k} numbers.</li>
      <li><b>K = X W_K + b_K</b>, <b>V = X W_V + b_V</b>: one row per key token in ①.</li>
      <li><b>q·Kᵀ / √d_k</b> (÷ ${fmt(Math.sqrt(d.d_k), 2)}): the scores s_j of ②; ÷ √d_k keeps them from growing
        with d_k and saturating the softmax.</li>
      <li><b>M</b>: 0 for a visible key, −∞ for a hidden one (${hidden} hidden here${why}).</li>
      <li><b>softmax</b>: exp(s_j − max) ÷ Σ exp, the weights w_j of ②: ≥ 0, summing to 1, exactly 0 for hidden keys.</li>
      <li><b>· V</b>: Σ_j w_j v_j, the rows of ③ added up: the head's output, ${d.d_k} numbers.</li>
      <li>Then: beside the other heads' outputs (Concat), × W_O (+ b_O), added to the residual stream: ④.</li></ul>
      <p>Most weight here: <code>${escapeHtml(d.key_tokens[top])}</code>, s = ${fmt(d.scaled[i][top])} → weight
      ${fmt(d.weights[i][top])}.</p>`;
  };

  const drawNumbers = () => {  // the chosen query's figures, from the numbers of the chosen head
    const d = answered.get(question()), i = state.query, p = state.payload;
    const status = root.querySelector(".ih-status"), body = root.querySelector(".ih-body");
    if (!d) {
      status.textContent = "Loading this head's numbers…";
      body.hidden = true;
      return;
    }
    status.textContent = "";
    body.hidden = false;
    const top = d.weights[i].indexOf(Math.max(...d.weights[i]));
    root.querySelector(".ih-title").textContent = `${p.kinds[d.kind].title} · layer ${d.layer} · head ${d.head} · ` +
      `query ${d.query_tokens[i]}`;
    const vScale = maxAbs([d.q[i], ...d.k, ...d.v]);
    const keys = d.key_tokens, hidden = d.masked[i].map(Boolean);
    drawMatrix(figure("q"), [d.q[i]], [d.query_tokens[i]], {scale: vScale});
    drawMatrix(figure("k"), d.k, keys, {scale: vScale, hidden});
    drawMatrix(figure("v"), d.v, keys, {scale: vScale, hidden});
    legend("qkv", vScale, "colours of q, K and V (one scale, columns are the d_k dimensions)");
    root.querySelector(".ih-scores").innerHTML = scoreTable(d, i);
    const ws = weightedSum(d, i), scale = maxAbs([...ws.rows, ws.sum, d.output[i]]);
    drawMatrix(figure("wv"), ws.rows, ws.labels, {scale, hidden, marked: ws.marked});
    drawMatrix(figure("sum"), [ws.sum, d.output[i]], ["Σ_j w_j v_j (the rows above, added)", "head output (the model's)"], {scale});
    legend("output", scale, "colours of w_j v_j and their sum");
    root.querySelector(".ih-sum-note").innerHTML = `Marked: the ${ws.marked.length === 1 ? "row that contributes" : `${ws.marked.length} rows that
      contribute`} most (the largest w_j v_j, up to 3). The sum equals the head's output: they differ by at most <span class="ih-difference">${
      ws.difference.toExponential(1)}</span> (rounding of the numbers sent).`;
    const start = (d.head - 1) * d.d_k, width = d.concat[i].length;
    const separators = Array.from({length: width / d.d_k - 1}, (_, h) => (h + 1) * d.d_k);
    drawMatrix(figure("concat"), [d.concat[i]], ["Concat(head_1 … head_n)"],
               {slot: [start, start + d.d_k - 1], separators, minCell: 2, width: 560});
    drawMatrix(figure("share"), [d.contribution[i]], ["this head × its rows of W_O"], {minCell: 2, width: 560});
    drawMatrix(figure("out"), [d.attention_output[i]], ["Concat · W_O + b_O"], {minCell: 2, width: 560});
    legend("next", null, "each strip on its own scale (its largest |number|)");
    root.querySelector(".ih-formula").innerHTML = formula(d, i, top);
    root.dataset.state = "drawn";
    root.dataset.query = i;
  };

  const drawAll = () => {  // the page for a new translation, kind, layer or head
    if (!state.payload) {
      root.dataset.state = "empty";
      root.innerHTML = '<p class="ih-empty">Translate a sentence to look inside one of its heads.</p>';
      return;
    }
    if (!root.querySelector(".ih-controls")) {
      root.innerHTML = `<div class="ih-controls"></div><div class="ih-queries"></div><p class="ih-status"></p>
        <div class="ih-body" hidden><div class="ih-figures"><p class="ih-title"></p>
        <section class="ih-panel"><h4>① q, K and V: the query's numbers, a key and a value per token</h4>
          <div class="ih-matrices">${figureHtml("q", "q = x W_Q + b_Q")}${figureHtml("k", "K = X W_K + b_K")}${
          figureHtml("v", "V = X W_V + b_V")}</div><div class="ih-legend" data-for="qkv"></div></section>
        <section class="ih-panel"><h4>② From score to weight: the softmax, one row per key</h4>
          <div class="ih-scores"></div></section>
        <section class="ih-panel"><h4>③ The output: Σ_j w_j v_j, each value row scaled by its weight</h4>
          ${figureHtml("wv", "w_j × v_j, one row per key")}${figureHtml("sum", "their sum, and the model's output")}
          <div class="ih-legend" data-for="output"></div><p class="ih-sum-note"></p></section>
        <section class="ih-panel"><h4>④ Where the output goes: into its slot of Concat, through W_O</h4>
          ${figureHtml("concat", "every head's output side by side (this head's slot outlined)")}${
          figureHtml("share", "this head's share of the sub-layer's output")}${
          figureHtml("out", "the attention output, added to the residual stream")}
          <div class="ih-legend" data-for="next"></div></section>
        </div><div class="ih-formula"></div></div>`;
    }
    clampChoices();
    if (store.get("head")) publish();  // what another view or the URL asked, as clamped to this translation
    drawControls();
    drawNumbers();
    askForHead();
  };

  // --- Events --------------------------------------------------------------------------------------------------
  root.addEventListener("change", (event) => {
    const name = event.target.name, value = event.target.value;
    if (name === "ih-query") {  // drawn here, no request
      state.query = +value;
      publish();
      drawNumbers();
      return;
    }
    if (name === "ih-kind") state.kind = value;
    else if (name === "ih-layer") state.layer = +value;
    else if (name === "ih-head") state.head = +value;
    else return;
    clampChoices();
    publish();
    drawControls();
    drawNumbers();
    askForHead();
  });

  const drawAnswer = (d) => {  // an answer: drawn if it answers the question now on screen
    if (!d || !state.payload || d.translation !== state.payload.id) return;
    if (questionOf(d) === state.asked) state.asked = null;
    answered.set(questionOf(d), d);
    if (questionOf(d) === question()) drawNumbers();
  };

  // Another view (the model map's attention boxes: {kind, layer}) or the URL shows a head here: 1-based layer and
  // head, the query token from 0; what is not given stays as it is. Subscribed first: a head the URL asked
  // for is taken before the first translation is drawn.
  store.on("head", ({kind, layer, head = state.head, query = state.query}) => {
    if (CHOICES.every((name, i) => state[name] === [kind, layer, head, query][i])) return;
    Object.assign(state, {kind, layer, head, query});
    if (state.payload) drawAll();
  });

  store.on("translation", (payload) => {
    state.payload = payload;
    state.asked = null;
    answered.clear();
    drawAll();
    nameSentence(root.parentElement, payload);
  });

  // The tab opened (its button clicked, or the arrow keys on the tab bar): ask once it is shown.
  document.addEventListener("click", (event) => {
    if (!event.target.closest?.("#tab-head-button")) return;
    let tries = 0;
    const poll = () => {
      if (visible()) askForHead();
      else if (++tries < 40) setTimeout(poll, 25);
    };
    requestAnimationFrame(poll);
  }, true);
  new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && askForHead()).observe(element);
}
