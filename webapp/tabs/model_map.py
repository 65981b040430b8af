"""The "Model map" tab: Figure 1 of the paper drawn for the loaded model (its layer counts, d_model, h, d_k, d_ff), as
the model is (pre-norm: Norm → sublayer → Add), each arrow carrying its tensor's shape for the sentence translated.
Every box opens its live numbers and the code that computes them: the class or function of `transformer/`, with its
file and line numbers, read from the source when the app starts (`view_json.code_panels`), never a copy that can drift.

One view drawn in the browser (`model_map.js`, styled by `model_map.css`), from the setup `view_json.map_setup` gives
it. What a box shows at once comes in the translation's payload (`webapp.payload.map_json`: lengths, ratios,
statistics, the output layer's top logits); the vectors themselves (a token's embedding row, a norm's input and
output, the feed-forward's hidden units, a step's logits over the whole vocabulary) come in one request when a box is
first opened for a translation (the view's question `map_numbers`, answered by `map_numbers` with
`view_json.box_json` for the translation the page shows, as "Inside one head" asks for a head). The attention boxes
open the Attention and Inside one head tabs.

"Follow a token", the first thing the map offers, walks one English token or one Italian step through every box in
the order the model computes (`interpretability.walk`): its vectors come in one request (`view_json.walk_json`), and
every box after that is drawn in the page.
"""

from pathlib import Path

import gradio as gr

from interpretability.internals import STACKS

from ..events import QUIET
from ..translation import shown_inspection
from ..view_json import box_json, code_panels, map_setup, seen_json, walk_json
from ..views import answer, browser_view, question


def map_numbers(served, evt: gr.EventData):
    """The answer to the view's `map_numbers` event ({translation, shown, box, stack, index}: the payload's id, its
    request, and the box opened, or "walk" and the token followed): `box_json` or `walk_json` of the translation the
    page shows (`translation.shown_inspection`), the question echoed so the page draws only the answer to its latest
    one; None before any translation or for a box the model lacks."""
    asked = question(evt, "translation", "shown", "box", "stack", "index")
    stack, box = asked["stack"], asked["box"]
    index = asked["index"] if isinstance(asked["index"], int) else 0
    inspection = shown_inspection(served, asked["shown"]) if stack in STACKS else None
    if inspection is None:
        numbers = None
    elif box == "walk":
        numbers = walk_json(served.translator, inspection, stack, index, served.directory.word_counts)
    else:
        numbers = box_json(inspection.internals, box, stack, index)
        if box == "embedding" and stack == "encoder" and numbers is not None:
            numbers["seen"] = seen_json(inspection, served.directory.word_counts)
    if numbers is None:
        return answer(asked, None)
    return answer(asked, {"translation": asked["translation"], "box": box, "stack": stack, "index": index, **numbers})


def build(served):
    """The map's view; its boxes ask for their vectors with the `map_numbers` event, answered into the view's
    value."""
    view = browser_view(
        Path(__file__).with_suffix(".js"),
        "model-map",
        questions=["map_numbers"],
        setup=map_setup(served.cfg, code_panels()),
    )
    view.map_numbers(served.bind(map_numbers), None, view, **QUIET)
    return view
