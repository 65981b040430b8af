"""A phone (390×844) and a projector (1024×768), measured in a real browser: the tab bar on the first screen; the
model map as wide as the screen, its labels readable, and where the map is wider a line that says to scroll it
sideways (and a box that does); Inside one head's strips and the positional-encoding table redrawn for the width,
every label of them shown at 10 px or more."""

from urllib.parse import quote

import pytest

from browser_helpers import WAIT, expect, translated

SIZES = [(390, 844), (1024, 768)]
HEAD = "#inside-head .inside-head"
# Each canvas of a selector: [its label size in px as shown (drawn px × shown width ÷ drawn width), its right edge,
# the right edge of the box it is in].
SHOWN_LABELS = """([selector, px]) => [...document.querySelectorAll(selector)].filter((c) => c.getClientRects().length)
  .map((c) => [px * c.getBoundingClientRect().width / c.__size[0], c.getBoundingClientRect().right,
               c.parentElement.getBoundingClientRect().right])"""


def opened(tab, url, width, height, query):
    """The reused tab (conftest.py: `tab`), `width` x `height`, at the app's link with `query`, once translated."""
    page = tab(width, height)
    page.goto(f"{url}?{query}")
    return translated(page)


@pytest.mark.parametrize("width, height", SIZES)
def test_the_tab_bar_is_on_the_first_screen(tab, browser, width, height):
    """On a phone the examples are one row that scrolls sideways (four stacked rows pushed the tabs below the first
    screen), so the tab bar's first row is on it, under the longer status of a translation shown again."""
    page = opened(tab, browser.app_url, width, height, "tab=map")
    page.reload()
    expect(page.locator("#status")).to_contain_text("shown again", timeout=WAIT)
    page.evaluate("window.scrollTo(0, 0)")
    button = page.locator("#tab-map-button").bounding_box()
    assert button["y"] + button["height"] < height, button
    examples = page.locator("#actions .example")
    assert len({round(examples.nth(i).bounding_box()["y"]) for i in range(examples.count())}) == 1


@pytest.mark.parametrize("width, height", SIZES)
def test_the_map_fits_the_width_or_says_to_scroll_it(tab, browser, width, height):
    """The map's labels (12 px, its arrows' shapes 11 px) are never shown under 10 px. Where the map is wider than
    its column (a phone), its box scrolls sideways, and a line above it says so; where it fits, no such line."""
    page = opened(tab, browser.app_url, width, height, "tab=map")
    scroll = page.locator("#model-map .map-svg-scroll")
    expect(page.locator("#model-map .map-svg .box").first).to_be_visible(timeout=WAIT)
    shown, drawn, scroll_width, client_width, overflow = scroll.evaluate("""(s) => {
        const svg = s.querySelector('svg');
        return [svg.getBoundingClientRect().width, svg.viewBox.baseVal.width, s.scrollWidth, s.clientWidth,
                getComputedStyle(s).overflowX]; }""")
    assert 11 * shown / drawn >= 10
    cue = page.locator("#model-map .map-scroll-cue")
    if scroll_width > client_width + 1:
        assert overflow == "auto"
        expect(cue).to_be_visible()
        expect(cue).to_contain_text("scroll it sideways")
        assert cue.bounding_box()["y"] < scroll.bounding_box()["y"]
    else:
        expect(cue).to_be_hidden()
    assert width > 700 or scroll_width > client_width + 1  # a phone's is the scrolling one
    assert page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize("width, height", SIZES)
def test_inside_one_head_and_the_positional_table_show_every_label_at_10_px_or_more(tab, browser, width, height):
    """Inside one head's strips (labels 12 px) were shown at half their size on a phone, 6 px: now their columns are
    narrower, the labels as drawn, and q, K and V fit the screen. The positional-encoding table (11 px) likewise,
    whole on the screen, and its plots (11 px) shown at 10 px or more, scrolling sideways on a phone."""
    page = opened(tab, browser.app_url, width, height, "tab=head&inside=decoder.2.1.2")
    expect(page.locator(HEAD)).to_have_attribute("data-state", "drawn", timeout=WAIT)
    strips = page.evaluate(SHOWN_LABELS, [f"{HEAD} .ih-matrix canvas", 12])
    assert len(strips) == 8
    assert min(px for px, *_ in strips) >= 10, strips
    for px, right, box in strips[:3]:  # q, K and V
        assert right <= box + 1 and right <= width
    page.locator("#tab-positions-button").click()
    expect(page.locator(".positions-view")).to_have_attribute("data-ready", "true", timeout=WAIT)
    [(px, right, box)] = page.evaluate(SHOWN_LABELS, [".positions-view canvas.pos-table", 11])
    assert px >= 10 and right <= box + 1 and right <= width
    plots = page.evaluate("""() => [...document.querySelectorAll('.positions-view svg')].map((s) =>
        11 * s.getBoundingClientRect().width / s.viewBox.baseVal.width)""")
    assert len(plots) == 2 and min(plots) >= 10, plots
    expect(page.locator("#positional-encoding .view-sentence")).to_contain_text("Sentence: “")


def test_a_long_sentences_walk_keeps_its_controls_on_one_phone_screen(tab, browser):
    """Forty tokens a side made the walk's two token groups 1,700 px tall on a phone, Previous and Next far below
    them: each group now scrolls within about four rows, and a walk opened from a link shows its token in sight."""
    long = ", ".join(["the red cat", "the small dog", "the big house", "the good book"] * 3) + "."
    page = opened(tab, browser.app_url, 390, 844, f"tab=map&text={quote(long)}&walk=encoder.30.1")
    bar = page.locator("#model-map .map-walk-bar")
    expect(bar.locator(".map-walk-where")).to_contain_text("box 1 of", timeout=WAIT)
    assert page.evaluate("document.querySelectorAll('.map-walk-bar input[name=map-walk-encoder]').length") > 30
    assert bar.bounding_box()["height"] < 844
    group, token = bar.locator("fieldset").first, bar.locator("input[name=map-walk-encoder]:checked")
    expect(token).to_have_value("29")  # the link counts from 1, as the page shows the boxes
    inside, outside = token.locator("xpath=..").bounding_box(), group.bounding_box()
    assert outside["y"] <= inside["y"] and inside["y"] + inside["height"] <= outside["y"] + outside["height"]
