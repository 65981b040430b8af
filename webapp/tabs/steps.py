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

from inputs.checks import echo
from interpretability.attribution import METHODS

from ..events import QUIET, Refusal
from ..payload import rounded
from ..texts import ATTRIBUTION_HELP, BEAM_HELP, SAMPLING_HELP, STEPS_HELP
from ..translation import SHOWN_TRANSLATION, inspection_of
from ..views import answer, browser_view, question

METHOD_NAMES = {"gradient_x_input": "gradient × input", "integrated_gradients": "integrated gradients"}


def markdown_html(text):
    """Markdown as HTML, for the prose inside a view drawn in the browser."""
    return MarkdownIt().render(text)


def attribution_json(attribution, inspection):
    """An `attribution.Attribution` as the page draws it: every step's two rows (cross-attention, mean over layers
    and heads; the attribution), the tokens it is about (the page draws it only over the sentence it shows), and the
    rank agreement per step (None where undefined: one source token) and over the sentence."""
    return {
        "method": attribution.method,
        "method_name": METHOD_NAMES[attribution.method],
        "source_tokens": inspection.source_tokens,
        "target_tokens": inspection.target_tokens,
        "output_tokens": attribution.output_tokens,
        "scores": rounded(attribution.scores),
        "attention": rounded(attribution.attention),
        "agreement": rounded(attribution.agreement),
        "mean_agreement": rounded(attribution.mean_agreement),
        "seconds": round(attribution.seconds, 3),
    }


def attribute(served, text, decoding, beam, temperature, top_k, seed, evt: gr.EventData):
    """The page's "attribute" event (its panel opened, or its method changed): the attribution of the translation of
    the sentence and decoding settings it sends (the translation shown: `translation.inspection_of`), every step at
    once, as the view's new value."""
    asked = question(evt, "method")
    if asked["method"] not in METHODS:
        raise Refusal(f"Attribution: the method must be one of {', '.join(METHODS)}, got {echo(asked['method'])}")
    inspection = inspection_of(served, text, decoding, beam, temperature, top_k, seed)
    if inspection is None:
        return answer(asked, None)
    attribution = served.attribute(inspection, asked["method"])
    return answer(asked, {"attribution": attribution_json(attribution, inspection)})


def build(served, experiment_inputs):
    """The tab: how decoding works, the step view of each translation (drawn in the page), and the attribution
    panel, computed when asked for the sentence and settings of `experiment_inputs` (`TranslationBox.inputs`) as the
    translation shown has them (`translation.SHOWN_TRANSLATION`)."""
    gr.Markdown(STEPS_HELP)
    with gr.Accordion("Sampling and beam search, explained", open=False):
        gr.Markdown(SAMPLING_HELP + "\n\n" + BEAM_HELP)
    view = browser_view(
        Path(__file__).with_suffix(".js"),
        "step-view",
        questions=["attribute"],
        setup={"help": markdown_html(ATTRIBUTION_HELP)},
    )
    view.attribute(served.bind(attribute), experiment_inputs, view, js=SHOWN_TRANSLATION, **QUIET)
    return view
