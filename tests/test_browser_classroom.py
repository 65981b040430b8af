"""What a classroom hit, in a real browser (tests/browser_helpers.py): a second Translate while one runs (the latest
wins, every view names the sentence it draws), an experiment after the box was edited (it runs on the translation
shown), input that is not English (warned about), a phone (390×844) and a projector (1024×768), the legends of the
figures, a long sentence's step strip, and the URL (reload, back, a shared link show the same view)."""

import json
import re
from urllib.parse import parse_qs, urlparse

import pytest

from browser_helpers import WAIT, expect, translate
from interpretability import head_details, inspect
from webapp.texts import PAYLOAD_MISSING
from webapp.tokens import output_tokens

SHORT = "they want the book."
OTHER = "I see the cat."
LONG = "they want the book, the cat and the red house today."
TABS = ["map", "attention", "head", "steps", "heads", "positions", "learned", "model"]
VIEWS = {
    "steps": "#step-view",
    "heads": "#head-diagnostics",
    "head": "#inside-head",  # tab: its view
    "positions": "#positional-encoding",
    "map": "#model-map",
    "attention": "#attention-view",
}


def names_the_sentence(page, english, italian):
    """Every view that draws the sentence names `english` → `italian` (each tab opened: Gradio draws a tab's
    components when it is first shown); the Attention tab open last."""
    for tab, view in VIEWS.items():
        page.locator(f"#tab-{tab}-button").click()
        expect(page.locator(f"{view} .view-sentence")).to_have_text(
            f"Sentence: “{english}” → “{italian}”", timeout=WAIT
        )


def slowed(latency_ms):
    """Chromium's network conditions (DevTools' Network.emulateNetworkConditions) with `latency_ms` a request."""
    return {"offline": False, "latency": latency_ms, "downloadThroughput": -1, "uploadThroughput": -1}


def test_a_translate_pressed_while_one_runs_wins(page, deep_translator):
    """Translate, then at once another sentence and Enter: the page ends on the second, in the Italian box, the
    chips, the store's translation and every view (Gradio's default dropped the second press). The network slowed
    (400 ms a request, as over a phone network) so that the second press lands while the first runs."""
    network = page.context.new_cdp_session(page)
    network.send("Network.emulateNetworkConditions", slowed(400))
    try:
        box = page.locator("#english textarea")
        box.fill(LONG)
        page.locator("#translate").click()
        box.fill(OTHER)
        box.press("Enter")
        expect(page.locator("#italian textarea")).to_have_value(deep_translator.translate(OTHER), timeout=WAIT)
        names_the_sentence(page, OTHER, deep_translator.translate(OTHER))
        inspection = inspect(deep_translator, OTHER)
        expect(page.locator("#chips .chip")).to_have_text([*inspection.source_tokens, *output_tokens(inspection)])
        stored = page.evaluate("() => window.translatorStore.get('translation').source_tokens")
        assert stored == inspection.source_tokens
        page.wait_for_function(
            "(n) => document.querySelector('#attention-heatmap canvas').__matrix?.length === n",
            arg=len(inspection.target_tokens),
            timeout=WAIT,
        )
    finally:
        network.send("Network.emulateNetworkConditions", slowed(0))  # the tab is the next test's
        network.detach()


def test_a_payload_that_does_not_come_is_said_and_no_view_shows_the_sentence_before(page, deep_translator):
    """The translate event answers a key, by which the page fetches the payload (webapp/translation.py,
    sent_payload). Its fetch answered 404 (a key dropped from the server's bounded store): the message says to press
    Translate again, and the views show no sentence rather than the one before; pressed again, every view draws."""
    translate(page, SHORT, deep_translator.translate(SHORT))
    fetches = re.compile(r"/gradio_api/component_server/?$")

    def dropped(route):
        if '"fn_name":"payload"' in (route.request.post_data or ""):
            route.fulfill(status=404, json={"error": "dropped"})
        else:
            route.continue_()

    page.route(fetches, dropped)
    translate(page, OTHER, deep_translator.translate(OTHER))
    expect(page.locator("#translation-payload .payload-missing")).to_have_text(PAYLOAD_MISSING, timeout=WAIT)
    expect(page.locator("#translation-payload")).to_be_visible()
    assert page.evaluate("() => window.translatorStore.get('translation')") is None
    expect(page.locator("#attention-view .view-sentence")).to_be_hidden()
    page.unroute(fetches)
    page.locator("#translate").click()
    expect(page.locator("#translation-payload")).to_be_hidden(timeout=WAIT)
    names_the_sentence(page, OTHER, deep_translator.translate(OTHER))
    page.wait_for_function(
        "(n) => document.querySelector('#attention-heatmap canvas').__matrix?.length === n",
        arg=len(inspect(deep_translator, OTHER).target_tokens),
        timeout=WAIT,
    )


def test_experiments_run_on_the_translation_shown_not_on_the_edited_box(page, deep_translator):
    """The box edited without translating: switching heads off and one head's numbers are about the sentence shown."""
    translate(page, SHORT, deep_translator.translate(SHORT))
    page.locator("#english textarea").fill(OTHER)  # edited, not translated
    page.locator("#tab-heads-button").click()
    page.locator("#off-cross").get_by_text("L1 H1", exact=True).click()
    page.locator("#ablate").click()
    result = page.locator("#ablation-result")
    expect(result).to_contain_text(f"Normal: {deep_translator.translate(SHORT)}", timeout=WAIT)
    page.locator("#tab-head-button").click()
    view = page.locator("#inside-head .inside-head")
    expect(view).to_have_attribute("data-state", "drawn", timeout=WAIT)
    expected = head_details(deep_translator, inspect(deep_translator, SHORT), "cross", 0, 0, 0)
    keys = page.locator("#inside-head table.ih-table tbody td.ih-key").all_inner_texts()
    assert keys == expected.key_tokens
    expect(page.locator("#english textarea")).to_have_value(OTHER)  # the box is left as the person typed it


def test_input_that_does_not_look_english_is_warned_about_in_the_status_line(page):
    page.locator("#english textarea").fill("Ich habe heute keine Zeit.")
    page.locator("#translate").click()
    expect(page.locator("#status")).to_contain_text("This looks like German", timeout=WAIT)
    expect(page.locator("#status")).to_contain_text("the model translates from English only")


# What of the page lies beyond the screen's right edge, not inside a box that scrolls sideways: nothing may.
OFF_SCREEN = """() => { const width = document.documentElement.clientWidth, out = [];
  for (const e of document.querySelectorAll('button, input, select, label, a, textarea, canvas, th, td')) {
    const r = e.getBoundingClientRect();
    if (!r.width || !e.checkVisibility()) continue;
    let scrolls = false;
    for (let p = e.parentElement; p && !scrolls; p = p.parentElement) {
      const s = getComputedStyle(p);
      scrolls = (s.overflowX === 'auto' || s.overflowX === 'scroll') && p.scrollWidth > p.clientWidth;
    }
    if (r.right > width + 1 && !scrolls) out.push(`${e.tagName}.${e.className} ${r.left}-${r.right}`);
  }
  return out; }"""


@pytest.mark.parametrize("width, height", [(390, 844), (1024, 768)])
def test_every_tab_is_in_the_tab_bar_and_every_control_on_the_screen(reused_tab, width, height):
    """A phone and a projector: every tab in the tab bar (no menu of hidden ones), each one click or one arrow key
    from the one before; in every tab, no control, label or figure beyond the screen's edge; the page no wider than
    the screen."""
    page = reused_tab.open_app(width, height, tab=TABS[0])
    expect(page.get_by_role("button", name="More tabs")).to_have_count(0)
    for tab in TABS:
        expect(page.locator(f"#tab-{tab}-button")).to_be_visible()
    page.locator(f"#tab-{TABS[0]}-button").focus()
    for tab in TABS[1:]:
        page.keyboard.press("ArrowRight")
        expect(page.locator(f"#tab-{tab}-button")).to_have_attribute("aria-selected", "true")
    for tab in TABS:
        page.locator(f"#tab-{tab}-button").click()
        expect(page.locator(f"#tab-{tab}-button")).to_have_attribute("aria-selected", "true")
        page.wait_for_timeout(300)
        assert page.evaluate(OFF_SCREEN) == [], tab
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_on_a_phone_the_step_strip_of_a_long_sentence_has_readable_labels_apart(reused_tab, deep_translator):
    """390 px, a 14-token sentence: the step view's cross-attention strip's English labels are at least 10 px as
    shown, and no two overlap (upright where slanted ones would)."""
    page = reused_tab.open_app(390, 844)
    translate(page, LONG, deep_translator.translate(LONG))
    page.locator("#tab-steps-button").click()
    canvas = page.locator("#step-attention canvas")
    expect(canvas).to_be_visible(timeout=WAIT)
    labels, shown, drawn = canvas.evaluate("e => [e.__labels, e.getBoundingClientRect().width, e.__size[0]]")
    scale = shown / drawn
    assert labels["px"] * scale >= 10
    apart = labels["cell"] * (1 if labels["angle"] == 90 else 2**-0.5)  # between two labels' baselines
    assert apart >= labels["px"]


def test_inside_one_head_has_a_colour_key_for_its_strips(page):
    page.locator("#tab-head-button").click()
    view = page.locator("#inside-head .inside-head")
    expect(view).to_have_attribute("data-state", "drawn", timeout=WAIT)
    key = page.locator('#inside-head .ih-legend[data-for="qkv"]')
    expect(key).to_be_visible()
    expect(key).to_contain_text("blue below 0, white 0, red above 0")
    values = [
        json.loads(page.locator(f'#inside-head [data-name="{name}"] canvas').get_attribute("data-values"))
        for name in ("q", "k", "v")
    ]
    largest = max(abs(x) for rows in values for row in rows for x in row)
    assert float(key.get_attribute("data-scale")) == pytest.approx(largest, abs=1e-9)


def test_the_url_keeps_the_sentence_and_the_tab_for_a_reload_back_and_a_shared_link(page, browser, deep_translator):
    translate(page, SHORT, deep_translator.translate(SHORT))
    translate(page, OTHER, deep_translator.translate(OTHER))
    page.locator("#tab-steps-button").click()
    expect(page).to_have_url(re.compile(r"tab=steps"))
    query = parse_qs(urlparse(page.url).query)
    assert query["text"] == [OTHER]
    page.reload()
    expect(page.locator("#italian textarea")).to_have_value(deep_translator.translate(OTHER), timeout=WAIT)
    expect(page.locator("#english textarea")).to_have_value(OTHER)
    expect(page.locator("#tab-steps-button")).to_have_attribute("aria-selected", "true", timeout=WAIT)
    page.go_back()  # the sentence before
    expect(page.locator("#italian textarea")).to_have_value(deep_translator.translate(SHORT), timeout=WAIT)
    names_the_sentence(page, SHORT, deep_translator.translate(SHORT))
    page.goto(f"{browser.app_url}?text=I+see+the+cat.&tab=attention&view=encoder.2.1")  # a link sent to a student
    expect(page.locator("#italian textarea")).to_have_value(deep_translator.translate(OTHER), timeout=WAIT)
    expect(page.locator("#attention-heatmap .attn-title")).to_have_text(
        "Encoder self-attention · layer 2 · head 1", timeout=WAIT
    )
