"""The page's script (`launch(js=)`): the store the views share (`store.js`), then `page.js`, the plumbing of the whole
page (the keyboard: one Tab stop per group of choices, the arrow keys within it; the open tab and the view in the
URL). The views' own scripts run in their components (`webapp.views`)."""

from pathlib import Path

HERE = Path(__file__).parent
STORE_JS = (HERE / "store.js").read_text(encoding="utf-8")
PAGE_SCRIPT = f"() => {{\n{STORE_JS}\n({(HERE / 'page.js').read_text(encoding='utf-8').strip()})();\n}}"
