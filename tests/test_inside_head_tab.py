"""The "Inside one head" tab (webapp/tabs/inside_head.py), its Python side: the numbers its `head_numbers` event sends
the page are those of `interpretability.head_details` for every query token, rounded; the kind, layer and head the
page asks for are clamped, never refused; the view's script is views.js then inside_head.js, and names its event.
What the page draws from them is tested in the browser (tests/test_browser_inside_head.py)."""

import json
from pathlib import Path

import gradio as gr
import numpy as np
import pytest

from interpretability import head_details, inspect
from web_helpers import answered, mounted, question, served_translator  # noqa: F401 (fixture: served)
from webapp import translation
from webapp.attention_kinds import ATTENTION_KINDS, attention_maps
from webapp.page_script import MOUNT
from webapp.tabs import inside_head

SENTENCE = "we want the water."


@pytest.fixture(scope="module")
def inspection(translator):
    return inspect(translator, SENTENCE)


def ask(served, text, **data):
    """The view's `head_numbers` question as the page sends it: the sentence and decoding settings of the translation
    shown (translation.SHOWN_TRANSLATION), then its data; the value of the answer."""
    return answered(inside_head.head_numbers(served, text, "greedy", 4, 1.0, 0, 0, question(**data)))


@pytest.mark.parametrize("kind", list(ATTENTION_KINDS))
def test_the_numbers_sent_are_head_details_for_every_query(served, translator, inspection, kind):
    sent = ask(served, SENTENCE, translation=7, kind=kind, layer=1, head=2)
    _, queries, keys = attention_maps(inspection, kind)
    assert (sent["translation"], sent["kind"], sent["layer"], sent["head"]) == (7, kind, 1, 2)
    assert sent["query_tokens"] == queries and sent["key_tokens"] == keys
    assert sent["d_k"] == translator.model.cfg.d_model // translator.model.cfg.n_heads
    json.dumps(sent, allow_nan=False)  # plain JSON: no NaN or infinity (hidden keys: masked 1, exp 0)
    for query in range(len(queries)):
        d = head_details(translator, inspection, kind, 0, 1, query)
        for name in (
            "q",
            "scores",
            "scaled",
            "exps",
            "weights",
            "output",
            "concat",
            "contribution",
            "attention_output",
        ):
            np.testing.assert_allclose(sent[name][query], getattr(d, name), atol=6e-5, err_msg=name)
        assert sent["masked"][query] == d.masked.astype(int).tolist()
        np.testing.assert_allclose(sent["k"], d.k, atol=6e-5)
        np.testing.assert_allclose(sent["v"], d.v, atol=6e-5)
        weights = np.array(sent["weights"][query])
        assert weights.sum() == pytest.approx(1, abs=1e-3) and np.all(weights[d.masked] == 0)


def test_the_softmax_steps_add_up(served, inspection):
    """exp(s − max) is at most 1 and exactly 1 for the largest score; exp ÷ Σ exp is the weight; Σ w v the output."""
    sent = ask(served, SENTENCE, translation=1, kind="decoder", layer=1, head=1)
    for query, exps in enumerate(sent["exps"]):
        exps, weights = np.array(exps), np.array(sent["weights"][query])
        assert exps.max() == pytest.approx(1) and np.all(exps <= 1)
        np.testing.assert_allclose(exps / exps.sum(), weights, atol=2e-4)
        np.testing.assert_allclose(weights @ np.array(sent["v"]), sent["output"][query], atol=5e-4)
        assert sent["masked"][query] == [int(j > query) for j in range(len(exps))]  # the future is hidden


@pytest.mark.parametrize(
    "asked, chosen",
    [
        (dict(kind="encoder", layer=3, head=1), ("encoder", 0, 0)),  # a layer beyond the kind's: its last
        (dict(kind="cross", layer=None, head=9), ("cross", 0, 1)),  # none: the last; a head beyond: the last
        (dict(kind="self", layer="x", head=0), ("cross", 0, 0)),  # what no page sends, read as the nearest choice
    ],
)
def test_the_choices_sent_are_clamped_never_refused(served, inspection, asked, chosen):
    assert inside_head.chosen_head(served, asked["kind"], asked["layer"], asked["head"]) == chosen
    sent = ask(served, SENTENCE, translation=3, **asked)
    assert (sent["kind"], sent["layer"] - 1, sent["head"] - 1) == chosen


def test_before_a_translation_nothing_is_sent(served):
    assert ask(served, "", translation=None, kind="cross", layer=1, head=1) is None
    assert ask(served, " ", translation=None, kind="cross", layer=1, head=1) is None


def test_the_view_mounts_its_module_and_names_its_question(served):
    with gr.Blocks():
        view = inside_head.build(served, [gr.Textbox(SENTENCE), *translation.decoding_controls()])
    assert mounted(view) == (Path(inside_head.__file__).with_suffix(".js"), ["head_numbers"])
    assert 'ask("head_numbers"' in mounted(view)[0].read_text(encoding="utf-8") and callable(view.head_numbers)
    assert view.elem_id == "inside-head" and view.html_template == MOUNT and "${" not in view.css_template
