"""The app in a real browser: headless Chromium (Debian's /usr/bin/chromium) driven by Playwright. It types a
sentence and sees the Italian text and the attention view drawn in the page, with a cell's numbers on hover; clicks
in the views are answered in the page; Enter translates and Shift+Enter starts a new line; the beam width is active
under beam search only; controls clicked faster than the server answers leave the views matching the controls; a query
token clicked in "Inside one head" shows its bars from score to weight."""

import json
import os
import re
from pathlib import Path

import pytest
from conftest import train_toy_model
from test_app import start_app

CHROMIUM = "/usr/bin/chromium"
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)
expect = sync_api.expect
WAIT = 60_000  # ms: a loaded CI machine answers slowly, which is not what is tested here


@pytest.fixture(scope="module")
def deep_model_dir(toy_corpus, tmp_path_factory):
    """The tiny config with 2 encoder and 3 decoder layers: layer radios that change with the kind of attention."""
    from training.configs import CONFIGS

    model, train = CONFIGS["tiny"]
    out = tmp_path_factory.mktemp("deep_run")
    config = out / "deep.json"
    config.write_text(json.dumps({"model": {**model, "n_encoder_layers": 2, "n_decoder_layers": 3}, "train": train}))
    return train_toy_model(toy_corpus, out, config)


@pytest.fixture(scope="module")
def translator(deep_model_dir):
    """The library's translator of the model the page runs, in the same precision."""
    from transformer import Translator

    return Translator.load(deep_model_dir)


@pytest.fixture(scope="module")
def browser(deep_model_dir):
    with start_app(deep_model_dir, MODEL_DTYPE="float32") as app, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        browser.app_url = app.url
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser):
    """A fresh page of the app, after the example it translates on load."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(browser.app_url)
    expect(page.locator("#status")).to_contain_text("Translated in", timeout=WAIT)
    yield page
    page.close()


def title(page, elem_id):
    return page.locator(f"#{elem_id} .gtitle").first


def option(page, radio_id, name):
    return page.locator(f'#{radio_id} label[data-testid="{name}-radio-label"]')


def choose(page, radio_id, name):
    option(page, radio_id, name).click()


def translate(page, sentence, expected):
    page.locator("#english textarea").fill(sentence)
    page.locator("#translate").click()
    expect(page.locator("#italian textarea")).to_have_value(expected, timeout=WAIT)


def middle(locator):
    """The middle of a plotly plot area, scrolled into view, in page coordinates (Playwright cannot hover or click
    the area itself: being transparent, it counts as invisible)."""
    locator.evaluate("e => e.scrollIntoView({block: 'center'})")
    box = locator.evaluate("e => { const r = e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; }")
    return box[0] + box[2] / 2, box[1] + box[3] / 2


def click_middle(page, locator):
    page.mouse.click(*middle(locator))


def test_translate_in_the_browser(page, translator, tmp_path):
    """The heatmap is drawn in the page from the numbers: its labels are the tokens, and hovering a cell names
    the query, the key and the weight."""
    sentence = "they want the book."
    translate(page, sentence, translator.translate(sentence))
    expect(page.locator(".chip").filter(has_text="▁book")).to_have_count(1)
    heatmap = page.locator("#attention-heatmap")
    expect(heatmap.locator(".xtick text").filter(has_text="▁book")).to_have_count(1, timeout=WAIT)
    expect(title(page, "attention-heatmap")).to_have_text("Encoder–decoder cross-attention · layer 1 · mean over heads")
    x, y = middle(heatmap.locator(".nsewdrag").first)
    page.mouse.move(x - 20, y - 20)
    page.mouse.move(x, y, steps=5)  # onto the middle cell
    expect(heatmap.locator(".hovertext")).to_contain_text("weight", timeout=10_000)
    expect(page.locator("#attention-overview .gtitle")).to_contain_text("all layers × heads")
    screenshot = Path(os.environ.get("APP_SCREENSHOT", tmp_path / "app.png"))
    page.screenshot(path=screenshot, full_page=True)
    assert screenshot.stat().st_size > 10_000


def test_clicks_in_the_views_are_answered_in_the_browser(page):
    """A heatmap cell outlines its row and column, a token label its row or column; an overview cell (layer 2, head 2) is chosen and drawn."""
    outlines = page.locator("#attention-heatmap .shapelayer path")
    click_middle(page, page.locator("#attention-heatmap .nsewdrag").first)
    expect(outlines).to_have_count(2, timeout=10_000)
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


def test_beam_width_is_active_under_beam_search_only(page):
    width = page.locator("#beam input[type=range]")
    expect(width).to_be_disabled()
    choose(page, "decoding", "Beam search")
    expect(width).to_be_enabled(timeout=WAIT)
    choose(page, "decoding", "Greedy")
    expect(width).to_be_disabled(timeout=WAIT)


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
    expect(title(page, "attention-heatmap")).to_have_text(final, timeout=WAIT)
    page.wait_for_timeout(1500)  # a late answer would land now
    expect(title(page, "attention-heatmap")).to_have_text(final)
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
    steps = len(translator.inspect(sentence).target_tokens)
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
    inspection = translator.inspect(sentence)
    page.get_by_role("tab", name="Inside one head").click()
    tokens = page.locator("#query label")
    expect(tokens).to_have_text(inspection.target_tokens, timeout=WAIT)  # cross-attention: the queries are Italian
    tokens.nth(2).click()
    scores = page.locator("#head-scores")
    expect(title(page, "head-scores")).to_contain_text(f"query {inspection.target_tokens[2]}", timeout=WAIT)
    expect(scores.locator(".ytick text")).to_have_text(inspection.source_tokens)
    weights = translator.head_details(inspection, "cross", 0, 0, 2).weights
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
    expect(tokens).to_have_text(translator.inspect(other).target_tokens, timeout=WAIT)


def test_switching_a_head_off_updates_the_translation_panel(page, translator):
    """Tick heads in the heads tab and translate again: the panel shows the heads, both translations (the library's
    normal and ablated ones), and the step view of the new run."""
    from transformer.ablation import ablated

    sentence = "I see the cat."
    translate(page, sentence, translator.translate(sentence))
    page.get_by_role("tab", name="Heads: diagnose and switch off").click()
    expect(title(page, "head-diagnostics")).to_contain_text("Encoder–decoder cross-attention", timeout=WAIT)
    heads = [("cross", layer, head) for layer in range(3) for head in range(2)]  # every cross head: the source unseen
    for _, layer, head in heads:
        page.locator("#off-cross").get_by_text(f"L{layer + 1} H{head + 1}", exact=True).click()
    page.locator("#ablate").click()
    result = page.locator("#ablation-result")
    expect(result).to_contain_text("Heads switched off: cross L1 H1, cross L1 H2", timeout=WAIT)
    expect(result).to_contain_text(f"Normal: {translator.translate(sentence)}")
    expect(result).to_contain_text(f"With the heads off: {ablated(translator, heads).translate(sentence)}")
    expect(title(page, "ablation-step-candidates")).to_contain_text("Step 1:", timeout=WAIT)
