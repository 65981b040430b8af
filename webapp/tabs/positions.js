// "Positional encoding", drawn in the page. The table (positions x dimensions) does not depend on the sentence: it is
// asked of the server once per page, when the tab is first shown (`ask("positional_table")`, positions.py); the
// sentence's tokens and norms come with each translation's payload (the store's "translation"). The dimensions typed,
// a new sentence, the mouse over a map: all answered here, with no request to the server.
import {store, exposeForTests} from "../store.js";
import {
  nameSentence, dequantize, escapeHtml, diverging, divergingRgb, sizedCanvas, readableScale, drawHeatmap, pointerAt,
  cellAt, chosen,
} from "../views.js";

// The view's markup, for the model's dimensions (`last`: the last one) and the ones plotted at first (`dims`).
const positionsMarkup = ({dims, last}) => `<div class="positions-view" aria-label="Positional encoding">
<h3 class="pos-table-title">Positional encoding PE</h3>
<p class="pos-note pos-table-note">Loading the table…</p>
<div class="pos-scroll"><canvas class="pos-table" role="img" aria-label="The positional encoding table"></canvas></div>
<div class="pos-readout pos-table-readout" aria-live="polite"></div>
<h3>Sine and cosine waves of the chosen dimensions</h3>
<label class="pos-dims">Dimensions to plot (0–${last}, separated by commas)<input class="pos-dims-input" type="text"
  value="${dims}" aria-label="Dimensions to plot" disabled></label>
<p class="pos-note pos-dims-note"></p>
<ul class="pos-legend pos-curves-legend"></ul>
<div class="pos-scroll"><svg class="pos-curves" viewBox="0 0 760 300" role="img"
  aria-label="PE values of the chosen dimensions"></svg></div>
<h3>Position similarity: nearby positions have similar encodings</h3>
<p class="pos-note pos-similarity-note">Translate a sentence to see its positions.</p>
<div class="pos-scroll"><canvas class="pos-similarity" role="img"></canvas></div>
<div class="pos-readout pos-similarity-readout" aria-live="polite"></div>
<h3>What goes into the encoder: token meaning + position</h3>
<p class="pos-note pos-norms-note">Translate a sentence to see the size of each token's meaning next to its
position.</p>
<ul class="pos-legend"><li><i class="pos-embedding" style="background:#1f77b4"></i>‖embedding × √d_model‖</li>
<li><i style="background:#ff7f0e"></i>‖positional encoding‖</li></ul>
<div class="pos-scroll"><svg class="pos-norms" viewBox="0 0 760 320" role="img"
  aria-label="Vector lengths per token"></svg></div>
</div>`;

export function mount({element, props, ask}) {
  element.querySelector(".view-mount").innerHTML = positionsMarkup(props.setup);  // positions.py: build
  const root = element.querySelector(".positions-view");
  const $ = (selector) => root.querySelector(selector);
  const state = {pe: null, payload: store.get("translation") ?? null};
  const CURVE_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"];

  const decode = (table) => {  // the table (payload.quantized) -> rows of numbers
    const values = dequantize(table), [rows, cols] = table.shape;
    return Array.from({length: rows}, (_, i) => Array.from(values.subarray(i * cols, (i + 1) * cols)));
  };
  const sentence = () => (state.payload ? state.payload.source_tokens : []);
  const timed = (name, draw) => {  // how long each redraw took, for the tests and the benchmarks only
    const start = performance.now();
    draw();
    exposeForTests(root.dataset, {[name]: (performance.now() - start).toFixed(2)});
  };

  // --- The table: one pixel block per value, drawn from an image of the values (fast for 128 x 256) ---
  let tableImage = null, tableBox = null;
  const drawTable = () => {
    const pe = state.pe, [P, D] = [pe.length, pe[0].length], n = Math.min(sentence().length, P);
    if (!tableImage) {
      tableImage = document.createElement("canvas");
      [tableImage.width, tableImage.height] = [D, P];
      const ctx = tableImage.getContext("2d"), image = ctx.createImageData(D, P);
      pe.forEach((row, i) => row.forEach((v, j) => {
        image.data.set([...divergingRgb(v), 255], 4 * (i * D + j));
      }));
      ctx.putImageData(image, 0, 0);
    }
    // The columns as wide as the box allows (whole pixels where there is room for 2 each; a phone: less than one), so
    // that the table fits the screen with its labels (11 px) drawn at their size, never shrunk under 10 px.
    const [left, top, right, bottom] = [48, 8, 90, 54], canvas = $(".pos-table");
    const room = Math.min(720, (canvas.parentElement.clientWidth || Infinity) - left - right) / D;
    const cw = room >= 2 ? Math.min(20, Math.floor(room)) : Math.max(0.5, room);
    const ch = Math.max(2, Math.min(12, Math.floor(400 / P))), [w, h] = [cw * D, ch * P];
    const [width, height] = [left + w + right, top + h + bottom];
    const ctx = sizedCanvas(canvas, width, height, readableScale(11));
    ctx.imageSmoothingEnabled = cw < 1;  // sharp blocks, or where a column is under a pixel, no moiré
    ctx.drawImage(tableImage, left, top, w, h);
    ctx.fillStyle = "#222";
    ctx.font = "11px system-ui, sans-serif";
    const step = (px) => [1, 2, 4, 8, 16, 32, 64, 128].find((k) => k * px >= 40) || 256;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (let i = 0; i < P; i += step(ch)) ctx.fillText(i, left - 4, top + (i + 0.5) * ch);
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    for (let j = 0; j < D; j += step(cw)) ctx.fillText(j, left + (j + 0.5) * cw, top + h + 3);
    const [axis, note] = ["dimension", "(even: sin, odd: cos; frequency falls to the right)"];
    const half = ctx.measureText(note).width / 2 + 2;  // centred under the table, within the canvas
    ctx.fillText(axis, left + w / 2, top + h + 20);
    ctx.fillText(note, Math.max(half, Math.min(left + w / 2, width - half)), top + h + 36);
    ctx.save();
    ctx.translate(12, top + h / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.fillText("position in the sentence", 0, 0);
    ctx.restore();
    if (n) {  // the sentence's rows above a black line
      ctx.fillStyle = "#000";
      ctx.fillRect(left - 6, top + n * ch - 1.5, w + 12, 3);
    }
    const barX = left + w + 16;  // the colour bar, -1 to 1
    for (let y = 0; y < h; y++) {
      ctx.fillStyle = diverging(1 - 2 * y / h);
      ctx.fillRect(barX, top + y, 12, 1.5);
    }
    ctx.fillStyle = "#222";
    ctx.textAlign = "left";
    ctx.textBaseline = "middle";
    [["1", 0], ["0", h / 2], ["-1", h]].forEach(([label, y]) => ctx.fillText(label, barX + 16, top + y));
    tableBox = {left, top, cw, ch, P, D};
    $(".pos-table-title").textContent = `Positional encoding PE (max_len ${P} × d_model ${D})`;
    $(".pos-table-note").textContent = n
      ? `Your sentence uses the ${n} rows above the black line. Point at a cell to read its value.`
      : "Point at a cell to read its value; translate a sentence to see the rows it uses.";
    root.dataset.sentenceRows = n;
  };
  const readTable = (event) => {
    if (!tableBox) return;
    const {left, top, cw, ch, P, D} = tableBox, [x, y] = pointerAt(event.target, event);
    const [i, j] = [Math.floor((y - top) / ch), Math.floor((x - left) / cw)];
    $(".pos-table-readout").textContent = i >= 0 && i < P && j >= 0 && j < D
      ? `position ${i}, dimension ${j} (${j % 2 ? "cos" : "sin"}): ${state.pe[i][j].toFixed(4)}` : "";
  };

  // --- The waves of the chosen dimensions ---
  const chosenDims = () => {
    const D = state.pe[0].length, typed = $(".pos-dims-input").value.split(/[\s,;]+/).filter(Boolean);
    const dims = [...new Set(typed.map(Number).filter((d) => Number.isInteger(d) && d >= 0 && d < D))]
      .sort((a, b) => a - b);
    const ignored = typed.filter((t) => !(Number.isInteger(Number(t)) && +t >= 0 && +t < D));
    $(".pos-dims-note").textContent = ignored.length
      ? `Not a dimension of this model (0–${D - 1}): ${ignored.join(", ")}` : "";
    return dims;
  };
  const drawCurves = () => {
    const pe = state.pe, [P, D] = [pe.length, pe[0].length], n = Math.min(sentence().length, P);
    const dims = chosenDims(), [W, H, left, right, top, bottom] = [760, 300, 46, 12, 10, 36];
    const x = (p) => left + (W - left - right) * p / Math.max(P - 1, 1);
    const y = (v) => top + (H - top - bottom) * (1.15 - v) / 2.3;
    const lines = dims.map((d, k) => `<polyline class="pos-curve" data-dim="${d}" fill="none" stroke-width="2"
      stroke="${CURVE_COLOURS[k % CURVE_COLOURS.length]}" points="${pe.map((row, p) =>
      `${x(p).toFixed(1)},${y(row[d]).toFixed(1)}`).join(" ")}"/>`).join("");
    const ticks = [-1, 0, 1].map((v) => `<line class="axis" x1="${left}" x2="${W - right}" y1="${y(v)}" y2="${y(v)}"
      stroke-opacity="${v ? 0.15 : 0.4}"/><text x="${left - 6}" y="${y(v) + 4}" text-anchor="end">${v}</text>`);
    const step = [1, 2, 4, 8, 16, 32, 64].find((k) => P / k <= 16) || 128;
    const xTicks = Array.from({length: Math.ceil(P / step)}, (_, i) => i * step).map((p) =>
      `<text x="${x(p)}" y="${H - bottom + 14}" text-anchor="middle">${p}</text>`);
    const shade = n ? `<rect x="${x(0)}" y="${top}" width="${Math.max(x(n - 1) - x(0), 2)}" height="${H - top - bottom}"
      fill="#ff9f43" fill-opacity="0.15"/><text x="${x(0) + 4}" y="${top + 12}">your sentence (${n} positions)</text>` : "";
    $(".pos-curves").innerHTML = `${shade}${ticks.join("")}${xTicks.join("")}${lines}
      <text x="${(left + W - right) / 2}" y="${H - 4}" text-anchor="middle">position</text>
      <text x="12" y="${(top + H - bottom) / 2}" text-anchor="middle"
        transform="rotate(-90 12 ${(top + H - bottom) / 2})">PE value</text>`;
    $(".pos-curves-legend").innerHTML = dims.map((d, k) => {
      const wavelength = 2 * Math.PI * 10000 ** ((d - (d % 2)) / D);
      return `<li><i style="background:${CURVE_COLOURS[k % CURVE_COLOURS.length]}"></i>dim ${d} (${d % 2 ? "cos" : "sin"
        }, wavelength ${wavelength.toLocaleString("en", {maximumFractionDigits: 1, minimumFractionDigits: 1})})</li>`;
    }).join("");
    root.dataset.dims = dims.join(",");
  };

  // --- The sentence: the similarity of its positions, and its norms ---
  let similarityBox = null, similarity = null;
  const drawSimilarity = () => {
    const tokens = sentence(), n = Math.min(tokens.length, state.pe.length), canvas = $(".pos-similarity");
    canvas.hidden = !n;
    $(".pos-similarity-readout").textContent = "";
    if (!n) {
      $(".pos-similarity-note").textContent = "Translate a sentence to see its positions.";
      similarity = similarityBox = null;
      return;
    }
    const rows = state.pe.slice(0, n), lengths = rows.map((r) => Math.hypot(...r));
    similarity = rows.map((a, i) => rows.map((b, j) => a.reduce((s, v, k) => s + v * b[k], 0) / (lengths[i] * lengths[j])));
    const labels = tokens.slice(0, n).map((t, i) => `${i} ${t}`);
    similarityBox = drawHeatmap(canvas, similarity, labels, labels, {vmax: 1, xTitle: "position j",
      yTitle: "position i"});
    canvas.setAttribute("aria-label", `Cosine similarity of the encodings of positions 0 to ${n - 1}: ${tokens.join(" ")}`);
    $(".pos-similarity-note").textContent = `Cosine of PE(i) and PE(j) for your sentence's ${n} positions (1: the same ` +
      "encoding). Each row is largest on the diagonal and falls off with the distance. Point at a cell to read it.";
  };
  const readSimilarity = (event) => {
    const at = similarityBox && cellAt(similarityBox, event), tokens = sentence();
    $(".pos-similarity-readout").textContent = at && at.row !== undefined && at.col !== undefined
      ? `cos(PE(${at.row} ${tokens[at.row]}), PE(${at.col} ${tokens[at.col]})) = ${similarity[at.row][at.col].toFixed(3)}`
      : "";
  };

  const drawNorms = () => {
    const tokens = sentence(), svg = $(".pos-norms");
    if (!tokens.length) {
      svg.innerHTML = "";
      $(".pos-norms-note").textContent = "Translate a sentence to see the size of each token's meaning next to its position.";
      return;
    }
    const {embedding, position} = state.payload.norms, n = tokens.length;
    const [W, H, left, top, bottom] = [760, 320, 46, 10, 90], slot = (W - left - 10) / n;
    const vmax = Math.max(...embedding, ...position, 1e-9);
    const y = (v) => top + (H - top - bottom) * (1 - v / vmax);
    const bar = (kind, i, v, offset, label) => `<rect class="pos-${kind}" data-token="${i}" data-value="${v}"
      x="${(left + i * slot + offset * slot * 0.42 + slot * 0.08).toFixed(1)}" y="${y(v).toFixed(1)}"
      width="${(slot * 0.4).toFixed(1)}" height="${(y(0) - y(v)).toFixed(1)}"><title>${escapeHtml(tokens[i])}: ${
      label} ${v.toFixed(2)}</title></rect>`;
    const bars = tokens.map((_, i) => bar("embedding", i, embedding[i], 0, "‖embedding × √d_model‖ =") +
      bar("position", i, position[i], 1, "‖positional encoding‖ =")).join("");
    const labels = tokens.map((t, i) => {
      const [cx, cy] = [left + (i + 0.5) * slot, y(0) + 8];
      return `<text class="pos-token" x="${cx.toFixed(1)}" y="${cy}" text-anchor="end"
        transform="rotate(-60 ${cx.toFixed(1)} ${cy})">${escapeHtml(t)}</text>`;
    }).join("");
    const ticks = [0, vmax / 2, vmax].map((v) => `<line class="axis" x1="${left}" x2="${W - 10}" y1="${y(v)}"
      y2="${y(v)}" stroke-opacity="${v ? 0.15 : 0.5}"/><text x="${left - 6}" y="${y(v) + 4}" text-anchor="end">${
      v.toFixed(1)}</text>`).join("");
    svg.innerHTML = `${ticks}${bars}${labels}<text x="12" y="${(top + y(0)) / 2}" text-anchor="middle"
      transform="rotate(-90 12 ${(top + y(0)) / 2})">vector length (L2 norm)</text>`;
    $(".pos-norms-note").textContent = "Each token's meaning (its embedding, scaled by √d_model as the model does) " +
      "next to the position signal added to it: point at a bar to read it.";
  };

  const drawSentence = () => {  // what a new translation changes
    if (!state.pe) return drawNorms();  // the table not here yet: drawn when it comes
    timed("sentenceMs", () => { drawTable(); drawCurves(); drawSimilarity(); drawNorms(); });
    root.dataset.payload = state.payload ? state.payload.id : "";
  };

  store.on("translation", (payload) => {
    state.payload = payload;
    nameSentence(root.parentElement, payload);
    drawSentence();
  });

  const load = async () => {  // once per page, however often the view is drawn
    if (!store.get("positionalTable")) store.set({positionalTable: ask("positional_table")});
    try {
      state.pe = decode(await store.get("positionalTable"));
    } catch (error) {
      store.set({positionalTable: null});  // asked again when the view is next drawn
      $(".pos-table-note").textContent = `The table could not be loaded (${error}): reload the page to try again.`;
      return;
    }
    $(".pos-dims-input").disabled = false;
    drawSentence();
    root.dataset.ready = "true";
  };
  const shown = () => element.getClientRects().length > 0;  // a hidden tab's view has no box
  if (shown()) load();
  else {
    const observer = new ResizeObserver(() => {
      if (!shown()) return;
      observer.disconnect();
      load();
    });
    observer.observe(element);
  }

  $(".pos-dims-input").addEventListener("input", () => timed("curvesMs", drawCurves));
  $(".pos-table").addEventListener("mousemove", readTable);
  $(".pos-table").addEventListener("mouseleave", () => ($(".pos-table-readout").textContent = ""));
  $(".pos-similarity").addEventListener("mousemove", readSimilarity);
  $(".pos-similarity").addEventListener("mouseleave", () => ($(".pos-similarity-readout").textContent = ""));
}
