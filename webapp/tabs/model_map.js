// "Model map": the paper's Figure 1 drawn for the loaded model (model_map.py), each box opening its live numbers and
// its code. The map and every box's first view are drawn from the translation's payload (payload.map_json; the
// store's "translation"); a box's vectors (embedding rows, a norm's input and output, the feed-forward's hidden units)
// come in one request the first time it is opened for a translation (ask("map_numbers"), answered by model_map.py).
// The output box's temperature, top-k and top-p are redrawn here, with no request unless they reach past the 50
// tokens the payload holds (then the step's logits over the whole vocabulary come, once per step).
// "Follow a token", the first thing the map offers: one English token or Italian step walked through every box in
// the order the model computes, each box's input the previous box's output; its vectors come in one request
// (ask("map_numbers", {box: "walk"}): model_map.py's walk_json), then Previous / Next (or ← →) ask nothing.
// Root's data-open (the box shown), data-walk (the walk's stack:token:box, while walking) and data-state ("drawn" once
// its numbers are on screen) say what is shown; for the
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
<div class="map-side"><div class="map-walk-bar" role="group" aria-label="Follow a token"></div>
<div class="map-panel" aria-live="polite">${INTRO}</div></div>
</div></div>`;
// Each attention sublayer -> its kind in the Attention and Inside one head tabs.
const ATTENTION_KIND = {"self-attention": "encoder", "masked self-attention": "decoder", "cross-attention": "cross"};
const INTRO = `<p class="map-empty">Follow a token above, or click a box of the map to see its numbers for the translated
sentence, and the code that computes them.</p>`;

export function mount({element, props, ask}) {
  element.querySelector(".view-mount").innerHTML = mapMarkup();
  const root = element.querySelector(".model-map");
  const $ = (selector) => root.querySelector(selector);
  const setup = props.setup;  // model_map.py: setup_json
  const svg = $(".map-svg"), panel = $(".map-panel"), walkBar = $(".map-walk-bar");
  const NS = "http://www.w3.org/2000/svg";
  const state = {payload: null, open: null, layer: {encoder: 1, decoder: 1}, token: 0, step: 0,
                 temperature: 1, topK: 0, topP: 1, asked: null,
                 walk: {on: false, stack: "encoder", position: 0, index: 0}};
  const answered = new Map();  // question -> the box's vectors, for the translation shown
  const mean = (v) => v.reduce((s, x) => s + x, 0) / v.length;
  const std = (v) => Math.sqrt(mean(v.map((x) => (x - mean(v)) ** 2)));
  const length = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
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
  const arrow = (points, label, at, to) => {  // `to`: the box it leads into, lit with it while the walk is there
    const group = el("g", {});
    group.append(el("polyline", {class: "arrow", points: points.map((p) => p.join(",")).join(" "), "data-to": to ?? ""}));
    if (label) group.append(el("text", {class: "shape", x: at[0], y: at[1]}, label));
    return group;
  };
  const drawMap = () => {
    const S = lengthOf("encoder"), T = lengthOf("decoder"), d = setup.d_model;
    svg.setAttribute("viewBox", `0 ${LAYER_TOP("decoder") - 180} 585 ${980 - LAYER_TOP("decoder")}`);
    svg.replaceChildren(el("defs", {}));
    svg.firstChild.innerHTML = `<marker id="map-arrowhead" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7"
      markerHeight="7" markerUnits="userSpaceOnUse" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#4b5563"/></marker><marker id="map-arrowhead-lit"
      viewBox="0 0 8 8" refX="7" refY="4" markerWidth="9" markerHeight="9" markerUnits="userSpaceOnUse"
      orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#ea580c"/></marker>`;
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
      const rowId = ([what, kind]) => ({norm: `${stack}-norm-${kind}`, add: `${stack}-add-${kind}`})[what] ??
        `${stack}-${kind.replace(/ /g, "-")}`;
      svg.append(arrow([[x, INPUT_Y + 14], [x, 728]], shape(1, L(stack)), [x + 6, INPUT_Y + 6], `${stack}-embedding`));
      svg.append(arrow([[x, 697], [x, 680]], shape(1, L(stack), d), [x + 14, 692], `${stack}-position`));
      svg.append(arrow([[x, 656], [x, 636]], "", [], rowId(STACK_ROWS[stack][0])));
      svg.append(el("text", {class: "caption", x: x + 20, y: 672}, "positional encoding"));
      STACK_ROWS[stack].forEach(([what, kind], i) => {
        const y = 620 - i * ROW;
        const next = [[x, y - (what === "add" ? 12 : 15)], [x, y - ROW + 16]];
        if (i + 1 < STACK_ROWS[stack].length) svg.append(arrow(next, "", [], rowId(STACK_ROWS[stack][i + 1])));
        if (what === "norm") {  // the residual: around the norm and the sublayer, into the add
          const skip = x - W / 2 - 14, yAdd = y - 2 * ROW;
          svg.append(arrow([[x, y + 19], [skip, y + 19], [skip, yAdd], [x - 13, yAdd]], "", [], `${stack}-add-${kind}`));
        }
      });
      const layerTop = 620 - (STACK_ROWS[stack].length - 1) * ROW;
      svg.append(arrow([[x, layerTop - 12], [x, (stack === "encoder" ? encTop : decTop) + 16]],
                       shape(1, L(stack), d), [x + 6, layerTop - 16], `${stack}-final-norm`));
    }
    // The encoder's output (memory) into every decoder layer's cross-attention; the decoder's up to the output.
    const cross = byId["decoder-cross-attention"];
    svg.append(arrow([[COL.encoder, encTop - 15], [COL.encoder, encTop - 34], [275, encTop - 34], [275, cross.y],
                      [cross.x - W / 2, cross.y]], `memory ${shape(1, L("encoder"), d)}`, [COL.encoder - 60, encTop - 40],
                     cross.id));
    svg.append(arrow([[COL.decoder, decTop - 15], [COL.decoder, decTop - 33]], "", [], "linear"));
    svg.append(arrow([[COL.decoder, decTop - 63], [COL.decoder, decTop - 81]], shape(1, L("decoder"), setup.vocab_size),
                     [COL.decoder + 8, decTop - 70], "softmax"));
    svg.append(arrow([[COL.decoder, decTop - 111], [COL.decoder, decTop - 134]], "", []));
    svg.append(el("text", {class: "caption", x: COL.decoder, y: decTop - 140, "text-anchor": "middle"},
                   `Next-token probabilities ${shape(1, L("decoder"), setup.vocab_size)}`));
    for (const b of BOXES) {
      const w = b.round ? 24 : W, group = el("g", {class: "box", tabindex: 0, role: "button", "data-box": b.id,
                                                    "aria-label": boxTitle(b)});
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
    mark();
  };
  // The open box outlined; while walking, the arrows into it lit too.
  const mark = () => {
    svg.querySelectorAll(".box").forEach((g) => g.classList.toggle("open", g.dataset.box === state.open?.id));
    svg.querySelectorAll(".arrow").forEach((a) => a.classList.toggle("lit", state.walk.on && !!state.open &&
                                                                       a.dataset.to === state.open.id));
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
  const request = () => {  // the vectors the walk or the open box needs: {box, stack, index}, or null (in the payload)
    if (state.walk.on) return {box: "walk", stack: state.walk.stack, index: state.walk.position};
    const b = state.open;
    if (!b) return null;
    const layer = state.layer[b.stack];
    if (b.box === "embedding" || b.box === "position") return {box: "embedding", stack: b.stack, index: 0};
    if (b.box === "norm") return {box: "norm", stack: b.stack, index: sublayerIndex(b.stack, layer, b.kind)};
    const last = setup.layers[b.stack] * sublayers(b.stack).length;  // the final norm, after every sublayer's
    if (b.box === "final-norm") return {box: "norm", stack: b.stack, index: last};
    if (b.box === "feed-forward") return {box: "feed-forward", stack: b.stack, index: layer - 1};
    if (b.box === "output" && state.payload && reachesPast(outputStep())) {
      return {box: "output", stack: "decoder", index: outputStep()};
    }
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
    if (store.get("box") !== id) store.set({box: id, walk: null});
    state.walk.on = false;
    drawWalkBar();
    mark();
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
  const codeName = (b) => {  // a box's code: the stack's own ("decoder residual": DecoderLayer), else the box's
    const name = b.code ?? ({attention: b.kind})[b.box] ?? b.box;
    return setup.code[`${b.stack} ${name}`] ? `${b.stack} ${name}` : name;
  };
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
  // What the model has seen of a token's word (modeldir/seen.py): "'cat': 1,234 of 1,000,000 training pairs".
  const seenText = (word, pairs) => (word ? `'${escapeHtml(word[0])}': ${word[1].toLocaleString("en")} of ${
    pairs.toLocaleString("en")} training pairs` : "–");
  const seenCell = (word, pairs, rare) => (rare
    ? `<span class="map-rare" title="rarely seen: a translation of it is a guess">${seenText(word, pairs)}</span>`
    : seenText(word, pairs));
  const embeddingPanel = (b) => {
    const m = state.payload.map[b.stack], tokens = tokensOf(b.stack), d = numbers(), seen = d?.seen;
    const counted = b.stack === "encoder" && (seen || !d);
    const html = `<p>Each ${side(b.stack)} token is a row of the embedding table (${setup.vocab_size} × ${setup.d_model
      }${setup.tied ? ", one table for English, Italian and the output layer" : ""}), multiplied by √d_model = ${
      fmt(state.payload.map.scale, 2)} so the positional encoding added next does not drown it (section 3.4).${
      counted ? " Beside each token, how many training pairs held its word: a row learnt from a handful of pairs is " +
      "a guess." : ""}</p>
      ${table(["token", "‖embedding row‖", `× √${setup.d_model}`, ...(counted ? ["training pairs with its word"] : [])],
        tokens.map((t, i) => [escapeHtml(t), fmt(m.embedding[i]), fmt(m.scaled[i]),
                              ...(counted ? [seen ? seenCell(seen.words[i], seen.pairs, seen.rare[i]) : "…"] : [])]))}
      <h4>The embedding rows, one strip per token (before the scale)</h4>${d ? strip("map-embedding") : pending()}`;
    return [html, () => {
      if (d) drawStrips($(".map-embedding"), rowsOf(d.rows), tokens.map((t, i) => `${i} ${t}`));
    }];
  };
  const positionPanel = (b) => {
    const m = state.payload.map[b.stack], tokens = tokensOf(b.stack), d = numbers();
    const html = `<p>The "+" adds each position's sinusoidal encoding PE[pos] (the same for every sentence, ‖PE‖ =
      √(d_model ÷ 2) = ${fmt(Math.sqrt(setup.d_model / 2), 2)}) to the scaled embedding: x = embedding × √d_model + PE[pos],
      the residual stream's start.</p>
      ${table(["token", "‖embedding × √d_model‖", "‖PE[pos]‖", "‖sum‖"],
        tokens.map((t, i) => [`${i} ${escapeHtml(t)}`, fmt(m.scaled[i]), fmt(m.position[i]), fmt(m.stream[0][i])]))}
      <h4>What the positional encoding adds, per position</h4>${d ? strip("map-position") : pending()}
      <p><button type="button" class="map-open-tab" data-tab="positions">Open the Positional encoding tab</button></p>`;
    return [html, () => {
      if (d) drawStrips($(".map-position"), rowsOf(d.position), tokens.map((t, i) => `${i} ${t}`));
    }];
  };

  const residualPanel = (b) => {
    const m = state.payload.map[b.stack], tokens = tokensOf(b.stack), subs = m.ratios.length;
    const points = [...Array.from({length: subs}, (_, i) => `before ${sublayerName(b.stack, i)}`), "stack output"];
    const adds = points.slice(0, -1).map((_, i) => `${sublayerName(b.stack, i)} adds`);
    const html = `<p>The residual stream: each sublayer reads a normalised copy of it and <em>adds</em> its output back
      (x + Sublayer(LayerNorm(x))). This "+" adds each layer's ${b.kind} (its rows "L1 ${b.kind} adds", ...); follow a
      token to see one token's x, ${b.kind}(x) and their sum. Below, the length ‖x‖ of the stream per token where it enters each sublayer, and
      how much each sublayer writes into it, ‖Sublayer(LayerNorm(x))‖ ÷ ‖x‖: the tokens each layer changes most.</p>
      <h4>‖x‖ of the ${b.stack}'s stream</h4>${heatmap("map-stream")}
      <h4>‖what each sublayer adds‖ ÷ ‖x‖</h4>${heatmap("map-ratios")}<div class="map-readout map-ratio-readout"></div>`;
    return [html, () => {
      const labels = tokens.map((t, i) => `${i} ${t}`);
      drawHeatmap($(".map-stream"), m.stream, points, labels, {room: panel.clientWidth});
      const ratioBox = drawHeatmap($(".map-ratios"), m.ratios, adds, labels, {room: panel.clientWidth});
      $(".map-stream").__matrix = m.stream;
      $(".map-ratios").__matrix = m.ratios;
      $(".map-ratios").onmousemove = (event) => {
        const at = cellAt(ratioBox, event);
        $(".map-ratio-readout").textContent = at?.row !== undefined && at?.col !== undefined
          ? `${adds[at.row]}, token ${labels[at.col]}: ${fmt(m.writes[at.row][at.col])} to ‖x‖ = ${
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
      const before = rowsOf(d.inputs)[t], after = rowsOf(d.outputs)[t];
      const divisor = Math.sqrt(std(before) ** 2 + state.payload.map.eps), normalised = before.map((x) => (x - mean(before)) / divisor);
      details = `${table(["vector", "mean", "standard deviation"], [
        ["x (before)", fmt(m.norm_mean[index][t]), fmt(m.norm_std[index][t])],
        ["(x − mean) ÷ √(var + ε)", fmt(mean(normalised)), fmt(std(normalised))],
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
    const layer = state.layer[b.stack], kind = ATTENTION_KIND[b.kind];
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

  // The output: per step, the top logits; softmax at the temperature, then top-k, then top-p over what top-k kept
  // (renormalised), as Hugging Face's samplers apply them. Each shown token's probability is exact over the whole
  // vocabulary (the payload's log-sum-exp of the others); where top-k or the nucleus reaches past the shown tokens,
  // the step's logits over the whole vocabulary (one request per step) say exactly which are kept.
  const outputStep = () => Math.min(state.step, state.payload.output_tokens.length - 1);
  const everyLogit = (step) => {  // the step's finite logits, largest first, once they have come
    const d = state.payload && answered.get(keyOf({translation: state.payload.id, box: "output", stack: "decoder",
                                                   index: step}));
    return d ? dequantize(d.sorted) : null;
  };
  const shownProbabilities = (step) => {
    const out = state.payload.map.output, T = state.temperature;
    const column = out.temperatures.findIndex((t) => Math.abs(t - T) < 1e-9);
    const scaled = out.logits[step].map((l) => l / T), top = Math.max(...scaled);
    const shownSum = scaled.reduce((s, v) => s + Math.exp(v - top), 0);
    const lse = top + Math.log(shownSum + Math.exp(out.rest[step][column] - top));  // over the whole vocabulary
    return scaled.map((v) => Math.exp(v - lse));
  };
  const cumulative = (probs) => probs.reduce((sums, p) => (sums.push(sums.at(-1) + p), sums), [0]);
  // The probability of the `n` most probable tokens, from `sums` (cumulative probabilities, most probable first) and
  // `count` (the tokens decoding may write, which hold all of it); null when `sums` stops before n.
  const massOf = (sums, n, count) => (n < sums.length ? sums[n] : n === count ? 1 : null);
  // How many of the most probable tokens top-k, then top-p keep; null when `sums` stops before the answer.
  const keptCount = (sums, count) => {
    const k = state.topK > 0 ? Math.min(state.topK, count) : count, massK = massOf(sums, k, count);
    if (massK === null || state.topP >= 1) return massK === null ? null : k;  // top-p = 1 cuts nothing
    const n = sums.findIndex((sum, i) => i > 0 && sum >= state.topP * massK - 1e-12);
    return n > 0 && n <= k ? n : null;
  };
  const finiteCount = (step) => state.payload.map.output.finite[step];
  const reachesPast = (step) => keptCount(cumulative(shownProbabilities(step)), finiteCount(step)) === null;
  const distribution = (step) => {
    const probs = shownProbabilities(step), all = everyLogit(step);
    let sums = cumulative(probs);
    if (all && keptCount(sums, finiteCount(step)) === null) {  // the whole vocabulary, in float64
      const T = state.temperature, top = all[0] / T;
      const z = Array.from(all, (l) => l / T - top), lse = Math.log(z.reduce((s, v) => s + Math.exp(v), 0));
      sums = cumulative(z.map((v) => Math.exp(v - lse)));
    }
    const kept = keptCount(sums, finiteCount(step));  // null: waiting for the whole vocabulary's logits
    const mass = kept === null ? null : massOf(sums, kept, finiteCount(step));
    return {probs, kept, rest: Math.max(0, 1 - probs.reduce((s, p) => s + p, 0)), mass,
            sampled: probs.map((p, i) => (kept !== null && i < kept ? p / mass : 0))};
  };
  const outputPanel = (b) => {
    const out = state.payload.map.output, steps = state.payload.output_tokens;
    const step = outputStep(), tokens = out.tokens[step];
    const html = `<p>${b.code === "linear" ? `The decoder's last vector h (${setup.d_model} numbers) times the output
      layer's weights gives one logit per token of the vocabulary: logits = h Wᵀ.` : "Softmax turns the logits into " +
      "probabilities: p_i = exp(z_i / T) ÷ Σ_j exp(z_j / T)."} ${state.payload.map.tied ? `<strong>Tied:</strong> W is the
      embedding table itself (one ${setup.vocab_size} × ${setup.d_model} tensor: the output layer's weight <em>is</em>
      src_embed.embedding.weight), so a token's logit is h · its own embedding row (follow an Italian step to see it
      computed).` : "Not tied to the embedding."}</p>
      ${radios("map-step", "Decoding step (the token written there)", steps.map((t, i) => [i, t]), step)}
      <div class="map-controls"><label class="map-slider">Temperature T = <output class="map-t">${
      state.temperature.toFixed(1)}</output><input type="range" class="map-temperature" min="0.1" max="3" step="0.1" value="${state.temperature}"
      aria-label="Temperature"></label><label class="map-slider">Top-k (0: all) <input type="number" class="map-topk"
      min="0" max="${setup.vocab_size}" step="1" value="${state.topK}" aria-label="Top-k"></label><label class="map-slider">
      Top-p = <output class="map-p">${state.topP.toFixed(2)}</output><input type="range" class="map-topp" min="0.05" max="1"
      step="0.05" value="${state.topP}" aria-label="Top-p"></label></div>
      <div class="map-output-table">${outputTable(step, tokens, distribution(step))}</div>`;
    return [html, () => {}];
  };
  const outputTable = (step, tokens, dist) => {
    const out = state.payload.map.output, logits = out.logits[step], written = state.payload.output_tokens[step];
    const widest = Math.max(...dist.probs), beyond = dist.kept === null ? 0 : Math.max(0, dist.kept - tokens.length);
    let start = 0;
    const rows = tokens.map((t, i) => {
      const kept = dist.kept === null || i < dist.kept, slice = `[${fmt(start, 3)}, ${fmt(start + dist.sampled[i], 3)})`;
      start += dist.sampled[i];
      return [`${escapeHtml(t)}${i === 0 ? " ← greedy" : ""}${t === written && i !== 0 ? " ← written" : ""}`,
              fmt(logits[i], 3), `<span class="bar" style="width:${(60 * dist.probs[i] / widest).toFixed(1)}px"></span>${
              fmt(dist.probs[i], 4)}`, dist.kept === null ? "…" : kept ? fmt(dist.sampled[i], 4) : "cut",
              dist.kept !== null && kept ? slice : ""];
    });
    const others = setup.vocab_size - tokens.length, T = state.temperature.toFixed(1);
    const reach = dist.kept === null ? "; top-k and top-p reach into them: asking the server for this step's logits over "
      + "the whole vocabulary…" : beyond ? `; top-k and top-p keep ${beyond} of them, ${
        fmt(1 - start, 4)} of the draw` : "; none of them is kept";
    return `<p class="map-output-note" data-kept="${dist.kept ?? ""}" data-mass="${dist.mass ?? ""}">Greedy writes
      <code>${escapeHtml(tokens[0])}</code> (the largest logit, whatever T). Sampling draws u uniform in [0, 1) and
      writes the token whose slice of the cumulative column holds it (<code>draw_tokens</code> lays the slices out in
      vocabulary order: the same sizes, another order); the other ${others} tokens hold p = ${
      fmt(dist.rest, 4)} at T = ${T}${reach}. Kept: ${dist.kept ?? "…"} tokens, holding ${
      dist.mass === null ? "…" : fmt(dist.mass, 4)} of the probability at T = ${T}. This model's own sampler offers
      temperature and top-k; top-p is shown for comparison.</p>${table(["token", "logit", `p at T = ${T}`, "p sampled",
      "slice of [0, 1)"], rows, (i) => (i === 0 ? "greedy" : dist.kept === null || i < dist.kept ? "" : "cut"),
      "map-tall")}`;
  };
  const redrawOutput = () => {  // a control moved: the table only, the controls kept (focus, drag)
    const start = performance.now(), step = outputStep();
    askForBox();
    $(".map-output-table").innerHTML = outputTable(step, state.payload.map.output.tokens[step], distribution(step));
    $(".map-t").textContent = state.temperature.toFixed(1);
    $(".map-p").textContent = state.topP.toFixed(2);
    root.dataset.temperature = state.temperature.toFixed(1);
    root.dataset.state = request() && !numbers() ? "asking" : "drawn";
    if (store.testing) root.dataset.drawMs = (performance.now() - start).toFixed(2);
  };

  // --- Follow a token: one token through every box, in the order the model computes ----------------------------------
  // The walk's steps (model_map.py: walk_json), their vectors read once per answer.
  const walkCache = new WeakMap();
  const walkSteps = () => {
    const d = state.walk.on ? numbers() : null;
    if (!d) return null;
    if (!walkCache.has(d)) {
      const read = (v) => (v?.bytes === undefined ? v : v.shape.length === 2 ? rowsOf(v) : Array.from(dequantize(v)));
      walkCache.set(d, d.steps.map((s) => ({...s, out: read(s.output), n: Object.fromEntries(
        Object.entries(s.numbers).map(([k, v]) => [k, read(v)]))})));
    }
    return walkCache.get(d);
  };
  const walkBox = (s, stack) => ({embedding: `${stack}-embedding`, position: `${stack}-position`,
    norm: `${stack}-norm-${s.kind}`, attention: `${stack}-${s.kind?.replace(/ /g, "-")}`,
    "feed-forward": `${stack}-feed-forward`, add: `${stack}-add-${s.kind}`, "final-norm": `${stack}-final-norm`,
    linear: "linear", softmax: "softmax"})[s.box];
  const walkTitle = (s, stack) => `${s.layer ? `${stack[0].toUpperCase()}${stack.slice(1)} layer ${s.layer}: ` : ""}${
    ({embedding: "embedding × √d_model", position: "+ positional encoding", norm: `layer norm before the ${s.kind}`,
      attention: s.kind, "feed-forward": "feed-forward", add: `+ (the ${s.kind}'s output added to the stream)`,
      "final-norm": `final layer norm of the ${stack}`, linear: "linear: the tied output layer",
      softmax: "softmax: the next token's probabilities"})[s.box]}`;
  const shown = (v, count = 6) => v.slice(0, count).map((x) => fmt(x, 4)).join(", ") + (v.length > count ? ", …" : "");
  const vectorLine = (cls, label, v) => `<p class="map-walk-vector ${cls}" data-values="${
    v.slice(0, 6).map((x) => x.toFixed(4)).join(" ")}"><b>${label}</b> (${v.length} numbers, length ‖·‖ = ${
    fmt(length(v))}): [${shown(v)}]</p>`;
  const dot = (a, b) => a.reduce((sum, x, i) => sum + x * b[i], 0);

  // Per box: [what it computes, with its numbers (html), strips to draw ([rows, labels]), a draw after].
  const walkOperation = (s, x, stack) => {
    const n = s.n, strips = (rows, labels) => ({rows, labels});
    if (s.box === "embedding") {
      const seen = n.seen ? `<p class="map-walk-seen">${seenCell(n.seen.word, n.seen.pairs, n.seen.rare)}${
        n.seen.rare ? ": the model has rarely seen this word; its translation is a guess." : ""}</p>` : "";
      return [`<p>Token <code>${escapeHtml(n.token)}</code> picks its row r of the embedding table (‖r‖ = ${
        fmt(length(n.row))}), multiplied by √d_model = ${fmt(n.scale, 2)}: ‖r × √d_model‖ = ${fmt(length(s.out))}.</p>
        ${seen}`, strips([n.row, s.out], ["r", "r × √d"])];
    }
    if (s.box === "position") {
      return [`<p>x + PE[${state.walk.position}]: the position's sinusoid (‖PE‖ = ${fmt(length(n.pe))}) added to the
        scaled embedding (‖x‖ = ${fmt(length(x))}) gives the residual stream's start, ‖x + PE‖ = ${
        fmt(length(s.out))}.</p>`, strips([x, n.pe, s.out], ["x", "PE", "x + PE"])];
    }
    if (s.box === "norm" || s.box === "final-norm") {
      return [`<p>LayerNorm(x) = (x − mean) ÷ √(var + ε) · gain + bias, over the ${x.length} numbers of this vector.</p>
        ${table(["vector", "mean", "standard deviation"], [
          ["x (in)", fmt(n.mean, 4), `${fmt(std(x), 4)}; √(var + ε) = ${fmt(n.std, 4)}`],
          ["(x − mean) ÷ √(var + ε)", fmt(mean(n.normalised), 4), fmt(std(n.normalised), 4)],
          ["· gain + bias (out)", fmt(mean(s.out), 4), fmt(std(s.out), 4)]])}`,
        strips([x, n.normalised, n.gain, n.bias, s.out], ["x", "normalised", "gain", "bias", "out"])];
    }
    if (s.box === "attention") {
      const heads = n.weights.map((row, h) => {
        const best = row.indexOf(Math.max(...row));
        return `head ${h + 1}: <code>${escapeHtml(n.keys[best])}</code> ${fmt(row[best], 2)}`;
      }).join(" · ");
      const kind = ATTENTION_KIND[s.kind];
      return [`<p>This token's query against the keys of ${s.kind === "cross-attention" ? "the English sentence (the " +
        "encoder's output)" : s.kind.startsWith("masked") ? "itself and the Italian tokens before it (the causal mask " +
        "hides the later ones)" : "every English token"}: its row of weights, per head (each row sums to 1). The heads'
        weighted sums of the values, concatenated and mixed by W_O, are the output.</p>
        <div class="map-scroll"><canvas class="map-walk-weights" role="img"></canvas></div><p>Looks most at: ${heads}</p>
        <p><button type="button" class="map-show" data-kind="${kind}" data-tab="attention">Open Attention at layer ${
        s.layer}</button> <button type="button" class="map-show" data-kind="${kind}" data-tab="head">Open Inside one
        head at layer ${s.layer}</button></p>`, strips([x, s.out], ["in", "out"]), () => {
        drawHeatmap($(".map-walk-weights"), n.weights, n.weights.map((_, h) => `head ${h + 1}`), n.keys,
                    {vmin: 0, vmax: 1, room: panel.clientWidth, annotate: n.keys.length <= 16 ? 2 : undefined});
        exposeForTests($(".map-walk-weights"), {__matrix: n.weights});
      }];
    }
    if (s.box === "feed-forward") {
      const firing = n.hidden.filter((v) => v > 0).length;
      return [`<p>FFN(x) = max(0, x W₁ + b₁) W₂ + b₂: ${firing} of ${n.hidden.length} hidden units fire (${
        fmt(100 * firing / n.hidden.length, 1)}%); W₂ maps them back to ${x.length} numbers.</p>
        <h4>The ${n.hidden.length} hidden units, max(0, x W₁ + b₁)</h4><div class="map-scroll"><canvas
        class="map-walk-hidden" role="img"></canvas></div>`, strips([x, s.out], ["in", "out"]), () => {
        const top = n.hidden.map((v, i) => [v, i]).sort((a, z) => z[0] - a[0]).slice(0, 8);
        drawActivations($(".map-walk-hidden"), n.hidden, new Set(top.filter(([v]) => v > 0).map(([, i]) => i)));
      }];
    }
    if (s.box === "add") {
      const sum = n.x.map((v, i) => v + x[i]);
      return [`<p>The residual connection: x, the stream that went around the norm and the ${s.kind}, plus what the
        ${s.kind} wrote. ‖${s.kind}(x)‖ ÷ ‖x‖ = ${fmt(length(x) / length(n.x))}: how much this sublayer changes the
        token.</p>${table(["", "length", "first numbers"], [["x (the stream)", fmt(length(n.x)), shown(n.x, 3)],
          [`+ ${escapeHtml(s.kind)}(x) (in)`, fmt(length(x)), shown(x, 3)],
          ["= sum (out)", fmt(length(sum)), shown(sum, 3)]])}`,
        strips([n.x, x, s.out], ["x", "sublayer", "sum"])];
    }
    if (s.box === "linear") {
      const written = state.payload.output_tokens[state.walk.position];
      return [`<p>The output layer is the embedding table (tied): the logit of a token is h · E[token], the final
        vector against that token's own embedding row. For the ${n.tokens.length} most probable tokens (of ${
        setup.vocab_size}):</p>${table(["token", "h · E[token], computed here", "the model's logit"],
        n.tokens.map((t, i) => [`${escapeHtml(t)}${t === written ? " ← written" : ""}`, fmt(dot(x, n.rows[i]), 4),
                                fmt(s.out[i], 4)]))}`, strips([x, ...n.rows.slice(0, 3)], ["h", ...n.tokens.slice(0, 3)])];
    }
    return [`<p>p = exp(z − log Σ exp z), the log-sum-exp over all ${setup.vocab_size} tokens' logits (those decoding
      may write) being ${fmt(n.lse, 4)}; greedy writes the first.</p>${table(["token", "logit z", "z − log Σ exp z",
      "p"], s.out.map((p, i) => [escapeHtml(n.tokens[i]), fmt(x[i], 4),
      fmt(x[i] - n.lse, 4), fmt(p, 4)]))}`, null];
  };
  const drawWalk = () => {
    const steps = walkSteps(), {stack, position} = state.walk;
    if (!steps) {
      panel.innerHTML = pending();
      return;
    }
    const i = state.walk.index = Math.max(0, Math.min(steps.length - 1, state.walk.index)), s = steps[i];
    state.open = byId[walkBox(s, stack)];
    if (s.layer) state.layer[stack] = s.layer;
    const x = i > 0 ? steps[i - 1].out : null, [html, strips, after] = walkOperation(s, x, stack);
    const input = x ? vectorLine("map-walk-in", "In", x)
      : `<p class="map-walk-vector map-walk-in" data-values=""><b>In</b>: the token <code>${
        escapeHtml(tokensOf(stack)[position])}</code></p>`;
    panel.innerHTML = `<h3>${i + 1} of ${steps.length}. ${escapeHtml(walkTitle(s, stack))}</h3>${input}${html}${
      strips ? strip("map-walk-strips") : ""}${vectorLine("map-walk-out", "Out", s.out)}${codeHtml(codeName(state.open))}`;
    if (strips) drawStrips($(".map-walk-strips"), strips.rows, strips.labels);
    after?.();
    walkBar.querySelector(".map-walk-where").textContent = `box ${i + 1} of ${steps.length}`;
    walkBar.querySelector(".map-walk-prev").disabled = i === 0;
    walkBar.querySelector(".map-walk-next").disabled = i === steps.length - 1;
    root.dataset.walk = `${stack}:${position}:${i}`;
    const kept = store.get("walk");
    if (kept?.stack !== stack || kept.position !== position || kept.index !== i) {
      store.set({walk: {stack, position, index: i}, box: null});  // the URL keeps where the walk is
    }
    root.dataset.open = state.open.id;
    mark();
  };
  const drawWalkBar = () => {
    if (!state.payload) {
      walkBar.innerHTML = `<h3>Follow a token</h3><p>Translate a sentence, then follow one of its tokens through every
        box of the model.</p>`;
      return;
    }
    const {on, stack, position} = state.walk, chosen = (s) => (s === stack ? position : -1);
    const options = (s) => tokensOf(s).map((t, i) => [i, `${i} ${t}`]);
    walkBar.innerHTML = `<h3>Follow a token</h3><p>Its vector through every box in the order the model computes, each
      box starting from what the one before gave: pick a token, then Next (or →).</p>
      <div class="map-tokens">${radios("map-walk-encoder", "English token (encoder)", options("encoder"),
      chosen("encoder"))}${radios("map-walk-decoder", "Italian step (decoder input)", options("decoder"),
      chosen("decoder"))}</div><p class="map-walk-controls"><button type="button" class="map-walk-prev"
      aria-label="Previous box">◀ Previous</button> <button type="button" class="map-walk-next"
      aria-label="Next box">${on ? "Next ▶" : "Start ▶"}</button> <span class="map-walk-where" aria-live="polite">${
      on ? "" : "not started"}</span></p>`;
    walkBar.querySelectorAll("fieldset").forEach((group) => {  // the chosen token in sight within its scrolling group
      const label = group.querySelector("input:checked")?.closest("label");
      if (label) group.scrollTop += label.getBoundingClientRect().top - group.getBoundingClientRect().top
        - (group.clientHeight - label.offsetHeight) / 2;
    });
  };
  const walkTo = (index) => {  // a box of the walk (the first press starts it at its first box)
    const start = performance.now();
    if (!state.walk.on) {
      state.walk.on = true;
      drawWalkBar();
      index = 0;
    }
    state.walk.index = index;
    askForBox();
    drawPanel();
    if (store.testing) root.dataset.walkMs = (performance.now() - start).toFixed(2);
  };
  const follow = (stack, position) => {  // another token: the same box of the walk, or its first in the other stack
    if (stack !== state.walk.stack) state.walk.index = 0;
    Object.assign(state.walk, {stack, position, on: true});
    drawWalkBar();
    askForBox();
    drawPanel();
  };
  walkBar.addEventListener("change", (event) => {
    const input = event.target;
    if (input.name === "map-walk-encoder" || input.name === "map-walk-decoder") {
      follow(input.name.slice("map-walk-".length), +input.value);
    }
  });
  walkBar.addEventListener("click", (event) => {
    if (event.target.closest?.(".map-walk-next")) walkTo(state.walk.on ? state.walk.index + 1 : 0);
    else if (event.target.closest?.(".map-walk-prev")) walkTo(state.walk.index - 1);
    else if (event.target.closest?.("label") && event.detail) {  // a token clicked: the arrows go on to the boxes
      requestAnimationFrame(() => walkBar.querySelector(".map-walk-next")?.focus());
    }
  });
  document.addEventListener("keydown", (event) => {  // ← → walk, unless a control of its own takes them
    const step = {ArrowRight: 1, ArrowLeft: -1}[event.key], target = event.target;
    if (!step || !state.walk.on || !visible() || event.altKey || event.ctrlKey || event.metaKey) return;
    if (target !== document.body && !root.contains(target)) return;
    if (target.matches?.("input, select, textarea, [role='tab']")) return;
    event.preventDefault();
    walkTo(state.walk.index + step);
  });

  const PANELS = {embedding: embeddingPanel, position: positionPanel, residual: residualPanel, norm: normPanel,
                  "final-norm": normPanel, "feed-forward": ffnPanel, attention: attentionPanel, output: outputPanel};
  const drawPanel = () => {
    const start = performance.now(), b = state.open;
    if (state.walk.on && state.payload) {
      drawWalk();
      root.dataset.state = numbers() ? "drawn" : "asking";
      return;
    }
    delete root.dataset.walk;
    if (!b || !state.payload) {
      root.dataset.state = state.payload ? "ready" : "empty";
      if (state.payload) panel.innerHTML = INTRO;
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
    if (q && keyOf({translation: state.payload.id, ...q}) !== key) return;
    if (q?.box === "output") redrawOutput();  // the controls kept: a top-k being typed keeps its focus
    else if (q) drawPanel();
  };

  store.on("box", (id) => {  // a box asked by the URL: opened; a name this map has no box of: none
    if (!Object.hasOwn(byId, id)) return id && store.set({box: null});
    if (id !== state.open?.id) open(id);
  });
  store.on("tab", (tab) => {  // the map shown again: ask for the open box's vectors of a translation made meanwhile
    if (tab === "map") requestAnimationFrame(askForBox);
  });
  const walkFromStore = (wanted) => {  // a walk the URL asked for: taken up where this sentence has that token
    if (!state.payload || !wanted || wanted.position >= tokensOf(wanted.stack).length) return false;
    Object.assign(state.walk, {on: true, stack: wanted.stack, position: wanted.position, index: wanted.index});
    return true;
  };
  store.on("walk", (wanted) => {
    const {on, stack, position, index} = state.walk;
    if (!wanted || (on && wanted.stack === stack && wanted.position === position && wanted.index === index)) return;
    if (walkFromStore(wanted)) {
      drawWalkBar();
      askForBox();
      drawPanel();
    }
  });
  // The first sentence's walk may come from the address the page opened: read when that sentence comes, not when
  // this view is mounted (the map, the first tab, may be mounted before page.js has put the address in the store).
  let firstSentence = true;
  store.on("translation", (payload) => {
    state.payload = payload;
    nameSentence(root.parentElement, payload);
    state.asked = null;
    state.token = state.step = 0;
    if (state.walk.on) state.open = null;  // a walk's box belongs to its token: a new sentence starts from the intro
    Object.assign(state.walk, {on: false, stack: "encoder", position: 0, index: 0});
    if (payload) {  // the address's walk waits for the first sentence that comes (none may come before it)
      const wanted = store.get("walk");
      if (!walkFromStore(firstSentence ? wanted : null) && wanted) store.set({walk: null});
      firstSentence = false;
    }
    answered.clear();
    drawWalkBar();
    drawMap();
    if (!payload) {
      panel.innerHTML = `<p class="map-empty">Translate a sentence, then click a box of the map.</p>`;
      root.dataset.state = "empty";
      return;
    }
    askForBox();
    drawPanel();
  });
  drawWalkBar();
  drawMap();
}
