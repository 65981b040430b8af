"""The app in a real browser: headless Chromium (Debian's /usr/bin/chromium) driven by Playwright types a sentence,
clicks Translate, and sees the Italian text and the attention heatmap."""

import os
from pathlib import Path

import pytest
from test_app import serve_app

CHROMIUM = "/usr/bin/chromium"
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)


def test_translate_in_the_browser(tiny_model_dir, translator, tmp_path):
    sentence = "they want the book."
    expected = translator.translate(sentence)
    screenshot = Path(os.environ.get("APP_SCREENSHOT", tmp_path / "app.png"))
    with serve_app(tiny_model_dir) as url, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url)
            status = page.locator("#status")
            sync_api.expect(status).to_contain_text("Translated in", timeout=60_000)  # the example shown on load
            heatmap = page.locator("#attention-heatmap img")
            sync_api.expect(heatmap).to_be_visible(timeout=60_000)
            first_heatmap = heatmap.get_attribute("src")
            page.locator("#english textarea").fill(sentence)
            page.locator("#translate").click()
            sync_api.expect(page.locator("#italian textarea")).to_have_value(expected, timeout=60_000)
            chips = page.locator(".chip")
            sync_api.expect(chips.filter(has_text="▁book")).to_have_count(1)
            sync_api.expect(heatmap).not_to_have_attribute("src", first_heatmap, timeout=60_000)  # redrawn
            assert page.evaluate("img => img.complete && img.naturalWidth > 300", heatmap.element_handle())
            page.screenshot(path=screenshot, full_page=True)
        finally:
            browser.close()
    assert screenshot.stat().st_size > 10_000
