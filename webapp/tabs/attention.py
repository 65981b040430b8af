"""The "Attention" tab: every attention map of the translation, one layer and head (or the mean, or all heads side by
side) at a time, as a heatmap or as bertviz-style lines, with an overview of all layers × heads below: where each
token looked while the model translated.

One view drawn in the browser (`attention.js`), bertviz style: the maps come once per translation, in its payload
(`webapp.payload`), and every control after that (kind, layer, head, the naming of the Italian rows, heatmap or
lines, a click on the overview, a hover, the downloads) is answered in the page, with no request to the server.

Rows of the target side can be named by the decoder input (`<s>`, then the tokens so far: what the model reads) or
by the token produced at that step (what a beginner expects to line up with the English word).
"""

import html
import json

from ..attention_kinds import ATTENTION_KINDS
from ..views import browser_view

# In the view's template (a JS template string read by Gradio): no backticks, no "${", no "{{".
HELP = """<p>Each <strong>row</strong> is a query token, each <strong>column</strong> a key token; a row's colours show
how much that query attends to each key (every row sums to 1). <em>Encoder self-attention</em>: English words looking
at English words. <em>Decoder self-attention</em>: each Italian position looks only at itself and earlier positions
(the causal mask). <em>Cross-attention</em>: each Italian position looks at the English sentence; row
<code>&lt;s&gt;</code> is where the first Italian token was chosen, row <code>▁x</code> where the token after
<code>▁x</code> was chosen (or name the rows by the <em>token produced</em> there). Hover a cell for its numbers, click
it (or a token's label) to outline its row and column (click again to clear); <em>lines</em> draws a line per pair
instead, as opaque as its weight (hover a query to light up its lines); click a map of the overview below to show that
layer and head.</p>"""

CSS = """
.attn-view .attn-figure { position: relative; margin-top: 4px; }
.attn-view .attn-scroll { max-width: 100%; overflow: auto; }
.attn-view canvas { display: block; }
.attn-view canvas.attn-canvas:focus-visible { outline: 3px solid #ff9f43; outline-offset: 2px; }
.attn-view .attn-title { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%);
  white-space: nowrap; }
.attn-view .attn-empty { margin: 8px 0; }
.attn-view .attn-tooltip { position: absolute; z-index: 10; pointer-events: none; padding: 4px 8px;
  border-radius: 6px; background: rgba(30, 30, 30, 0.92); color: #fff; font-size: 13px; white-space: pre;
  font-family: var(--font-mono); }
.attn-view .attn-downloads { display: flex; flex-wrap: wrap; gap: 8px; margin: 6px 0; }
.attn-view .attn-downloads button { padding: 3px 12px; border-radius: 6px; font-size: 0.9em;
  border: 1px solid var(--border-color-primary); background: var(--button-secondary-background-fill); }
.attn-view .attn-downloads button:disabled { opacity: 0.5; cursor: not-allowed; }
.attn-view .attn-help { font-size: 0.95em; margin: 6px 0; }
.attn-view .attn-overview { margin-top: 6px; }
.attn-view .attn-overview canvas { cursor: pointer; }
"""


def template(depths, n_heads):
    """The view's page: the controls (drawn by attention.js, for the kinds' `depths` and `n_heads` heads), the figure
    (#attention-heatmap), the download buttons, the help text and the overview (#attention-overview)."""
    setup = html.escape(json.dumps({"depths": depths,  # "heads" last: the JSON never ends in "}}" (Handlebars)
                                    "titles": {kind: spec.title for kind, spec in ATTENTION_KINDS.items()},
                                    "heads": n_heads}))
    return f"""<div class="attn-view" aria-label="Attention" data-setup="{setup}">
<div id="attention-controls" class="attn-controls"></div>
<div id="attention-heatmap" class="attn-figure">
<p class="attn-title gtitle" aria-live="polite"></p>
<p class="attn-empty">Translate a sentence to see where each token looked.</p>
<div class="attn-scroll"><canvas class="attn-canvas" tabindex="0" role="img" hidden></canvas></div>
<div class="attn-tooltip" role="tooltip" hidden></div>
</div>
<div class="attn-downloads">
<button type="button" class="attn-png" disabled>⬇️ Figure (PNG)</button>
<button type="button" class="attn-json" disabled>⬇️ Attention weights, this kind, all layers and heads (JSON)</button>
</div>
<div class="attn-help">{HELP}</div>
<div id="attention-overview" class="attn-overview">
<p class="attn-title gtitle"></p>
<div class="attn-scroll"><canvas class="attn-overview-canvas" role="img" hidden></canvas></div>
</div>
</div>"""


def build(served):
    """The tab: one view drawn in the browser from each translation's payload (no Python event)."""
    depths = {kind: served.layers(kind) for kind in ATTENTION_KINDS}
    return browser_view(__file__, "attention-view", template(depths, served.cfg.n_heads), CSS)
