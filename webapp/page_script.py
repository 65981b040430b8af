"""The page's script (`launch(js=)`): `page.js`, the plumbing that hooks the plotly views as they are drawn, with each
tab's own script (a `.js` file beside its module) plugged in."""

from pathlib import Path

PLUMBING = (Path(__file__).parent / "page.js").read_text(encoding="utf-8")


def script_beside(module_file):
    """The script of a tab: the `.js` file named as its module (a function of the `page` helpers, see page.js)."""
    return Path(module_file).with_suffix(".js").read_text(encoding="utf-8").strip()


def page_script(*tab_scripts):
    """page.js with `tab_scripts` called at the start, each given the `page` helpers."""
    return PLUMBING.replace("/* TAB SCRIPTS */", ",\n".join(tab_scripts))
