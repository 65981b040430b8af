"""The "Attention" tab: every attention map of the translation, one layer and head (or the mean, or all heads side by
side) at a time, as a heatmap or as bertviz-style lines, with an overview of all layers × heads below: where each
token looked while the model translated.

One view drawn in the browser (`attention.js`, its markup, help and drawing; `attention.css`), bertviz style: the maps
come once per translation, in its payload (`webapp.payload`), and every control after that (kind, layer, head, the
naming of the Italian rows, heatmap or lines, the colour scale, a click on the overview, a hover, the downloads) is
answered in the page, with no request to the server.

Rows of the target side can be named by the decoder input (`<s>`, then the tokens so far: what the model reads) or
by the token produced at that step (what a beginner expects to line up with the English word).
"""

from pathlib import Path

from ..attention_kinds import ATTENTION_KINDS
from ..view_json import attention_setup
from ..views import browser_view


def build(served):
    """The tab: one view drawn in the browser from each translation's payload (no Python event)."""
    depths = {kind: served.layers(kind) for kind in ATTENTION_KINDS}
    return browser_view(
        Path(__file__).with_suffix(".js"), "attention-view", setup=attention_setup(depths, served.cfg.n_heads)
    )
