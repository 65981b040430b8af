"""The "Heads: switch off" tab (webapp/tabs/heads.py) draws what the library computes: heads named as the page names
them and parsed back within the model's range, the diagnostics view's kinds and measures (drawn in the page:
tests/test_browser_heads.py), importance as layers × heads heatmaps the page's clicks can read, the translation with
heads switched off marked token by token with the payload of its run; no event of the tab on a translation; and its
handlers refuse what is not a head of the model, in words."""

import html
import json
import re
from dataclasses import replace
from pathlib import Path

import gradio as gr
import numpy as np
import pytest

from helpers import tiny_config
from interpretability import inspect
from interpretability.ablation import ablated, every_head, head_grid
from interpretability.diagnostics import head_diagnostics
from web_helpers import changed_indices, chips, mounted, plain, served_translator  # noqa: F401 (fixture: served)
from webapp.attention_kinds import ATTENTION_KINDS
from webapp.payload import map_json
from webapp.tabs import heads
from webapp.tokens import output_tokens

SENTENCE = "I see the cat."
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def inspection(translator):
    return inspect(translator, SENTENCE)


@pytest.fixture(scope="module")
def grid(translator):
    return head_grid(translator.model.cfg)


# --- Head names ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cfg", [tiny_config(), tiny_config(n_heads=4, n_encoder_layers=1)])
def test_every_head_name_parses_back_to_its_head(cfg):
    for kind, layer, head in every_head(cfg):
        name = heads.head_name(kind, layer, head)
        assert re.fullmatch(rf"{kind} L{layer + 1} H{head + 1}", name)  # 1-based, like the radios
        assert heads.parse_head_name(name, head_grid(cfg)) == (kind, layer, head)
    assert heads.parse_head_name("  cross L2 H1 ", head_grid(cfg)) == ("cross", 1, 0)


@pytest.mark.parametrize(
    "name",
    [
        "cross L1H1",
        "cross 1 1",
        "Cross L1 H1",
        "attention L1 H1",
        "cross L1 H",
        "",
        "cross L-1 H1",
        None,
        "cross L1 H1, decoder L1 H1",
    ],
)
def test_a_malformed_head_name_is_refused_with_the_format(name):
    with pytest.raises(ValueError, match=r"is not a head: write it as '<kind> L<layer> H<head>'.*cross L2 H3"):
        heads.parse_head_name(name, head_grid(tiny_config()))


@pytest.mark.parametrize(
    "name, kind_range",
    [
        ("encoder L3 H1", "encoder heads are L1..L2 H1..H2"),  # the decoder has 3 layers, the encoder 2
        ("cross L4 H1", "cross heads are L1..L3 H1..H2"),
        ("decoder L1 H3", "decoder heads are L1..L3 H1..H2"),
        ("cross L0 H1", "cross heads are L1..L3 H1..H2"),  # 1-based: there is no layer 0
        ("encoder L1 H0", "encoder heads are L1..L2 H1..H2"),
    ],
)
def test_a_head_outside_the_model_is_refused_with_its_range(name, kind_range):
    with pytest.raises(ValueError, match=rf"is not a head of this model: its {kind_range}"):
        heads.parse_head_name(name, head_grid(tiny_config()))
    assert heads.parse_head_name("decoder L3 H2", head_grid(tiny_config())) == ("decoder", 2, 1)


def test_head_choices_cover_every_head_once():
    cfg = tiny_config()
    for kind, (n_layers, n_heads) in head_grid(cfg).items():
        choices = heads.head_choices(kind, n_layers, n_heads)
        values = [value for _, value in choices]
        assert len(values) == len(set(values)) == n_layers * n_heads
        assert {heads.parse_head_name(v, head_grid(cfg)) for v in values} == {
            h for h in every_head(cfg) if h[0] == kind
        }
        for label, value in choices:  # the label is the name without its kind (heads.js finds its box by the value)
            assert value == f"{kind} {label}"


# --- The views drawn in the page ----------------------------------------------------------------------------------


def test_the_diagnostics_view_names_every_kind_and_measure_for_its_script(inspection):
    setup = heads.diagnostics_setup()
    kinds, measures = json.loads(json.dumps(setup["kinds"])), json.loads(json.dumps(setup["measures"]))  # as sent
    assert kinds == [[kind, spec.title] for kind, spec in ATTENTION_KINDS.items()]
    assert measures == [list(item) for item in heads.MEASURES.items()]
    assert set(heads.MEASURES) <= set(vars(head_diagnostics(inspection)["cross"]))  # payload.diagnostics' names


def test_no_event_of_the_tab_runs_on_a_translation(served):
    """The tab's only Python event is the switch-off button's: its views draw each translation in the page."""
    with gr.Blocks() as demo:
        text = gr.Textbox()
        controls = [gr.Radio(["greedy"]), gr.Slider(), gr.Slider(), gr.Slider(), gr.Number()]
        heads.build(served, text, controls)
    triggers = [(demo.blocks[block_id].elem_id, name) for fn in demo.fns.values() for block_id, name in fn.targets]
    assert triggers == [("ablate", "click")]
    for view_id in ("head-diagnostics", "ablation-result"):
        view = next(b for b in demo.blocks.values() if b.elem_id == view_id)
        assert mounted(view) == (ROOT / "webapp" / "tabs" / "heads.js", [])  # both views: the one module
        assert ".step-controls" in view.css_template  # the step panel's look, with the module heads.js imports
    assert "plotly" not in (ROOT / "webapp" / "tabs" / "heads.js").read_text(encoding="utf-8")


# --- Head importance -----------------------------------------------------------------------------------------------


def importance_of(grid, bleu=30.0):
    """A head_importance.json-like dict for `grid` with made-up drops, a different one per head, -6.0 the
    largest in size."""
    drop, value = {}, -2.5
    for kind, (n_layers, n_heads) in grid.items():
        drop[kind] = []
        for _ in range(n_layers):
            drop[kind].append([value + h * 0.75 for h in range(n_heads)])
            value += 0.5
    drop["cross"][-1][-1] = -6.0  # the largest in size: a head the translation is better without
    return {"data": "dev", "n": 40, "decoding": "greedy", "bleu": bleu, "drop": drop}


@pytest.mark.parametrize("cfg", ["translator", tiny_config()])
def test_importance_data_has_a_map_per_kind_on_one_symmetric_scale(translator, cfg):
    grid = head_grid(translator.model.cfg if cfg == "translator" else cfg)
    importance = importance_of(grid)
    data = json.loads(json.dumps(heads.importance_data(importance)))  # as the page reads it
    assert [kind for kind, _, _ in data["kinds"]] == list(ATTENTION_KINDS)  # head_importance.js ticks #off-<kind>
    assert data["limit"] == 6.0 and data["bleu"] == 30.0  # the scale: -6..6, centred on 0
    for kind, title, drop in data["kinds"]:
        assert title == ATTENTION_KINDS[kind].title
        assert np.array(drop).shape == grid[kind] and np.allclose(drop, importance["drop"][kind])
        labels = {label for label, _ in heads.head_choices(kind, *grid[kind])}
        assert {
            f"L{layer} H{head}" for layer in range(1, grid[kind][0] + 1) for head in range(1, grid[kind][1] + 1)
        } == labels  # a click finds its checkbox
    script = (ROOT / "webapp" / "tabs" / "head_importance.js").read_text(encoding="utf-8")
    assert '#off-${kind} input[type="checkbox"][name="${kind} L${cell.row + 1} H${cell.col + 1}"]' in script


def test_importance_data_of_no_drop_keeps_a_range():
    importance = importance_of(head_grid(tiny_config()))
    importance["drop"] = {kind: np.zeros_like(table).tolist() for kind, table in importance["drop"].items()}
    assert heads.importance_data(importance)["limit"] == 1.0


# --- Heads switched off --------------------------------------------------------------------------------------------


def with_output(inspection, tokens, translation):
    """`inspection` as if the decoder had written `tokens` (then </s>)."""
    return replace(inspection, target_tokens=["<s>", *tokens], translation=translation)


def test_ablation_marks_exactly_the_changed_tokens(inspection):
    normal = with_output(inspection, ["▁io", "▁vedo", "▁il", "▁gatto", "."], "io vedo il gatto.")
    off = with_output(inspection, ["▁io", "▁amo", "▁il", "▁gatto", "▁nero", "."], "io amo il gatto nero.")
    page = heads.ablation_html(normal, off, ["cross L1 H2", "encoder L1 H1"])
    _, before, after = page.split('<div class="chips">')
    assert [token for token, _ in chips(before)] == output_tokens(normal)
    assert [token for token, _ in chips(after)] == output_tokens(off)
    assert changed_indices(before) == {1} and changed_indices(after) == {1, 4}  # ▁vedo -> ▁amo, ▁nero added
    assert "1 of the 6 normal tokens and 2 of the 7 with the heads off differ (marked)." in page
    assert "Heads switched off:</b> cross L1 H2, encoder L1 H1." in page
    assert "io vedo il gatto." in page and "io amo il gatto nero." in page


def test_ablation_of_a_shorter_translation_marks_the_removed_tokens(inspection):
    normal = with_output(inspection, ["▁io", "▁vedo", "▁il", "▁gatto", "."], "io vedo il gatto.")
    off = with_output(inspection, ["▁io", "."], "io.")
    page = heads.ablation_html(normal, off, ["decoder L1 H1"])
    _, before, after = page.split('<div class="chips">')
    assert changed_indices(before) == {1, 2, 3} and changed_indices(after) == set()
    assert "3 of the 6 normal tokens and 0 of the 3 with the heads off differ" in page  # not "0 changed"


def test_ablation_of_a_token_replaced_is_a_change(inspection):
    normal = with_output(inspection, ["▁io", "▁vedo", "▁il", "▁gatto", "."], "io vedo il gatto.")
    off = with_output(inspection, ["▁io", "▁vedo", "▁il", "▁cane", "."], "io vedo il cane.")  # as long
    page = heads.ablation_html(normal, off, ["cross L1 H1"])
    assert "did not change" not in page and "1 of the 6 normal tokens and 1 of the 6" in page
    _, before, after = page.split('<div class="chips">')
    assert changed_indices(before) == changed_indices(after) == {3}


def test_ablation_escapes_translations_and_names(inspection):
    normal = with_output(inspection, ["<b>", "."], "<b>.")
    off = with_output(inspection, ["<script>", "."], "<script>alert(1)</script>")
    page = heads.ablation_html(normal, off, ["<i>"])
    assert "<script>" not in page and "<b>." not in page and "<i>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;i&gt;" in page
    assert [token for token, _ in chips(page)] == ["<b>", ".", "</s>", "<script>", ".", "</s>"]


def test_no_change_is_said_and_nothing_marked(inspection):
    page = heads.ablation_html(inspection, inspection, [])
    assert "The translation did not change." in page and "Heads switched off:</b> none." in page
    assert chips(page) and not any(changed for _, changed in chips(page))


def test_switching_every_head_off_is_reported_as_marked(translator, inspection):
    every = every_head(translator.model.cfg)
    off = inspect(ablated(translator, every), SENTENCE)
    names = [heads.head_name(*h) for h in every]
    page = heads.ablation_html(inspection, off, names)
    _, before, after = page.split('<div class="chips">')
    if off.target_tokens == inspection.target_tokens:
        assert "did not change" in page and not changed_indices(page)
    else:
        assert (
            f"{len(changed_indices(before))} of the {len(output_tokens(inspection))} normal tokens and "
            f"{len(changed_indices(after))} of the {len(output_tokens(off))} with the heads off"
        ) in page
        assert changed_indices(page)
    assert html.escape(", ".join(names)) in page


# --- Handlers ------------------------------------------------------------------------------------------------------


def test_switch_heads_off_translates_both_ways(served, translator):
    answer = heads.switch_heads_off(served, SENTENCE, "greedy", 4, 1.0, 0, 0, [], [], ["cross L1 H1"])
    off = ablated(translator, [("cross", 0, 0)])
    page = answer["comparison"]
    assert "Heads switched off:</b> cross L1 H1." in page and f"<b>Normal:</b> {translator.translate(SENTENCE)}" in page
    assert answer["heads"] == ["cross L1 H1"]
    payload = answer["payload"]  # the run with the heads off, for its step panel in the page
    assert payload["translation"] == off.translate(SENTENCE) and payload["decoding"] == "greedy"
    assert payload["target_tokens"] == inspect(off, SENTENCE).target_tokens
    assert len(payload["candidates"]) == len(payload["target_tokens"])
    assert payload["map"] == map_json(translator.tokenizer, inspect(off, SENTENCE).internals)  # the heads-off pass's
    again = heads.switch_heads_off(served, SENTENCE, "greedy", 4, 1.0, 0, 0, [], [], ["cross L1 H1"])
    assert again["answer"] != answer["answer"]  # a new value each time: the page draws every answer
    empty = heads.switch_heads_off(served, "  ", "greedy", 4, 1.0, 0, 0, [], [], [])
    assert empty["payload"] is None and "Type an English sentence" in empty["comparison"]
    joined = heads.switch_heads_off(served, "I see\nthe cat.", "greedy", 4, 1.0, 0, 0, [], [], [])
    assert f"<b>Normal:</b> {translator.translate(SENTENCE)}" in joined["comparison"]  # its lines read as one


def test_before_a_switch_off_the_result_says_what_to_do():
    """Before any switch-off (and, in the page, after a new translation) a sentence says what to do; no steps."""
    message = heads.result_setup()["not_yet"]
    words = " ".join(plain(message).split())
    assert "Tick one or more heads above" in words and "Translate with these heads switched off" in words
    template = (ROOT / "webapp" / "tabs" / "heads.js").read_text(encoding="utf-8")  # the view's markup
    assert '<div class="heads-off-message">${setup.not_yet}</div>' in template
    assert 'id="ablation-steps" hidden' in template


def test_a_head_the_model_lacks_is_refused_in_words(served):
    with pytest.raises(gr.Error, match="its cross heads are L1..L1 H1..H2"):
        heads.chosen_heads(served, ["cross L1 H9"])
    with pytest.raises(gr.Error, match="is not a head"):
        heads.chosen_heads(served, ["cross layer 1"])
