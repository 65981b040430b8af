"""What the browser tests share (their fixtures are in conftest.py: `browser`, the app on a tiny model with 2
encoder and 3 decoder layers, served once for the session; `page`, a fresh page of it): ways to act on the page as a
person would. Importing this skips a module where Playwright or Chromium is missing."""

import re
from pathlib import Path
from urllib.parse import urlencode

import pytest

CHROMIUM = "/usr/bin/chromium"
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)
expect = sync_api.expect
WAIT = 60_000  # ms: a loaded CI machine answers slowly, which is not what is tested here
# ms a test waits before saying the page asked the server nothing: a view asks at once, in the click's own task (a
# request that a server's answer would trigger is waited for by the test before).
NO_REQUEST_MS = 300


TEST_HOOKS = "globalThis.translatorTestHooks = true"  # the page shows what it drew (webapp/store.js: exposeForTests)


def new_page(browser, width=1400, height=1000):
    """A blank page of `browser`, `width` x `height`, whose views expose what they draw to the tests. Every page
    opens in the browser's one context, as a visitor's tabs do: Gradio's scripts come from its cache after the first
    page (fetched anew, and compressed anew by the app, they cost each page a third more CPU)."""
    if not browser.contexts:
        browser.new_context().add_init_script(TEST_HOOKS)
    page = browser.contexts[0].new_page()
    page.set_viewport_size({"width": width, "height": height})
    return page


def at_tab(url, tab, text=None):
    """The app's `url` opened at the tab `tab` (its id: "attention", "steps"...; the page reads it from the URL), with
    the sentence `text` translated on load where one is given (a shared link), else the box's own."""
    query = {"tab": tab} if text is None else {"text": text, "tab": tab}
    return f"{url}?{urlencode(query)}"


def translated(page):
    """`page`, once it shows a translation: the sentence it translates on load, or a link's."""
    expect(page.locator("#status")).to_contain_text("Translated in", timeout=WAIT)
    return page


def load_app(page, url, tab="attention", text=None):
    """`page` navigated afresh to the app at `url` with the tab `tab` open (the Attention tab, which the browser tests
    were written for, not the model map the page opens first), after the sentence it translates on load (`text`, a
    link's, where one is given: a test about one sentence opens its link, one translation per page, not two)."""
    page.goto(at_tab(url, tab, text))
    return translated(page)


def open_app(browser, url, width=1400, height=1000, tab="attention"):
    """The app (`load_app`) in a new page, `width` x `height`."""
    return load_app(new_page(browser, width, height), url, tab)


class ReusedTab:
    """The browser tests' pages (conftest.py: `page`, `tab`): one Chromium tab, navigated afresh for each test. A new
    tab costs Chromium 2.1 s of CPU until its first translation is shown (a renderer process started, Gradio's scripts
    compiled), a navigation 0.8 s. What a test leaves on the tab is cleared: its routes, its size; the listeners it
    added see later tests' events, harmlessly. A navigation is a fresh page as a link opened in a new tab is (the page
    keeps nothing in the browser's storage; a reload, not a navigation, may restore form fields), so a test that
    opens a link opens it here. A test that changes the tab otherwise (its network slowed) opens a new one."""

    def __init__(self, browser, url):
        self.browser, self.url, self.tab = browser, url, None

    def blank(self, width=1400, height=1000):
        """The tab, cleared and `width` x `height`, for the test to navigate."""
        if self.tab is None or self.tab.is_closed():
            self.tab = new_page(self.browser, width, height)
        else:
            self.tab.unroute_all(behavior="ignoreErrors")
            self.tab.set_viewport_size({"width": width, "height": height})
        return self.tab

    def open_app(self, width=1400, height=1000, tab="attention", text=None):
        return load_app(self.blank(width, height), self.url, tab, text)

    def open_sentence(self, text, italian, tab="attention"):
        """The app opened at the link of the sentence `text` (1400 x 1000, `tab` open), once it shows `italian`."""
        page = self.open_app(tab=tab, text=text)
        expect(page.locator("#italian textarea")).to_have_value(italian, timeout=WAIT)
        return page


def title(page, elem_id):
    return page.locator(f"#{elem_id} .gtitle").first


def option(page, radio_id, name):
    """The choice `name` of the radio group `radio_id`, by its exact label: a Gradio radio or a view's own."""
    return page.locator(f"#{radio_id} label").filter(has_text=re.compile(rf"^\s*{re.escape(name)}\s*$"))


def choose(page, radio_id, name):
    option(page, radio_id, name).click()


def open_tab(page, name):
    """Open a tab by its name, from the tab bar or, on a narrow screen, from the menu of the tabs left out of it."""
    tab = page.get_by_role("tab", name=name, exact=True)
    if not tab.is_visible():
        page.get_by_role("button", name="More tabs").click()
        tab = page.locator(".overflow-dropdown button").filter(has_text=name)
    tab.click()


def choose_decoding(page, name):
    """Choose a decoding in the decoding settings (an accordion, opened first when closed)."""
    if not page.locator("#decoding").is_visible():
        page.locator("#decoding-settings .label-wrap").click()
    choose(page, "decoding", name)


def page_point(canvas, x, y):
    """The page coordinates of the point (x, y) of a canvas's drawing (views.js: sizedCanvas), the canvas scrolled
    into view: a narrow page shows the drawing smaller than it is drawn."""
    canvas.evaluate("e => e.scrollIntoView({block: 'center'})")
    left, top, shown = canvas.evaluate(
        "e => { const r = e.getBoundingClientRect(); return [r.x, r.y, r.width / e.__size[0]]; }"
    )
    return left + x * shown, top + y * shown


def no_error_shown(page, wait_ms=800):
    """No error pop-up now, nor within `wait_ms` (a late answer's error would land then)."""
    page.wait_for_timeout(wait_ms)
    expect(page.locator(".toast-body")).to_have_count(0)


def translate(page, sentence, expected):
    page.locator("#english textarea").fill(sentence)
    page.locator("#translate").click()
    expect(page.locator("#italian textarea")).to_have_value(expected, timeout=WAIT)


def server_requests(page):
    """The requests the page sends the server from now on, as (url, body): not static files, nor the connection's
    heartbeat."""
    requests = []
    page.on(
        "request",
        lambda r: "/gradio_api/" in r.url and "heartbeat" not in r.url and requests.append((r.url, r.post_data or "")),
    )
    return requests


def joins(requests):
    """The queue joins among `server_requests`: one per event the page asks the server to run."""
    return [url for url, _ in requests if "/queue/join" in url]
