"""The "Inside one head" tab in a real browser (webapp/tabs/inside_head.py + .js): opening it asks the server once
for the chosen head's numbers (every query token at once); a click on another query token is drawn in the page with
no request, its weights those of the library; the softmax taken apart adds up (exp ÷ Σ exp = w, Σ w = 1) and so does
the output (Σ w v = the model's output row); a shallower kind lowers the layer, never an error; a translation made
while another tab is shown asks nothing of this one; at 1024 and 390 px no text overlaps another, none is cut."""

import json
import re

import pytest

from browser_helpers import NO_REQUEST_MS, WAIT, expect, no_error_shown, open_tab, translate, translated
from interpretability import head_details, inspect

VIEW = "#inside-head .inside-head"
SENTENCE = "we want the water."


@pytest.fixture(scope="module")
def translator(deep_translator):
    return deep_translator


def number(text):
    return float(text.replace("−", "-").split("=")[-1])


class Requests:
    """The page's requests from now on; `head()`: the queue joins of this tab's `head_numbers` event."""

    def __init__(self, page):
        self.page, self.all = page, []
        self.fn = page.evaluate("""() => window.gradio_config.dependencies.find((d) =>
            d.targets.some(([, name]) => name === "head_numbers")).id""")
        page.on("request", lambda request: self.all.append(request))

    def joins(self):
        return [r for r in self.all if "/queue/join" in r.url]

    def head(self):
        return [r for r in self.joins() if json.loads(r.post_data or "{}").get("fn_index") == self.fn]

    def clear(self):
        self.all.clear()


def drawn(page, query_token=None):
    expect(page.locator(VIEW)).to_have_attribute("data-state", "drawn", timeout=WAIT)
    if query_token is not None:
        expect(page.locator(f"{VIEW} .ih-title")).to_contain_text(f"query {query_token}", timeout=WAIT)


def choose(page, name, value):
    page.locator(f'{VIEW} input[name="{name}"][value="{value}"]').click()


def shown_column(page, css):
    return [number(t) for t in page.locator(f"{VIEW} table.ih-table tbody td.{css}").all_inner_texts()]


def test_one_request_opens_the_tab_and_a_query_click_is_drawn_in_the_page(reused_tab, translator):
    page = reused_tab.open_sentence(SENTENCE, translator.translate(SENTENCE))
    inspection = inspect(translator, SENTENCE)
    requests = Requests(page)
    open_tab(page, "Inside one head")
    drawn(page, inspection.target_tokens[0])  # cross-attention: the queries are the Italian tokens
    page.wait_for_timeout(NO_REQUEST_MS)
    assert len(requests.head()) == 1, [r.url for r in requests.all]
    assert len(requests.joins()) <= 2  # this tab's, and the tab bar's own select event (webapp/events.py)
    queries = page.locator(f'{VIEW} fieldset[data-name="ih-query"] label')
    expect(queries).to_have_text(inspection.target_tokens)
    requests.clear()
    for query in (2, len(inspection.target_tokens) - 1):
        ms = page.evaluate(
            """(q) => { const t = performance.now();
            document.querySelector(`#inside-head input[name="ih-query"][value="${q}"]`).click();
            return performance.now() - t; }""",
            query,
        )
        print(f"query click -> figures drawn: {ms:.1f} ms")
        drawn(page, inspection.target_tokens[query])
        weights = head_details(translator, inspection, "cross", 0, 0, query).weights
        assert shown_column(page, "ih-weight") == pytest.approx(weights.tolist(), abs=0.0015)
        keys = page.locator(f"{VIEW} table.ih-table tbody td.ih-key").all_inner_texts()
        assert keys == inspection.source_tokens
    queries.nth(1).click()  # a real click on a token
    drawn(page, inspection.target_tokens[1])
    page.wait_for_timeout(NO_REQUEST_MS)
    assert requests.all == [], [r.url for r in requests.all]


def test_the_softmax_and_the_weighted_sum_add_up(page, translator):
    open_tab(page, "Inside one head")
    drawn(page)
    choose(page, "ih-kind", "decoder")
    choose(page, "ih-layer", "2")
    choose(page, "ih-head", "2")
    expect(page.locator(f"{VIEW} .ih-title")).to_contain_text("Decoder self-attention · layer 2 · head 2", timeout=WAIT)
    choose(page, "ih-query", "2")
    drawn(page)
    exps, weights = shown_column(page, "ih-exp"), shown_column(page, "ih-weight")
    total = number(page.locator(f"{VIEW} .ih-exp-sum").inner_text())
    assert total == pytest.approx(sum(exps), abs=1e-3) and max(exps) == 1
    assert [e / total for e in exps] == pytest.approx(weights, abs=0.0015)
    assert sum(weights) == pytest.approx(1, abs=0.0005 * len(weights) + 1e-3)
    assert number(page.locator(f"{VIEW} .ih-weight-sum").inner_text()) == 1
    assert weights[3:] == [0] * (len(weights) - 3)  # after the third position: hidden, weight 0

    def values(name):
        return json.loads(
            page.locator(f'{VIEW} [data-name="{name}"] canvas').get_attribute(  # noqa: E731
                "data-values"
            )
        )

    rows, (added, output) = values("wv"), values("sum")
    assert [sum(column) for column in zip(*rows)] == pytest.approx(added, abs=1e-9)
    assert added == pytest.approx(output, abs=1e-3)  # Σ_j w_j v_j is the model's output row
    assert float(page.locator(f"{VIEW} .ih-difference").inner_text()) < 1e-3


def test_the_last_of_quick_clicks_is_drawn(page):
    """Kind, layer and head clicked in one go: each click asks for a head while an answer is on its way; the head on
    screen is drawn, not left "Loading" (under Gradio's "always_last" the last of them ran with an earlier click's
    data: `webapp.events.QUIET`)."""
    open_tab(page, "Inside one head")
    drawn(page)
    for kind, layer, head in (("decoder", 2, 2), ("encoder", 1, 1), ("cross", 3, 2)):
        page.evaluate(
            """([view, kind, layer, head]) => {
            for (const [name, value] of [["ih-kind", kind], ["ih-layer", layer], ["ih-head", head]])
              document.querySelector(`${view} input[name="${name}"][value="${value}"]`).click();
          }""",
            [VIEW, kind, str(layer), str(head)],
        )
        expect(page.locator(f"{VIEW} .ih-title")).to_contain_text(f"· layer {layer} · head {head}", timeout=WAIT)
        drawn(page)


def test_a_kind_with_fewer_layers_lowers_the_layer_and_never_errs(page):
    """Cross-attention's layer 3, then the encoder (2 layers): layer 2; and so with the old layer 3 clicked right
    after the kind changed."""
    open_tab(page, "Inside one head")
    drawn(page)
    for fast in (False, True):
        choose(page, "ih-kind", "cross")
        choose(page, "ih-layer", "3")
        expect(page.locator(f"{VIEW} .ih-title")).to_contain_text("cross-attention · layer 3 ·", timeout=WAIT)
        third = page.locator(f'{VIEW} fieldset[data-name="ih-layer"] label').nth(2).bounding_box()
        choose(page, "ih-kind", "encoder")
        if fast:  # the old last layer clicked right after: wherever it was, nothing breaks
            page.wait_for_timeout(30)
            page.mouse.click(third["x"] + third["width"] / 2, third["y"] + third["height"] / 2)
        checked = page.locator(f'{VIEW} input[name="ih-layer"]:checked')
        expect(checked).to_have_attribute("value", "2", timeout=WAIT)
        expect(page.locator(f'{VIEW} input[name="ih-layer"]')).to_have_count(2)
        expect(page.locator(f"{VIEW} .ih-title")).to_contain_text("Encoder self-attention · layer 2 ·", timeout=WAIT)
        no_error_shown(page)


def test_a_translation_while_another_tab_is_shown_asks_nothing_of_this_tab(page, translator):
    open_tab(page, "Inside one head")
    drawn(page)
    open_tab(page, "Attention")
    requests = Requests(page)
    other = "they love the city."
    translate(page, other, translator.translate(other))
    page.wait_for_timeout(NO_REQUEST_MS)
    assert requests.head() == [] and requests.joins()  # the translation's own request, none of this tab
    open_tab(page, "Inside one head")
    tokens = inspect(translator, other).target_tokens
    drawn(page, tokens[0])
    expect(page.locator(f'{VIEW} fieldset[data-name="ih-query"] label')).to_have_text(tokens)
    assert len(requests.head()) == 1


# Every piece of text the view shows (each line of it), as rectangles: [text, left, top, right, bottom, container],
# the container being the scrolling box it is in (or null).
TEXT_BOXES = """() => {
  const view = document.querySelector('#inside-head .inside-head'), boxes = [];
  const walker = document.createTreeWalker(view, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.textContent.trim() || !node.parentElement.checkVisibility()) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    const scroll = node.parentElement.closest('.ih-scroll');
    for (const r of range.getClientRects()) {
      const strip = scroll ? [...view.querySelectorAll('.ih-scroll')].indexOf(scroll) : null;
      if (r.width > 0.5 && r.height > 0.5) {
        boxes.push([node.textContent.trim().slice(0, 30), r.left, r.top, r.right, r.bottom, strip]);
      }
    }
  }
  return boxes;
}"""


@pytest.mark.parametrize("width", [1024, 390])
def test_no_number_overlaps_another_nor_a_label_and_nothing_is_cut(tab, browser, width):
    """At 1024 px and on a phone (390 px), decoder self-attention (negative scores, hidden keys): no piece of text of
    the view (numbers, token labels, panel titles, captions, controls) overlaps another; the view is no wider than
    the page, and what is wider than the screen (the table, the strips) scrolls sideways in its own box, whole."""
    page = tab(width, 900)
    page.goto(browser.app_url)
    translated(page)
    open_tab(page, "Inside one head")
    drawn(page)
    choose(page, "ih-kind", "decoder")
    choose(page, "ih-query", "3")
    expect(page.locator(f"{VIEW} .ih-title")).to_contain_text("Decoder self-attention", timeout=WAIT)
    page.wait_for_timeout(300)
    boxes = page.evaluate(TEXT_BOXES)
    assert len(boxes) > 50
    for i, (a, *ra) in enumerate(boxes):
        for b, *rb in boxes[i + 1 :]:
            overlap = min(ra[2], rb[2]) - max(ra[0], rb[0]), min(ra[3], rb[3]) - max(ra[1], rb[1])
            assert overlap[0] <= 1 or overlap[1] <= 1, (a, ra, b, rb)
    view = page.locator(VIEW).evaluate("""(v) => { const r = v.getBoundingClientRect();
        return [r.left, r.right, v.scrollWidth, v.clientWidth]; }""")
    assert view[1] <= width and view[2] <= view[3] + 1, view
    scrolls = page.evaluate("""() => [...document.querySelectorAll('#inside-head .ih-scroll')].map((s) => {
        const r = s.getBoundingClientRect();
        return [getComputedStyle(s).overflowX, r.left, r.right, s.scrollWidth, s.clientWidth]; })""")
    for overflow, left, right, scroll_width, client_width in scrolls:
        assert right <= width and (scroll_width <= client_width + 1 or overflow in ("auto", "scroll"))
    for text, left, top, right, bottom, scroll in boxes:
        if scroll is None:  # outside the sideways-scrolling boxes: on the screen
            assert view[0] - 1 <= left and right <= view[1] + 1, (text, left, right, view)
    titles = page.locator(f"{VIEW} .ih-panel h4")
    expect(titles).to_have_count(4)
    for i in range(4):
        assert titles.nth(i).evaluate("(h) => h.scrollWidth <= h.clientWidth + 1")
    assert re.search(r"layer \d · head \d", page.locator(f"{VIEW} .ih-title").inner_text())
