"""The "Positional encoding" tab: attention itself ignores word order, so a sinusoidal positional encoding is added
to each token's embedding. This shows the encoding's table, the sine and cosine waves of chosen dimensions, how alike
the encodings of the sentence's positions are, and the size of each token's meaning next to its position signal.

One view drawn in the browser (`positions.js`). The table does not depend on the sentence: the page asks for it once,
when the tab is first shown (`encoding_table`, the server function `positional_table`: max_len × d_model values to 4
decimals, as int16 bytes: 64 kB of numbers, 87 kB of JSON for the shipped model's 128 × 256). Everything else is drawn
from it and from each translation's payload (`webapp.payload`: the tokens and `norms`): a control changed or a new
sentence redraws in the page, with no request to the server.
"""


import gradio as gr

from interpretability import positional_encoding

from ..payload import quantized
from ..texts import POSITION_HELP
from ..views import browser_view, prepared_json

SCALE = 10_000  # a value v travels as round(SCALE * v), an int16: 4 decimals, |v| <= 1

CSS = """
.positions-view h3 { margin: 14px 0 2px; font-size: 1.05em; }
.positions-view .pos-note { margin: 2px 0 6px; font-size: 0.95em; }
.positions-view .pos-readout { min-height: 1.4em; font-family: var(--font-mono); font-size: 0.9em; }
.positions-view .pos-scroll { max-width: 100%; overflow-x: auto; }
.positions-view canvas { display: block; }
.positions-view .pos-dims input { width: min(22em, 90%); margin-left: 6px; padding: 3px 6px;
  border: 1px solid var(--border-color-primary); border-radius: 6px; font-family: var(--font-mono); }
.positions-view .pos-legend { display: flex; flex-wrap: wrap; gap: 4px 14px; margin: 4px 0; font-size: 0.9em;
  padding: 0; list-style: none; }
.positions-view .pos-legend i { display: inline-block; width: 18px; height: 4px; margin-right: 5px;
  vertical-align: middle; }
.positions-view svg { display: block; width: 760px; max-width: 100%; height: auto; font: 11px system-ui, sans-serif; }
.positions-view svg .axis { stroke: #555; }
.positions-view svg text { fill: currentColor; }
.positions-view .pos-embedding { fill: #1f77b4; }
.positions-view .pos-position { fill: #ff7f0e; }
"""

TEMPLATE = """<div class="positions-view" aria-label="Positional encoding" data-default-dims="{dims}">
<h3 class="pos-table-title">Positional encoding PE</h3>
<p class="pos-note pos-table-note">Loading the table…</p>
<div class="pos-scroll"><canvas class="pos-table" role="img" aria-label="The positional encoding table"></canvas></div>
<div class="pos-readout pos-table-readout" aria-live="polite"></div>
<h3>Sine and cosine waves of the chosen dimensions</h3>
<label class="pos-dims">Dimensions to plot (0–{last}, separated by commas)<input class="pos-dims-input" type="text"
  value="{dims}" aria-label="Dimensions to plot" disabled></label>
<p class="pos-note pos-dims-note"></p>
<ul class="pos-legend pos-curves-legend"></ul>
<svg class="pos-curves" viewBox="0 0 760 300" role="img" aria-label="PE values of the chosen dimensions"></svg>
<h3>Position similarity: nearby positions have similar encodings</h3>
<p class="pos-note pos-similarity-note">Translate a sentence to see its positions.</p>
<div class="pos-scroll"><canvas class="pos-similarity" role="img"></canvas></div>
<div class="pos-readout pos-similarity-readout" aria-live="polite"></div>
<h3>What goes into the encoder: token meaning + position</h3>
<p class="pos-note pos-norms-note">Translate a sentence to see the size of each token's meaning next to its
position.</p>
<ul class="pos-legend"><li><i class="pos-embedding" style="background:#1f77b4"></i>‖embedding × √d_model‖</li>
<li><i style="background:#ff7f0e"></i>‖positional encoding‖</li></ul>
<svg class="pos-norms" viewBox="0 0 760 320" role="img" aria-label="Vector lengths per token"></svg>
</div>"""


def default_dims(d_model):
    """The dimensions plotted at first: fast to slow waves, and a sin/cos pair."""
    return sorted({0, d_model // 8, d_model // 4, min(d_model // 4 + 1, d_model - 1)})


def encoding_table(model):
    """What the page draws the table from: `positional_encoding` (max_len × d_model) as `payload.quantized` int16 at
    SCALE, every value within 0.5 / SCALE of the model's (`payload.dequantized` reads it back)."""
    return quantized(positional_encoding(model), SCALE, "int16")


def build(served):
    """The tab's text and its view. No Python event: the view asks for the table once (`positional_table`) and
    draws each translation from the payload the translation box publishes."""
    gr.Markdown(POSITION_HELP)
    positional_table = prepared_json("positional_table", encoding_table(served.translator.model))
    d_model = served.cfg.d_model
    dims = ", ".join(map(str, default_dims(d_model)))
    return browser_view(__file__, "positional-encoding", TEMPLATE.format(dims=dims, last=d_model - 1), CSS,
                        server_functions=[positional_table])
