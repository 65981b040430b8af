"""What the web layer's tests share: reading what the page shows (HTML text, token chips), and
fixtures imported by the test modules that use them: `translator` (standing in for conftest's) is the tiny model in
both precisions the app can run it in, `inspection` its inspection of one sentence, `served` the module's `translator`
as the app serves it. Each fixture is imported by its function's name, so that a test's argument does not shadow an
import."""

import gzip
import html
import json
import re
from pathlib import Path

import gradio as gr
import pytest

from interpretability import inspect
from transformer import Translator
from transformer.tokenizer import EOS

PRECISIONS = ["float32", "float16"]  # the app's MODEL_DTYPE on a CPU
WEBAPP = Path(__file__).resolve().parents[1] / "webapp"
ASKED = 5  # the number of the question the tests ask a view's handler (views.js: ask)


def mounted(view):
    """(the module `view` mounts, as a path, and the questions it may ask), read from its js_on_load
    (`webapp.page_script.view_loader`)."""
    match = re.search(
        r'mountView\("\./([\w/]+\.js)", \{element, props, watch, trigger, server\}, (\[[^]]*\])\)', view.js_on_load
    )
    assert match, view.js_on_load
    return WEBAPP / match.group(1), json.loads(match.group(2))


def question(**data):
    """A view's question (`ask(name, data)` in views.js) as Gradio hands its handler the event's data: `data`, and
    the question's number ASKED."""
    return gr.EventData(None, {**data, "asked": ASKED})


def answered(reply):
    """The value of a handler's reply to `question` (`webapp.views.answer`), which must carry its number back."""
    assert reply["asked"] == ASKED
    return reply["answer"]


def decoding_steps(inspection):
    """Number of decoder steps: one per generated token plus the step that produced EOS (what the step view offers)."""
    return len(inspection.target_tokens)


def step_tokens(inspection, step):
    """(prefix the decoder sees, token it chose) at 1-based `step`, as the step view should show them."""
    targets = inspection.target_tokens
    return targets[:step], targets[step] if step < len(targets) else EOS


def translated(served, text, *settings):
    """The page's translate event as its page meets it: (italian, status, chips, payload), the payload fetched by the
    key the event sends (`translation.sent_payload`) from where the carrier's server function reads it; None for
    none."""
    from webapp import translation

    italian, status, chip_html, reference = translation.translate(served, text, *settings)
    payload = reference and json.loads(gzip.decompress(served.payloads.get(reference["key"])))
    return italian, status, chip_html, payload


def plain(fragment):
    """The text an HTML fragment shows: tags dropped, entities read."""
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def chips(fragment):
    """[(token, marked changed)] of the token chips in an HTML fragment, in order."""
    return [
        (html.unescape(text), " changed" in classes)
        for classes, text in re.findall(r'<span class="chip([^"]*)" title="position \d+">(.*?)</span>', fragment)
    ]


def changed_indices(fragment):
    return {i for i, (_, changed) in enumerate(chips(fragment)) if changed}


@pytest.fixture(scope="module", params=PRECISIONS, name="translator")
def translator_in_each_precision(request, tiny_model_dir):
    """The tiny model in float32, then in float16 (MODEL_DTYPE)."""
    return Translator.load(tiny_model_dir, dtype=request.param)


@pytest.fixture(scope="module", name="inspection")
def inspection_in_each_precision(translator):
    return inspect(translator, "I see the cat.")


@pytest.fixture(scope="module", name="served")
def served_translator(translator, tiny_model_dir):
    """`translator` (the module's) as the app serves it to the tabs' handlers."""
    from modeldir.directory import ModelDirectory
    from webapp.served import ServedModel

    return ServedModel(ModelDirectory(translator, tiny_model_dir), tiny_model_dir)
