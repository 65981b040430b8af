// What the views of the page share: how a view is mounted and asks the server (`mountView`), and the helpers they
// draw with. A view draws the translation the store holds (store.on("translation", draw): at once when one is shown,
// then on each new one; null when the box was emptied: the views clear, so that none shows a sentence other than the
// one in the box), and names the sentence it draws (`nameSentence`).
import {exposeForTests} from "./store.js";

// The one way a view asks the server: `ask(name, data)`, a promise of the answer. The server knows two kinds of
// question, declared with the view in Python (webapp/views.py, browser_view): data prepared once (the training
// history, the positional-encoding table, a translation's payload), a server function of the view, answered at the
// server's door; and work that runs the model (a head's numbers, a box's vectors, an attribution), a custom event of
// the view named in `questions`, which runs in the server's queue and answers into the view's value, with the number
// of the question it answers (`asked`, echoed by webapp/views.py's `answer`). A question not answered (refused, or
// about no translation) leaves its promise waiting; each view draws only the answer to what it shows.
const asker = ({trigger, watch, props, server}, questions) => {
  const waiting = new Map();
  let asked = 0;
  watch("value", () => {
    const reply = props.value;
    if (!waiting.has(reply?.asked)) return;
    waiting.get(reply.asked)(reply.answer);
    waiting.delete(reply.asked);
  });
  return (name, data) => {
    if (typeof server[name] === "function") return server[name](data);
    if (!questions.includes(name)) throw new Error(`this view has no question "${name}" (webapp/views.py)`);
    const number = ++asked;
    return new Promise((resolve) => {
      waiting.set(number, resolve);
      trigger(name, {...data, asked: number});
    });
  };
};

// A view mounted in its gr.HTML (its js_on_load, webapp/page_script.py: view_loader): the module `path` (relative to
// this file) imported and its `mount` called with the component's element, props and watch, and `ask`.
export const mountView = async (path, gradio, questions) => {
  const view = await import(path);
  const {element, props, watch} = gradio;
  return view.mount({element, props, watch, ask: asker(gradio, questions)});
};

// The line at the top of a view (`root`) that names the sentence it draws (`payload`'s English and Italian), so
// that a view never shows a sentence other than the one it names; hidden when there is none.
export const nameSentence = (root, payload) => {
  let line = root.querySelector(":scope > .view-sentence");
  if (!line) {
    line = Object.assign(document.createElement("p"), {className: "view-sentence"});
    root.prepend(line);
  }
  line.hidden = !payload;
  line.textContent = payload ? `Sentence: “${payload.request?.text ?? ""}” → “${payload.translation}”` : "";
};

// Numbers packed by payload.quantized or payload.exact ({shape, scale, type: "uint8", "int16" or "float32", bytes:
// base64, little-endian, row-major}), as one flat array of floats.
export const dequantize = (packed) => {
  const bytes = Uint8Array.from(atob(packed.bytes), (c) => c.charCodeAt(0)), data = new DataView(bytes.buffer);
  const size = {uint8: 1, int16: 2, float32: 4}[packed.type], values = new Float64Array(bytes.length / size);
  const read = {uint8: (i) => bytes[i], int16: (i) => data.getInt16(2 * i, true),
                float32: (i) => data.getFloat32(4 * i, true)}[packed.type];
  for (let i = 0; i < values.length; i++) values[i] = read(i) / packed.scale;
  return values;
};

// A kind's maps as the payload packs them (payload.packed: one byte per weight): map(layer, head) is the (queries,
// keys) weights as rows of numbers, mean(layer) the mean over heads.
export const unpack = (packed) => {
  const values = dequantize(packed);
  const [layers, heads, rows, cols] = packed.shape;
  const map = (layer, head) => Array.from({length: rows}, (_, i) => {
    const start = ((layer * heads + head) * rows + i) * cols;
    return Array.from(values.subarray(start, start + cols));
  });
  const mean = (layer) => {
    const maps = Array.from({length: heads}, (_, h) => map(layer, h));
    return maps[0].map((row, i) => row.map((_, j) => maps.reduce((s, m) => s + m[i][j], 0) / heads));
  };
  return {layers, heads, rows, cols, map, mean};
};

export const escapeHtml = (text) => String(text).replace(/[&<>"']/g,
  (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})[c]);

// A colour scale: t in [0, 1] -> [r, g, b], linear between evenly spaced `stops`.
export const interpolate = (stops, t) => {
  const x = Math.max(0, Math.min(1, t)) * (stops.length - 1), i = Math.min(Math.floor(x), stops.length - 2);
  return stops[i].map((v, k) => Math.round(v + (stops[i + 1][k] - v) * (x - i)));
};
export const rgb = (color) => `rgb(${color.join(",")})`;
// Viridis (matplotlib's default colour scale, readable in grey and by most colour-blind readers), 10 stops.
export const VIRIDIS = [[68, 1, 84], [72, 40, 120], [62, 73, 137], [49, 104, 142], [38, 130, 142], [31, 158, 137],
  [53, 183, 121], [110, 206, 88], [181, 222, 43], [253, 231, 37]];
export const viridis = (t) => rgb(interpolate(VIRIDIS, t));
// Blue for -1, white for 0, red for +1 (ColorBrewer's RdBu, reversed), for numbers with a sign, e.g. a vector's
// components: `divergingRgb` gives [r, g, b] (for image data), `diverging` a CSS colour.
export const RDBU = [[5, 48, 97], [33, 102, 172], [67, 147, 195], [146, 197, 222], [209, 229, 240], [247, 247, 247],
  [253, 219, 199], [244, 165, 130], [214, 96, 77], [178, 24, 43], [103, 0, 31]];
export const divergingRgb = (t) => interpolate(RDBU, (t + 1) / 2);
export const diverging = (t) => rgb(divergingRgb(t));
// Dark text on a light cell, white on a dark one (a colour as viridis and diverging write it).
export const inkOn = (color) => {
  const [r, g, b] = color.match(/\d+/g).map(Number);
  return 0.2126 * r + 0.7152 * g + 0.0722 * b > 140 ? "#111" : "#fff";
};
export const MASKED = "#d9d9d9";  // a cell the query may not see (the decoder's future): grey, not a zero
export const ORANGE = "#ff9f43";

// A canvas of `width` x `height` CSS pixels, drawn at the screen's pixel density (sharp on a projector or a phone),
// cleared to white; returns its 2D context, scaled so that drawing is in CSS pixels. On a narrow screen it is shown
// smaller to fit its column, down to `minScale` of its size (default half; a wider drawing then scrolls sideways):
// `pointerAt` reads the mouse in the drawing's own pixels whatever the size shown.
export const sizedCanvas = (canvas, width, height, minScale = 0.5) => {
  const scale = window.devicePixelRatio || 1;
  [canvas.width, canvas.height] = [Math.ceil(width * scale), Math.ceil(height * scale)];
  Object.assign(canvas.style, {width: `${width}px`, height: "auto", maxWidth: "100%",
                               minWidth: `${Math.ceil(width * minScale)}px`});
  canvas.__size = [width, height];
  const ctx = canvas.getContext("2d");
  ctx.setTransform(scale, 0, 0, scale, 0, 0);
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, width, height);
  return ctx;
};

// How much smaller a drawing whose labels are `px` pixels may be shown: its labels never under READABLE_PX (on a phone
// a wider map scrolls sideways in its box rather than shrink its labels unreadable).
export const READABLE_PX = 10;
export const readableScale = (px) => Math.min(1, READABLE_PX / px);

// A heatmap drawn on a canvas: `matrix` rows x columns (null: masked), labelled by `rowLabels` and `colLabels`, with
// optional `title`, `xTitle`, `yTitle`, `vmin` (default 0) and `vmax` (default: the largest value), `color` (a value's
// colour; default viridis from vmin to vmax), `annotate` (decimals: each cell's value printed on it), `outline` ({row}
// or {col} or {row, col}: drawn in orange) and `cell` (pixels per cell; default: what fits `room`, the width it may
// take, by default its parent's, between 10 and 34). Returns the layout, for `cellAt`. The same canvas is what the
// PNG download saves: the file is the view on the screen.
export const drawHeatmap = (canvas, matrix, rowLabels, colLabels, options = {}) => {
  const ctx = canvas.getContext("2d");
  const font = (px, weight = "") => `${weight} ${px}px system-ui, sans-serif`;
  const labelPx = Math.max(9, Math.min(14, 16 - Math.max(rowLabels.length, colLabels.length) / 6));
  ctx.font = font(labelPx);
  const widest = (labels) => Math.max(0, ...labels.map((l) => ctx.measureText(l).width));
  const top = options.title ? 30 : 8;
  const left = widest(rowLabels) + (options.yTitle ? 30 : 10);
  const room = options.room || canvas.parentElement?.clientWidth || 640;  // 0 while hidden: as on a wide screen
  const cellRoom = Math.min(640, room - left - 70) / Math.max(colLabels.length, 1);
  let cell = options.cell ?? Math.max(10, Math.min(34, cellRoom));
  // Column labels at 45°, or upright where the cells are too narrow for slanted labels not to overlap (a long
  // sentence in a narrow column); the cells then at least a label's height apart.
  const upright = cell * Math.SQRT1_2 < labelPx + 2;
  if (upright && options.cell === undefined) cell = Math.max(cell, labelPx + 3);
  const bottom = widest(colLabels) * (upright ? 1 : 0.75) + (options.xTitle ? 34 : 14);
  ctx.font = font(12);
  const yTitleWidth = options.yTitle ? ctx.measureText(options.yTitle).width : 0;  // the canvas is at least as tall
  const width = left + cell * colLabels.length + 70;
  const height = Math.max(top + cell * rowLabels.length + bottom, yTitleWidth + 16);
  sizedCanvas(canvas, width, height, readableScale(labelPx));
  const values = matrix.flat().filter((v) => v !== null);
  const vmin = options.vmin ?? 0, vmax = options.vmax ?? Math.max(vmin + 1e-9, ...values);
  const color = options.color ?? ((v) => viridis((v - vmin) / (vmax - vmin)));
  matrix.forEach((row, i) => row.forEach((v, j) => {
    ctx.fillStyle = v === null ? MASKED : color(v);
    ctx.fillRect(left + j * cell, top + i * cell, cell + 0.5, cell + 0.5);
    if (options.annotate !== undefined && v !== null) {
      ctx.fillStyle = inkOn(color(v));
      ctx.font = font(Math.min(14, cell / 3));
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      ctx.fillText(v.toFixed(options.annotate), left + (j + 0.5) * cell, top + (i + 0.5) * cell);
    }
  }));
  ctx.fillStyle = "#222";
  ctx.font = font(labelPx);
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  rowLabels.forEach((label, i) => ctx.fillText(label, left - 4, top + (i + 0.5) * cell));
  colLabels.forEach((label, j) => {
    ctx.save();
    ctx.translate(left + (j + 0.5) * cell, top + rowLabels.length * cell + 4);
    ctx.rotate(upright ? -Math.PI / 2 : -Math.PI / 4);
    ctx.fillText(label, 0, 0);
    ctx.restore();
  });
  const box = {left, top, cell, rows: rowLabels.length, cols: colLabels.length, labelPx};
  exposeForTests(canvas, {__labels: {cell, px: labelPx, angle: upright ? 90 : 45}});
  const {outline} = options;
  if (outline) {
    ctx.strokeStyle = ORANGE;
    ctx.lineWidth = 3;
    if (outline.row !== undefined) ctx.strokeRect(left, top + outline.row * cell, cell * box.cols, cell);
    if (outline.col !== undefined) ctx.strokeRect(left + outline.col * cell, top, cell, cell * box.rows);
  }
  ctx.textAlign = "center";
  if (options.title) {
    ctx.font = font(15, "600");
    ctx.fillText(options.title, width / 2, 15);
  }
  ctx.font = font(12);
  if (options.xTitle) ctx.fillText(options.xTitle, left + cell * box.cols / 2, height - 10);
  if (options.yTitle) {
    ctx.save();
    const middle = Math.min(Math.max(top + cell * box.rows / 2, yTitleWidth / 2 + 8), height - yTitleWidth / 2 - 8);
    ctx.translate(12, middle);
    ctx.rotate(-Math.PI / 2);
    ctx.fillText(options.yTitle, 0, 0);
    ctx.restore();
  }
  const barX = left + cell * box.cols + 16, barH = cell * box.rows;  // the colour bar, 0 to vmax
  for (let y = 0; y < barH; y++) {
    ctx.fillStyle = color(vmax - (vmax - vmin) * y / barH);
    ctx.fillRect(barX, top + y, 12, 1.5);
  }
  ctx.fillStyle = "#222";
  ctx.font = font(12);
  ctx.textAlign = "left";
  ctx.fillText(vmax.toFixed(2), barX + 15, top + 6);
  ctx.fillText(vmin ? vmin.toFixed(2) : "0", barX + 15, top + barH - 4);
  return box;
};

// Where a mouse event is on a canvas drawn by `sizedCanvas`, in the drawing's pixels (it may be shown smaller).
export const pointerAt = (canvas, event) => {
  const rect = canvas.getBoundingClientRect(), k = canvas.__size[0] / rect.width;
  return [(event.clientX - rect.left) * k, (event.clientY - rect.top) * k];
};

// The cell under a mouse event on a heatmap drawn with layout `box`: {row, col}, or a row or column label's
// {row} / {col}, or null.
export const cellAt = (box, event) => {
  const {left, top, cell, rows, cols} = box;
  const [x, y] = pointerAt(event.target, event);
  const [row, col] = [Math.floor((y - top) / cell), Math.floor((x - left) / cell)];
  const inRows = row >= 0 && row < rows, inCols = col >= 0 && col < cols;
  if (inRows && inCols) return {row, col};
  if (inRows && x < left) return {row};
  if (inCols && y > top + rows * cell) return {col};
  return null;
};

// Save a file made in the page (a canvas's PNG, the payload's numbers as JSON): no file is written on the server.
export const saveFile = (name, blob) => {
  const link = Object.assign(document.createElement("a"), {href: URL.createObjectURL(blob), download: name});
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
};
export const saveCanvas = (canvas, name) => canvas.toBlob((blob) => saveFile(name, blob), "image/png");
export const saveJson = (value, name) => saveFile(name, new Blob([JSON.stringify(value)], {type: "application/json"}));

// A group of choices drawn in a view, as Gradio draws a gr.Radio (a <fieldset> of native radios: page.js makes it one
// Tab stop with the arrow keys moving within it; style.py's .view-radio styles it): `options` are [value, label]
// pairs. `chosen(root, name)` reads the value checked.
export const radioGroup = (name, legend, options, value) => `<fieldset class="view-radio" data-name="${name}">
  <legend>${escapeHtml(legend)}</legend>${options.map(([v, label]) => `<label><input type="radio" name="${name}"
  value="${escapeHtml(v)}"${String(v) === String(value) ? " checked" : ""}><span>${escapeHtml(label)}</span></label>`)
  .join("")}</fieldset>`;
export const chosen = (root, name) => root.querySelector(`input[name="${name}"]:checked`)?.value;
// A radio group kept in `slot`: redrawn only when its choices change, else only its checked choice set (and the
// chosen label's class "selected", as Gradio marks its own), so that a focused radio stays in the page and the
// keyboard keeps its place. Returns the group's fieldset.
export const keepRadioGroup = (slot, name, legend, options, value) => {
  const signature = JSON.stringify([legend, options]);
  if (slot.dataset.options !== signature) {
    slot.dataset.options = signature;
    slot.innerHTML = radioGroup(name, legend, options, value);
  }
  for (const input of slot.querySelectorAll("input")) {
    input.checked = input.value === String(value);
    input.closest("label").classList.toggle("selected", input.checked);
  }
  return slot.querySelector("fieldset");
};

// Token chips, as the translation box draws them (webapp/tokens.py): special tokens greyed, the token at `highlight`
// marked, those at the indices `changed` in another colour.
export const SPECIAL = new Set(["<pad>", "<s>", "</s>", "<unk>"]);
export const chipsHtml = (tokens, label, highlight = -1, changed = []) => `<div class="chips"><span class="chips-label">${
  escapeHtml(label)}</span>${tokens.map((t, i) => `<span class="chip${SPECIAL.has(t) ? " special" : ""}${
  i === highlight ? " chosen" : ""}${changed.includes(i) ? " changed" : ""}" title="position ${i}">${escapeHtml(t)
  }</span>`).join("")}</div>`;
