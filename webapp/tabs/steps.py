"""The "Decoding step by step" tab: the decoder writes one token at a time, and this shows each step, the tokens so
far, where the decoder looked in the English sentence, the next-token candidates (at two temperatures when sampled),
the beam under beam search, and, in a panel, a gradient attribution beside the cross-attention ("attention is not
explanation").

Drawn in the browser from the translation's payload (`step_panel.js`, shared with the heads tab's run with heads
switched off, and `steps.js`): the step slider, ◀ and ▶ are answered in the page, with no request. The attribution
is computed on the server when its panel opens or its method changes (`attribute`), for every step at once, so that
moving the step afterwards redraws in the page too.
"""

from pathlib import Path

import gradio as gr
from markdown_it import MarkdownIt

from interpretability.attribution import METHODS

from ..events import QUIET
from ..payload import rounded
from ..texts import ATTRIBUTION_HELP, BEAM_HELP, SAMPLING_HELP, STEPS_HELP
from ..translation import SHOWN_TRANSLATION, inspection_of
from ..views import browser_view

STEP_PANEL_JS = Path(__file__).with_name("step_panel.js").read_text(encoding="utf-8")
METHOD_NAMES = {"gradient_x_input": "gradient × input", "integrated_gradients": "integrated gradients"}

# The step panel's look (step_panel.js), in every view that draws one.
STEP_PANEL_CSS = """
.step-controls { display: flex; flex-wrap: wrap; align-items: center; gap: 10px; margin: 6px 0; }
.step-controls input[type=range] { flex: 1; min-width: 10em; }
.step-controls .step-next { margin-left: auto; }
.step-controls button { padding: 3px 12px; border-radius: 6px; border: 1px solid var(--border-color-primary);
  background: var(--button-secondary-background-fill); }
.step-label { min-width: 7em; font-variant-numeric: tabular-nums; }
.step-figures { display: flex; flex-wrap: wrap; gap: 18px; align-items: flex-start; }
.step-figures figure, .attribution-figure { margin: 4px 0; max-width: 100%; overflow-x: auto; }
.step-figures figcaption, .attribution-figure figcaption { font-weight: 600; margin-bottom: 4px; }
.step-candidates { flex: 1 1 320px; }
.step-attention { flex: 1 1 420px; min-width: 0; }
.bars-table { border-collapse: collapse; width: 100%; }
.bars-table th { font-family: var(--font-mono); font-weight: 500; text-align: right; padding: 1px 8px;
  white-space: pre; }
.bars-table td { width: 100%; padding: 1px 0; }
.bars-table th, .bars-table td { border: none !important; background: none !important; }
.bar-line { display: flex; align-items: center; gap: 6px; }
.bar { display: inline-block; height: 14px; min-width: 1px; border-radius: 2px; }
.bar.blue { background: #1f77b4; }
.bar.grey { background: #9aa5b1; }
.bar.chosen { background: #ff9f43; }
.bar-row.chosen th { font-weight: 700; }
.bar-value { font-size: 0.85em; font-variant-numeric: tabular-nums; }
.bar-legend { font-size: 0.9em; margin-bottom: 4px; }
.bar-legend .bar { width: 14px; vertical-align: middle; margin: 0 4px 0 8px; }
"""

CSS = STEP_PANEL_CSS + """
.attribution-panel { margin-top: 12px; border: 1px solid var(--border-color-primary); border-radius: 8px;
  padding: 6px 10px; }
.attribution-panel summary { cursor: pointer; font-weight: 600; }
"""


def markdown_html(text):
    """Markdown as HTML, for the prose inside a view drawn in the browser."""
    return MarkdownIt().render(text)


def stepped_view(module_file, elem_id, html_template, css_template=""):
    """A view drawn in the browser whose script (the `.js` beside `module_file`) draws step panels: a
    `views.browser_view` with step_panel.js and its CSS before its own."""
    return browser_view(module_file, elem_id, html_template, STEP_PANEL_CSS + css_template,
                        shared_scripts=[STEP_PANEL_JS])


def attribution_json(attribution, inspection):
    """An `attribution.Attribution` as the page draws it: every step's two rows (cross-attention, mean over layers
    and heads; the attribution), the tokens it is about (the page draws it only over the sentence it shows), and the
    rank agreement per step (None where undefined: one source token) and over the sentence."""
    return {"method": attribution.method, "method_name": METHOD_NAMES[attribution.method],
            "source_tokens": inspection.source_tokens, "target_tokens": inspection.target_tokens,
            "output_tokens": attribution.output_tokens, "scores": rounded(attribution.scores),
            "attention": rounded(attribution.attention), "agreement": rounded(attribution.agreement),
            "mean_agreement": rounded(attribution.mean_agreement), "seconds": round(attribution.seconds, 3)}


def attribute(served, text, decoding, beam, temperature, top_k, seed, evt: gr.EventData):
    """The page's "attribute" event (its panel opened, or its method changed): the attribution of the translation of
    the sentence and decoding settings it sends (the translation shown: `translation.inspection_of`), every step at
    once, as the view's new value."""
    data = evt._data if isinstance(evt._data, dict) else {}
    method = data.get("method")
    if method not in METHODS:
        raise gr.Error(f"Attribution: the method must be one of {', '.join(METHODS)}, got {method!r}")
    inspection = inspection_of(served, text, decoding, beam, temperature, top_k, seed)
    if inspection is None:
        return gr.skip()
    return {"attribution": attribution_json(served.attribute(inspection, method), inspection),
            "request": data.get("request")}


def view_template():
    """The tab's view: the step panel (drawn by step_panel.js), then the attribution panel, closed."""
    return f"""<div class="steps-view">
<p class="steps-empty"><i>Translate a sentence above: its decoding steps appear here.</i></p>
<div class="step-root"></div>
<details class="attribution-panel" id="attribution-panel">
<summary>Attention is not explanation: compare with a gradient attribution</summary>
<div class="attribution-help">{markdown_html(ATTRIBUTION_HELP)}</div>
<div class="attribution-controls"></div>
<p class="attribution-status" aria-live="polite"></p>
<figure class="attribution-figure" id="attribution" hidden><figcaption></figcaption><canvas></canvas></figure>
</details></div>"""


def build(served, experiment_inputs):
    """The tab: how decoding works, the step view of each translation (drawn in the page), and the attribution
    panel, computed when asked for the sentence and settings of `experiment_inputs` (`TranslationBox.inputs`) as the
    translation shown has them (`translation.SHOWN_TRANSLATION`)."""
    gr.Markdown(STEPS_HELP)
    with gr.Accordion("Sampling and beam search, explained", open=False):
        gr.Markdown(SAMPLING_HELP + "\n\n" + BEAM_HELP)
    view = stepped_view(__file__, "step-view", view_template(), CSS)
    view.attribute(served.bind(attribute), experiment_inputs, view, js=SHOWN_TRANSLATION, **QUIET)
    return view
