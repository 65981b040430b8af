"""The "Inside one head" tab: one attention head's arithmetic for one query token, the model's real numbers for the
sentence in the order the computation runs: q, K and V; per key token the score q·k_j / √d_k, the mask, the softmax
taken apart (the largest score subtracted, exp, their sum, exp ÷ sum = the weight); the output drawn as the weighted
sum of the value rows; where the output goes next; and the formula with this query's numbers.

One browser view (`webapp.views.browser_view`, drawn by `inside_head.js`, its markup too; `inside_head.css`): its
controls (kind, layer, head, query token) are answered in the page. The numbers of one head, for every query token at
once, come in one request (the view's custom event `head_numbers`, which sends the sentence and decoding settings of the
translation shown, answered by `head_numbers`: a model pass, `interpretability.head_details` with query "all"), asked
only while the tab is in view, when it opens, when the kind, layer or head change, or when a translation arrives while
it is shown; a click on another query token is then drawn in the page with no request.
"""

from pathlib import Path

import gradio as gr

from interpretability.head_details import ALL_QUERIES

from ..attention_kinds import ATTENTION_KINDS, clamp_layer, whole_number
from ..events import QUIET
from ..translation import SHOWN_TRANSLATION, inspection_of
from ..view_json import head_json
from ..views import answer, browser_view, question

HELP = """One head, one query token, the model's real numbers for your sentence, in the order it computes them:
① the query's vector **q** and every key token's **k** and **v**; ② per key token, the score q·k ÷ √d_k and the
softmax taken apart: the largest score subtracted, exp, their sum, exp ÷ sum = the weight; ③ the output as the
weighted sum of the value rows; ④ where it goes next. Pick the kind, layer and head, then click a query token: the
page redraws it at once."""


def chosen_head(served, kind, layer, head):
    """(kind, 0-based layer, 0-based head) from what the page sent, clamped, never refused: an unknown kind reads as
    cross-attention, a layer beyond the kind's as its last, a head beyond the model's as its nearest."""
    kind = kind if kind in ATTENTION_KINDS else "cross"
    layer = clamp_layer(served.layers(kind), layer)
    head = max(1, min(whole_number(head, 1), served.cfg.n_heads))
    return kind, layer - 1, head - 1


def head_numbers(served, text, decoding, beam, temperature, top_k, seed, evt: gr.EventData):
    """The answer to the view's `head_numbers` event ({translation, kind, layer, head}: the payload's id and the
    1-based choices), about the sentence and decoding settings of the translation shown, which it sends
    (`translation.inspection_of`): that head's numbers for every query token (`head_json`), with the translation's
    id echoed so the page draws only the answer to its latest question; None for an empty sentence."""
    asked = question(evt, "translation", "kind", "layer", "head")
    inspection = inspection_of(served, text, decoding, beam, temperature, top_k, seed)
    if inspection is None:
        return answer(asked, None)
    kind, layer, head = chosen_head(served, asked["kind"], asked["layer"], asked["head"])
    details = served.head_details(inspection, kind, layer, head, ALL_QUERIES)
    return answer(asked, {"translation": asked["translation"], **head_json(details)})


def build(served, experiment_inputs):
    """The tab's help and its view; the view asks for a head's numbers with its `head_numbers` event, which sends
    `experiment_inputs` (the sentence and decoding controls: `translation.TranslationBox.inputs`) as the translation
    shown has them (`translation.SHOWN_TRANSLATION`)."""
    gr.Markdown(HELP)
    view = browser_view(Path(__file__).with_suffix(".js"), "inside-head", questions=["head_numbers"])
    view.head_numbers(served.bind(head_numbers), experiment_inputs, view, js=SHOWN_TRANSLATION, **QUIET)
    return view
