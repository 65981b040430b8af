(page) => {
  // The heads tab: a head of the diagnostics clicked opens it in the Attention tab (its kind, layer and head radios
  // clicked, so the usual event draws); one of the importance heatmap ticks its box among the heads to switch off.
  page.plot("head-diagnostics", {
    click: async (gd, point) => {  // the trace is named by its kind's id; x and y are the 1-based head and layer
      page.clickRadio("kind", point.data.name);
      // A deeper kind's last layers appear on the layer radio once the server has answered the kind's click.
      await page.clickRadio("layer", point.y, 10000);
      page.clickRadio("head", point.x);
      page.openTab("tab-attention");
    },
  });
  page.plot("head-importance", {
    click: (gd, point) => {  // one trace per kind, named by its id; a box's name is the head's "<kind> L<y> H<x>"
      // Gradio's public structure: a gr.CheckboxGroup is native checkboxes, each named after its choice's value.
      document.querySelector(`#off-${point.data.name} input[type="checkbox"][name="${point.data.name} `
                             + `L${point.y} H${point.x}"]`)?.click();
    },
  });
}
