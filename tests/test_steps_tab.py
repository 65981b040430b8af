"""The "Decoding step by step" tab (webapp/tabs/steps.py): drawn in the page from the payload (its clicks tested in
tests/test_browser_steps.py), it keeps in Python the steps' tokens, the beam trace the payload carries, and the
attribution asked of the server, every step at once, in numbers the page draws; no event of the tab runs on a
translation."""

from dataclasses import replace
from pathlib import Path

import gradio as gr
import numpy as np
import pytest

from interpretability import inspect
from interpretability.attribution import source_attribution
from transformer import Translator
from web_helpers import PRECISIONS, answered, decoding_steps, mounted, plain, question, served_translator, step_tokens  # noqa: F401 (fixture)
from webapp import translation
from webapp.tabs import steps

SENTENCE = "I see the cat."
LONG_SENTENCE = "I eat the house the car the water."
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def inspection(translator):
    return inspect(translator, SENTENCE)


@pytest.mark.parametrize("dtype", PRECISIONS)
def test_decoding_steps(tiny_model_dir, dtype):
    inspection = inspect(Translator.load(tiny_model_dir, dtype=dtype), SENTENCE)
    n = decoding_steps(inspection)
    assert n == len(inspection.top_candidates) == len(inspection.target_tokens)
    assert step_tokens(inspection, 1) == (["<s>"], inspection.target_tokens[1])
    assert step_tokens(inspection, n) == (inspection.target_tokens, "</s>")


def test_inspecting_with_beam_search_keeps_the_trace_the_view_draws(translator):
    inspection = inspect(translator, LONG_SENTENCE, beam=3)
    assert inspection.beam_trace.winner.tokens == inspection.target_tokens[1:]
    assert inspect(translator, LONG_SENTENCE).beam_trace is None  # greedy: no beam to show


# --- Attribution: every step at once, for the page -------------------------------------------------------------------


@pytest.fixture(scope="module")
def attribution(translator, inspection):
    return source_attribution(translator, inspection)


def test_attribution_json_has_every_steps_two_rows_and_the_tokens_it_is_about(attribution, inspection):
    shown = steps.attribution_json(attribution, inspection)
    assert shown["method"] == "gradient_x_input" and shown["method_name"] == "gradient × input"
    assert shown["source_tokens"] == inspection.source_tokens and shown["target_tokens"] == inspection.target_tokens
    assert shown["output_tokens"] == inspection.target_tokens[1:] + ["</s>"]
    assert (
        np.array(shown["scores"]).shape
        == np.array(shown["attention"]).shape
        == (decoding_steps(inspection), len(inspection.source_tokens))
    )
    assert np.allclose(shown["scores"], attribution.scores, atol=1e-4)
    assert np.allclose(shown["attention"], attribution.attention, atol=1e-4)
    assert np.allclose(shown["agreement"], attribution.agreement, atol=1e-4)
    assert shown["mean_agreement"] == pytest.approx(attribution.mean_agreement, abs=1e-4)


def test_attribution_json_says_an_undefined_agreement_as_none(attribution, inspection):
    undefined = replace(attribution, agreement=np.full_like(attribution.agreement, np.nan), mean_agreement=np.nan)
    shown = steps.attribution_json(undefined, inspection)
    assert shown["agreement"] == [None] * len(attribution.agreement) and shown["mean_agreement"] is None


def test_attribution_json_names_integrated_gradients(translator, inspection):
    result = source_attribution(translator, inspection, method="integrated_gradients", steps=2)
    assert steps.attribution_json(result, inspection)["method_name"] == "integrated gradients"


def test_the_attribute_event_answers_the_method_asked_or_says_what_is_wrong(served, inspection, monkeypatch):
    """The event sends the sentence and settings of the translation shown: the attribution is of that sentence."""
    answer = answered(steps.attribute(served, SENTENCE, "greedy", 4, 1.0, 0, 0, question(method="gradient_x_input")))
    assert answer["attribution"]["method"] == "gradient_x_input"
    assert answer["attribution"]["target_tokens"] == inspection.target_tokens
    assert answered(steps.attribute(served, "", "greedy", 4, 1.0, 0, 0, question(method="gradient_x_input"))) is None
    monkeypatch.setattr(served, "attribute", lambda *args: pytest.fail("computed for a method the page lacks"))
    for method in ["<script>", None, "integrated_gradient"]:
        with pytest.raises(gr.Error, match="the method must be one of gradient_x_input, integrated_gradients"):
            steps.attribute(served, SENTENCE, "greedy", 4, 1.0, 0, 0, question(method=method))


# --- The view --------------------------------------------------------------------------------------------------------


def test_the_view_has_the_step_panel_code_and_the_help_and_no_event_on_a_translation(served):
    with gr.Blocks() as demo:
        view = steps.build(served, [gr.Textbox(SENTENCE), *translation.decoding_controls()])
    module, questions = mounted(view)
    assert module == ROOT / "webapp" / "tabs" / "steps.js" and questions == ["attribute"]
    assert 'import {stepPanel} from "./step_panel.js";' in module.read_text(encoding="utf-8")
    assert ".step-controls" in view.css_template  # the step panel's look (step_panel.css), with the module it imports
    triggers = [(demo.blocks[block_id], name) for fn in demo.fns.values() for block_id, name in fn.targets]
    assert triggers == [(view, "attribute")]  # the attribution, asked by the page; nothing on a translation
    markup = (ROOT / "webapp" / "tabs" / "steps.js").read_text(encoding="utf-8")  # the view's markup is its script's
    assert "Attention is not explanation: compare with a gradient attribution" in markup
    assert "Wallace, 2019" in plain(view.props["setup"]["help"]) and "${" not in view.css_template
    assert '<details class="attribution-panel" id="attribution-panel">' in markup  # closed
    assert "plotly" not in (ROOT / "webapp" / "tabs" / "steps.py").read_text(encoding="utf-8")
