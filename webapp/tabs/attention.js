(page) => {
  // The attention views: a heatmap cell clicked outlines its query's row and its key's column, a token label clicked
  // its row or column alone (click it again to clear); a query token hovered in the lines view lights up its lines
  // and dims the others (bertviz); a cell of the layers x heads overview clicked chooses that layer and head, by
  // clicking their radios, so the usual event draws.
  const ORANGE = "#ff9f43";
  const rect = (xref, yref, x0, x1, y0, y1) =>
    ({type: "rect", xref, yref, x0, x1, y0, y1, line: {color: ORANGE, width: 3}, fillcolor: "rgba(0,0,0,0)"});

  const toggle = (gd, key, shapes) => {  // outlined, or cleared when the same thing is clicked again
    const cleared = gd.__outlined === key;
    gd.__outlined = cleared ? null : key;
    window.Plotly.relayout(gd, {shapes: cleared ? [] : shapes});
  };

  const outline = (gd, point) => {
    const [xa, ya] = [point.xaxis._id, point.yaxis._id];
    toggle(gd, `${xa},${ya},${point.x},${point.y}`, [
      rect(`${xa} domain`, ya, 0, 1, point.y - 0.5, point.y + 0.5),
      rect(xa, `${ya} domain`, point.x - 0.5, point.x + 0.5, 0, 1),
    ]);
  };

  const outlineToken = (gd, label) => {  // a token label clicked: its row (a query) or its column (a key) alone
    const subplot = [...(label.closest("g.subplot")?.classList || [])].find((c) => /^x\d*y\d*$/.test(c)) || "xy";
    const [xa, ya] = subplot.match(/^(x\d*)(y\d*)$/).slice(1);
    const value = label.__data__.x;
    const isColumn = !!label.closest(".xtick");
    toggle(gd, `${subplot},${isColumn ? "x" : "y"},${value}`, [isColumn
      ? rect(xa, `${ya} domain`, value - 0.5, value + 0.5, 0, 1)
      : rect(`${xa} domain`, ya, 0, 1, value - 0.5, value + 0.5)]);
  };

  const hookLabels = (gd) => {  // tick labels are redrawn on relayout: hook the new ones
    for (const label of gd.querySelectorAll(".xtick text, .ytick text")) {
      if (label.__hooked || !label.__data__) continue;
      label.__hooked = true;
      label.style.pointerEvents = "all";
      label.style.cursor = "pointer";
      label.addEventListener("click", () => outlineToken(gd, label));
    }
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

  page.plot("attention-heatmap", {
    click: outline,
    hover: (gd, point) => { dimOut(gd); lightUp(gd, point); },
    unhover: dimOut,
    redrawn: hookLabels,
  });
  page.plot("attention-overview", {
    click: (gd, point) => {  // each cell's trace is named "<layer>,<head>"
      const [layer, head] = (point.data.name || "").split(",");
      page.clickRadio("layer", layer);
      page.clickRadio("head", head);
    },
  });
}
