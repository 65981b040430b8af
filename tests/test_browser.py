"""The app in a real browser: headless Chromium (Debian's /usr/bin/chromium) driven by Playwright. It types a
sentence and sees the Italian text and the attention view drawn in the page, with a cell's numbers on hover; clicks
in the views are answered in the page; Enter translates and Shift+Enter starts a new line, whose lines are translated
as one text; the beam width is shown and active under beam search only; controls clicked faster than the server
answers leave the views matching the controls; a kind of attention with fewer layers lowers the layer (never an error);
a new sentence resets the step view; a query token clicked in "Inside one head" shows its bars from score to weight.
The experiments: heads ticked and switched off (and forgotten on a new translation), a head of the diagnostics clicked
opens it in the Attention tab, one of the importance heatmap ticks its box; sampling controls shown and active under
sampling only, a sampled translation as the library's; the beam under beam search; gradient attribution drawn when its
panel opens. For a classroom: on a projector (1024×768) the first view is on the first screen, text contrast is at
least 4.5:1, each group of choices is one Tab stop with the arrow keys moving within it."""

import contextlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from browser_helpers import (
    WAIT,
    choose,
    choose_decoding,
    click_cell,
    click_middle,
    expect,
    hover_until_labelled,
    no_error_shown,
    open_app,
    open_tab,
    option,
    title,
    translate,
    wait_until_clickable,
)
from test_app import start_app

from interpretability import head_details, inspect
from webapp.tokens import decoding_steps, step_tokens


@pytest.fixture(scope="module")
def translator(deep_translator):
    return deep_translator


def test_translate_in_the_browser(page, translator, tmp_path):
    """The heatmap is drawn in the page from the numbers: its labels are the tokens, and hovering a cell names
    the query, the key and the weight."""
    sentence = "they want the book."
    translate(page, sentence, translator.translate(sentence))
    expect(page.locator(".chip").filter(has_text="▁book")).to_have_count(1)
    heatmap = page.locator("#attention-heatmap")
    expect(heatmap.locator(".xtick text").filter(has_text="▁book")).to_have_count(1, timeout=WAIT)
    expect(title(page, "attention-heatmap")).to_have_text("Encoder–decoder cross-attention · layer 1 · mean over heads")
    hover_until_labelled(page, heatmap)
    expect(heatmap.locator(".hovertext")).to_contain_text("weight")
    expect(page.locator("#attention-overview .gtitle")).to_contain_text("all layers × heads")
    screenshot = Path(os.environ.get("APP_SCREENSHOT", tmp_path / "app.png"))
    page.screenshot(path=screenshot, full_page=True)
    assert screenshot.stat().st_size > 10_000


def test_clicks_in_the_views_are_answered_in_the_browser(page):
    """A heatmap cell outlines its row and column, a token label its row or column; an overview cell (layer 2,
    head 2) is chosen and drawn."""
    outlines = page.locator("#attention-heatmap .shapelayer path")
    click_middle(page, page.locator("#attention-heatmap .nsewdrag").first)
    expect(outlines).to_have_count(2, timeout=10_000)
    page.wait_for_timeout(400)  # apart: plotly takes two clicks within 300 ms for a double-click
    click_middle(page, page.locator("#attention-heatmap .nsewdrag").first)  # the same cell again: cleared
    expect(outlines).to_have_count(0, timeout=10_000)
    for axis in ("ytick", "xtick"):  # a token label: its row (query) or column (key) alone, again to clear
        label = page.locator(f"#attention-heatmap .{axis} text").first
        for count in (1, 0):
            box = label.bounding_box()
            page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            expect(outlines).to_have_count(count, timeout=10_000)
    click_middle(page, page.locator('#attention-overview .nsewdrag[data-subplot="x4y4"]'))
    expect(title(page, "attention-heatmap")).to_have_text("Encoder–decoder cross-attention · layer 2 · head 2",
                                                          timeout=WAIT)
    expect(option(page, "layer", "2")).to_have_class(re.compile(r"\bselected\b"))


def test_hovering_a_query_in_the_lines_view_lights_up_its_lines(page):
    choose(page, "style", "lines")
    expect(title(page, "attention-heatmap")).to_contain_text("lines as opaque as their weight", timeout=WAIT)
    lit = page.locator('#attention-heatmap .scatterlayer path.js-line[style*="rgb(255, 159, 67)"]')
    expect(lit).to_have_count(0)
    plot = page.locator("#attention-heatmap .js-plotly-plot")
    plot.evaluate("e => e.scrollIntoView({block: 'center'})")
    x, y = plot.evaluate("""gd => { const r = gd.getBoundingClientRect(), l = gd._fullLayout;  // query 1 (x 0, y 1)
        return [r.x + l.xaxis._offset + l.xaxis.l2p(0), r.y + l.yaxis._offset + l.yaxis.l2p(1)]; }""")
    page.mouse.move(x + 30, y)
    page.mouse.move(x, y, steps=5)
    expect(lit.first).to_be_attached(timeout=10_000)
    page.mouse.move(x + 300, y + 300, steps=5)
    expect(lit).to_have_count(0, timeout=10_000)


def test_enter_translates_and_shift_enter_starts_a_new_line(page, translator):
    box = page.locator("#english textarea")
    box.fill("I see")
    box.press("Shift+Enter")
    box.type("the cat.")
    assert box.input_value() == "I see\nthe cat."
    box.fill("we love the dog.")
    box.press("Enter")
    expect(page.locator("#italian textarea")).to_have_value(translator.translate("we love the dog."), timeout=WAIT)


def test_beam_width_is_shown_and_active_under_beam_search_only(page):
    """The decoding settings are folded away, their title naming the decoding; the beam width shows under beam
    search only (a control that does nothing is not shown)."""
    settings = page.locator("#decoding-settings .label-wrap")
    expect(settings).to_contain_text("Decoding: Greedy")
    width = page.locator("#beam input[type=range]")
    expect(width).to_be_hidden()
    choose_decoding(page, "Beam search")
    expect(width).to_be_visible(timeout=WAIT)
    expect(width).to_be_enabled()
    expect(settings).to_contain_text("Decoding: Beam search")
    choose(page, "decoding", "Greedy")
    expect(width).to_be_hidden(timeout=WAIT)


FAST_CLICKS = {  # clicks -> the title they must end with
    "the classroom's": ([("layer", "2"), ("head", "1"), ("kind", "Encoder–decoder cross-attention"), ("layer", "3"),
                         ("head", "mean")], "Encoder–decoder cross-attention · layer 3 · mean over heads"),
    "back to a shallower kind": ([("kind", "Encoder–decoder cross-attention"), ("layer", "3"),
                                  ("kind", "Encoder self-attention"), ("head", "2"), ("layer", "1"),
                                  ("head", "all (grid)")], "Encoder self-attention · layer 1 · all heads"),
}


@pytest.mark.parametrize("pause_ms", [250, 0])
@pytest.mark.parametrize("case", FAST_CLICKS)
def test_fast_clicks_leave_the_view_matching_the_controls(page, case, pause_ms):
    """Clicks 250 ms apart (and back to back) faster than the server answers: the view ends as the controls say."""
    clicks, final = FAST_CLICKS[case]
    choose(page, "kind", "Encoder self-attention")
    expect(title(page, "attention-heatmap")).to_contain_text("Encoder self-attention", timeout=WAIT)
    for radio, name in clicks:
        choose(page, radio, name)
        page.wait_for_timeout(pause_ms)
    heading = re.compile(rf"^{re.escape(final)}(\u200b.*)?$")  # the first line (plotly shows <br> as U+200B)
    expect(title(page, "attention-heatmap")).to_have_text(heading, timeout=WAIT)
    page.wait_for_timeout(1500)  # a late answer would land now
    expect(title(page, "attention-heatmap")).to_have_text(heading)
    kind, rest = final.split(" · ", 1)
    layer, head = rest.split(" · ")
    for radio, name in [("kind", kind), ("layer", layer.split()[1]), ("head", {"mean over heads": "mean",
                                                                               "all heads": "all (grid)"}.get(head))]:
        expect(option(page, radio, name)).to_have_class(re.compile(r"\bselected\b"))


def test_five_quick_next_clicks(page, translator):
    sentence = "I see the cat."
    translate(page, sentence, translator.translate(sentence))
    page.get_by_role("tab", name="Decoding step by step").click()
    expect(title(page, "step-candidates")).to_contain_text("Step 1:", timeout=WAIT)
    steps = len(inspect(translator, sentence).target_tokens)
    assert steps >= 6
    for _ in range(5):
        page.get_by_role("button", name="Next ▶").click()
    expect(page.locator("#step input[type=number]")).to_have_value("6")
    expect(title(page, "step-candidates")).to_contain_text("Step 6:", timeout=WAIT)
    expect(title(page, "step-attention")).to_contain_text("Step 6:", timeout=WAIT)
    page.wait_for_timeout(1500)
    expect(title(page, "step-candidates")).to_contain_text("Step 6:")


def test_inside_one_head_follows_the_clicked_query_token(page, translator):
    """Click a query token: its bars from score to weight, a bar's numbers on hover; decoder self-attention hides
    the keys after the query."""
    sentence = "we want the water."
    translate(page, sentence, translator.translate(sentence))
    inspection = inspect(translator, sentence)
    page.get_by_role("tab", name="Inside one head").click()
    tokens = page.locator("#query label")
    expect(tokens).to_have_text(inspection.target_tokens, timeout=WAIT)  # cross-attention: the queries are Italian
    tokens.nth(2).click()
    scores = page.locator("#head-scores")
    expect(title(page, "head-scores")).to_contain_text(f"query {inspection.target_tokens[2]}", timeout=WAIT)
    expect(scores.locator(".ytick text")).to_have_text(inspection.source_tokens)
    weights = head_details(translator, inspection, "cross", 0, 0, 2).weights
    bars = scores.locator(".bars").nth(2).locator("path")  # the third bar panel: the softmax weights
    expect(bars).to_have_count(len(weights))
    top = bars.nth(int(weights.argmax()))
    top.evaluate("e => e.scrollIntoView({block: 'center'})")
    box = top.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)  # plotly answers the mouse, not the bar
    expect(scores.locator(".hovertext")).to_contain_text(f"weight {weights.max():.3f}", timeout=10_000)
    expect(page.locator("#head-formula")).to_contain_text("softmax(q·Kᵀ / √d_k + M) · V")
    choose(page, "head-kind", "Decoder self-attention")
    hidden = len(inspection.target_tokens) - 3  # the keys after the third position
    expect(scores.locator(".textpoint").get_by_text("−∞", exact=True)).to_have_count(hidden, timeout=WAIT)
    expect(title(page, "head-scores")).to_contain_text("Decoder self-attention")
    other = "they love the city."  # translated with the tab in view: its tokens replace the old ones
    translate(page, other, translator.translate(other))
    expect(tokens).to_have_text(inspect(translator, other).target_tokens, timeout=WAIT)


def test_switching_a_head_off_updates_the_translation_panel(page, translator):
    """Tick heads in the heads tab and translate again: the panel shows the heads, both translations (the library's
    normal and ablated ones), and the step view of the new run. Before any switch-off, a sentence says what to do (no
    empty slider, no blank plots); a new translation forgets the run, which was another sentence's."""
    from interpretability.ablation import ablated

    sentence = "I see the cat."
    translate(page, sentence, translator.translate(sentence))
    page.get_by_role("tab", name="Heads: switch off").click()
    expect(title(page, "head-diagnostics")).to_contain_text("Encoder–decoder cross-attention", timeout=WAIT)
    result, steps = page.locator("#ablation-result"), page.locator("#ablation-steps")
    expect(result).to_contain_text("No heads switched off yet for this sentence. Tick one or more heads")
    expect(steps).to_be_hidden()
    expect(page.locator("#ablation-step input[type=range]")).to_have_count(0)
    heads = [("cross", layer, head) for layer in range(3) for head in range(2)]  # every cross head: the source unseen
    for _, layer, head in heads:
        page.locator("#off-cross").get_by_text(f"L{layer + 1} H{head + 1}", exact=True).click()
    page.locator("#ablate").click()
    expect(result).to_contain_text("Heads switched off: cross L1 H1, cross L1 H2", timeout=WAIT)
    expect(result).to_contain_text(f"Normal: {translator.translate(sentence)}")
    expect(result).to_contain_text(f"With the heads off: {ablated(translator, heads).translate(sentence)}")
    expect(steps).to_be_visible()
    expect(title(page, "ablation-step-candidates")).to_contain_text("Step 1:", timeout=WAIT)
    other = "we love the dog."
    translate(page, other, translator.translate(other))
    expect(result).to_contain_text("No heads switched off yet for this sentence.", timeout=WAIT)
    expect(result).not_to_contain_text("Normal:")
    expect(steps).to_be_hidden()


def test_sampling_controls_are_active_under_sampling_only_and_sample_as_the_library(page, translator):
    """Temperature, top-k and seed are set under sampling only; with them set, the page's translation is the library's
    sampled one, and the step view draws the next token's distribution at that temperature."""
    from transformer import Sampling

    controls = [page.locator("#temperature input[type=range]"), page.locator("#top-k-sampling input[type=range]"),
                page.locator("#seed input")]
    for control in controls:
        expect(control).to_be_hidden()
    choose_decoding(page, "Beam search")
    expect(page.locator("#beam input[type=range]")).to_be_enabled(timeout=WAIT)
    for control in controls:
        expect(control).to_be_hidden()
    choose(page, "decoding", "Sampling")
    for control in controls:
        expect(control).to_be_visible(timeout=WAIT)
        expect(control).to_be_enabled()
    expect(page.locator("#beam input[type=range]")).to_be_hidden()
    choose(page, "decoding", "Greedy")
    for control in controls:
        expect(control).to_be_hidden(timeout=WAIT)

    sentence = "I see the cat."
    greedy = translator.translate(sentence)
    temperature, top_k = 1.5, 5
    # A seed whose draw differs from the greedy one and from the default seed's (0): the page's answer shows that
    # the settings were used.
    draw = lambda seed: translator.translate(sentence, sampling=Sampling(temperature, top_k, seed))
    seed = next((s for s in range(1, 50) if draw(s) not in (greedy, draw(0))), 1)
    choose_decoding(page, "Sampling")
    expect(controls[0]).to_be_enabled(timeout=WAIT)
    for elem_id, value in [("temperature", temperature), ("top-k-sampling", top_k)]:
        box = page.locator(f"#{elem_id} input[type=number]")
        box.fill(str(value))
        box.press("Tab")
        expect(page.locator(f"#{elem_id} input[type=range]")).to_have_value(str(value))
    page.locator("#seed input").fill(str(seed))
    page.locator("#seed input").press("Tab")
    translate(page, sentence, draw(seed))
    page.get_by_role("tab", name="Decoding step by step").click()
    expect(title(page, "step-candidates")).to_contain_text(
        f"Step 1: the next token drawn at temperature {temperature:g}, top-{top_k}", timeout=WAIT)


def test_a_head_clicked_in_the_diagnostics_opens_in_the_attention_tab(page):
    """Encoder self-attention's diagnostics, layer 2 head 1 clicked: the Attention tab shows that kind, layer and head,
    its radios chosen. This model has no head_importance.json: the tab says how to measure it instead."""
    page.get_by_role("tab", name="Heads: switch off").click()
    expect(page.get_by_text("How much each head matters has not been measured for this model.")).to_be_visible()
    expect(page.locator("#head-importance")).to_have_count(0)
    expect(title(page, "head-diagnostics")).to_contain_text("Encoder–decoder cross-attention", timeout=WAIT)
    choose(page, "diagnosed-kind", "Encoder self-attention")
    expect(title(page, "head-diagnostics")).to_contain_text("Encoder self-attention:", timeout=WAIT)
    wait_until_clickable(page, "head-diagnostics")
    click_cell(page, page.locator("#head-diagnostics .nsewdrag").first, 1, 0, 2, 2)  # layer 2 of 2, head 1 of 2
    expect(page.get_by_role("tab", name="Attention", exact=True)).to_have_attribute("aria-selected", "true",
                                                                                    timeout=10_000)
    expect(title(page, "attention-heatmap")).to_have_text("Encoder self-attention · layer 2 · head 1", timeout=WAIT)
    for radio, name in [("kind", "Encoder self-attention"), ("layer", "2"), ("head", "1")]:
        expect(option(page, radio, name)).to_have_class(re.compile(r"\bselected\b"))


def test_beam_search_shows_the_beam_step_by_step(page, translator):
    """Under beam search the step view shows the beam, whose winner is the library's beam-search translation; under
    greedy decoding it has no beam."""
    sentence = "we love the dog."
    page.get_by_role("tab", name="Decoding step by step").click()
    expect(title(page, "step-candidates")).to_contain_text("Step 1:", timeout=WAIT)
    beam_view = page.locator("#step-beam")
    expect(beam_view).to_be_hidden()
    choose_decoding(page, "Beam search")
    expect(page.locator("#beam input[type=range]")).to_be_enabled(timeout=WAIT)
    expected = translator.translate(sentence, beam=4)
    translate(page, sentence, expected)
    expect(beam_view).to_be_visible(timeout=WAIT)
    expect(beam_view).to_contain_text(re.compile(r"Winner \(best score ÷ length penalty, α = [\d.]+\): "
                                                 + re.escape(expected) + " — "), timeout=WAIT)
    expect(beam_view).to_contain_text("Beam after step 1 (")
    page.get_by_role("button", name="Next ▶").click()
    expect(beam_view).to_contain_text("Beam after step 2 (", timeout=WAIT)


def test_a_new_sentence_resets_the_step_view_without_an_error(page, translator):
    """At step 6 of a long sentence, a shorter one translated: no error pop-up ("Value 6 is greater than maximum
    value 4"), and the panel and the slider show a step of the new sentence, never one of the old."""
    long, short = "I see the cat.", next(s for s in ["we.", "the cat.", "I.", "cat.", "."]
                                          if decoding_steps(inspect(translator, s)) < 6)
    translate(page, long, translator.translate(long))
    page.get_by_role("tab", name="Decoding step by step").click()
    expect(title(page, "step-candidates")).to_contain_text("Step 1:", timeout=WAIT)
    for _ in range(5):
        page.get_by_role("button", name="Next ▶").click()
    expect(title(page, "step-candidates")).to_contain_text("Step 6:", timeout=WAIT)
    page.locator("#attribution-panel").get_by_text("Attention is not explanation: compare").click()  # reads the step
    expect(title(page, "attribution")).to_contain_text("Step 6:", timeout=WAIT)
    translate(page, short, translator.translate(short))
    inspection = inspect(translator, short)
    first = f"Step 1: cross-attention while choosing {step_tokens(inspection, 1)[1]}"
    expect(title(page, "step-attention")).to_have_text(first, timeout=WAIT)
    expect(title(page, "step-candidates")).to_contain_text("Step 1:")
    expect(page.locator("#step input[type=number]")).to_have_value("1")
    expect(page.locator("#step input[type=range]")).to_have_attribute("max", str(max(decoding_steps(inspection), 2)))
    expect(title(page, "attribution")).to_contain_text("Step 1:", timeout=WAIT)
    no_error_shown(page)
    expect(title(page, "step-attention")).to_have_text(first)


@pytest.mark.parametrize("tab, kind, layer, figure", [
    ("Attention", "kind", "layer", "attention-heatmap"),
    ("Inside one head", "head-kind", "head-layer", "head-scores"),
])
def test_a_kind_with_fewer_layers_lowers_the_layer_and_never_errs(page, tab, kind, layer, figure):
    """At the last layer of a deep kind (cross-attention: 3 layers), a shallower one (the encoder: 2) chosen: no error
    pop-up, the layer radio on the encoder's last layer and the figure drawing it; and with the old last layer clicked
    within 30 ms of the kind change (its choice still on the page), the radio and the figure still name one layer."""
    page.get_by_role("tab", name=tab).click()

    def shown_layer():
        """The layer the radio says and the one the figure draws, once they agree (or what they say after WAIT)."""
        selected = page.locator(f"#{layer} label.selected")
        expect(selected).to_have_count(1, timeout=WAIT)
        with contextlib.suppress(AssertionError):
            expect(title(page, figure)).to_contain_text(f"layer {selected.inner_text().strip()} ·", timeout=WAIT)
        return selected.inner_text().strip(), re.search(r"layer (\d+)", title(page, figure).text_content()).group(1)

    for fast in (False, True):
        choose(page, kind, "Encoder–decoder cross-attention")
        choose(page, layer, "3")
        expect(title(page, figure)).to_contain_text("Encoder–decoder cross-attention · layer 3 ·", timeout=WAIT)
        third = option(page, layer, "3").bounding_box()
        choose(page, kind, "Encoder self-attention")
        if fast:
            page.wait_for_timeout(30)
            page.mouse.click(third["x"] + third["width"] / 2, third["y"] + third["height"] / 2)
        expect(title(page, figure)).to_contain_text("Encoder self-attention · layer", timeout=WAIT)
        no_error_shown(page)
        assert shown_layer() == ("2", "2")


def test_lines_typed_with_shift_enter_are_translated_as_one_text(page, translator):
    """Shift+Enter starts a new line; the lines reach the model as one text (a line break read as a space, never as
    the byte token <0x0A>), and the status line says they were joined."""
    box = page.locator("#english textarea")
    box.fill("I see")
    box.press("Shift+Enter")
    box.type("the cat.")
    assert box.input_value() == "I see\nthe cat."
    box.press("Enter")
    expect(page.locator("#italian textarea")).to_have_value(translator.translate("I see the cat."), timeout=WAIT)
    status = page.locator("#status")
    expect(status).to_contain_text("your 2 lines were joined into one text (each line break read as a space)")
    expect(status).not_to_contain_text("never learnt")  # no warning blaming emoji
    english = page.locator("#chips .chips").first.locator(".chip")
    expect(english).to_have_text(inspect(translator, "I see the cat.").source_tokens)
    assert not [t for t in english.all_inner_texts() if "0x0A" in t]


def test_opening_the_attribution_panel_draws_the_attribution(page):
    page.get_by_role("tab", name="Decoding step by step").click()
    expect(title(page, "step-candidates")).to_contain_text("Step 1:", timeout=WAIT)
    figure = title(page, "attribution")
    expect(figure).to_have_count(0)  # computed only once the panel is open
    page.locator("#attribution-panel").get_by_text("Attention is not explanation: compare").click()
    expect(figure).to_contain_text("Step 1:", timeout=WAIT)
    expect(figure).to_contain_text("Spearman")


# --- For a classroom: a projector, contrast, the keyboard ----------------------------------------------------------


def test_on_a_projector_the_first_view_is_on_the_first_screen(browser, translator, tmp_path):
    """At 1024×768, after Translate, the tab bar and the top of the attention heatmap are on the first screen, without
    scrolling (the decoding settings folded, one row of examples)."""
    page = browser.new_page(viewport={"width": 1024, "height": 768})
    try:
        page.goto(browser.app_url)
        expect(page.locator("#status")).to_contain_text("Translated in", timeout=WAIT)
        sentence = "we love the dog."
        translate(page, sentence, translator.translate(sentence))
        expect(title(page, "attention-heatmap")).to_contain_text("cross-attention", timeout=WAIT)
        page.evaluate("window.scrollTo(0, 0)")
        examples = page.locator("#actions .example")
        assert len({round(box["y"]) for box in (examples.nth(i).bounding_box() for i in range(examples.count()))}) == 1
        tabs = page.get_by_role("tab", name="Attention", exact=True).bounding_box()
        heatmap = page.locator("#attention-heatmap").bounding_box()
        assert tabs["y"] + tabs["height"] < 768 and heatmap["y"] < 768 - 60, (tabs, heatmap)  # its title and cells
        page.screenshot(path=tmp_path / "projector.png")
        example = "The cat is sleeping."  # an example clicked: put in the box and translated
        examples.filter(has_text=example).click()
        expect(page.locator("#english textarea")).to_have_value(example)
        expect(page.locator("#italian textarea")).to_have_value(translator.translate(example), timeout=WAIT)
    finally:
        page.close()


CONTRAST = """(selector) => {  // WCAG contrast of each visible element's text with what is behind it
  const rgba = (c) => { const v = c.match(/[\\d.]+/g).map(Number); return v.length > 3 ? v : [...v, 1]; };
  const over = (top, below) => [0, 1, 2].map((i) => top[i] * top[3] + below[i] * (1 - top[3])).concat(1);
  const behind = (e) => { const layers = [];
    for (let n = e; n; n = n.parentElement) {
      const c = rgba(getComputedStyle(n).backgroundColor);
      if (c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    return layers.reverse().reduce((below, c) => over(c, below), [255, 255, 255, 1]); };
  const channel = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  const luminance = (c) => c.slice(0, 3).map(channel).reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  return [...document.querySelectorAll(selector)].filter((e) => e.getClientRects().length).map((e) => {
    const background = behind(e), style = getComputedStyle(e), text = rgba(style.color);
    const [light, dark] = [luminance(over([...text.slice(0, 3), text[3] * Number(style.opacity)], background)),
                           luminance(background)].sort((a, b) => b - a);
    return [e.textContent.trim(), (light + 0.05) / (dark + 0.05)]; });
}"""


def test_text_contrast_is_at_least_4_5_to_1(page):
    """WCAG AA on the default (light) Soft theme: the label badges (were 3.6:1), the selected tab (4.3:1), the footer
    (2.4:1), white on the Translate button and on a chosen radio (4.47:1), the examples and the greyed special
    tokens."""
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    selectors = ['span[data-testid="block-info"]', '[role="tab"].selected', "footer a, footer button",
                 "#translate", "#attention-controls label.selected span", "#actions .example", ".chip.special",
                 "#decoding-settings .label-wrap span"]
    for selector in selectors:
        ratios = page.evaluate(CONTRAST, selector)
        assert ratios, f"nothing matches {selector}"
        low = [(text, round(ratio, 2)) for text, ratio in ratios if ratio < 4.5]
        assert not low, f"{selector}: {low}"


def test_each_group_of_choices_is_one_tab_stop_and_the_arrows_choose(page):
    """From the text box, Tab reaches the attention heatmap in at most 15 presses (37 when every radio choice was a
    stop of its own); in a radio group the arrow keys choose the next or previous choice, and the focus shows a
    ring."""
    expect(title(page, "attention-heatmap")).to_contain_text("cross-attention", timeout=WAIT)  # drawn: reachable
    page.locator("#english textarea").focus()
    stops = []  # where each press went: (the nearest id, the value or text)
    while len(stops) < 40 and not page.evaluate("() => !!document.activeElement.closest('#attention-heatmap')"):
        page.keyboard.press("Tab")
        stops.append(page.evaluate("() => { const e = document.activeElement; "
                                   "return [e.closest('[id]')?.id, (e.value || e.textContent || '').trim()]; }"))
    assert len(stops) <= 15, stops
    layers = page.locator("#layer input[type=radio]")
    expect(layers.nth(0)).to_have_attribute("tabindex", "0")
    expect(layers.nth(1)).to_have_attribute("tabindex", "-1")
    layers.nth(0).focus()
    page.keyboard.press("ArrowRight")
    expect(option(page, "layer", "2")).to_have_class(re.compile(r"\bselected\b"))
    expect(title(page, "attention-heatmap")).to_contain_text("· layer 2 ·", timeout=WAIT)
    assert page.evaluate("() => document.activeElement.value") == "2"
    expect(layers.nth(1)).to_have_attribute("tabindex", "0")
    expect(layers.nth(0)).to_have_attribute("tabindex", "-1")
    ring = page.evaluate("() => getComputedStyle(document.activeElement.closest('label')).outlineStyle")
    assert ring != "none"
    page.keyboard.press("ArrowLeft")
    expect(title(page, "attention-heatmap")).to_contain_text("· layer 1 ·", timeout=WAIT)
    page.keyboard.press("ArrowLeft")  # from the first, round to the last
    expect(title(page, "attention-heatmap")).to_contain_text("· layer 3 ·", timeout=WAIT)


def test_heads_to_switch_off_are_a_grid_one_row_per_layer(page):
    page.get_by_role("tab", name="Heads: switch off").click()
    boxes = {(layer, head): page.locator("#off-decoder").get_by_text(f"L{layer} H{head}", exact=True).bounding_box()
             for layer in (1, 2, 3) for head in (1, 2)}
    for layer in (1, 2, 3):
        assert round(boxes[layer, 1]["y"]) == round(boxes[layer, 2]["y"])  # a layer's heads on one row
        assert boxes[layer, 1]["x"] < boxes[layer, 2]["x"]
    for layer in (2, 3):
        assert boxes[layer, 1]["y"] > boxes[layer - 1, 1]["y"] + 10  # each layer below the one before
        assert round(boxes[layer, 1]["x"]) == round(boxes[1, 1]["x"])  # in columns


@pytest.mark.parametrize("width", [1024, 390])
def test_inside_one_head_numbers_stay_in_their_panels(browser, width):
    """At 1024 px and on a phone (390 px), each number of the bars from score to weight lies inside its own panel,
    clear of the token labels and of the next panel, and the four panel titles do not run into each other."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto(browser.app_url)
        expect(page.locator("#status")).to_contain_text("Translated in", timeout=WAIT)
        open_tab(page, "Inside one head")
        choose(page, "head-kind", "Decoder self-attention")  # some scores negative: their numbers right of zero
        expect(title(page, "head-scores")).to_contain_text("Decoder self-attention", timeout=WAIT)
        page.wait_for_timeout(500)
        panels = page.evaluate("""() => [...document.querySelectorAll('#head-scores .nsewdrag')].map((e) => {
            const r = e.getBoundingClientRect(); return [r.left, r.right]; })""")
        labels = page.evaluate("""() => Math.max(...[...document.querySelectorAll('#head-scores .ytick text')]
            .map((e) => e.getBoundingClientRect().right))""")
        numbers = page.evaluate("""() => [...document.querySelectorAll('#head-scores .textpoint text')]
            .filter((e) => /\\d\\./.test(e.textContent)).map((e) => {
              const r = e.getBoundingClientRect(); return [e.textContent, r.left, r.right]; })""")
        assert len(panels) == 4 and numbers
        for text, left, right in numbers:
            inside = [(a, b) for a, b in panels if a - 1 <= left and right <= b + 1]
            assert inside and left > labels, (text, left, right, panels)
        titles = page.evaluate("""() => [...document.querySelectorAll('#head-scores .annotation-text')].map((e) => {
            const r = e.getBoundingClientRect(); return [r.left, r.right]; })""")
        titles.sort()
        assert len(titles) == 4 and all(a[1] <= b[0] for a, b in zip(titles, titles[1:])), titles
    finally:
        page.close()


@pytest.fixture(scope="module")
def importance_app(deep_model_dir, tmp_path_factory):
    """A second app on a copy of the deep model with a head_importance.json (distinct drops: cells are told apart)."""
    from interpretability.ablation import head_grid
    from transformer import Translator

    model_dir = tmp_path_factory.mktemp("importance") / "model"
    shutil.copytree(deep_model_dir, model_dir)
    grid = head_grid(Translator.load(deep_model_dir).model.cfg)
    drop = {kind: [[round(0.5 * (layer * n_heads + head) - 1.0, 2) for head in range(n_heads)]
                   for layer in range(n_layers)] for kind, (n_layers, n_heads) in grid.items()}
    (model_dir / "head_importance.json").write_text(json.dumps({
        "data": "dev", "n": 40, "decoding": "greedy", "bleu": 50.0, "drop": drop,
        "command": "python -m training.head_importance --model model --data dev.tsv"}))
    with start_app(model_dir, MODEL_DTYPE="float32") as app:
        yield app.url, grid


def test_a_head_clicked_in_the_importance_heatmap_is_ticked(browser, importance_app):
    """A cell of the importance heatmap clicked ticks that head's box (clicked again, unticks it); the ticked heads
    are the ones switched off."""
    url, grid = importance_app
    page = open_app(browser, url)
    try:
        page.get_by_role("tab", name="Heads: switch off").click()
        expect(title(page, "head-importance")).to_contain_text("How much each head matters: dev BLEU 50.0",
                                                               timeout=WAIT)
        wait_until_clickable(page, "head-importance")
        subplots = {kind: page.locator(f'#head-importance .nsewdrag[data-subplot="{axes}"]')
                    for kind, axes in zip(grid, ["xy", "x2y2", "x3y3"])}  # one subplot per kind, in head_grid's order
        clicks = [("cross", 2, 1), ("encoder", 1, 0), ("cross", 2, 1), ("cross", 0, 1)]  # cross L3 H2 twice: unticked
        ticked = set()
        for kind, layer, head in clicks:
            click_cell(page, subplots[kind], layer, head, *grid[kind])
            ticked ^= {(kind, layer, head)}
            box = page.locator(f"#off-{kind}").get_by_label(f"L{layer + 1} H{head + 1}", exact=True)
            expect(box).to_be_checked(checked=(kind, layer, head) in ticked, timeout=10_000)
            page.wait_for_timeout(400)  # apart: plotly takes two clicks within 300 ms for a double-click
        assert ticked == {("encoder", 1, 0), ("cross", 0, 1)}
        for kind, (n_layers, n_heads) in grid.items():
            for layer in range(n_layers):
                for head in range(n_heads):
                    box = page.locator(f"#off-{kind}").get_by_label(f"L{layer + 1} H{head + 1}", exact=True)
                    expect(box).to_be_checked(checked=(kind, layer, head) in ticked, timeout=10_000)
        page.locator("#ablate").click()
        expect(page.locator("#ablation-result")).to_contain_text("Heads switched off: encoder L2 H1, cross L1 H2.",
                                                                 timeout=WAIT)
    finally:
        page.close()
