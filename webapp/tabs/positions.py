"""The "Positional encoding" tab: attention itself ignores word order, so a sinusoidal positional encoding is added
to each token's embedding. This shows the encoding's table, the sine and cosine waves of chosen dimensions, how alike
the encodings of the sentence's positions are, and the size of each token's meaning next to its position signal.

One view drawn in the browser (`positions.js`, its markup too; `positions.css`). The table does not depend on the
sentence: the page asks for it once, when the tab is first shown (`encoding_table`, the server function
`positional_table`: max_len × d_model values to 4 decimals, as int16 bytes, two bytes a value). Everything else is drawn
from it and from each translation's payload (`webapp.payload`: the tokens and `norms`): a control changed or a new
sentence redraws in the page, with no request to the server.
"""

from pathlib import Path

import gradio as gr

from interpretability import positional_encoding

from ..payload import quantized
from ..texts import POSITION_HELP
from ..views import browser_view, prepared_json

SCALE = 10_000  # a value v travels as round(SCALE * v), an int16: 4 decimals, |v| <= 1


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
    return browser_view(
        Path(__file__).with_suffix(".js"),
        "positional-encoding",
        server_functions=[positional_table],
        setup={"dims": ", ".join(map(str, default_dims(d_model))), "last": d_model - 1},
    )
