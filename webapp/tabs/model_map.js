// "Model map": the paper's Figure 1 drawn for the loaded model (model_map.py), each box opening its live numbers and
// its code. The map and every box's first view are drawn from the translation's payload (payload.map_json; the
// store's "translation"); a box's vectors (embedding rows, a norm's input and output, the feed-forward's hidden units)
// come in one request the first time it is opened for a translation (ask("map_numbers"), answered by model_map.py).
// The output box's temperature, top-k and top-p are redrawn here, with no request.
// Root's data-open (the box shown) and data-state ("drawn" once its numbers are on screen) say what is shown; for the
// tests only (exposeForTests), data-draw-ms and the panel's canvases' `__rows` (the vectors drawn).
import {store, exposeForTests} from "../store.js";
import {
  nameSentence, dequantize, escapeHtml, diverging, ORANGE, sizedCanvas, drawHeatmap, pointerAt, cellAt, radioGroup,
} from "../views.js";

// The view's markup: the map (drawn below from the setup) and the panel its boxes open.
const mapMarkup = () => `<div class="model-map-view"><div class="model-map" aria-label="Model map" data-state="empty">
<div class="map-figure"><p class="map-note map-caption"></p><p class="map-note map-scroll-cue">⇆ The map is wider than
  the screen: scroll it sideways for the decoder and the output.</p><div class="map-svg-scroll"><svg class="map-svg"
  role="group" aria-label="The Transformer of this app, box by box"></svg></div><p class="map-note map-norm-note"></p>
</div>
<div class="map-panel" aria-live="polite"><p class="map-empty">Click a box of the map to see its numbers for the
translated sentence, and the code that computes them.</p></div>
</div></div>`;

export function mount({element, props, ask}) {
  element.querySelector(".view-mount").innerHTML = mapMarkup();
  const root = element.querySelector(".model-map");
  const $ = (selector) => root.querySelector(selector);
  const setup = props.setup;  // model_map.py: setup_json
  const svg = $(".map-svg"), panel = $(".map-panel");
  const NS = "http://www.w3.org/2000/svg";
  const state = {payload: null, open: null, layer: {encoder: 1, decoder: 1}, token: 0, step: 0,
                 temperature: 1, topK: 0, topP: 1, asked: null};
  const answered = new Map();  // question -> the box's vectors, for the translation shown
  const fmt = (v, digits = 3) => (v === null || v === undefined ? "–" : (+v).toFixed(digits).replace("-", "−"));
  const side = (stack) => (stack === "encoder" ? "English" : "Italian");
  const tokensOf = (stack) => (stack === "encoder" ? state.payload.source_tokens : state.payload.target_tokens);
  const lengthOf = (stack) => (state.payload ? tokensOf(stack).length : (stack === "encoder" ? "S" : "T"));
  const shape = (...dims) => `(${dims.join(", ")})`;
  const sublayers = (stack) => setup.sublayers[stack];
  const sublayerIndex = (stack, layer, kind) => (layer - 1) * sublayers(stack).length + sublayers(stack).indexOf(kind);
  const sublayerName = (stack, i) => `L${Math.floor(i / sublayers(stack).length) + 1} ${
    sublayers(stack)[i % sublayers(stack).length]}`;

  // --- The map -------------------------------------------------------------------------------------------------------
  // Each box: {id, box (what it opens), stack, kind (the sublayer, for norms and adds), x, y, w, h, label, round}.
  const COL = {encoder: 150, decoder: 420}, W = 200, H = 30;
  const STACK_ROWS = Object.fromEntries(["encoder", "decoder"].map((stack) =>  // from the bottom of a layer up
    [stack, setup.sublayers[stack].flatMap((kind) => [["norm", kind], ["sublayer", kind], ["add", kind]])]));
  const ROW = 40, INPUT_Y = 760, LAYER_TOP = (stack) => 640 - STACK_ROWS[stack].length * ROW;
  const layout = () => {
    const boxes = [];
    for (const stack of ["encoder", "decoder"]) {
      const x = COL[stack];
      boxes.push({id: `${stack}-embedding`, box: "embedding", stack, x, y: 712,
                  label: stack === "encoder" ? "Input embedding × √d_model" : "Output embedding × √d_model"});
      boxes.push({id: `${stack}-position`, box: "position", stack, x, y: 668, round: true, label: "+"});
      STACK_ROWS[stack].forEach(([what, kind], i) => {
        const y = 620 - i * ROW;
        if (what === "norm") boxes.push({id: `${stack}-norm-${kind}`, box: "norm", stack, kind, x, y, label: "Layer norm"});
        else if (what === "add") boxes.push({id: `${stack}-add-${kind}`, box: "residual", stack, kind, x, y, round: true,
                                             label: "+"});
        else {
          const attention = kind !== "feed-forward";
          const label = attention ? `${kind[0].toUpperCase()}${kind.slice(1)}, h=${setup.n_heads}`
            : `Feed-forward ${setup.d_model}→${setup.d_ff}→${setup.d_model}`;
          boxes.push({id: `${stack}-${kind.replace(/ /g, "-")}`, box: attention ? "attention" : "feed-forward", stack,
                      kind, x, y, label, fill: attention ? "#fde68a" : "#bfdbfe"});
        }
      });
      boxes.push({id: `${stack}-final-norm`, box: "final-norm", stack, x, y: LAYER_TOP(stack) - 24,
                  label: "Layer norm (final)"});
    }
    const top = LAYER_TOP("decoder") - 24;
    boxes.push({id: "linear", box: "output", code: "linear", stack: "decoder", x: COL.decoder, y: top - 48,
                label: `Linear ${setup.d_model}→${setup.vocab_size}${setup.tied ? " (tied)" : ""}`, fill: "#ddd6fe"});
    boxes.push({id: "softmax", box: "output", code: "softmax", stack: "decoder", x: COL.decoder, y: top - 96,
                label: "Softmax", fill: "#bbf7d0"});
    return boxes;
  };
  const BOXES = layout();
  const byId = Object.fromEntries(BOXES.map((b) => [b.id, b]));

  const el = (name, attributes, text) => {
    const node = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attributes)) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const arrow = (points, label, at) => {
    const group = el("g", {});
    group.append(el("polyline", {class: "arrow", points: points.map((p) => p.join(",")).join(" ")}));
    if (label) group.append(el("text", {class: "shape", x: at[0], y: at[1]}, label));
    return group;
  };
  const drawMap = () => {
    const S = lengthOf("encoder"), T = lengthOf("decoder"), d = setup.d_model;
    svg.setAttribute("viewBox", `0 ${LAYER_TOP("decoder") - 180} 585 ${980 - LAYER_TOP("decoder")}`);
    svg.replaceChildren(el("defs", {}));
    svg.firstChild.innerHTML = `<marker id="map-arrowhead" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7"
      markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#4b5563"/></marker>`;
    for (const stack of ["encoder", "decoder"]) {  // the N× layer, shaded
      const x = COL[stack], rows = STACK_ROWS[stack].length, n = setup.layers[stack];
      svg.append(el("rect", {class: "group", x: x - W / 2 - 34, y: 640 - rows * ROW + 4, width: W + 68,
                             height: rows * ROW + 8, rx: 10}));
      svg.append(el("text", {class: "caption", x: stack === "encoder" ? x - W / 2 - 20 : x + W / 2 + 26,
                             y: 640 - rows * ROW / 2, "text-anchor": "middle",
                             transform: `rotate(-90 ${stack === "encoder" ? x - W / 2 - 20 : x + W / 2 + 26} ${
                               640 - rows * ROW / 2})`}, `${n}× ${stack} layer`));
    }
    const [encTop, decTop] = [LAYER_TOP("encoder") - 24, LAYER_TOP("decoder") - 24];
    const L = (stack) => lengthOf(stack);
    for (const stack of ["encoder", "decoder"]) {  // the stream: tokens up to the final norm, each step an arrow
      const x = COL[stack];
      svg.append(el("text", {class: "caption", x, y: INPUT_Y + 28, "text-anchor": "middle"},
                     stack === "encoder" ? "English tokens" : "Italian so far (<s> first)"));
      svg.append(arrow([[x, INPUT_Y + 14], [x, 728]], shape(1, L(stack)), [x + 6, INPUT_Y + 6]));
      svg.append(arrow([[x, 697], [x, 680]], shape(1, L(stack), d), [x + 14, 692]));
      svg.append(arrow([[x, 656], [x, 636]], "", []));
      svg.append(el("text", {class: "caption", x: x + 20, y: 672}, "positional encoding"));
      STACK_ROWS[stack].forEach(([what], i) => {
        const y = 620 - i * ROW;
        const next = [[x, y - (what === "add" ? 12 : 15)], [x, y - ROW + 16]];
        if (i + 1 < STACK_ROWS[stack].length) svg.append(arrow(next, "", []));
        if (what === "norm") {  // the residual: around the norm and the sublayer, into the add
          const skip = x - W / 2 - 14, yAdd = y - 2 * ROW;
          svg.append(arrow([[x, y + 19], [skip, y + 19], [skip, yAdd], [x - 13, yAdd]], "", []));
        }
      });
      const layerTop = 620 - (STACK_ROWS[stack].length - 1) * ROW;
      svg.append(arrow([[x, layerTop - 12], [x, (stack === "encoder" ? encTop : decTop) + 16]],
                       shape(1, L(stack), d), [x + 6, layerTop - 16]));
    }
    // The encoder's output (memory) into every decoder layer's cross-attention; the decoder's up to the output.
    const cross = byId["decoder-cross-attention"];
    svg.append(arrow([[COL.encoder, encTop - 15], [COL.encoder, encTop - 34], [275, encTop - 34], [275, cross.y],
                      [cross.x - W / 2, cross.y]], `memory ${shape(1, L("encoder"), d)}`, [COL.encoder - 60, encTop - 40]));
    svg.append(arrow([[COL.decoder, decTop - 15], [COL.decoder, decTop - 33]], "", []));
    svg.append(arrow([[COL.decoder, decTop - 63], [COL.decoder, decTop - 81]], shape(1, L("decoder"), setup.vocab_size),
                     [COL.decoder + 8, decTop - 70]));
    svg.append(arrow([[COL.decoder, decTop - 111], [COL.decoder, decTop - 134]], "", []));
    svg.append(el("text", {class: "caption", x: COL.decoder, y: decTop - 140, "text-anchor": "middle"},
                   `Next-token probabilities ${shape(1, L("decoder"), setup.vocab_size)}`));
    for (const b of BOXES) {
      const w = b.round ? 24 : W, group = el("g", {class: `box${state.open?.id === b.id ? " open" : ""}`, tabindex: 0,
                                                    role: "button", "data-box": b.id, "aria-label": boxTitle(b)});
      group.append(b.round ? el("circle", {cx: b.x, cy: b.y, r: 12, fill: b.box === "residual" ? "#fecaca" : "#fff"})
        : el("rect", {x: b.x - w / 2, y: b.y - H / 2, width: w, height: H, rx: 6, fill: b.fill ?? "#e5e7eb"}));
      group.append(el("text", {x: b.x, y: b.y + 4, "text-anchor": "middle"}, b.label));
      group.append(el("title", {}, boxTitle(b)));
      svg.append(group);
    }
    $(".map-caption").textContent = `This model: d_model ${d}, h ${setup.n_heads} heads of d_k ${setup.d_k}, d_ff ${
      setup.d_ff}, vocabulary ${setup.vocab_size}; ${setup.layers.encoder} encoder and ${setup.layers.decoder
      } decoder layers. S = ${S} English, T = ${T} Italian tokens. Click a box.`;
    $(".map-norm-note").textContent = setup.note;
  };
  const boxTitle = (b) => {
    const layer = state.layer[b.stack];
    return ({embedding: `${side(b.stack)} embedding`, position: `Positional encoding (${side(b.stack)})`,
             norm: `Layer norm before the ${b.kind}, ${b.stack} layer ${layer}`,
             residual: `Residual stream of the ${b.stack} (the add after the ${b.kind})`,
             attention: `${b.kind} (${b.stack} layer ${layer})`, "feed-forward": `Feed-forward, ${b.stack} layer ${layer}`,
             "final-norm": `Final layer norm of the ${b.stack}`, output: b.code === "linear"
               ? "Linear: the output layer (tied to the embedding)" : "Softmax: next-token probabilities"})[b.box];
  };

  // --- Opening a box: what it asks, then its panel ---------------------------------------------------------------------
  const request = () => {  // the vectors the open box needs: {box, stack, index}, or null (all in the payload)
    const b = state.open;
    if (!b) return null;
    const layer = state.layer[b.stack];
    if (b.box === "embedding" || b.box === "position") return {box: "embedding", stack: b.stack, index: 0};
    if (b.box === "norm") return {box: "norm", stack: b.stack, index: sublayerIndex(b.stack, layer, b.kind)};
    const last = setup.layers[b.stack] * sublayers(b.stack).length;  // the final norm, after every sublayer's
    if (b.box === "final-norm") return {box: "norm", stack: b.stack, index: last};
    if (b.box === "feed-forward") return {box: "feed-forward", stack: b.stack, index: layer - 1};
    return null;
  };
  const keyOf = (q) => `${q.translation}|${q.box}|${q.stack}|${q.index}`;
  const visible = () => element.getClientRects().length > 0;  // a hidden tab's view has no box
  const askForBox = () => {  // one request for the open box's vectors, unless here, on their way, or the map out of view
    const q = request();
    if (!q || !state.payload || !visible()) return;
    const key = keyOf({translation: state.payload.id, ...q});
    if (answered.has(key) || state.asked === key) return;
    state.asked = key;
    ask("map_numbers", {translation: state.payload.id, shown: state.payload.request, ...q}).then(drawAnswer);
  };
  const numbers = () => {  // the open box's vectors, when they have come
    const q = request();
    return q && state.payload ? answered.get(keyOf({translation: state.payload.id, ...q})) : null;
  };

  const open = (id) => {  // the box open is the store's "box" (the URL keeps it)
    state.open = byId[id];
    if (store.get("box") !== id) store.set({box: id});
    svg.querySelectorAll(".box").forEach((g) => g.classList.toggle("open", g.dataset.box === id));
    if (state.open.box === "attention") return drawPanel();
    askForBox();
    drawPanel();
  };
  const openAndShow = (id) => {  // where the panel is under the map (a phone), brought into view
    open(id);
    if (panel.getBoundingClientRect().top > window.innerHeight * 0.8) panel.scrollIntoView({block: "start"});
  };
  svg.addEventListener("click", (event) => {
    const group = event.target.closest?.(".box");
    if (group) openAndShow(group.dataset.box);
  });
  svg.addEventListener("keydown", (event) => {
    const group = event.target.closest?.(".box");
    if (group && (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();
      openAndShow(group.dataset.box);
    }
  });

  // --- The panel's parts -----------------------------------------------------------------------------------------------
  const codeHtml = (name) => (setup.code[name] || []).map((c, k) => `<details class="map-code"${k ? "" : " open"}>
    <summary>Code: <code>${
    escapeHtml(c.name)}</code> — ${escapeHtml(c.file)}, lines ${c.start}–${c.end}</summary><pre class="map-source"
    data-file="${escapeHtml(c.file)}" data-start="${c.start}">${c.lines.map((line, i) => `<span class="ln">${c.start + i
    }</span>${escapeHtml(line)}`).join("\n")}</pre></details>`).join("");
  const codeName = (b) => b.code ?? ({attention: b.kind, residual: "residual"})[b.box] ?? b.box;
  const radios = (name, legend, options, value) => `<span class="map-radio" data-name="${name}">${
    radioGroup(name, legend, options, value)}</span>`;
  const layerRadio = (stack) => radios("map-layer", "Layer", Array.from({length: setup.layers[stack]},
    (_, i) => [i + 1, String(i + 1)]), state.layer[stack]);
  const tokenRadio = (stack) => `<div class="map-tokens">${radios("map-token", `${side(stack)} token`,
    tokensOf(stack).map((t, i) => [i, t]), state.token)}</div>`;
  const table = (headers, rows, rowClass = () => "", cls = "") => `<div class="map-scroll ${cls}">
    <table class="map-table"><thead><tr>${
    headers.map((h) => `<th>${h}</th>`).join("")}</tr></thead><tbody>${rows.map((r, i) => `<tr class="${rowClass(i)}">${
    r.map((c, j) => `<td class="${j ? "" : "tok"}">${c}</td>`).join("")}</tr>`).join("")}</tbody></table></div>`;
  const pending = () => `<p class="map-status">Asking the server for this box's vectors…</p>`;

  // Vectors as strips: one row per label, one column per dimension, blue-white-red on ±their largest magnitude.
  const drawStrips = (canvas, rows, labels, marked = -1) => {
    const ctx = canvas.getContext("2d");
    ctx.font = "12px ui-monospace, monospace";
    const left = Math.ceil(Math.max(0, ...labels.map((l) => ctx.measureText(l).width))) + 10;
    const cols = rows[0]?.length || 1, room = Math.max(260, (panel.clientWidth || 600) - left - 20);
    const cell = Math.max(1, Math.min(4, room / cols)), rowH = 14;
    const scale = Math.max(1e-9, ...rows.map((r) => Math.max(...r.map(Math.abs))));
    sizedCanvas(canvas, left + cell * cols + 4, rowH * rows.length + 4);
    rows.forEach((row, i) => row.forEach((v, j) => {
      ctx.fillStyle = diverging(v / scale);
      ctx.fillRect(left + j * cell, 2 + i * rowH, cell + 0.3, rowH - 1);
    }));
    ctx.font = "12px ui-monospace, monospace";
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    labels.forEach((label, i) => {
      ctx.fillStyle = i === marked ? "#b45309" : "#222";
      ctx.fillText(label, left - 6, 2 + (i + 0.5) * rowH);
    });
    canvas.__layout = {left, cell, rowH, cols, rows};
    exposeForTests(canvas, {__rows: rows});
    canvas.setAttribute("aria-label", `${rows.length} vectors of ${cols} numbers, coloured from blue (−${fmt(scale)}) ` +
                        `through white (0) to red (+${fmt(scale)})`);
  };
  // One token's hidden units as bars (all >= 0 past the ReLU), the `top` units in orange.
  const drawActivations = (canvas, values, top) => {
    const room = Math.max(260, (panel.clientWidth || 600) - 50), unit = Math.min(2, room / values.length);
    const [left, height, width] = [40, 90, Math.ceil(40 + unit * values.length + 6)];
    const ctx = sizedCanvas(canvas, width, height + 18), largest = Math.max(1e-9, ...values);
    values.forEach((v, i) => {
      ctx.fillStyle = top.has(i) ? ORANGE : "#1f77b4";
      const h = (height - 4) * v / largest;
      ctx.fillRect(left + i * unit, height - h, Math.max(unit, 1), h);
    });
    ctx.fillStyle = "#222";
    ctx.font = "11px system-ui, sans-serif";
    ctx.textAlign = "right";
    ctx.fillText(fmt(largest, 2), left - 4, 10);
    ctx.fillText("0", left - 4, height);
    ctx.textAlign = "left";
    ctx.fillText(`unit 0 … ${values.length - 1}`, left, height + 14);
    canvas.__layout = {left, cell: unit, rowH: height, cols: values.length, rows: [values]};
    exposeForTests(canvas, {__rows: [values]});
    canvas.setAttribute("aria-label", `${values.length} hidden units, the largest ${fmt(largest, 3)}`);
  };
  const rowsOf = (packed) => {
    const values = dequantize(packed), [n, c] = packed.shape;
    return Array.from({length: n}, (_, i) => Array.from(values.subarray(i * c, (i + 1) * c)));
  };
  const readStrip = (event) => {
    const canvas = event.target, layout = canvas.__layout;
    if (!layout) return;
    const [x, y] = pointerAt(canvas, event);
    const [i, j] = [Math.max(0, Math.floor((y - 2) / layout.rowH)), Math.floor((x - layout.left) / layout.cell)];
    const value = layout.rows[i]?.[j];
    canvas.parentElement.nextElementSibling.textContent =
      value === undefined ? "" : `row ${i}, dimension ${j}: ${fmt(value, 4)}`;
  };
  const strip = (cls) => `<div class="map-scroll"><canvas class="${cls}" role="img"></canvas></div>
    <div class="map-readout"></div>`;
  const heatmap = (cls) => `<div class="map-scroll"><canvas class="${cls}" role="img"></canvas></div>`;

  // --- One panel per kind of box -------------------------------------------------------------------------------------
  const embeddingPanel = (b) => {
    const m = state.payload.map[b.stack], tokens = tokensOf(b.stack), d = numbers();
    const html = `<p>Each ${side(b.stack)} token is a row of the embedding table (${setup.vocab_size} × ${setup.d_model
      }${setup.tied ? ", one table for English, Italian and the output layer" : ""}), multiplied by √d_model = ${
      fmt(state.payload.map.scale, 2)} so the positional encoding added next does not drown it (section 3.4).</p>
      ${table(["token", "‖embedding row‖", `× √${setup.d_model}`, "‖positional encoding‖"],
        tokens.map((t, i) => [escapeHtml(t), fmt(m.embedding[i]), fmt(m.scaled[i]), fmt(m.position[i])]))}
      <h4>The embedding rows, one strip per token (before the scale)</h4>${d ? strip("map-embedding") : pending()}
      <h4>What the positional encoding adds, per position</h4>${d ? strip("map-position") : ""}
      <p><button type="button" class="map-open-tab" data-tab="positions">Open the Positional encoding tab</button></p>`;
    return [html, () => {
      if (!d) return;
      const labels = tokens.map((t, i) => `${i} ${t}`);
      drawStrips($(".map-embedding"), rowsOf(d.rows), labels);
      drawStrips($(".map-position"), rowsOf(d.position), labels);
    }];
  };

  const residualPanel = (b) => {
    const m = state.payload.map[b.stack], tokens = tokensOf(b.stack), subs = m.ratios.length;
    const points = [...Array.from({length: subs}, (_, i) => `before ${sublayerName(b.stack, i)}`), "stack output"];
    const html = `<p>The residual stream: each sublayer reads a normalised copy of it and <em>adds</em> its output back
      (x + Sublayer(LayerNorm(x))). Below, the length ‖x‖ of the stream per token where it enters each sublayer, and
      how much each sublayer writes into it, ‖Sublayer(LayerNorm(x))‖ ÷ ‖x‖: the tokens each layer changes most.</p>
      <h4>‖x‖ of the ${b.stack}'s stream</h4>${heatmap("map-stream")}
      <h4>‖what each sublayer adds‖ ÷ ‖x‖</h4>${heatmap("map-ratios")}<div class="map-readout map-ratio-readout"></div>`;
    return [html, () => {
      const labels = tokens.map((t, i) => `${i} ${t}`);
      drawHeatmap($(".map-stream"), m.stream, points, labels, {room: panel.clientWidth});
      const ratioBox = drawHeatmap($(".map-ratios"), m.ratios, points.slice(0, -1), labels, {room: panel.clientWidth});
      $(".map-stream").__matrix = m.stream;
      $(".map-ratios").__matrix = m.ratios;
      $(".map-ratios").onmousemove = (event) => {
        const at = cellAt(ratioBox, event);
        $(".map-ratio-readout").textContent = at?.row !== undefined && at?.col !== undefined
          ? `${points[at.row]}, token ${labels[at.col]}: adds ${fmt(m.writes[at.row][at.col])} to ‖x‖ = ${
            fmt(m.stream[at.row][at.col])} (ratio ${fmt(m.ratios[at.row][at.col])})` : "";
      };
    }];
  };

  const normPanel = (b) => {
    const final = b.box === "final-norm", m = state.payload.map[b.stack], tokens = tokensOf(b.stack);
    const index = request().index, d = numbers(), t = Math.min(state.token, tokens.length - 1);
    const where = final ? `the final layer norm of the ${b.stack}`
      : `layer ${state.layer[b.stack]}'s norm before its ${b.kind}`;
    let details = pending();
    if (d) {
      const after = rowsOf(d.outputs)[t];
      const mean = (v) => v.reduce((s, x) => s + x, 0) / v.length;
      const std = (v) => Math.sqrt(mean(v.map((x) => (x - mean(v)) ** 2)));
      details = `${table(["vector", "mean", "standard deviation"], [
        ["x (before)", fmt(m.norm_mean[index][t]), fmt(m.norm_std[index][t])],
        ["(x − mean) ÷ std", "0.000", "1.000"],
        ["· gain + bias (after)", fmt(mean(after)), fmt(std(after))]])}
        <h4>Before, after, and the learned gain and bias (${setup.d_model} dimensions)</h4>${strip("map-norm")}
        <p class="map-norm-values" data-token="${t}">after[0..4] = ${
          after.slice(0, 5).map((v) => fmt(v, 4)).join(", ")}</p>`;
    }
    const html = `<p>LayerNorm(x) = (x − mean(x)) ÷ √(var(x) + ε) · gain + bias, over the ${setup.d_model} dimensions of one
      token's vector: ${where}. Pick a token.</p>${final ? "" : layerRadio(b.stack)}${tokenRadio(b.stack)}${details}`;
    return [html, () => {
      if (!d) return;
      const rows = [rowsOf(d.inputs)[t], rowsOf(d.outputs)[t], d.gain, d.bias];
      drawStrips($(".map-norm"), rows, ["before", "after", "gain", "bias"]);
    }];
  };

  const ffnPanel = (b) => {
    const m = state.payload.map[b.stack], tokens = tokensOf(b.stack), layer = state.layer[b.stack];
    const t = Math.min(state.token, tokens.length - 1), d = numbers();
    const ffnRows = Array.from({length: setup.layers[b.stack]}, (_, l) => sublayerIndex(b.stack, l + 1, "feed-forward"));
    let details = pending();
    if (d) {
      const hidden = rowsOf(d.hidden)[t], order = hidden.map((v, i) => [v, i]).sort((a, z) => z[0] - a[0]);
      const firing = hidden.filter((v) => v > 0).length;
      details = `<p class="map-ffn-summary">Token <code>${escapeHtml(tokens[t])}</code>, layer ${layer}: ${firing} of ${
        setup.d_ff} units fire (${fmt(100 * firing / setup.d_ff, 1)}%); the block adds a vector of length ${
        fmt(m.writes[ffnRows[layer - 1]][t])} to a stream of length ${fmt(m.stream[ffnRows[layer - 1]][t])}.</p>
        <h4>The ${setup.d_ff} hidden units of this token, max(0, x W₁ + b₁)</h4>${strip("map-hidden")}
        <h4>The units that fire most</h4>${table(["unit", "activation"], order.slice(0, 8).map(([v, i]) =>
          [`#${i}`, fmt(v, 4)]))}`;
    }
    const html = `<p>FFN(x) = max(0, x W₁ + b₁) W₂ + b₂ (section 3.3), the same two layers for every position:
      d_model ${setup.d_model} → d_ff ${setup.d_ff} units, ReLU, → ${setup.d_model}.</p>
      <h4>Share of the ${setup.d_ff} units that fire, per layer and token</h4>${heatmap("map-firing")}
      ${layerRadio(b.stack)}${tokenRadio(b.stack)}${details}`;
    return [html, () => {
      const labels = tokens.map((tk, i) => `${i} ${tk}`);
      drawHeatmap($(".map-firing"), m.firing, m.firing.map((_, l) => `layer ${l + 1}`), labels,
                  {vmin: 0, vmax: 1, room: panel.clientWidth, annotate: tokens.length <= 16 ? 2 : undefined});
      $(".map-firing").__matrix = m.firing;
      if (!d) return;
      const hidden = rowsOf(d.hidden)[t], top = hidden.map((v, i) => [v, i]).sort((a, z) => z[0] - a[0]).slice(0, 8);
      drawActivations($(".map-hidden"), hidden, new Set(top.filter(([v]) => v > 0).map(([, i]) => i)));
    }];
  };

  const attentionPanel = (b) => {
    const layer = state.layer[b.stack], kind = {"self-attention": "encoder", "masked self-attention": "decoder",
                                                "cross-attention": "cross"}[b.kind];
    const html = `<p>${b.kind === "cross-attention" ? "Each Italian position looks at the English sentence (the " +
      "encoder's output): queries from the decoder, keys and values from the memory." : b.kind.startsWith("masked")
      ? "Each Italian position looks at itself and the positions before it (the causal mask hides the future)."
      : "Each English token looks at every English token."} ${setup.n_heads} heads of d_k = ${setup.d_k}, concatenated
      and mixed by W_O. Their weights are drawn in the Attention tab, one head's arithmetic in Inside one head.</p>
      ${layerRadio(b.stack)}<p><button type="button" class="map-show" data-kind="${kind}" data-tab="attention">Open
      Attention at layer ${layer}</button> <button type="button" class="map-show" data-kind="${kind}" data-tab="head">Open
      Inside one head at layer ${layer}</button></p>`;
    return [html, () => {}];
  };

  // The output: per step, the top logits; softmax at the temperature, top-k and top-p, all in the page.
  const distribution = (step) => {
    const out = state.payload.map.output, T = state.temperature;
    const column = out.temperatures.findIndex((t) => Math.abs(t - T) < 1e-9);
    const logits = out.logits[step], scaled = logits.map((l) => l / T), top = Math.max(...scaled);
    const shownSum = scaled.reduce((s, v) => s + Math.exp(v - top), 0);
    const lse = top + Math.log(shownSum + Math.exp(out.rest[step][column] - top));  // over the whole vocabulary
    const probs = scaled.map((v) => Math.exp(v - lse));
    const kept = probs.map((_, i) => state.topK === 0 || i < state.topK);
    let cumulative = 0;
    probs.forEach((p, i) => {  // top-p: the smallest set of the most probable tokens holding p of the probability
      if (kept[i] && cumulative >= state.topP - 1e-12) kept[i] = false;
      if (kept[i]) cumulative += p;
    });
    const keptSum = probs.reduce((s, p, i) => s + (kept[i] ? p : 0), 0);
    const rest = Math.max(0, 1 - probs.reduce((s, p) => s + p, 0));
    const nucleusOpen = (state.topK === 0 || state.topK > probs.length) && cumulative < state.topP - 1e-9;
    return {probs, kept, sampled: probs.map((p, i) => (kept[i] ? p / (nucleusOpen ? keptSum + rest : keptSum) : 0)),
            rest, nucleusOpen};
  };
  const outputPanel = (b) => {
    const out = state.payload.map.output, steps = state.payload.output_tokens;
    const step = Math.min(state.step, steps.length - 1), tokens = out.tokens[step], dist = distribution(step);
    const html = `<p>${b.code === "linear" ? `The decoder's last vector h (${setup.d_model} numbers) times the output
      layer's weights gives one logit per token of the vocabulary: logits = h Wᵀ.` : "Softmax turns the logits into " +
      "probabilities: p_i = exp(z_i / T) ÷ Σ_j exp(z_j / T)."} ${state.payload.map.tied ? `<strong>Tied:</strong> W is the
      embedding table itself (one ${setup.vocab_size} × ${setup.d_model} tensor: the output layer's weight <em>is</em>
      src_embed.embedding.weight), so a token's logit is h · its own embedding row.` : "Not tied to the embedding."}</p>
      ${radios("map-step", "Decoding step (the token written there)", steps.map((t, i) => [i, t]), step)}
      <div class="map-controls"><label class="map-slider">Temperature T = <output class="map-t">${
      state.temperature.toFixed(1)}</output><input type="range" class="map-temperature" min="0.1" max="3" step="0.1" value="${state.temperature}"
      aria-label="Temperature"></label><label class="map-slider">Top-k (0: all) <input type="number" class="map-topk"
      min="0" max="${tokens.length}" step="1" value="${state.topK}" aria-label="Top-k"></label><label class="map-slider">
      Top-p = <output class="map-p">${state.topP.toFixed(2)}</output><input type="range" class="map-topp" min="0.05" max="1"
      step="0.05" value="${state.topP}" aria-label="Top-p"></label></div>
      <div class="map-output-table">${outputTable(step, tokens, dist)}</div>`;
    return [html, () => {}];
  };
  const outputTable = (step, tokens, dist) => {
    const out = state.payload.map.output, logits = out.logits[step], written = state.payload.output_tokens[step];
    const sampledLeft = dist.sampled.reduce((s, p) => s + p, 0);
    const widest = Math.max(...dist.probs);
    let cumulative = 0;
    const rows = tokens.map((t, i) => {
      const start = cumulative;
      cumulative += dist.sampled[i];
      return [`${escapeHtml(t)}${i === 0 ? " ← greedy" : ""}${t === written && i !== 0 ? " ← written" : ""}`,
              fmt(logits[i], 3), `<span class="bar" style="width:${(60 * dist.probs[i] / widest).toFixed(1)}px"></span>${
              fmt(dist.probs[i], 4)}`, dist.kept[i] ? `${fmt(dist.sampled[i], 4)}` : "cut",
              dist.kept[i] ? `[${fmt(start, 3)}, ${fmt(cumulative, 3)})` : ""];
    });
    return `<p class="map-output-note">Greedy writes <code>${escapeHtml(tokens[0])}</code> (the largest logit, whatever
      T). Sampling draws u uniform in [0, 1) and writes the token whose slice of the cumulative column holds it (as
      <code>draw_tokens</code> does); the other ${setup.vocab_size - tokens.length} tokens hold p = ${fmt(dist.rest, 4)}
      at T = ${state.temperature.toFixed(1)}${dist.nucleusOpen ? `, and top-p reaches into them (${fmt(1 - sampledLeft, 4)}
      of the draw lands there)` : ""}. This model's own sampler offers temperature and top-k; top-p is shown for
      comparison.</p>${table(["token", "logit", `p at T = ${state.temperature.toFixed(1)}`, "p sampled",
      "slice of [0, 1)"], rows, (i) => (i === 0 ? "greedy" : dist.kept[i] ? "" : "cut"), "map-tall")}`;
  };
  const redrawOutput = () => {  // a control moved: the table only, the controls kept (focus, drag)
    const start = performance.now(), step = Math.min(state.step, state.payload.output_tokens.length - 1);
    $(".map-output-table").innerHTML = outputTable(step, state.payload.map.output.tokens[step], distribution(step));
    $(".map-t").textContent = state.temperature.toFixed(1);
    $(".map-p").textContent = state.topP.toFixed(2);
    root.dataset.temperature = state.temperature.toFixed(1);
    if (store.testing) root.dataset.drawMs = (performance.now() - start).toFixed(2);
  };

  const PANELS = {embedding: embeddingPanel, position: embeddingPanel, residual: residualPanel, norm: normPanel,
                  "final-norm": normPanel, "feed-forward": ffnPanel, attention: attentionPanel, output: outputPanel};
  const drawPanel = () => {
    const start = performance.now(), b = state.open;
    if (!b || !state.payload) {
      root.dataset.state = state.payload ? "ready" : "empty";
      return;
    }
    const [html, after] = PANELS[b.box](b);
    panel.innerHTML = `<h3>${escapeHtml(boxTitle(b))}</h3><p class="map-shapes">${shapesOf(b)}</p>${html}${
      codeHtml(codeName(b))}`;
    after();
    root.dataset.open = b.id;
    root.dataset.state = request() && !numbers() ? "asking" : "drawn";
    if (store.testing) root.dataset.drawMs = (performance.now() - start).toFixed(2);
  };
  const shapesOf = (b) => {
    const S = lengthOf("encoder"), T = lengthOf("decoder"), n = lengthOf(b.stack), d = setup.d_model;
    return escapeHtml(({embedding: `tokens ${shape(1, n)} → ${shape(1, n, d)}`, position: `${shape(1, n, d)} + PE[:${n}]`,
      norm: `${shape(1, n, d)} → ${shape(1, n, d)}`, "final-norm": `${shape(1, n, d)} → ${shape(1, n, d)}`,
      residual: `x ${shape(1, n, d)} + sublayer output ${shape(1, n, d)}`,
      "feed-forward": `${shape(1, n, d)} → ${shape(1, n, setup.d_ff)} → ${shape(1, n, d)}`,
      attention: `queries ${shape(1, n, d)}, keys and values ${shape(1, b.kind === "cross-attention" ? S : n, d)
        }; per head ${
        shape(1, setup.n_heads, n, setup.d_k)}`,
      output: `${shape(1, T, d)} → logits ${shape(1, T, setup.vocab_size)} → probabilities ${
        shape(1, T, setup.vocab_size)}`,
    })[b.box]);
  };

  // --- The panel's controls ------------------------------------------------------------------------------------------
  panel.addEventListener("change", (event) => {
    const input = event.target;
    if (!input.matches?.('input[type="radio"]') || !state.open) return;
    if (input.name === "map-layer") state.layer[state.open.stack] = +input.value;
    else if (input.name === "map-token") state.token = +input.value;
    else if (input.name === "map-step") state.step = +input.value;
    else return;
    askForBox();
    drawPanel();
    drawMap();
  });
  panel.addEventListener("input", (event) => {
    const input = event.target;
    if (input.matches(".map-temperature")) state.temperature = Math.round(+input.value * 10) / 10;
    else if (input.matches(".map-topk")) state.topK = Math.max(0, Math.floor(+input.value) || 0);
    else if (input.matches(".map-topp")) state.topP = Math.min(1, Math.max(0.05, +input.value));
    else return;
    redrawOutput();
  });
  panel.addEventListener("mousemove", (event) => {
    if (event.target.matches?.("canvas") && event.target.__layout) readStrip(event);
  });
  panel.addEventListener("click", (event) => {
    const button = event.target.closest?.("button");
    if (!button) return;
    if (button.matches(".map-open-tab")) store.set({tab: button.dataset.tab});
    if (button.matches(".map-show")) showAttention(button.dataset.tab, button.dataset.kind, state.layer[state.open.stack]);
  });
  // The Attention or Inside one head tab, showing that kind and layer (the store's "attention" and "head").
  const showAttention = (tab, kind, layer) => store.set(
    tab === "attention" ? {attention: {kind, layer, head: "mean"}, tab} : {head: {kind, layer}, tab});

  const drawAnswer = (d) => {  // an answer: drawn if the box it answers is open
    if (!d || !state.payload || d.translation !== state.payload.id) return;
    const key = keyOf(d);
    if (key === state.asked) state.asked = null;
    answered.set(key, d);
    const q = request();
    if (q && keyOf({translation: state.payload.id, ...q}) === key) drawPanel();
  };

  store.on("box", (id) => {  // a box asked by the URL: opened; a name this map has no box of: none
    if (!Object.hasOwn(byId, id)) return id && store.set({box: null});
    if (id !== state.open?.id) open(id);
  });
  store.on("tab", (tab) => {  // the map shown again: ask for the open box's vectors of a translation made meanwhile
    if (tab === "map") requestAnimationFrame(askForBox);
  });
  store.on("translation", (payload) => {
    state.payload = payload;
    nameSentence(root.parentElement, payload);
    state.asked = null;
    state.token = state.step = 0;
    answered.clear();
    drawMap();
    if (!payload) {
      panel.innerHTML = `<p class="map-empty">Translate a sentence, then click a box of the map.</p>`;
      root.dataset.state = "empty";
      return;
    }
    askForBox();
    drawPanel();
  });
  drawMap();
}
