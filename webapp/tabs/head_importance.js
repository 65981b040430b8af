(page) => {
  // The heads tab's plotly heatmap (heads.SCRIPT, plugged into page.js): a head of the importance heatmap clicked
  // ticks its box among the heads to switch off. The diagnostics and the switch-off result are views drawn by heads.js.
  page.plot("head-importance", {
    click: (gd, point) => {  // one trace per kind, named by its id; a box's name is the head's "<kind> L<y> H<x>"
      // Gradio's public structure: a gr.CheckboxGroup is native checkboxes, each named after its choice's value.
      document.querySelector(`#off-${point.data.name} input[type="checkbox"][name="${point.data.name} `
                             + `L${point.y} H${point.x}"]`)?.click();
    },
  });
}
