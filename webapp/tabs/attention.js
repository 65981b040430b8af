// The "Attention" tab, drawn in the page (bertviz style) from the maps each translation's payload brings once
// (the store's "translation"; views.js: unpack): the kind, layer, head, naming of the Italian rows and heatmap or
// lines, a click on the overview, a hover, a click on a cell or a token, the downloads — all answered here, no request
// to the server. The head shown is the store's "attention" ({kind, layer, head}: another view writes it to show a head
// here; the URL keeps it), heatmap or lines its "style", the colour scale its "scale" (the URL keeps both). What is
// drawn is on #attention-heatmap's data-* (kind, layer, head, rows, view, scale, outline "row,col", lit: the query
// whose lines are lit); for the tests only (exposeForTests), on its canvas: `__matrices` (the matrices drawn),
// `__matrix` (the first), `__cells` (where each map's cells are), and the figure's data-draw-ms (how long the last
// redraw took).
import {store, exposeForTests} from "../store.js";
import {
  nameSentence, unpack, viridis, MASKED, ORANGE, sizedCanvas, readableScale, drawHeatmap, pointerAt, cellAt,
  saveCanvas, saveJson, keepRadioGroup,
} from "../views.js";

// The help under the figure: what rows, columns and the mouse do.
const HELP = `<p>Each <strong>row</strong> is a query token, each <strong>column</strong> a key token; a row's colours show
how much that query attends to each key (every row sums to 1). <em>Encoder self-attention</em>: English words looking
at English words. <em>Decoder self-attention</em>: each Italian position looks only at itself and earlier positions
(the causal mask). <em>Cross-attention</em>: each Italian position looks at the English sentence; row
<code>&lt;s&gt;</code> is where the first Italian token was chosen, row <code>▁x</code> where the token after
<code>▁x</code> was chosen (or name the rows by the <em>token produced</em> there). Hover a cell for its numbers, click
it (or a token's label) to outline its row and column (click again to clear); <em>lines</em> draws a line per pair
instead, as opaque as its weight (hover a query to light up its lines); click a map of the overview below to show that
layer and head.</p>`;

// The view's markup: the controls (drawn below, for the kinds' depths and heads), the figure (#attention-heatmap), the
// download buttons, the help and the overview (#attention-overview).
const MARKUP = `<div class="attn-view" aria-label="Attention">
<div id="attention-controls" class="attn-controls"></div>
<div id="attention-heatmap" class="attn-figure">
<p class="attn-title gtitle" aria-live="polite"></p>
<p class="attn-empty">Translate a sentence to see where each token looked.</p>
<div class="attn-scroll"><canvas class="attn-canvas" tabindex="0" role="img" hidden></canvas></div>
<div class="attn-tooltip" role="tooltip" hidden></div>
</div>
<div class="attn-downloads">
<button type="button" class="attn-png" disabled>⬇️ Figure (PNG)</button>
<button type="button" class="attn-json" disabled>⬇️ Attention weights, this kind, all layers and heads (JSON)</button>
</div>
<div class="attn-help">${HELP}</div>
<div id="attention-overview" class="attn-overview">
<p class="attn-title gtitle"></p>
<div class="attn-scroll"><canvas class="attn-overview-canvas" role="img" hidden></canvas></div>
</div>
</div>`;

export function mount({element, props}) {
  element.querySelector(".view-mount").innerHTML = MARKUP;
  const root = element.querySelector(".attn-view");
  const $ = (selector) => root.querySelector(selector);
  const setup = props.setup;  // {depths: kind -> layers, titles: kind -> title (radio order), heads} (attention.py)
  const figure = $("#attention-heatmap"), canvas = $(".attn-canvas"), tooltip = $(".attn-tooltip");
  const overview = $(".attn-overview-canvas");
  const KINDS = Object.keys(setup.titles);  // the kind radio's order (attention.py: RADIO_ORDER)
  const SIDES = {source: "English source token", target: "Italian decoder input",
                 produced: "Italian token produced at that step"};
  const HEAD_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
  const state = {payload: null, maps: {}, kind: "cross", layer: 1, head: "mean", rows: "input", view: "heatmap",
                 scale: "fixed", outline: null, panels: [], lit: null};
  // The colour scale: "fixed", 0 to 1 for every map (the default: the same colour is the same weight in every map),
  // or "own", 0 to the map's largest weight (over a grid of heads, the grid's), named under the title.
  const SCALES = {fixed: "colours 0 to 1, the same for every map", own: "colours 0 to this map's largest weight"};
  const scaleTop = (matrices) => (state.scale === "fixed" ? 1
    : Math.max(1e-9, ...matrices.flat(2).filter((v) => v !== null)));

  // --- What is shown -------------------------------------------------------------------------------------------------
  const maps = (kind = state.kind) => {  // the kind's unpacked maps, once per translation
    if (!state.payload) return null;
    return (state.maps[kind] ??= unpack(state.payload.attention[kind]));
  };
  const depth = (kind) => maps(kind)?.layers ?? setup.depths[kind];
  const heads = () => maps()?.heads ?? setup.heads;
  const headWords = (head) => ({mean: "mean over heads", all: "all heads"})[head] ?? `head ${head}`;
  const titleOf = (kind, layer, head) =>
    `${state.payload?.kinds[kind].title ?? setup.titles[kind]} · layer ${layer} · ${headWords(head)}`;
  const rowSide = () => {
    const side = state.payload.kinds[state.kind].rows;
    return side === "target" && state.rows === "produced" ? "produced" : side;
  };
  const tokens = (side) => ({source: state.payload.source_tokens, target: state.payload.target_tokens,
                             produced: state.payload.output_tokens})[side];
  const rowLabels = () => tokens(rowSide());
  const colLabels = () => tokens(state.payload.kinds[state.kind].columns);
  const masked = (matrix) => (state.kind === "decoder"  // the future, hidden by the causal mask: grey, not zeros
    ? matrix.map((row, i) => row.map((v, j) => (j > i ? null : v))) : matrix);
  const matrixOf = (head) => {  // head: "mean" or a 1-based index
    const m = maps(), layer = state.layer - 1;
    return masked(head === "mean" ? m.mean(layer) : m.map(layer, head - 1));
  };
  const shownHeads = () => (state.head === "all" ? Array.from({length: heads()}, (_, h) => h + 1) : [state.head]);

  // --- The controls ---------------------------------------------------------------------------------------------------
  // Native radios (views.js: radioGroup), marked as Gradio marks its own (the fieldset's id, the chosen label's class
  // "selected"), so the page's styles and keyboard code treat them alike.
  const controls = $("#attention-controls");
  const CONTROLS = {
    kind: () => ["Attention", KINDS.map((k) => [k, state.payload?.kinds[k].title ?? setup.titles[k]])],
    layer: () => ["Layer", Array.from({length: depth(state.kind)}, (_, i) => [i + 1, String(i + 1)])],
    head: () => ["Head", [["mean", "mean"], ["all", "all (grid)"],
                          ...Array.from({length: heads()}, (_, h) => [h + 1, String(h + 1)])]],
    rows: () => ["Italian rows", [["input", "decoder input"], ["produced", "token produced"]]],
    view: () => ["View", [["heatmap", "heatmap"], ["lines", "lines"]]],
    scale: () => ["Colours", [["fixed", "0–1"], ["own", "0–max"]]],
  };
  const IDS = {kind: "kind", layer: "layer", head: "head", rows: "rows", view: "style", scale: "scale"};
  const renderControl = (name) => {
    const [legend, options] = CONTROLS[name]();
    const slot = controls.querySelector(`[data-control="${name}"]`);
    keepRadioGroup(slot, `attention-${name}`, legend, options, state[name]).id = IDS[name];
  };
  const syncControls = () => {  // each control's choices and its checked radio as the state says
    for (const name of Object.keys(CONTROLS)) renderControl(name);
  };

  controls.innerHTML = Object.keys(CONTROLS).map((name) => `<span data-control="${name}"></span>`).join("");

  const setKind = (kind) => {  // a shallower kind: its last layer, never an error
    state.kind = kind;
    state.layer = Math.max(1, Math.min(state.layer, depth(kind)));
  };
  controls.addEventListener("change", (event) => {
    const input = event.target;
    if (!input.matches?.('input[type="radio"]')) return;
    const name = input.name.replace(/^attention-/, "");
    const value = name === "layer" || (name === "head" && /^\d+$/.test(input.value)) ? +input.value : input.value;
    if (name === "kind") setKind(value);
    else if (name === "layer") state.layer = Math.max(1, Math.min(value, depth(state.kind)));
    else state[name] = value;
    if (name !== "rows" && name !== "view" && name !== "scale") state.outline = null;
    draw();
  });

  // --- The heatmap, or one per head side by side ---------------------------------------------------------------------

  const header = (ctx, width, lines) => {  // the title, then smaller lines under it; returns the height used
    width = Math.min(width, canvas.parentElement.clientWidth || width);  // centred on what is on screen at first
    ctx.fillStyle = "#222";
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.font = "600 15px system-ui, sans-serif";
    ctx.fillText(lines[0], width / 2, 14);
    ctx.font = "12px system-ui, sans-serif";
    lines.slice(1).forEach((line, i) => ctx.fillText(line, width / 2, 34 + 17 * i));
    return 26 + 17 * (lines.length - 1);
  };
  const headerWidth = (lines) => {
    const ctx = canvas.getContext("2d");
    ctx.font = "600 15px system-ui, sans-serif";
    return Math.max(...lines.map((l) => ctx.measureText(l).width)) + 20;
  };
  // The header's lines cut at their " · " where one is wider than the figure's column (a phone): the figure is then
  // drawn at the column's width, not shrunk to it with its labels.
  const fitted = (lines) => {
    const room = canvas.parentElement.clientWidth || Infinity;  // 0 while hidden: as on a wide screen
    return lines.flatMap((line) => {
      if (headerWidth([line]) <= room) return [line];
      return line.split(" · ").reduce((out, part) => {
        const joined = out.length ? `${out[out.length - 1]} · ${part}` : part;
        if (out.length && headerWidth([joined]) <= room) out[out.length - 1] = joined;
        else out.push(part);
        return out;
      }, []);
    });
  };

  const drawHeatmaps = (title, notes) => {
    const kind = state.payload.kinds[state.kind], rows = rowLabels(), cols = colLabels();
    const xTitle = `Key: ${SIDES[kind.columns]} (columns)`, yTitle = `Query: ${SIDES[rowSide()]} (rows)`;
    const shown = shownHeads(), grid = shown.length > 1;
    const matrices = shown.map(matrixOf);
    const vmax = scaleTop(matrices);
    // Over a grid the axes are named in the header, not beside each map, where they would run into its labels.
    notes = [...notes, SCALES[state.scale]];
    const lines = fitted(grid ? [title, `${yTitle} · ${xTitle}`, ...notes] : [title, ...notes]);
    const cell = grid ? Math.max(8, Math.min(22, 300 / Math.max(cols.length, 1))) : undefined;
    const panels = matrices.map((matrix, i) => {
      const off = document.createElement("canvas");
      const box = drawHeatmap(off, matrix, grid && i % 4 ? rows.map(() => "") : rows, cols, {
        outline: state.outline ?? undefined, vmax, cell, room: canvas.parentElement.clientWidth,
        ...(grid ? {title: `head ${shown[i]}`} : {xTitle, yTitle}),
      });
      return {canvas: off, box, matrix, head: shown[i]};
    });
    const perRow = Math.min(panels.length, 4);
    const [pw, ph] = [Math.max(...panels.map((p) => p.canvas.__size[0])), panels[0].canvas.__size[1]];
    const headHeight = 26 + 17 * (lines.length - 1) + 6;
    const width = Math.max(perRow * pw, headerWidth(lines));
    const height = headHeight + Math.ceil(panels.length / perRow) * ph;
    const ctx = sizedCanvas(canvas, width, height, grid ? undefined : readableScale(panels[0].box.labelPx));
    header(ctx, width, lines);
    panels.forEach((p, i) => {
      [p.x, p.y] = [(i % perRow) * pw, headHeight + Math.floor(i / perRow) * ph];
      ctx.drawImage(p.canvas, p.x, p.y, ...p.canvas.__size);
      [p.width, p.height] = [pw, ph];
    });
    state.panels = panels;
    return matrices;
  };

  // --- Lines (bertviz): queries left, keys right, a line per pair as opaque as its weight -------------------------------
  const LINE = {rowPx: 22, gap: 260, pad: 20};
  const drawLines = (title, notes) => {
    const rows = rowLabels(), cols = colLabels(), shown = shownHeads();
    const matrices = shown.map(matrixOf);
    const ctx0 = canvas.getContext("2d");
    ctx0.font = "13px system-ui, sans-serif";
    const widest = (labels) => Math.max(0, ...labels.map((l) => ctx0.measureText(l).width));
    const lines = fitted([title, ...notes, ...(shown.length > 1 ? ["one colour per head"] : [])]);
    // Each side named over its tokens: the queries (rows of the heatmap) left, the keys (its columns) right.
    const sides = [`Query: ${SIDES[rowSide()]}`, `Key: ${SIDES[state.payload.kinds[state.kind].columns]}`];
    ctx0.font = "600 13px system-ui, sans-serif";
    const [queryWidth, keyWidth] = sides.map((side) => ctx0.measureText(side).width);
    ctx0.font = "13px system-ui, sans-serif";
    const sidesTop = 26 + 17 * (lines.length - 1) + 10, headHeight = sidesTop + 24;
    const qx = LINE.pad + Math.max(widest(rows), queryWidth) + 8, kx = qx + LINE.gap;
    const width = Math.max(kx + 8 + Math.max(widest(cols), keyWidth) + LINE.pad, headerWidth(lines));
    const height = headHeight + LINE.rowPx * Math.max(rows.length, cols.length) + LINE.pad;
    const ctx = sizedCanvas(canvas, width, height);
    header(ctx, width, lines);
    ctx.font = "600 13px system-ui, sans-serif";
    ctx.textAlign = "right";
    ctx.fillText(sides[0], qx, sidesTop + 8);
    ctx.textAlign = "left";
    ctx.fillText(sides[1], kx, sidesTop + 8);
    const y = (i) => headHeight + (i + 0.5) * LINE.rowPx;
    const lit = state.lit;
    ctx.lineWidth = 2;
    matrices.forEach((matrix, h) => {
      ctx.strokeStyle = shown.length > 1 ? HEAD_COLOURS[h % HEAD_COLOURS.length] : "#1f77b4";
      matrix.forEach((row, i) => row.forEach((w, j) => {
        if (w === null || w < 0.01) return;
        ctx.globalAlpha = lit === null || lit === i ? w : w * 0.15;
        ctx.beginPath();
        ctx.moveTo(qx + 4, y(i));
        ctx.lineTo(kx - 4, y(j));
        ctx.stroke();
      }));
    });
    if (lit !== null) {  // the hovered query's lines, in orange, over the others dimmed
      ctx.strokeStyle = ORANGE;
      ctx.lineWidth = 4;
      matrices.forEach((matrix) => matrix[lit].forEach((w, j) => {
        if (w === null || w < 0.01) return;
        ctx.globalAlpha = Math.max(w, 0.15);
        ctx.beginPath();
        ctx.moveTo(qx + 4, y(lit));
        ctx.lineTo(kx - 4, y(j));
        ctx.stroke();
      }));
    }
    ctx.globalAlpha = 1;
    ctx.fillStyle = "#222";
    ctx.font = "13px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    ctx.textAlign = "right";
    rows.forEach((label, i) => {
      ctx.font = `${i === lit ? "700 " : ""}13px system-ui, sans-serif`;
      ctx.fillText(label, qx, y(i));
    });
    ctx.font = "13px system-ui, sans-serif";
    ctx.textAlign = "left";
    cols.forEach((label, j) => ctx.fillText(label, kx, y(j)));
    state.panels = [{lines: true, qx, kx, top: headHeight, rows: rows.length, matrices}];
    return matrices;
  };

  // --- The overview: every layer x head of the kind, small; the one shown outlined ------------------------------------
  const LUT = Array.from({length: 256}, (_, b) => viridis(b / 255).match(/\d+/g).map(Number));
  const MASKED_RGB = MASKED.match(/[0-9a-f]{2}/gi).map((h) => parseInt(h, 16));
  const miniatures = {};  // per translation and kind: one small canvas per map, one pixel per weight
  const miniature = (layer, head) => {
    const key = `${state.payload.id},${state.kind},${layer},${head},${state.scale}`;
    if (miniatures[key]) return miniatures[key];
    const m = maps(), matrix = masked(m.map(layer, head));
    const vmax = scaleTop([matrix]);
    const mini = Object.assign(document.createElement("canvas"), {width: m.cols, height: m.rows});
    const ctx = mini.getContext("2d"), image = ctx.createImageData(m.cols, m.rows);
    matrix.forEach((row, i) => row.forEach((v, j) => {
      image.data.set([...(v === null ? MASKED_RGB : LUT[Math.round(255 * Math.min(1, v / vmax))]), 255],
                     4 * (i * m.cols + j));
    }));
    ctx.putImageData(image, 0, 0);
    return (miniatures[key] = mini);
  };
  const OVERVIEW = {left: 62, top: 52, gap: 8};
  const drawOverview = () => {
    const m = maps(), title = `${state.payload.kinds[state.kind].title}: all layers × heads (outlined: shown above)`;
    const size = Math.max(40, Math.min(110, 860 / m.heads - OVERVIEW.gap));
    const [w, h] = m.cols >= m.rows ? [size, size * m.rows / m.cols] : [size * m.cols / m.rows, size];
    const width = Math.max(OVERVIEW.left + m.heads * (w + OVERVIEW.gap) + 10, headerWidth([title]));
    const height = OVERVIEW.top + m.layers * (h + OVERVIEW.gap) + 6;
    const ctx = sizedCanvas(overview, width, height);
    header(ctx, width, [title]);
    ctx.imageSmoothingEnabled = false;
    ctx.font = "12px system-ui, sans-serif";
    for (let head = 0; head < m.heads; head++) {
      ctx.textAlign = "center";
      ctx.fillText(`head ${head + 1}`, OVERVIEW.left + head * (w + OVERVIEW.gap) + w / 2, OVERVIEW.top - 10);
    }
    for (let layer = 0; layer < m.layers; layer++) {
      const y = OVERVIEW.top + layer * (h + OVERVIEW.gap);
      ctx.textAlign = "right";
      ctx.fillStyle = "#222";
      ctx.fillText(`layer ${layer + 1}`, OVERVIEW.left - 8, y + h / 2);
      for (let head = 0; head < m.heads; head++) {
        const x = OVERVIEW.left + head * (w + OVERVIEW.gap);
        ctx.drawImage(miniature(layer, head), x, y, w, h);
        if (layer === state.layer - 1 && (typeof state.head !== "number" || state.head === head + 1)) {
          ctx.strokeStyle = ORANGE;
          ctx.lineWidth = 4;
          ctx.strokeRect(x - 2, y - 2, w + 4, h + 4);
        }
      }
    }
    overview.__layout = {w, h, layers: m.layers, heads: m.heads};
    overview.setAttribute("aria-label", title);
    $("#attention-overview .attn-title").textContent = title;
  };
  const overviewAt = (event) => {  // {layer, head} (1-based) under the mouse, or null
    const {w, h, layers, heads: n} = overview.__layout ?? {};
    if (!w) return null;
    const [px, py] = pointerAt(overview, event), [x, y] = [px - OVERVIEW.left, py - OVERVIEW.top];
    const [head, layer] = [Math.floor(x / (w + OVERVIEW.gap)), Math.floor(y / (h + OVERVIEW.gap))];
    return head >= 0 && head < n && layer >= 0 && layer < layers ? {layer: layer + 1, head: head + 1} : null;
  };

  // --- Drawing it all ---------------------------------------------------------------------------------------------------
  const draw = () => {
    const start = performance.now();
    syncControls();
    const ready = !!state.payload;
    canvas.hidden = overview.hidden = !ready;
    $(".attn-empty").hidden = ready;
    for (const button of root.querySelectorAll(".attn-downloads button")) button.disabled = !ready;
    tooltip.hidden = true;
    Object.assign(figure.dataset, {kind: state.kind, layer: state.layer, head: state.head, rows: state.rows,
                                   view: state.view, scale: state.scale});
    const shown = store.get("attention");
    if (shown?.kind !== state.kind || shown?.layer !== state.layer || shown?.head !== state.head) {
      store.set({attention: {kind: state.kind, layer: state.layer, head: state.head}});
    }
    if (store.get("scale") !== state.scale || store.get("style") !== state.view) {
      store.set({scale: state.scale, style: state.view});
    }
    if (!ready) {
      state.panels = [];
      $("#attention-heatmap .attn-title").textContent = "";
      $("#attention-overview .attn-title").textContent = "";
      figure.removeAttribute("aria-label");
      return;
    }
    const title = titleOf(state.kind, state.layer, state.head);
    const notes = state.view === "lines" ? ["lines as opaque as their weight"]
      : state.kind === "decoder" ? ["grey: future positions, hidden by the causal mask"] : [];
    const matrices = state.view === "lines" ? drawLines(title, notes) : drawHeatmaps(title, notes);
    exposeForTests(canvas, {__matrices: matrices, __matrix: matrices[0],
      __cells: state.panels.filter((p) => !p.lines).map((p) =>  // where each map's cells are, in CSS pixels
        ({x: p.x + p.box.left, y: p.y + p.box.top, cell: p.box.cell, rows: p.box.rows, cols: p.box.cols,
          labelPx: p.box.labelPx}))});
    const {row = "", col = ""} = state.outline ?? {};
    Object.assign(figure.dataset, {outline: state.outline ? `${row},${col}` : "", lit: state.lit ?? ""});
    const kindSides = state.payload.kinds[state.kind];
    canvas.setAttribute("aria-label", `${title}: ${state.view}, query: ${SIDES[rowSide()]}${
      state.view === "lines" ? " (left)" : " (rows)"}, key: ${SIDES[kindSides.columns]}${
      state.view === "lines" ? " (right)" : " (columns)"}`);
    figure.setAttribute("aria-label", title);
    $("#attention-heatmap .attn-title").textContent = title;
    drawOverview();
    exposeForTests(figure.dataset, {drawMs: (performance.now() - start).toFixed(2)});
  };

  // --- The mouse: a tooltip, outlines, lit lines, the overview ------------------------------------------------------
  const hit = (event) => {  // {panel, row?, col?} under the mouse on the figure, or null
    const [x, y] = pointerAt(canvas, event);
    const panel = state.panels.find((p) => !p.lines && x >= p.x && x < p.x + p.width && y >= p.y &&
                                    y < p.y + p.height);
    if (!panel) return null;
    const box = {...panel.box, left: panel.box.left + panel.x, top: panel.box.top + panel.y};
    const at = cellAt(box, {target: canvas, clientX: event.clientX, clientY: event.clientY});
    return at && {panel, ...at};
  };
  const linesQuery = (event) => {  // the query row under the mouse in the lines view, or null
    const p = state.panels[0];
    if (!p?.lines) return null;
    const [x, y] = pointerAt(canvas, event);
    const row = Math.floor((y - p.top) / LINE.rowPx);
    return x <= p.qx + 20 && row >= 0 && row < p.rows ? row : null;
  };
  const showTooltip = (event, text) => {
    const rect = figure.getBoundingClientRect();
    tooltip.textContent = text;
    tooltip.hidden = false;
    tooltip.style.left = `${event.clientX - rect.left + 14}px`;
    tooltip.style.top = `${event.clientY - rect.top + 14}px`;
  };
  const fixed = (v) => (v === null ? "masked (future)" : v.toFixed(3));
  canvas.addEventListener("mousemove", (event) => {
    if (!state.payload) return;
    if (state.view === "lines") {
      const row = linesQuery(event);
      if (row !== state.lit) {
        state.lit = row;
        draw();
      }
      if (row === null) return;
      const cols = colLabels(), weights = state.panels[0].matrices;
      const mean = cols.map((_, j) => weights.reduce((s, m) => s + (m[row][j] ?? 0), 0) / weights.length);
      const top = mean.map((w, j) => [w, j]).sort((a, b) => b[0] - a[0]).slice(0, 3);
      showTooltip(event, `query ${rowLabels()[row]} looks most at:\n${
        top.map(([w, j]) => `${cols[j]}  weight ${w.toFixed(3)}`).join("\n")}`);
      return;
    }
    const at = hit(event);
    if (!at || at.row === undefined || at.col === undefined) {
      tooltip.hidden = true;
      return;
    }
    const head = typeof at.panel.head === "number" ? ` · head ${at.panel.head}` : "";
    showTooltip(event, `query ${rowLabels()[at.row]}\nkey ${colLabels()[at.col]}\nweight ${
      fixed(at.panel.matrix[at.row][at.col])}${head}`);
  });
  canvas.addEventListener("mouseleave", () => {
    tooltip.hidden = true;
    if (state.lit !== null) {
      state.lit = null;
      draw();
    }
  });
  canvas.addEventListener("click", (event) => {  // a cell: its row and column outlined; a token label: its row or column
    const at = state.payload && state.view === "heatmap" && hit(event);
    if (!at) return;
    const outline = {row: at.row, col: at.col};
    const same = state.outline && state.outline.row === outline.row && state.outline.col === outline.col;
    state.outline = same ? null : outline;
    draw();
  });
  overview.addEventListener("click", (event) => {
    const at = state.payload && overviewAt(event);
    if (at) showHead({kind: state.kind, ...at});
  });
  overview.addEventListener("mousemove", (event) => {
    overview.title = (() => {
      const at = overviewAt(event);
      return at ? `layer ${at.layer} · head ${at.head} (click to show)` : "";
    })();
  });

  // --- Downloads, made in the page ------------------------------------------------------------------------------------
  $(".attn-png").addEventListener("click", () => {
    if (state.payload) {
      saveCanvas(canvas, `attention-${state.kind}-layer${state.layer}-${headWords(state.head).replace(/ /g, "-")}.png`);
    }
  });
  $(".attn-json").addEventListener("click", () => {
    if (!state.payload) return;
    const m = maps(), kind = state.payload.kinds[state.kind];
    const round = (row) => row.map((v) => Math.round(v * 1e4) / 1e4);
    saveJson({
      kind: kind.title,
      shape: "layers x heads x queries x keys (each row sums to 1)",
      precision: "as shipped to the page: each weight within 1/510 of the model's (one byte per weight)",
      query_tokens: tokens(kind.rows), key_tokens: tokens(kind.columns),
      ...(kind.rows === "target" ? {produced_tokens: state.payload.output_tokens} : {}),
      translation: state.payload.translation,
      attention: Array.from({length: m.layers}, (_, l) =>
        Array.from({length: m.heads}, (_, h) => m.map(l, h).map(round))),
    }, `attention-${state.kind}.json`);
  });

  // --- The store: the head another view (or the URL) asks for, the colour scale, each new translation ----------------
  const showHead = ({kind, layer, head}) => {  // 1-based layer and head (or "mean" / "all")
    const before = [state.kind, state.layer, state.head].join();
    if (kind && KINDS.includes(kind)) state.kind = kind;
    state.layer = Math.max(1, Math.min(+layer || 1, depth(state.kind)));
    state.head = head === "mean" || head === "all" ? head : Math.max(1, Math.min(+head || 1, heads()));
    if ([state.kind, state.layer, state.head].join() === before) return;
    state.outline = null;
    draw();
  };
  // Heatmap or lines, and the colour scale: taken when one of their choices and new (then true).
  const choose = (name, value) => {
    if (value === state[name] || !CONTROLS[name]()[1].some(([choice]) => choice === value)) return false;
    state[name] = value;
    return true;
  };
  // What the store holds already (the URL's, when read before this view was mounted) is taken before the first draw,
  // which writes the view's own into the store.
  choose("view", store.get("style"));
  choose("scale", store.get("scale"));
  store.on("attention", (shown) => shown && showHead(shown));
  store.on("style", (style) => choose("view", style) && draw());
  store.on("scale", (scale) => choose("scale", scale) && draw());
  store.on("translation", (payload) => {
    state.payload = payload;
    state.maps = {};
    state.outline = null;
    state.lit = null;
    if (payload) setKind(state.kind);
    nameSentence(root, payload);
    draw();
  });
  draw();
}
