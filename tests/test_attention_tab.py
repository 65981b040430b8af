"""The "Attention" tab (webapp/tabs/attention.py): what remains in Python is the view's setup — one gr.HTML drawn in
the browser by attention.js (its markup too) from each translation's payload (tests/test_browser_attention.py drives
it) — with no Python event at all: every control is answered in the page."""

import re
from pathlib import Path

import gradio as gr

from web_helpers import mounted, served_translator, translator_in_each_precision  # noqa: F401
from webapp.attention_kinds import ATTENTION_KINDS
from webapp.page_script import MOUNT
from webapp.tabs import attention

SCRIPT = Path(attention.__file__).with_suffix(".js").read_text(encoding="utf-8")


def built(served):
    with gr.Blocks() as demo:
        view = attention.build(served)
    return demo, view


def test_the_tab_is_one_view_drawn_in_the_browser_with_no_python_event(served):
    demo, view = built(served)
    assert isinstance(view, gr.HTML) and view.elem_id == "attention-view"
    assert not demo.fns  # no event: nothing asks the server after the translation
    assert mounted(view) == (Path(attention.__file__).with_suffix(".js"), [])  # the tab's module, asking nothing
    assert view.html_template == MOUNT  # the markup is the script's: one place
    for elem_id in ("attention-controls", "attention-heatmap", "attention-overview"):  # other tests find them
        assert f'id="{elem_id}"' in SCRIPT
    assert "Figure (PNG)" in SCRIPT and "all layers and heads (JSON)" in SCRIPT


def test_the_page_knows_each_kinds_depth_before_a_translation(served):
    setup = built(served)[1].props["setup"]
    assert setup["depths"] == {kind: served.layers(kind) for kind in ATTENTION_KINDS}
    assert setup["heads"] == served.cfg.n_heads
    assert setup["titles"] == {kind: spec.title for kind, spec in ATTENTION_KINDS.items()}
    assert list(setup["titles"])[0] == "cross"  # the page's kind radio follows this order: cross-attention first


def test_the_template_is_safe_for_gradio_to_fill_in(served):
    """Gradio reads html_template and css_template as JS template strings and Handlebars templates: none of their
    markers (the markup is the script's, the CSS attention.css)."""
    view = built(served)[1]
    for marker in ("`", "${", "{{", "}}"):
        assert marker not in view.html_template and marker not in view.css_template


def test_help_text_names_rows_columns_and_what_the_mouse_does():
    help_html = re.search(r"const HELP = `(.*?)`;", SCRIPT, re.S).group(1)
    text = re.sub(r"<[^>]+>", "", help_html)
    assert "row is a query token" in text and "column a key token" in text
    assert "&lt;s&gt;" in help_html  # shown as <s>, not read as a tag
    assert "causal mask" in text and "token produced" in text and "lines" in text
    assert "zoom" not in text  # the canvas does not zoom


def test_the_script_answers_in_the_page():
    assert 'store.on("attention"' in SCRIPT  # the heads tab opens a head here, through the store
    assert 'store.on("translation"' in SCRIPT
    assert not re.search(r"\bserver\.\w+\(|fetch\(|XMLHttpRequest", SCRIPT)  # no request to the server
    assert "saveCanvas(" in SCRIPT and "saveJson(" in SCRIPT  # downloads made in the page
