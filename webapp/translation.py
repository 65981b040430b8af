"""The box above the tabs: the English sentence, the Italian translation, the Translate button and a few examples,
the decoding controls (greedy, beam search, sampling) folded away, the status line and the token chips. Each
translation is one `interpretability.inspect` call, whose payload every tab draws its views from, fetched by the page
from a bounded store of recent payloads (`sent_payload`). Nothing is kept per visitor: an experiment's request carries
the sentence and settings it runs on (`shown_inspection`).

Laid out for a projector: at 1024×768, after Translate, the tab bar and the top of the first view are on the first
screen (the decoding settings are an accordion whose title names the decoding, the examples one row of small buttons).
"""

import secrets
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from inputs.checks import SERVER_MAX_BEAM
from inputs.language import check_language
from inputs.request import one_line, parse_request  # noqa: F401 (one_line: the tabs read text as the box does)
from inputs.text import read_in_lower_case
from interpretability import input_report
from modeldir.seen import seen_words
from transformer.tokenizer import EOS

from .events import Refusal
from .page_script import module_call
from .payload import decoding_label, shown_payload
from .texts import EMPTY_MESSAGE
from .tokens import output_tokens, token_chips
from .views import carrier, gzipped_json

EXAMPLES = [  # short enough to fit one row on a projector (1024 px)
    "I love reading books.",
    "Where is the station?",
    "Tom doesn't like coffee.",  # "A Tom non piace il caffè.": the subject becomes the object
    "The cat is sleeping.",
]
DECODINGS = {"greedy": "Greedy", "beam": "Beam search", "sampling": "Sampling"}
# What each decoding control takes: (lowest, highest, whole numbers only); the controls and the URL's values alike.
CONTROL_RANGES = {
    "beam": (2, SERVER_MAX_BEAM, True),
    "temperature": (0.1, 3.0, False),
    "top_k": (0, 50, True),
    "seed": (0, 2**53 - 1, True),
}
# What the box's events run in the browser first (translation.js): the page's load reads the URL's sentence and
# settings (`fromUrl`), each value one its control offers (`DECODINGS`, `CONTROL_RANGES`), else as they are: a value
# Gradio refuses comes back as a message the page renders as HTML; every experiment sends the shown translation's
# sentence and settings, not the box's (`shownTranslation`); an example clicked goes into the box and presses
# Translate (`pressTranslate`).
SCRIPT = Path(__file__).with_name("translation.js")
FROM_URL = module_call(SCRIPT, "fromUrl", list(DECODINGS), CONTROL_RANGES)
SHOWN_TRANSLATION = module_call(SCRIPT, "shownTranslation")


@dataclass
class TranslationBox:
    """What the tabs need of the box: the sentence and the decoding controls (decoding, beam width, temperature,
    top-k, seed), the inputs of every experiment (the views get the payload in the page: `webapp.views`)."""

    text: gr.Textbox
    decoding_controls: list

    @property
    def inputs(self):
        """What an experiment's event sends: the sentence, then the decoding controls (`inspection_of`'s order), as
        the translation shown has them (SHOWN_TRANSLATION)."""
        return [self.text, *self.decoding_controls]


def page_request(text, decoding, beam, temperature, top_k, seed):
    """The `Request` of the sentence and decoding controls a page event sends (`inputs.request.parse_request`); a
    gr.Error that says why for values the page does not offer."""
    try:
        return parse_request(text, decoding, beam, temperature, top_k, seed)
    except ValueError as e:
        raise Refusal(f"Decoding settings: {e}") from e


def decoding_settings(decoding, beam, temperature, top_k, seed):
    """(beam width, Sampling or None) of the decoding controls (`page_request`)."""
    request = page_request("", decoding, beam, temperature, top_k, seed)
    return request.beam, request.sampling


def overruled_note(overruled):
    """The status line's note on the steps where the decoding rules overruled the model's first choice
    (`Inspection.overruled`: (step, its first choice, the token written))."""
    replaced = ", ".join(f"'{written}' for its '{first}' (step {step + 1})" for step, first, written in overruled)
    return (
        f"**ℹ️ Numbers, names and characters as the English writes them, words as the training pairs (or a larger "
        f"corpus's, for words they hold too rarely) translate them, no word three times in a row: {replaced}. "
        "The model's own first choice would have written a number the English does not hold, misspelt a name it "
        "never met in training or a character its vocabulary spells in bytes, copied an English word the pairs "
        "translate, made up a word for one, split a phrase the pairs write as one word, or written a word a third "
        "time in a row.**"
    )


def translation_status(
    seconds,
    decoding,
    report,
    italian_tokens,
    max_tokens,
    joined_lines=1,
    not_english=None,
    rarely_seen=None,
    kept=False,
    lowered=(),
    overruled=(),
    dated=(),
):
    """The status line under a translation (`seconds`: what making it took, `kept`: True when it was a recent one
    shown again, which took no time now; `decoding`: `decoding_label`; tokens counted without the closing </s>, as
    the truncation note does), then the warning `not_english` when the input does not look English (the line of
    `inputs.language.check_language`), a note when the input's `joined_lines` were read as one
    (`one_line`), a warning for each thing in the input the model may not have read
    (`interpretability.input_report`), the line naming the words its training pairs held a handful of times or
    never (`rarely_seen`: `modeldir.seen.SeenWords.warning`), the one naming the capitalised words it read in
    lower case (`lowered`: `inputs.text.read_in_lower_case`), the one naming the dates, percentages, amounts,
    decimals and initials it read otherwise (`dated`: (as typed, as read) pairs of `CheckedTranslator.reading`), and
    where the digits, a name the model never met or a character spelt in bytes were held to the English's, a word it
    was copying or made up written as its pairs translate it, a phrase's one word written whole, or a word not
    written a third time in a row (`overruled`)."""
    again = " (earlier: shown again from the recent translations)" if kept else ""
    lines = [
        f"Translated in {seconds:.2f} s{again} · {decoding} · {report.tokens} English → {italian_tokens} Italian "
        f"tokens (not counting `{EOS}`)"
    ]
    if not_english:
        lines.append(f"**⚠️ Warning: {not_english}**")
    if joined_lines > 1:
        lines.append(
            f"**ℹ️ Note: your {joined_lines} lines were joined into one text (each line break read as a "
            "space): this model translates one sentence at a time, so translate the lines one by one to see "
            "each on its own.**"
        )
    if report.unreadable:
        strength = "Warning" if report.unreadable_share >= 0.25 else "Note"
        lines.append(
            f"**⚠️ {strength}: {report.unreadable} of the {report.tokens} English tokens "
            f"({report.unreadable_share:.0%}) are characters this model never learnt (emoji, other scripts, "
            "symbols), read as unknown or byte by byte: the translation of those parts is a guess.**"
        )
    if rarely_seen:
        lines.append(f"**ℹ️ Rarely seen in training: {rarely_seen}**")
    if lowered:
        named = ", ".join(f"'{word}'" for word in lowered)
        lines.append(
            f"**ℹ️ Read in lower case: {named}. The model met {'it' if len(lowered) == 1 else 'them'} capitalised in "
            "a handful of training pairs, and in lower case often.**"
        )
    if dated:
        named = ", ".join(f"'{typed}' as '{read}'" for typed, read in dated)
        lines.append(
            f"**ℹ️ Read as the model knows them best: {named}. It met few English dates, percentages, amounts, "
            "decimals and initials: a day first, a century in digits, a percentage with its sign, an amount with its "
            "currency after it in words, a decimal with a comma and initials in full are what it reads best.**"
        )
    if overruled:
        lines.append(overruled_note(overruled))
    if report.truncated:
        lines.append(
            f"**⚠️ Note: your text is longer than the model reads ({max_tokens} tokens): only the beginning "
            "was translated.**"
        )
    elif report.long:
        lines.append(
            f"**⚠️ Note: {report.tokens} tokens is far longer than the sentences this model learnt from: "
            "expect a weaker translation, or translate one sentence at a time.**"
        )
    return "\n\n".join(lines)


REQUEST_SETTINGS = ("decoding", "beam", "temperature", "top_k", "seed")  # a request's settings, in the controls' order


def inspection_of(served, text, decoding, beam, temperature, top_k, seed):
    """The `Inspection` of the translation of `text` (its lines read as one) with the decoding controls' settings,
    None for an empty text. Every experiment (one head's numbers, attribution, heads switched off) asks it so: the
    page sends the sentence and settings (SHOWN_TRANSLATION), the server keeps nothing."""
    if not isinstance(text, str) or not text.strip():
        return None
    request = page_request(text, decoding, beam, temperature, top_k, seed)
    return served.made(request.text, request.beam, request.sampling).inspection


def shown_inspection(served, shown):
    """`inspection_of` the translation an event names in its data rather than its inputs (`shown`: the payload's
    `request`, `payload.request_json`; the model map's boxes send it so); None when the page shows none."""
    if not isinstance(shown, dict):
        return None
    return inspection_of(served, *(shown.get(name) for name in ("text", *REQUEST_SETTINGS)))


def sent_payload(served, payload):
    """What the translate event sends the page in place of `payload`: a key to it, kept encoded in `served.payloads`
    until the page fetches it (the carrier's server function, `views.kept_json`). Gradio keeps every session's last
    output values: a payload sent as one (several times its JSON as Python objects) stayed on the server as long as its
    session; a store bounded in bytes holds them instead (docs/benchmarks.md, "A hostile visitor")."""
    key = secrets.token_urlsafe(16)
    served.payloads.put(key, gzipped_json(payload))
    return {"key": key}


def translate(served, text, decoding, beam, temperature, top_k, seed):
    """English -> Italian. Outputs: translation, status, token chips, and a reference to the payload every view is
    drawn from (`sent_payload`; the payload: `webapp.payload`, with the request it was made with:
    `payload.request_json`)."""
    if not text or not text.strip():
        return "", EMPTY_MESSAGE, "", None
    request = page_request(text, decoding, beam, temperature, top_k, seed)
    inspection, seconds, kept = served.made(request.text, request.beam, request.sampling)
    outputs = output_tokens(inspection)
    counts = served.directory.word_counts
    seen = seen_words(inspection.source_tokens, counts) if counts else None
    read, dated = served.translator.reading(request.text)
    status = translation_status(
        seconds,
        decoding_label(request.beam, request.sampling),
        input_report(inspection),
        len(outputs) - 1,
        served.translator.max_source_tokens,
        request.joined_lines,
        check_language(request.text).warning,
        seen.warning() if seen else None,
        kept,
        read_in_lower_case(request.text, read),
        inspection.overruled,
        dated,
    )
    chips = token_chips(inspection.source_tokens, "English", seen=seen) + token_chips(outputs, "Italian")
    return (
        inspection.translation,
        status,
        chips,
        sent_payload(
            served, shown_payload(served.translator, inspection, request.text, request.beam, request.sampling)
        ),
    )


def decoding_controls_for(decoding):
    """The accordion's title naming the decoding, then its controls: the beam width shown and set under beam search
    only, temperature, top-k and seed under sampling only (hidden and inactive otherwise: a control that does nothing
    is not shown)."""
    beam, sampling = decoding == "beam", decoding == "sampling"
    return (
        gr.Accordion(label=decoding_title(decoding)),
        gr.Slider(interactive=beam, visible=beam),
        gr.Slider(interactive=sampling, visible=sampling),
        gr.Slider(interactive=sampling, visible=sampling),
        gr.Number(interactive=sampling, visible=sampling),
    )


def decoding_title(decoding):
    return f"Decoding: {DECODINGS[decoding]} (click to choose greedy, beam search or sampling)"


def decoding_controls():
    """The decoding radio with the beam width beside it, and the sampling controls under them, laid out (those of
    the decoding not chosen hidden: `decoding_controls_for`)."""
    with gr.Row(equal_height=False):
        decoding = gr.Radio(
            [(name, value) for value, name in DECODINGS.items()],
            value="greedy",
            label="Decoding",
            elem_id="decoding",
            scale=1,
        )
        beam = gr.Slider(
            *CONTROL_RANGES["beam"][:2],
            value=4,
            step=1,
            label="Beam width (for beam search)",
            interactive=False,
            visible=False,
            elem_id="beam",
            scale=1,
        )
    with gr.Row(equal_height=False):
        temperature = gr.Slider(
            *CONTROL_RANGES["temperature"][:2],
            value=1.0,
            step=0.1,
            label="Temperature (for sampling)",
            interactive=False,
            visible=False,
            elem_id="temperature",
        )
        top_k = gr.Slider(
            *CONTROL_RANGES["top_k"][:2],
            value=0,
            step=1,
            label="Top-k (for sampling; 0: all tokens)",
            interactive=False,
            visible=False,
            elem_id="top-k-sampling",
        )
        seed = gr.Number(
            0, precision=0, minimum=0, label="Seed (for sampling)", interactive=False, visible=False, elem_id="seed"
        )
    return [decoding, beam, temperature, top_k, seed]


def build(served, demo):
    """The box, wired: Translate, Enter, an example clicked and the page's load (`demo.load`) translate, in the
    queue of the model (`served.queue`)."""
    with gr.Row(equal_height=True):
        # lines=1: Enter translates and Shift+Enter starts a new line (a taller box makes Enter a new line);
        # the box still grows to max_lines as the text wraps. Lines are read as one text (`one_line`).
        text = gr.Textbox(
            label="English",
            value=EXAMPLES[0],
            lines=1,
            max_lines=8,
            autofocus=True,
            placeholder="Type an English sentence and press Enter",
            elem_id="english",
        )
        italian = gr.Textbox(
            label="Italian", lines=1, max_lines=8, interactive=False, buttons=["copy"], elem_id="italian"
        )
    with gr.Row(elem_id="actions"):
        button = gr.Button("Translate", variant="primary", elem_id="translate", scale=0, min_width=130)
        gr.HTML("<span>Try:</span>", elem_id="examples-label", scale=0, min_width=0)
        examples = [
            gr.Button(example, size="sm", variant="secondary", scale=0, min_width=0, elem_classes=["example"])
            for example in EXAMPLES
        ]
    with gr.Accordion(decoding_title("greedy"), open=False, elem_id="decoding-settings") as settings:
        controls = decoding_controls()
    status = gr.Markdown(label="Status", elem_id="status")
    chips = gr.HTML(label="Tokens", elem_id="chips")
    payload = carrier(served.payloads)
    # The latest request wins: a Translate pressed while one runs is run after it, with the box as it is then
    # ("always_last"; Gradio's default drops it), so the page ends on the sentence in the box.
    io = dict(
        fn=served.bind(translate), inputs=[text, *controls], outputs=[italian, status, chips, payload], **served.queue
    )
    gr.on([button.click, text.submit], api_name="translate", trigger_mode="always_last", **io)
    # An example clicked: the browser puts its sentence in the box, then presses Translate (the one event above).
    for example, sentence in zip(examples, EXAMPLES):
        example.click(None, None, text, js=module_call(SCRIPT, "pressTranslate", sentence), api_visibility="private")
    show_controls = dict(
        fn=decoding_controls_for,
        inputs=controls[0],
        outputs=[settings, *controls[1:]],
        api_visibility="private",
        show_progress="hidden",
    )
    controls[0].input(**show_controls)
    # The page's load: the sentence and decoding settings in the URL, if any (page.js writes them), then translate.
    demo.load(None, [text, *controls], [text, *controls], js=FROM_URL, api_visibility="private").then(
        **show_controls
    ).then(api_visibility="private", **io)
    return TranslationBox(text, controls)
