() => {
  // The plotly views answer the mouse in the browser, without a round trip. Each tab's script (webapp/tabs/*.js)
  // registers what its plots do with `page.plot(elem_id, handlers)`; this hooks them on every plot as it is drawn.
  const plots = [];  // [elem_id, {click, hover, unhover, redrawn}]
  const page = {
    plot: (id, handlers) => plots.push([id, handlers]),
    // Gradio's public structure: a gr.Radio is native <input type="radio"> elements whose value is their choice's.
    clickRadio: (id, value) => document.querySelector(`#${id} input[type="radio"][value="${value}"]`)?.click(),
    // Gradio names a tab's button after the tab's elem_id, plus "-button" (documented in gr.Tab).
    openTab: (id) => document.getElementById(`${id}-button`)?.click(),
  };
  [/* TAB SCRIPTS */].forEach((register) => register(page));

  const hook = () => {
    for (const [id, {click, hover, unhover, redrawn}] of plots) {
      const gd = document.querySelector(`#${id} .js-plotly-plot`);
      if (!gd) continue;
      if (gd._ev && gd.__hooked !== gd._ev) {  // a new plot gets a new event emitter
        gd.__hooked = gd._ev;
        const first = (handler) => (event) => event.points.length && handler(gd, event.points[0]);
        if (click) gd.on("plotly_click", first(click));
        if (hover) gd.on("plotly_hover", first(hover));
        if (unhover) gd.on("plotly_unhover", () => unhover(gd));
      }
      redrawn?.(gd);
    }
  };
  new MutationObserver(hook).observe(document.body, {childList: true, subtree: true});
}
