"""The "Positional encoding" tab in a real browser (webapp/tabs/positions.js): the table is asked of the server once,
when the tab is first shown, and its values are the model's; the dimensions typed and a new sentence are drawn in the
page with no request of this tab; the norms shown are the model's. Fixtures in conftest.py (`browser`, `page`)."""

import json
import re

import httpx
import numpy as np
import pytest

from browser_helpers import NO_REQUEST_MS, WAIT, expect, open_tab, server_requests, translate, translated
from interpretability import embedding_norms, inspect, positional_encoding

VIEW = "#positional-encoding .positions-view"
SERVER_FUNCTION = "/gradio_api/component_server"
TRANSLATION_FETCH = "payload"  # the server function every translation's payload is fetched by (webapp.views.carrier)


def server_functions(requests):
    """The server functions the page called, by name, among `server_requests`."""
    return [json.loads(body)["fn_name"] for url, body in requests if SERVER_FUNCTION in url]


@pytest.fixture(scope="module")
def translator(deep_translator):
    return deep_translator


@pytest.fixture(scope="module")
def pe(translator):
    return positional_encoding(translator.model)


def open_positions(page):
    open_tab(page, "Positional encoding")
    expect(page.locator(VIEW)).to_have_attribute("data-ready", "true", timeout=WAIT)


def sweep(page, selector, readout, points=12):
    """The readouts shown, each once, as the pointer crosses a grid of points of the canvas `selector`: the mouse
    moves are dispatched in the page, each to the element under that point (what a real pointer would be over), in
    one round trip for the whole grid."""
    canvas = page.locator(f"{VIEW} {selector}")
    canvas.scroll_into_view_if_needed()
    return canvas.evaluate(
        """(canvas, [readout, points]) => {
            const box = canvas.getBoundingClientRect(), shown = document.querySelector(readout), seen = [];
            const at = (k) => 0.02 + (0.96 * k) / (points - 1);
            for (let a = 0; a < points; a++) {
                for (let b = 0; b < points; b++) {
                    const [x, y] = [box.x + at(a) * box.width, box.y + at(b) * box.height];
                    document.elementFromPoint(x, y).dispatchEvent(
                        new MouseEvent("mousemove", {clientX: x, clientY: y, bubbles: true}));
                    if (shown.innerText && !seen.includes(shown.innerText)) seen.push(shown.innerText);
                }
            }
            return seen;
        }""",
        [f"{VIEW} {readout}", points],
    )


def this_tabs_events(app_url):
    """fn indices of the page's events whose inputs or outputs lie inside the Positional encoding tab."""
    config = httpx.get(app_url + "config", timeout=30).json()
    tab = next(c["id"] for c in config["components"] if c.get("props", {}).get("elem_id") == "tab-positions")

    def inside(node, found=False):
        found = found or node["id"] == tab
        ids = {node["id"]} if found and node["id"] != tab else set()
        for child in node.get("children", []):
            ids |= inside(child, found)
        return ids

    ids = inside(config["layout"])
    assert ids, "the tab holds the view"
    return {
        i for i, dep in enumerate(config["dependencies"]) if ids & set(dep.get("inputs", []) + dep.get("outputs", []))
    }


def test_opening_the_tab_fetches_the_table_once_and_draws_the_models_values(tab, browser, translator, pe):
    page = tab()
    requests = server_requests(page)
    page.goto(browser.app_url)
    translated(page)
    page.wait_for_timeout(NO_REQUEST_MS)
    assert set(server_functions(requests)) <= {TRANSLATION_FETCH}  # the table not asked before the tab is shown
    open_positions(page)
    open_tab(page, "Attention")  # and reopened: not asked again
    open_tab(page, "Positional encoding")
    page.wait_for_timeout(NO_REQUEST_MS)
    assert [name for name in server_functions(requests) if name != TRANSLATION_FETCH] == ["positional_table"]

    P, D = pe.shape
    expect(page.locator(f"{VIEW} .pos-table-title")).to_have_text(f"Positional encoding PE (max_len {P} × d_model {D})")
    tokens = inspect(translator, page.locator("#english textarea").input_value()).source_tokens
    expect(page.locator(f"{VIEW} .pos-table-note")).to_contain_text(f"Your sentence uses the {len(tokens)} rows")
    read = [
        re.fullmatch(r"position (\d+), dimension (\d+) \((sin|cos)\): (-?[\d.]+)", t)
        for t in sweep(page, ".pos-table", ".pos-table-readout")
    ]
    assert len(read) >= 50 and all(read)
    for match in read:
        i, j, value = int(match[1]), int(match[2]), float(match[4])
        assert match[3] == ("cos" if j % 2 else "sin")
        assert abs(value - pe[i, j]) <= 1.01e-4, (i, j, value, pe[i, j])  # 4 decimals
    assert len({m[1] for m in read}) > 5 and len({m[2] for m in read}) > 5  # rows and columns all over

    unit = pe[: len(tokens)] / np.linalg.norm(pe[: len(tokens)], axis=1, keepdims=True)
    cosine = unit @ unit.T
    read = [
        re.fullmatch(r"cos\(PE\((\d+) (.+)\), PE\((\d+) (.+)\)\) = (-?[\d.]+)", t)
        for t in sweep(page, ".pos-similarity", ".pos-similarity-readout", points=10)
    ]
    assert len(read) >= 10 and all(read)
    for match in read:
        i, j = int(match[1]), int(match[3])
        assert (match[2], match[4]) == (tokens[i], tokens[j])
        assert abs(float(match[5]) - cosine[i, j]) <= 6e-4


def test_dims_and_a_new_sentence_are_drawn_in_the_page_with_no_request_of_this_tab(page, browser, translator, pe):
    ours = this_tabs_events(browser.app_url)
    assert not ours  # no Python event of this tab at all
    open_positions(page)
    requests = server_requests(page)
    dims = page.locator(f"{VIEW} .pos-dims-input")
    dims.fill("3, 7, 999, x")
    expect(page.locator(VIEW)).to_have_attribute("data-dims", "3,7")
    expect(page.locator(f"{VIEW} .pos-dims-note")).to_contain_text("999, x")
    legend = page.locator(f"{VIEW} .pos-curves-legend li")
    expect(legend).to_have_text([re.compile(r"dim 3 \(cos, wavelength"), re.compile(r"dim 7 \(cos, wavelength")])
    curve = page.locator(f'{VIEW} .pos-curve[data-dim="7"]')
    ys = [float(point.split(",")[1]) for point in curve.get_attribute("points").split()]
    assert len(ys) == len(pe)
    assert np.corrcoef(ys, pe[:, 7])[0, 1] < -0.999  # the wave itself (SVG's y grows downwards)
    page.wait_for_timeout(300)
    assert requests == []  # the dimensions were drawn in the page

    # a dims change timed from the input event to the figure drawn (the redraw is synchronous)
    elapsed = dims.evaluate("""(e) => { const start = performance.now(); e.value = "0, 1, 2, 5, 9";
        e.dispatchEvent(new Event("input")); return performance.now() - start; }""")
    print(f"dims change -> curves drawn: {elapsed:.1f} ms")
    assert elapsed <= 50

    sentence = "we love the dog."
    translate(page, sentence, translator.translate(sentence))
    tokens = inspect(translator, sentence).source_tokens
    expect(page.locator(f"{VIEW} .pos-norms .pos-token")).to_have_text(tokens, timeout=WAIT)
    expect(page.locator(f"{VIEW} .pos-table-note")).to_contain_text(f"Your sentence uses the {len(tokens)} rows")
    assert " ".join(tokens) in page.locator(f"{VIEW} .pos-similarity").get_attribute("aria-label")
    expect(page.locator(VIEW)).to_have_attribute("data-dims", "0,1,2,5,9")  # the dimensions chosen kept
    print(f"new sentence -> view redrawn: {page.locator(VIEW).get_attribute('data-sentence-ms')} ms")
    assert set(server_functions(requests)) <= {TRANSLATION_FETCH}  # the new sentence's payload, nothing of this tab's
    fn_indices = [json.loads(body).get("fn_index") for url, body in requests if "/queue/join" in url]
    assert fn_indices and not set(fn_indices) & ours  # the translation's events, none of this tab's


def test_the_norms_shown_are_the_models(page, translator):
    open_positions(page)
    sentence = "the cat sees the red book."
    translate(page, sentence, translator.translate(sentence))
    tokens = inspect(translator, sentence).source_tokens
    view = page.locator(VIEW)
    expect(view.locator(".pos-norms .pos-token")).to_have_text(tokens, timeout=WAIT)
    embedding, position = embedding_norms(translator, tokens)
    for kind, expected in (("embedding", embedding), ("position", position)):
        bars = view.locator(f".pos-norms rect.pos-{kind}")
        shown = [float(bars.nth(i).get_attribute("data-value")) for i in range(bars.count())]
        assert np.allclose(shown, expected, atol=1e-4), (kind, shown, expected)
        heights = [float(bars.nth(i).get_attribute("height")) for i in range(bars.count())]
        assert np.allclose(np.array(heights) / max(heights), expected / max(expected), atol=0.01)
    title = view.locator(".pos-norms rect.pos-embedding title").first.text_content()
    assert title == f"{tokens[0]}: ‖embedding × √d_model‖ = {embedding[0]:.2f}"
