"""The page's script (`launch(js=)`): `page.js`, the plumbing of the whole page (the keyboard: one Tab stop per group
of choices, the arrow keys within it). The views' own scripts run in their components (`webapp.views`)."""

from pathlib import Path

PAGE_SCRIPT = (Path(__file__).parent / "page.js").read_text(encoding="utf-8")
