// "How it learned": the training history of a model, played in the browser. The numbers arrive once, from
// `ask("history")` (how_it_learned.py); every control after that — run, sentence, layer, head, the step slider,
// play — redraws here, with no request to the server.
import {exposeForTests} from "../store.js";
import {escapeHtml, drawHeatmap, cellAt, chipsHtml} from "../views.js";

export async function mount({element, ask}) {
  element.querySelector(".view-mount").innerHTML =
    '<div class="learn" aria-label="How it learned"><p>Loading the training history…</p></div>';
  const root = element.querySelector(".learn");
  const runs = await ask("history");
  if (!runs.length) {
    root.innerHTML = "<p>This model directory holds no training history (training_snapshots.json).</p>";
    return;
  }
  const option = (value, label) => `<option value="${value}">${escapeHtml(label)}</option>`;
  root.innerHTML = `
    <div class="learn-controls">
      <label class="learn-run-label">Training run <select class="learn-run" aria-label="Training run">
        ${runs.map((run, i) => option(i, run.label)).join("")}</select></label>
      <label>Sentence <select class="learn-probe" aria-label="Probe sentence"></select></label>
      <label>Layer <select class="learn-layer" aria-label="Layer"></select></label>
      <label>Head <select class="learn-head" aria-label="Head"></select></label>
    </div>
    <p class="learn-note"></p>
    <div class="learn-player">
      <button class="learn-play" type="button" aria-label="Play the training">▶ Play</button>
      <button class="learn-prev" type="button" aria-label="Previous snapshot">◀</button>
      <input class="learn-step" type="range" min="0" value="0" aria-label="Training step">
      <button class="learn-next" type="button" aria-label="Next snapshot">▶</button>
      <span class="learn-step-label" aria-live="polite"></span>
    </div>
    <div class="learn-translation" aria-live="polite"></div>
    <div class="learn-body">
      <div class="learn-heatmap"><canvas class="learn-map" role="img" aria-label="Cross-attention: rows are the
        Italian tokens the decoder read, columns the English tokens"></canvas></div>
      <svg class="learn-curves" viewBox="0 0 420 220" role="img" aria-label="Train loss and dev BLEU over training"></svg>
    </div>`;
  const $ = (selector) => root.querySelector(selector);
  const [runSelect, probeSelect, layerSelect, headSelect, slider] =
    [".learn-run", ".learn-probe", ".learn-layer", ".learn-head", ".learn-step"].map($);
  $(".learn-run-label").hidden = runs.length < 2;
  let timer = null;

  const run = () => runs[+runSelect.value];
  const snapshot = () => run().snapshots[+slider.value];

  const fillRun = () => {  // the run's sentences, layers, heads and steps; the last step shown
    const r = run(), first = r.snapshots[0].probes[0].cross_attention;
    const probe = Math.min(+probeSelect.value || 0, r.probes.length - 1);
    probeSelect.innerHTML = r.probes.map((text, i) => option(i, text)).join("");
    probeSelect.value = probe;
    layerSelect.innerHTML = option("mean", "mean of layers") + first.map((_, i) => option(i, `layer ${i + 1}`)).join("");
    headSelect.innerHTML = option("mean", "mean of heads") + first[0].map((_, i) => option(i, `head ${i + 1}`)).join("");
    layerSelect.value = first.length - 1;
    headSelect.value = "mean";
    slider.max = r.snapshots.length - 1;
    slider.value = r.snapshots.length - 1;
    $(".learn-note").textContent = r.note;
  };

  const average = (maps) => maps[0].map((row, i) => row.map((_, j) => maps.reduce((s, m) => s + m[i][j], 0) / maps.length));

  const attention = (cross) => {  // (layers, heads, T, S) -> the (T, S) map the layer and head controls choose
    const layers = layerSelect.value === "mean" ? cross : [cross[+layerSelect.value]];
    const perLayer = layers.map((heads) => (headSelect.value === "mean" ? average(heads) : heads[+headSelect.value]));
    return average(perLayer);
  };

  const changedPositions = (before, after) => {  // tokens of `after` outside a longest common subsequence with `before`
    const n = before.length, m = after.length;
    const table = Array.from({length: n + 1}, () => new Array(m + 1).fill(0));
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--)
        table[i][j] = before[i] === after[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
    const changed = new Set(after.map((_, j) => j));
    for (let i = 0, j = 0; i < n && j < m;) {
      if (before[i] === after[j]) changed.delete(j), i++, j++;
      else if (table[i + 1][j] >= table[i][j + 1]) i++;
      else j++;
    }
    return changed;
  };

  const drawTranslation = (probe, previous) => {
    const tokens = probe.target_tokens.slice(1);
    const changed = previous ? changedPositions(previous.target_tokens.slice(1), tokens) : new Set();
    $(".learn-translation").innerHTML = `<div class="learn-text">${escapeHtml(probe.translation) || "<i>(nothing)</i>"}</div>
      ${chipsHtml(tokens, "Italian", -1, [...changed])}
      <div class="learn-legend">${previous ? `${changed.size} of ${tokens.length} tokens new since the previous snapshot (marked)` : "the first snapshot"}</div>`;
  };

  // The cross-attention map the controls choose, on a canvas (views.js: drawHeatmap); the mouse over a cell reads it.
  const canvas = $(".learn-map");
  let drawn = null;  // {map, box, rows, cols}: what is drawn, and where
  const drawMap = (probe) => {
    const map = attention(probe.cross_attention);
    const box = drawHeatmap(canvas, map, probe.target_tokens, probe.source_tokens, {vmax: 1, cell: 24,
      xTitle: "English (keys)", yTitle: "Italian (queries)"});
    drawn = {map, box, rows: probe.target_tokens, cols: probe.source_tokens};
    exposeForTests(canvas, {__matrix: map, __box: box});
  };
  canvas.addEventListener("mousemove", (event) => {
    const cell = drawn && cellAt(drawn.box, event);
    canvas.title = cell && cell.col !== undefined && cell.row !== undefined
      ? `${drawn.rows[cell.row]} → ${drawn.cols[cell.col]}: ${drawn.map[cell.row][cell.col].toFixed(2)}` : "";
  });

  const drawCurves = (r, current) => {  // train loss (line, left axis) and dev BLEU (dots, right axis) over steps
    const [W, H, left, right, top, bottom] = [420, 220, 44, 40, 12, 30];
    const losses = r.curve.filter((p) => p[1] !== null), devs = r.curve.filter((p) => p[2] !== null);
    const maxStep = Math.max(...r.curve.map((p) => p[0]), current.step, 1), minStep = r.snapshots[0].step;
    const maxLoss = Math.max(...losses.map((p) => p[1]), 1), maxBleu = Math.max(...devs.map((p) => p[2]), 1);
    const x = (step) => left + (W - left - right) * (step - minStep) / Math.max(maxStep - minStep, 1);
    const yLoss = (v) => top + (H - top - bottom) * (1 - v / maxLoss);
    const yBleu = (v) => top + (H - top - bottom) * (1 - v / maxBleu);
    const line = losses.map((p) => `${x(p[0]).toFixed(1)},${yLoss(p[1]).toFixed(1)}`).join(" ");
    const dots = devs.map((p) => `<circle cx="${x(p[0]).toFixed(1)}" cy="${yBleu(p[2]).toFixed(1)}" r="3" class="learn-bleu"/>`).join("");
    $(".learn-curves").innerHTML = `
      <polyline points="${line}" class="learn-loss"/>${dots}
      <line x1="${x(current.step)}" x2="${x(current.step)}" y1="${top}" y2="${H - bottom}" class="learn-now"/>
      <text x="${left - 6}" y="${top + 8}" text-anchor="end" class="learn-loss-text">${maxLoss.toFixed(1)}</text>
      <text x="${left - 6}" y="${H - bottom}" text-anchor="end" class="learn-loss-text">0</text>
      <text x="${W - right + 6}" y="${top + 8}" class="learn-bleu-text">${maxBleu.toFixed(0)}</text>
      <text x="${W - right + 6}" y="${H - bottom}" class="learn-bleu-text">0</text>
      <text x="${left}" y="${H - 8}" class="learn-axis">step ${minStep.toLocaleString("en")}</text>
      <text x="${W - right}" y="${H - 8}" text-anchor="end" class="learn-axis">${maxStep.toLocaleString("en")}</text>
      <text x="${(left + W - right) / 2}" y="${H - 8}" text-anchor="middle" class="learn-axis"><tspan class="learn-loss-text">train loss</tspan> · <tspan class="learn-bleu-text">dev BLEU</tspan></text>`;
  };

  const draw = () => {
    const r = run(), i = +slider.value, s = snapshot(), probe = s.probes[+probeSelect.value];
    const previous = i > 0 ? r.snapshots[i - 1].probes[+probeSelect.value] : null;
    const measured = [s.train_loss !== null ? `train loss ${s.train_loss.toFixed(2)}` : "",
                      s.dev_bleu !== null ? `dev BLEU ${s.dev_bleu.toFixed(1)}` : ""].filter(Boolean).join(" · ");
    $(".learn-step-label").textContent = `snapshot ${i + 1} of ${r.snapshots.length}: step ${s.step.toLocaleString("en")}` +
      ` · ${s.minutes.toFixed(1)} min${measured ? " · " + measured : ""}`;
    drawTranslation(probe, previous);
    drawMap(probe);
    drawCurves(r, s);
    root.dataset.step = s.step;  // what is drawn, for tests and screen readers' neighbours
  };

  const stop = () => {
    clearInterval(timer);
    timer = null;
    $(".learn-play").textContent = "▶ Play";
  };
  const play = () => {
    if (timer) return stop();
    if (+slider.value >= +slider.max) slider.value = 0;
    $(".learn-play").textContent = "⏸ Pause";
    draw();
    timer = setInterval(() => {
      if (+slider.value >= +slider.max) return stop();
      slider.value = +slider.value + 1;
      draw();
    }, 900);
  };
  const move = (delta) => {
    stop();
    slider.value = Math.min(+slider.max, Math.max(0, +slider.value + delta));
    draw();
  };

  runSelect.addEventListener("change", () => (stop(), fillRun(), draw()));
  [probeSelect, layerSelect, headSelect].forEach((control) => control.addEventListener("change", draw));
  slider.addEventListener("input", () => (stop(), draw()));
  $(".learn-play").addEventListener("click", play);
  $(".learn-prev").addEventListener("click", () => move(-1));
  $(".learn-next").addEventListener("click", () => move(1));
  fillRun();
  draw();
  root.dataset.ready = "true";
}
