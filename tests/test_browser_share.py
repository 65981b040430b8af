"""Every view shareable, in a real browser (webapp/page.js keeps the store's view settings in the URL): the colour
scale (0–1 by default) and heatmap or lines, each said by the figure, Inside one head's kind, layer, head and query
token, and the model map's open box and walk are each written to the address, and restored by a reload and by the
link opened afresh (a link pasted), whichever of the page's modules comes first; what the address holds that is
none of a view's choices is left out of the page and of the URL, never shown."""

import re
import time
from urllib.parse import parse_qs, urlencode, urlparse

from browser_helpers import WAIT, expect, translated

HEAD = "#inside-head .inside-head"
MAP = "#model-map .model-map"


def query(page):
    return parse_qs(urlparse(page.url).query)


def restored(page, check):
    """`check(p)` holds once the translation is shown, on `page` reloaded and on its URL opened afresh (a link pasted:
    a navigation, which restores no form field as a reload may; browser_helpers.ReusedTab)."""
    url = page.url
    page.reload()
    translated(page)
    check(page)
    page.goto(url)
    translated(page)
    check(page)


def test_the_colour_scale_and_heatmap_or_lines_are_kept_and_the_figure_says_which(page):
    """Both of the Attention view's choices at once, from their defaults (0–1, a heatmap), each said by the figure and
    its canvas's label (the lines name the query and the key side); back at the default, a choice leaves the URL."""
    figure, canvas = page.locator("#attention-heatmap"), page.locator("#attention-heatmap canvas")
    expect(figure).to_have_attribute("data-scale", "fixed")
    expect(canvas).to_have_attribute("aria-label", re.compile("query: .* key: "))
    page.locator("#scale label").filter(has_text="0–max").click()
    page.locator("#style label").filter(has_text="lines").click()
    expect(page).to_have_url(re.compile(r"[?&]scale=own(&|$)"))
    expect(page).to_have_url(re.compile(r"[?&]style=lines(&|$)"))

    def own_scale_and_lines(p):
        expect(p.locator("#attention-heatmap")).to_have_attribute("data-scale", "own")
        expect(p.locator("#attention-heatmap")).to_have_attribute("data-view", "lines")
        expect(p.locator("#attention-heatmap canvas")).to_have_attribute(
            "aria-label",
            re.compile(r": lines, query: Italian decoder input \(left\), key: English source token \(right\)"),
        )

    restored(page, own_scale_and_lines)
    page.locator("#style label").filter(has_text="heatmap").click()  # the default: left out of the URL
    expect(page).not_to_have_url(re.compile(r"style="))


def test_a_link_to_another_tab_keeps_them_for_the_attention_tab_opened_later(tab, browser):
    """The Attention view drawn only when its tab is first opened, after the page read the URL: it takes the scale
    and the lines from the store rather than writing its defaults over them (a link with scale=own opened at 0–1)."""
    page = tab()
    page.goto(f"{browser.app_url}?tab=map&scale=own&style=lines&view=encoder.2.1")
    translated(page)
    page.locator("#tab-attention-button").click()
    figure = page.locator("#attention-heatmap")
    for name, value in [("scale", "own"), ("view", "lines"), ("kind", "encoder"), ("layer", "2"), ("head", "1")]:
        expect(figure).to_have_attribute(f"data-{name}", value, timeout=WAIT)
    assert {name: query(page)[name] for name in ("scale", "style", "view")} == {
        "scale": ["own"],
        "style": ["lines"],
        "view": ["encoder.2.1"],
    }


def test_inside_one_heads_kind_layer_head_and_query_token_are_kept(page):
    page.locator("#tab-head-button").click()
    expect(page.locator(HEAD)).to_have_attribute("data-state", "drawn", timeout=WAIT)
    for name, value in [("ih-kind", "decoder"), ("ih-layer", "2"), ("ih-head", "2"), ("ih-query", "1")]:
        page.locator(f'{HEAD} input[name="{name}"][value="{value}"]').click()
    expect(page).to_have_url(re.compile(r"[?&]inside=decoder\.2\.2\.2(&|$)"))
    assert query(page)["tab"] == ["head"]
    heading = page.locator(f"{HEAD} .ih-title")  # redrawn once the new head's numbers have come
    expect(heading).to_have_text(re.compile(r"^Decoder self-attention · layer 2 · head 2 · query "), timeout=WAIT)
    expect(page.locator(HEAD)).to_have_attribute("data-state", "drawn", timeout=WAIT)
    title = heading.inner_text()

    def same_head(p):
        expect(p.locator(HEAD)).to_have_attribute("data-state", "drawn", timeout=WAIT)
        expect(p.locator(f"{HEAD} .ih-title")).to_have_text(title)
        expect(p.locator(f'{HEAD} input[name="ih-query"][value="1"]')).to_be_checked()

    restored(page, same_head)


def test_the_open_map_box_is_kept(page):
    page.locator("#tab-map-button").click()
    page.locator(f'{MAP} [data-box="decoder-feed-forward"]').click()
    expect(page.locator(MAP)).to_have_attribute("data-state", "drawn", timeout=WAIT)
    expect(page).to_have_url(re.compile(r"[?&]box=decoder-feed-forward(&|$)"))

    def same_box(p):
        expect(p.locator(MAP)).to_have_attribute("data-open", "decoder-feed-forward", timeout=WAIT)
        expect(p.locator(MAP)).to_have_attribute("data-state", "drawn", timeout=WAIT)
        expect(p.locator(f'{MAP} [data-box="decoder-feed-forward"]')).to_have_class(re.compile(r"\bopen\b"))

    restored(page, same_box)


def test_the_walks_token_and_box_are_kept(page):
    page.locator("#tab-map-button").click()
    page.locator(f'{MAP} input[name="map-walk-encoder"][value="2"]').click()
    for _ in range(3):
        page.locator(f"{MAP} .map-walk-next").click()
    expect(page.locator(MAP)).to_have_attribute("data-walk", "encoder:2:3", timeout=WAIT)
    expect(page).to_have_url(re.compile(r"[?&]walk=encoder\.3\.4(&|$)"))
    expect(page).not_to_have_url(re.compile(r"[?&]box="))

    def same_walk(p):
        expect(p.locator(MAP)).to_have_attribute("data-walk", "encoder:2:3", timeout=WAIT)
        expect(p.locator(f"{MAP} .map-walk-where")).to_have_text(re.compile(r"^box 4 of \d+$"))

    restored(page, same_walk)
    page.locator(f'{MAP} [data-box="decoder-feed-forward"]').click()  # a box opened: the walk left, the URL says so
    expect(page).to_have_url(re.compile(r"[?&]box=decoder-feed-forward(&|$)"))
    expect(page).not_to_have_url(re.compile(r"walk="))


def test_a_links_walk_is_taken_up_when_the_address_is_read_after_the_map_is_mounted(tab, browser):
    """The map, the first tab, is mounted as the page starts, and may be before page.js has put the address's view
    settings in the store: here page.js comes a second late, and the sentence later still (each queued event held
    back). The link's walk is taken up by the first sentence all the same; it was lost when the map read the walk as
    it was mounted."""
    page = tab()

    def late(seconds):
        def handle(route):
            time.sleep(seconds)
            route.continue_()

        return handle

    page.route(re.compile(r"/page\.js$"), late(1.0))
    page.route(re.compile(r"/queue/join"), late(2.0))
    page.goto(f"{browser.app_url}?{urlencode({'text': 'we want the water.', 'tab': 'map', 'walk': 'encoder.3.4'})}")
    translated(page)
    expect(page.locator(MAP)).to_have_attribute("data-walk", "encoder:2:3", timeout=WAIT)
    expect(page).to_have_url(re.compile(r"[?&]walk=encoder\.3\.4(&|$)"))


def test_what_is_none_of_a_views_choices_is_left_out_never_shown(tab, browser):
    """Values of the right form but no choice of the view (no such box), or of no form it reads (markup, a kind it
    lacks, a query token 0): the views show their defaults, nothing of them reaches the page, and the URL drops them."""
    page = tab()
    page.goto(
        f"{browser.app_url}?tab=attention&scale=%3Cimg%20src=x%20onerror=alert(1)%3E&style=bars"
        "&inside=cross.1.1.0&box=constructor&view=%3Cb%3E.1.1&walk=encoder.0.1"
    )
    translated(page)
    figure = page.locator("#attention-heatmap")
    expect(figure).to_have_attribute("data-scale", "fixed")
    expect(figure).to_have_attribute("data-view", "heatmap")
    expect(figure).to_have_attribute("data-kind", "cross")
    page.locator("#tab-map-button").click()
    expect(page.locator(f"{MAP} .map-svg .box").first).to_be_visible(timeout=WAIT)
    expect(page).to_have_url(re.compile(r"tab=map"))
    kept = query(page)
    assert not {"scale", "style", "inside", "box", "walk"} & set(kept), kept
    assert page.locator(MAP).get_attribute("data-walk") is None
    assert page.locator('img[src="x"]').count() == 0
