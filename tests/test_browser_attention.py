"""The Attention tab in a real browser (headless Chromium): drawn in the page from the translation's payload, every
control (kind, layer, head, rows, view, the overview, a hover, a click, the downloads) answered there with no request
to the server; what it draws is the model's attention (`interpretability.inspect`) within the payload's 1/255."""

import json
import re

import numpy as np
import pytest
from PIL import Image

from browser_helpers import WAIT, choose, expect, no_error_shown, option, page_point, translate
from interpretability import inspect

SENTENCE = "they want the book."
FIELDS = {"encoder": "encoder_attention", "decoder": "decoder_attention", "cross": "cross_attention"}
TITLES = {
    "encoder": "Encoder self-attention",
    "decoder": "Decoder self-attention",
    "cross": "Encoder–decoder cross-attention",
}


def translated_on(page, translator, sentence=SENTENCE):
    """The page after `sentence` was translated, and the library's inspection of it."""
    translate(page, sentence, translator.translate(sentence))
    return drawn_on(page, translator, sentence)


def drawn_on(page, translator, sentence):
    """(page, inspection): `page`, showing `sentence`'s translation, once its Attention view has drawn its maps."""
    inspection = inspect(translator, sentence)
    expect(page.locator("#attention-heatmap")).to_have_attribute("aria-label", re.compile("layer 1"), timeout=WAIT)
    page.wait_for_function(
        "(n) => document.querySelector('#attention-heatmap canvas').__matrix?.length === n",
        arg=len(inspection.target_tokens),
        timeout=WAIT,
    )
    return page, inspection


@pytest.fixture
def translated(reused_tab, deep_translator):
    """(page, inspection): the page opened at SENTENCE's link (its Attention tab), translated and drawn."""
    page = reused_tab.open_sentence(SENTENCE, deep_translator.translate(SENTENCE))
    return drawn_on(page, deep_translator, SENTENCE)


def shown(page):
    """(kind, layer, head) as the figure says it drew them."""
    data = page.locator("#attention-heatmap").evaluate("e => ({...e.dataset})")
    return data["kind"], int(data["layer"]), data["head"]


def drawn(page):
    return page.evaluate("() => document.querySelector('#attention-heatmap canvas').__matrices")


def expected_map(inspection, kind, layer, head):
    """The model's map (1-based layer, head a 1-based index or "mean"), the decoder's future as None."""
    maps = getattr(inspection, FIELDS[kind])[layer - 1].astype(np.float64)
    matrix = maps.mean(axis=0) if head == "mean" else maps[head - 1]
    if kind == "decoder":
        matrix = np.where(np.triu(np.ones(matrix.shape, dtype=bool), k=1), np.nan, matrix)
    return matrix


def assert_same(drawn_matrix, expected):
    got = np.array([[np.nan if v is None else v for v in row] for row in drawn_matrix], dtype=np.float64)
    assert got.shape == expected.shape
    assert (np.isnan(got) == np.isnan(expected)).all()
    assert np.nanmax(np.abs(got - expected)) <= 1 / 255 + 1e-6


def requests_during(page, act):
    sent = []

    def listener(request):
        return sent.append(request.url)  # one object: added, then removed

    page.on("request", listener)
    act()
    page.wait_for_timeout(300)
    page.remove_listener("request", listener)
    return sent


def cell_middle(page, row, col, panel=0):
    """The page coordinates of a heatmap cell's middle (0-based), the figure scrolled into view."""
    canvas = page.locator("#attention-heatmap canvas")
    box = canvas.evaluate("e => e.__cells")[panel]
    return page_point(canvas, box["x"] + (col + 0.5) * box["cell"], box["y"] + (row + 0.5) * box["cell"])


def test_every_control_is_answered_in_the_page(translated):
    """Kind, layer, head, rows, view and a click on the overview: 0 requests, and the figure names what the controls
    say; its title is the tab's ("<kind> · layer L · head H")."""
    page, _ = translated
    heading = page.locator("#attention-heatmap .attn-title")
    expect(heading).to_have_text(f"{TITLES['cross']} · layer 1 · mean over heads")

    def act():
        choose(page, "kind", TITLES["encoder"])
        assert shown(page) == ("encoder", 1, "mean")
        choose(page, "layer", "2")
        choose(page, "head", "2")
        assert shown(page) == ("encoder", 2, "2")
        expect(heading).to_have_text(f"{TITLES['encoder']} · layer 2 · head 2")
        choose(page, "kind", TITLES["decoder"])
        choose(page, "layer", "3")
        choose(page, "rows", "token produced")
        choose(page, "style", "lines")
        assert page.locator("#attention-heatmap").get_attribute("data-view") == "lines"
        choose(page, "style", "heatmap")
        choose(page, "head", "all (grid)")
        assert shown(page) == ("decoder", 3, "all")
        canvas = page.locator("#attention-overview canvas")
        canvas.evaluate("e => e.scrollIntoView({block: 'center'})")
        x, y, layout = canvas.evaluate("e => { const r = e.getBoundingClientRect(); return [r.x, r.y, e.__layout]; }")
        # layer 2, head 1 of the overview (its maps start at 62, 52; 8 px apart)
        page.mouse.click(x + 62 + layout["w"] / 2, y + 52 + layout["h"] + 8 + layout["h"] / 2)
        assert shown(page) == ("decoder", 2, "1")

    assert requests_during(page, act) == []
    expect(heading).to_have_text(f"{TITLES['decoder']} · layer 2 · head 1")
    for radio, name in [("kind", TITLES["decoder"]), ("layer", "2"), ("head", "1"), ("rows", "token produced")]:
        expect(option(page, radio, name)).to_have_class(re.compile(r"\bselected\b"))
        expect(option(page, radio, name).locator("input")).to_be_checked()


def test_the_drawn_matrix_is_the_models_attention(translated):
    """A head of each kind, and the mean of a deeper layer's heads; then all of that layer's heads, as a grid."""
    page, inspection = translated
    for kind, layer, head in [("cross", 3, "mean"), ("encoder", 2, 1), ("decoder", 2, 2)]:
        page.evaluate("(h) => window.translatorStore.set({attention: h})", {"kind": kind, "layer": layer, "head": head})
        assert shown(page) == (kind, layer, str(head))
        (matrix,) = drawn(page)
        assert_same(matrix, expected_map(inspection, kind, layer, head))
        choose(page, "head", "all (grid)")
        matrices = drawn(page)
        assert len(matrices) == inspection.cross_attention.shape[1]
        for h, matrix in enumerate(matrices, 1):
            assert_same(matrix, expected_map(inspection, kind, layer, h))


def test_a_shallower_kind_clamps_the_layer_never_an_error(translated):
    """Cross-attention's layer 3, then the encoder (2 layers): layer 2; and with the old layer 3 clicked 30 ms after
    the kind changed, the radio and the figure still name one layer the encoder has."""
    page, inspection = translated
    for fast in (False, True):
        choose(page, "kind", TITLES["cross"])
        choose(page, "layer", "3")
        third = option(page, "layer", "3").bounding_box()
        choose(page, "kind", TITLES["encoder"])
        if fast:
            page.wait_for_timeout(30)
            page.mouse.click(third["x"] + third["width"] / 2, third["y"] + third["height"] / 2)
        kind, layer, _ = shown(page)
        assert (kind, layer) == ("encoder", 2)
        expect(page.locator("#layer input")).to_have_count(2)
        expect(option(page, "layer", "2")).to_have_class(re.compile(r"\bselected\b"))
        no_error_shown(page, wait_ms=300)
        head = shown(page)[2]  # the fast click may have landed on a head radio, moved left
        assert_same(
            drawn(page)[0], expected_map(inspection, "encoder", 2, {"mean": "mean", "all": 1}.get(head) or int(head))
        )


def test_hover_click_and_lines(translated):
    """Hovering a cell names its query, key and weight; a click outlines its row and column (again: cleared), a
    token label its row; in the lines view hovering a query lights its lines."""
    page, inspection = translated
    queries, keys = inspection.target_tokens, inspection.source_tokens
    row, col = len(queries) - 1, 1
    x, y = cell_middle(page, row, col)
    page.mouse.move(x - 5, y - 5)
    page.mouse.move(x, y)
    tip = page.locator("#attention-heatmap .attn-tooltip")
    expect(tip).to_be_visible()
    weight = expected_map(inspection, "cross", 1, "mean")[row, col]
    expect(tip).to_contain_text(f"query {queries[row]}")
    expect(tip).to_contain_text(f"key {keys[col]}")
    shown_weight = float(re.search(r"weight ([\d.]+)", tip.inner_text()).group(1))
    assert abs(shown_weight - weight) <= 1 / 255 + 1e-3
    figure = page.locator("#attention-heatmap")
    page.mouse.click(x, y)
    expect(figure).to_have_attribute("data-outline", f"{row},{col}")
    page.mouse.click(x, y)
    expect(figure).to_have_attribute("data-outline", "")
    page.mouse.click(*cell_middle(page, 0, -1))  # left of the first column: the first row's label
    expect(figure).to_have_attribute("data-outline", "0,")
    page.mouse.move(x + 2000, y)
    expect(tip).to_be_hidden()
    choose(page, "style", "lines")
    canvas = page.locator("#attention-heatmap canvas")
    header = 26 + 17 + 10 + 24  # title, one note ("lines as opaque..."), the sides' names, then 22 px per token
    page.mouse.move(*page_point(canvas, 20, header + 1.5 * 22))
    box = canvas.bounding_box()
    expect(figure).to_have_attribute("data-lit", "1")
    expect(tip).to_contain_text(f"query {queries[1]} looks most at")
    page.mouse.move(box["x"] + box["width"] + 50, box["y"] - 50)
    expect(figure).to_have_attribute("data-lit", "")


def test_on_a_phone_the_whole_map_is_shown_and_the_mouse_still_reads_its_cells(page, deep_translator):
    """390 px wide: the cells shrink to the column and the title breaks into lines; the map is shown smaller only as
    far as its labels stay at least 10 px (it was shown at 302 px with ~8 px labels), and where that is still wider
    than the column its box scrolls sideways to show it whole; the mouse over a cell, scrolled to, still names that
    cell's weight."""
    page.set_viewport_size({"width": 390, "height": 844})
    page, inspection = translated_on(page, deep_translator, "they want the book, the cat and the red house today.")
    canvas = page.locator("#attention-heatmap canvas")
    shown, drawn_width, column, scroll_width, label_px = canvas.evaluate(
        "e => [e.getBoundingClientRect().width, e.__size[0], e.parentElement.clientWidth, e.parentElement.scrollWidth,"
        " e.__cells[0].labelPx]"
    )
    assert label_px * shown / drawn_width >= 10
    assert shown <= column + 0.5 or scroll_width >= shown - 0.5  # whole: in its column, or its box scrolls to it
    row, col = len(inspection.target_tokens) - 1, len(inspection.source_tokens) - 2
    box = canvas.evaluate("e => e.__cells")[0]
    x, y = box["x"] + (col + 0.5) * box["cell"], box["y"] + (row + 0.5) * box["cell"]
    canvas.evaluate(
        """(e, x) => {  // the cell's column scrolled to the middle of the box
        e.scrollIntoView({block: 'center'});
        const k = e.getBoundingClientRect().width / e.__size[0];
        e.parentElement.scrollLeft = Math.max(0, x * k - e.parentElement.clientWidth / 2); }""",
        x,
    )
    left, top, k = canvas.evaluate(
        "e => { const r = e.getBoundingClientRect(); return [r.x, r.y, r.width / e.__size[0]]; }"
    )
    page.mouse.move(left + x * k, top + y * k)
    tip = page.locator("#attention-heatmap .attn-tooltip")
    expect(tip).to_contain_text(f"key {inspection.source_tokens[col]}")
    shown_weight = float(re.search(r"weight ([\d.]+)", tip.inner_text()).group(1))
    assert abs(shown_weight - expected_map(inspection, "cross", 1, "mean")[row, col]) <= 1 / 255 + 1e-3


def test_downloads_are_made_in_the_page(translated, tmp_path):
    """The PNG is the canvas on screen; the JSON holds this kind's weights, all layers and heads, with the tokens."""
    page, inspection = translated
    choose(page, "kind", TITLES["decoder"])
    choose(page, "head", "2")

    def download(button):
        with page.expect_download() as info:
            assert [
                url
                for url in requests_during(page, page.locator(f"#attention-view {button}").click)
                if not url.startswith("blob:")
            ] == []
        path = tmp_path / info.value.suggested_filename
        info.value.save_as(path)
        return path

    png = download(".attn-png")
    assert png.name == "attention-decoder-layer1-head-2.png"
    size = page.evaluate(
        "() => { const c = document.querySelector('#attention-heatmap canvas'); return [c.width, c.height]; }"
    )
    image = Image.open(png)
    assert image.format == "PNG" and list(image.size) == size
    assert np.asarray(image.convert("RGB")).std() > 0
    data = json.loads(download(".attn-json").read_text(encoding="utf-8"))
    assert data["kind"] == TITLES["decoder"]
    assert data["query_tokens"] == data["key_tokens"] == inspection.target_tokens
    weights = np.array(data["attention"])
    assert weights.shape == inspection.decoder_attention.shape
    assert np.abs(weights - inspection.decoder_attention).max() <= 1 / 255


def test_fast_clicks_leave_the_view_matching_the_controls(translated):
    """Back-to-back clicks: the figure ends on what the radios say (how long a redraw takes: bench/app_latency.py,
    "attention: head")."""
    page, _ = translated
    clicks = [
        ("kind", TITLES["cross"]),
        ("layer", "3"),
        ("kind", TITLES["encoder"]),
        ("head", "2"),
        ("layer", "1"),
        ("kind", TITLES["decoder"]),
        ("layer", "3"),
        ("head", "all (grid)"),
        ("style", "lines"),
        ("kind", TITLES["encoder"]),
    ]
    for radio, name in clicks:
        choose(page, radio, name)
    checked = page.evaluate("""() => Object.fromEntries(['kind', 'layer', 'head'].map((name) =>
        [name, document.querySelector(`input[name="attention-${name}"]:checked`).value]))""")
    assert checked == {"kind": "encoder", "layer": "2", "head": "all"}
    assert shown(page) == ("encoder", 2, "all")
    expect(page.locator("#attention-heatmap .attn-title")).to_have_text(f"{TITLES['encoder']} · layer 2 · all heads")
