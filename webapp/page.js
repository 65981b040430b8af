() => {
  // The plotly views answer the mouse in the browser, without a round trip (app.py passes this to launch(js=)):
  // a heatmap cell clicked outlines its query's row and its key's column, a token label clicked its row or column
  // alone (click it again to clear); a query token hovered in the lines view lights up its lines and dims the others
  // (bertviz); a cell of the layers x heads overview clicked chooses that layer and head, by clicking their radios,
  // so the usual event draws; a head of the diagnostics clicked opens it in the Attention tab the same way, and one of
  // the importance heatmap ticks its box among the heads to switch off.
  const ORANGE = "#ff9f43";
  const rect = (xref, yref, x0, x1, y0, y1) =>
    ({type: "rect", xref, yref, x0, x1, y0, y1, line: {color: ORANGE, width: 3}, fillcolor: "rgba(0,0,0,0)"});

  const outline = (gd, point) => {
    const [xa, ya] = [point.xaxis._id, point.yaxis._id];
    const key = `${xa},${ya},${point.x},${point.y}`;
    const shapes = gd.__outlined === key ? [] : [
      rect(`${xa} domain`, ya, 0, 1, point.y - 0.5, point.y + 0.5),
      rect(xa, `${ya} domain`, point.x - 0.5, point.x + 0.5, 0, 1),
    ];
    gd.__outlined = shapes.length ? key : null;
    window.Plotly.relayout(gd, {shapes});
  };

  const outlineToken = (gd, label) => {  // a token label clicked: its row (a query) or its column (a key) alone
    const subplot = [...(label.closest("g.subplot")?.classList || [])].find((c) => /^x\d*y\d*$/.test(c)) || "xy";
    const [xa, ya] = subplot.match(/^(x\d*)(y\d*)$/).slice(1);
    const value = label.__data__.x;
    const isColumn = !!label.closest(".xtick");
    const key = `${subplot},${isColumn ? "x" : "y"},${value}`;
    const shapes = gd.__outlined === key ? [] : [isColumn
      ? rect(xa, `${ya} domain`, value - 0.5, value + 0.5, 0, 1)
      : rect(`${xa} domain`, ya, 0, 1, value - 0.5, value + 0.5)];
    gd.__outlined = shapes.length ? key : null;
    window.Plotly.relayout(gd, {shapes});
  };

  const isLines = (trace) => trace.mode === "lines" && trace.meta !== "lit";

  const lightUp = (gd, point) => {  // the hovered query's lines, in orange, over all lines dimmed
    if (point.data.mode !== "text" || point.x !== 0) return;
    const lines = gd._fullData.filter(isLines);
    const mine = lines.map((t) => {
      const x = [], y = [];
      for (let i = 0; i < t.y.length; i += 3) {  // segments: query row, key row, gap
        if (t.y[i] === point.y) x.push(0, 1, null), y.push(point.y, t.y[i + 1], null);
      }
      return {x, y, mode: "lines", opacity: t.opacity, line: {color: ORANGE, width: 4}, hoverinfo: "skip",
              showlegend: false, meta: "lit"};
    });
    gd.__opacities = gd.__opacities || lines.map((t) => t.opacity);
    window.Plotly.restyle(gd, {opacity: lines.map((t) => t.opacity * 0.15)}, lines.map((t) => t.index));
    window.Plotly.addTraces(gd, mine.filter((t) => t.x.length));
  };

  const dimOut = (gd) => {  // back to every line as it was
    const lit = gd.data.map((t, i) => (t.meta === "lit" ? i : -1)).filter((i) => i >= 0);
    if (!lit.length) return;
    window.Plotly.deleteTraces(gd, lit);
    const lines = gd._fullData.filter(isLines);
    window.Plotly.restyle(gd, {opacity: gd.__opacities}, lines.map((t) => t.index));
    gd.__opacities = null;
  };

  const choose = (gd, point) => {
    const [layer, head] = (point.data.name || "").split(",");
    clickRadio("layer", layer);
    clickRadio("head", head);
  };

  const clickRadio = (id, value) =>
    document.querySelector(`#${id} label[data-testid="${value}-radio-label"]`)?.click();

  const openHead = (gd, point) => {  // a head of the diagnostics: shown in the Attention tab
    clickRadio("kind", point.data.name);
    clickRadio("layer", point.y);
    clickRadio("head", point.x);
    [...document.querySelectorAll('button[role="tab"]')].find((b) => b.textContent.trim() === "Attention")?.click();
  };

  const tickHead = (gd, point) => {  // a head of the importance heatmap: ticked (or unticked) to be switched off
    const label = [...document.querySelectorAll(`#off-${point.data.name} label`)]
      .find((l) => l.textContent.trim() === `L${point.y} H${point.x}`);
    label?.querySelector("input")?.click();
  };

  const hook = () => {
    for (const [id, onClick] of [["attention-heatmap", outline], ["attention-overview", choose],
                                 ["head-diagnostics", openHead], ["head-importance", tickHead]]) {
      const gd = document.querySelector(`#${id} .js-plotly-plot`);
      if (gd && gd._ev && gd.__hooked !== gd._ev) {  // a new plot gets a new event emitter
        gd.__hooked = gd._ev;
        gd.on("plotly_click", (event) => event.points.length && onClick(gd, event.points[0]));
        if (id === "attention-heatmap") {
          gd.on("plotly_hover", (event) => { dimOut(gd); lightUp(gd, event.points[0]); });
          gd.on("plotly_unhover", () => dimOut(gd));
        }
      }
      if (gd && id === "attention-heatmap") {  // tick labels are redrawn on relayout: hook the new ones
        for (const label of gd.querySelectorAll(".xtick text, .ytick text")) {
          if (label.__hooked || !label.__data__) continue;
          label.__hooked = true;
          label.style.pointerEvents = "all";
          label.style.cursor = "pointer";
          label.addEventListener("click", () => outlineToken(gd, label));
        }
      }
    }
  };
  new MutationObserver(hook).observe(document.body, {childList: true, subtree: true});
}
