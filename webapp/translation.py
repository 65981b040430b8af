"""The box above the tabs: the English sentence, the decoding controls (greedy, beam search, sampling), the Italian
translation with its status line and token chips, and the examples. Each translation is one
`interpretability.inspect` call, kept in the session's State, from which every tab draws its views.
"""

import time
from dataclasses import dataclass

import gradio as gr

from interpretability import input_report
from transformer import Sampling
from transformer.tokenizer import EOS

from .texts import EMPTY_MESSAGE
from .tokens import output_tokens, token_chips

MAX_BEAM = 8  # the widest beam the page offers, and the API accepts: each beam adds to every decoding step
EXAMPLES = [
    "I love reading books.",
    "Where is the train station?",
    "Tom doesn't like coffee.",
    "We are going to the beach tomorrow.",
    "Can you help me, please?",
    "She bought a new car last week.",
    "The cat is sleeping on the sofa.",
    "I don't know what to say.",
    "It's raining, so take an umbrella.",
    "How much does this cost?",
]


@dataclass
class TranslationBox:
    """What the tabs need of the box: the sentence, the decoding controls (decoding, beam width, temperature, top-k,
    seed), the State of the translation's Inspection, and the events that translate."""

    text: gr.Textbox
    decoding_controls: list
    inspection: gr.State
    translated: list


def decoding_settings(decoding, beam, temperature, top_k, seed):
    """(beam width, Sampling or None) of the decoding controls; a gr.Error that says why for values out of range."""
    try:
        if decoding == "sampling":
            return 1, Sampling(float(temperature), int(top_k), int(seed))
        beam = 1 if decoding == "greedy" else int(beam)
        if not 1 <= beam <= MAX_BEAM:
            raise ValueError(f"the beam width must be in 1..{MAX_BEAM}, got {beam}")
        return beam, None
    except (TypeError, ValueError) as e:
        raise gr.Error(f"Decoding settings: {e}") from e


def decoding_label(beam, sampling=None):
    """Words for a decoding: greedy, beam search with its width, or sampling with its settings."""
    if sampling is not None:
        top_k = f", top-{sampling.top_k}" if sampling.top_k else ""
        return f"sampling (temperature {sampling.temperature:g}{top_k}, seed {sampling.seed})"
    return "greedy" if beam == 1 else f"beam search ({beam} beams)"


def translation_status(seconds, decoding, report, italian_tokens, max_tokens):
    """The status line under a translation (`decoding`: `decoding_label`; tokens counted without the closing </s>, as
    the truncation note does), then a warning for each thing in the input the model may not have read
    (`interpretability.input_report`)."""
    lines = [f"Translated in {seconds:.2f} s · {decoding} · {report.tokens} English → {italian_tokens} Italian tokens "
             f"(not counting `{EOS}`)"]
    if report.unreadable:
        strength = "Warning" if report.unreadable_share >= 0.25 else "Note"
        lines.append(f"**⚠️ {strength}: {report.unreadable} of the {report.tokens} English tokens "
                     f"({report.unreadable_share:.0%}) are characters this model never learnt (emoji, other scripts, "
                     "symbols), read as unknown or byte by byte: the translation of those parts is a guess.**")
    if report.truncated:
        lines.append(f"**⚠️ Note: your text is longer than the model reads ({max_tokens} tokens): only the beginning "
                     "was translated.**")
    elif report.long:
        lines.append(f"**⚠️ Note: {report.tokens} tokens is far longer than the sentences this model learnt from: "
                     "expect a weaker translation, or translate one sentence at a time.**")
    return "\n\n".join(lines)


def translate(served, text, decoding, beam, temperature, top_k, seed):
    """English -> Italian. Outputs: translation, status, token chips, and the Inspection the views are drawn from."""
    if not text or not text.strip():
        return "", EMPTY_MESSAGE, "", None
    beam, sampling = decoding_settings(decoding, beam, temperature, top_k, seed)
    start = time.perf_counter()
    inspection = served.inspect(text, beam, sampling)
    seconds = time.perf_counter() - start
    outputs = output_tokens(inspection)
    status = translation_status(seconds, decoding_label(beam, sampling), input_report(inspection), len(outputs) - 1,
                                served.translator.max_source_tokens)
    chips = token_chips(inspection.source_tokens, "English") + token_chips(outputs, "Italian")
    return inspection.translation, status, chips, inspection


def sample(served, text: str, temperature: float = 1.0, top_k: int = 0, seed: int = 0) -> str:
    """English -> Italian by sampling: each token drawn from the model's distribution at `temperature` among the
    `top_k` most probable (0: all); the same seed gives the same translation."""
    if not text or not text.strip():
        return ""
    return served.inspect(text, 1, decoding_settings("sampling", 1, temperature, top_k, seed)[1]).translation


def decoding_controls_for(decoding):
    """The beam width is set under beam search only, temperature, top-k and seed under sampling only."""
    beam, sampling = gr.Slider(interactive=decoding == "beam"), decoding == "sampling"
    return beam, gr.Slider(interactive=sampling), gr.Slider(interactive=sampling), gr.Number(interactive=sampling)


def decoding_controls():
    """The decoding radio, the beam width, the Translate button, and the sampling controls, laid out."""
    with gr.Row(equal_height=False):
        decoding = gr.Radio([("Greedy", "greedy"), ("Beam search", "beam"), ("Sampling", "sampling")],
                            value="greedy", label="Decoding", elem_id="decoding", scale=2)
        beam = gr.Slider(2, MAX_BEAM, value=4, step=1, label="Beam width (for beam search)", interactive=False,
                         elem_id="beam", scale=2)
        button = gr.Button("Translate", variant="primary", size="lg", elem_id="translate", scale=1)
    with gr.Row(equal_height=False):
        temperature = gr.Slider(0.1, 3.0, value=1.0, step=0.1, label="Temperature (for sampling)", interactive=False,
                                elem_id="temperature")
        top_k = gr.Slider(0, 50, value=0, step=1, label="Top-k (for sampling; 0: all tokens)", interactive=False,
                          elem_id="top-k-sampling")
        seed = gr.Number(0, precision=0, minimum=0, label="Seed (for sampling)", interactive=False, elem_id="seed")
    return [decoding, beam, temperature, top_k, seed], button


def build(served, demo):
    """The box, wired: Translate, Enter, an example clicked and the page's load (`demo.load`) translate, in the
    queue of the model (`served.queue`)."""
    with gr.Row(equal_height=True):
        # lines=1: Enter translates and Shift+Enter starts a new line (a taller box makes Enter a new line);
        # the box still grows to max_lines as the text wraps.
        text = gr.Textbox(label="English", value=EXAMPLES[0], lines=1, max_lines=8, autofocus=True,
                          placeholder="Type an English sentence and press Enter (Shift+Enter: new line)",
                          elem_id="english")
        italian = gr.Textbox(label="Italian", lines=1, max_lines=8, interactive=False, buttons=["copy"],
                             elem_id="italian")
    controls, button = decoding_controls()
    status = gr.Markdown(label="Status", elem_id="status")
    chips = gr.HTML(label="Tokens")
    examples = gr.Examples(EXAMPLES, inputs=text, label="Examples (click one)", examples_per_page=len(EXAMPLES))
    inspection = gr.State(None, time_to_live=3600)
    io = dict(fn=served.bind(translate), inputs=[text, *controls], outputs=[italian, status, chips, inspection],
              **served.queue)
    translated = [gr.on([button.click, text.submit, demo.load], api_name="translate", **io),
                  examples.load_input_event.then(api_visibility="private", **io)]
    controls[0].input(decoding_controls_for, controls[0], controls[1:], queue=False, api_visibility="private",
                      show_progress="hidden")
    return TranslationBox(text, controls, inspection, translated)
