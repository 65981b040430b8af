"""The page's views in a notebook's output cell (Jupyter, JupyterLab, VS Code, Colab), as bertviz's `head_view` is
called from a cell: `show_attention`, `show_head` and `show_map` translate a sentence with a `Translator` and return
an object the notebook displays (`_repr_html_`), drawn by the same code as the app: the same payload
(`payload.shown_payload`), the same modules (`store.js`, `views.js`, the tab's), read from their files.

Each view is a whole document in an `<iframe srcdoc>`: its modules written into one inline script
(`page_script.bundle`: nothing to fetch, works offline, and an inline script is what every notebook front end runs)
and its own store, so several views on one page never share a choice, an element id or a test hook. There is no
server behind a notebook's output: what a view asks the server for in the app (a head's numbers, a box's vectors) is
computed here, before the view is drawn, and answered in the page (`notebook.js`).

It lives in `webapp`, not `interpretability`: it draws the app's views, whose payload, templates and scripts are the
app's, and no package may import one above it (tests/test_layering.py).
"""

import html
import json
from dataclasses import dataclass, field

from inputs.request import one_line
from interpretability import head_details, inspect
from interpretability.head_details import ALL_QUERIES
from interpretability.internals import STACKS

from .attention_kinds import ATTENTION_KINDS
from .page_script import HERE, MOUNT, bundle, bundled, view_css
from .payload import shown_payload
from .style import CSS as PAGE_CSS
from .view_json import attention_setup, box_json, code_panels, head_json, map_setup, walk_json

HOST = HERE / "notebook.js"
TABS = HERE / "tabs"  # each view's module: tabs/attention.js, tabs/inside_head.js, tabs/model_map.js
# What Gradio's theme gives the views in the app (its CSS variables, its radios), for a document of their own.
BASE_CSS = """
:root { --font-sans: system-ui, sans-serif; --font-mono: ui-monospace, Menlo, Consolas, monospace;
  --border-color-primary: #d1d5db; --color-accent-soft: #e0e7ff; --button-secondary-background-fill: #f3f4f6;
  --body-text-color: #1f2937; }
body { margin: 4px; font: 14px/1.45 var(--font-sans); color: var(--body-text-color); background: #fff; }
fieldset.view-radio { display: inline-flex; flex-wrap: wrap; gap: 4px; align-items: center; border: 0;
  margin: 0 16px 6px 0; padding: 0; }
fieldset.view-radio legend { float: left; margin-right: 6px; font-weight: 600; }
fieldset.view-radio label { display: inline-flex; align-items: center; gap: 4px; padding: 2px 8px; cursor: pointer;
  border: 1px solid var(--border-color-primary); border-radius: 6px; }
fieldset.view-radio label.selected { background: var(--color-accent-soft); }
.view-note { color: #9a3412; }
"""


@dataclass(frozen=True)
class NotebookView:
    """One view as a notebook shows it: `document`, a whole HTML page, in an iframe as tall as the view (`height`
    until its script has measured it)."""

    title: str
    document: str = field(repr=False)  # a page of a few hundred kB
    height: int

    def _repr_html_(self):
        return (
            f'<iframe title="{html.escape(self.title)}" srcdoc="{html.escape(self.document, quote=True)}" '
            f'style="width: 100%; height: {self.height}px; border: 0;"></iframe>'
        )


def view_document(title, script, setup):
    """The page of the view whose module is `script` (a tab's `.js`), styled by its CSS (`page_script.view_css`),
    mounted by `notebook.js` (`showView`) with `setup` (the payload, the view's own setup (`props.setup`), the store
    and radio choices to start from, the answers its questions get)."""
    data = json.dumps(setup).replace("</", "<\\/")  # no "</script>" inside the script
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{BASE_CSS}{PAGE_CSS}{view_css(script)}</style></head>
<body><div id="view">{MOUNT}</div><p id="view-note" class="view-note" hidden></p>
<script>
{bundle([HOST, script])}
{bundled(HOST)}.showView({data}, {bundled(script)});
</script></body></html>"""


def translated(translator, sentence, beam):
    """(Inspection, payload) of `sentence` as the app makes them; a ValueError that says why for an empty one."""
    if not isinstance(sentence, str) or not sentence.strip():
        raise ValueError("Give an English sentence to translate, e.g. 'The cat sleeps.'")
    text, _ = one_line(sentence)
    inspection = inspect(translator, text, beam)
    return inspection, shown_payload(translator, inspection, text, beam, None)


def checked_head(payload, kind, layer, head, choices=()):
    """`kind`, `layer` (1-based) and `head` (1-based, or one of `choices`) if the model has them; a ValueError that
    names what it has otherwise."""
    if kind not in ATTENTION_KINDS:
        raise ValueError(f"kind must be one of {', '.join(ATTENTION_KINDS)}, got {kind!r}")
    layers, heads = payload["attention"][kind]["shape"][:2]
    if not (isinstance(layer, int) and 1 <= layer <= layers):
        raise ValueError(f"layer must be 1..{layers} for {kind} attention, got {layer!r}")
    if head not in choices and not (isinstance(head, int) and 1 <= head <= heads):
        raise ValueError(f"head must be 1..{heads}{''.join(f' or {c!r}' for c in choices)}, got {head!r}")


def show_attention(translator, sentence, kind="cross", layer=1, head="mean", beam=1):
    """The Attention tab for `sentence`: every map of the translation, `kind`'s layer `layer` and `head` (1-based,
    "mean" or "all") shown first, every control answered in the page."""
    _, payload = translated(translator, sentence, beam)
    checked_head(payload, kind, layer, head, ("mean", "all"))
    depths = {name: payload["attention"][name]["shape"][0] for name in ATTENTION_KINDS}
    setup = {
        "payload": payload,
        "view": attention_setup(depths, payload["attention"][kind]["shape"][1]),
        "store": {"attention": {"kind": kind, "layer": layer, "head": head}},
        "clicks": [],
        "answers": {},
    }
    return NotebookView("Attention", view_document("Attention", TABS / "attention.js", setup), height=900)


def show_head(translator, sentence, kind="cross", layer=1, head=1, beam=1):
    """Inside one head for `sentence`: `kind`'s layer `layer`, head `head` (1-based), every query token. The numbers
    of every head of that layer come with the view (the app asks its server for them), so its head radio is answered
    in the page; another kind or layer names the call that shows it."""
    inspection, payload = translated(translator, sentence, beam)
    checked_head(payload, kind, layer, head)
    n_heads = payload["attention"][kind]["shape"][1]
    found = [head_json(head_details(translator, inspection, kind, layer - 1, h, ALL_QUERIES)) for h in range(n_heads)]
    setup = {
        "payload": payload,
        "store": {},
        "clicks": [["ih-kind", kind], ["ih-layer", layer], ["ih-head", head]],
        "answers": {
            "head_numbers": {
                "fields": ["kind", "layer", "head"],
                "found": found,
                "missing": f"show_head(translator, {sentence!r}, kind={{kind}}, layer={{layer}}, head={{head}})",
            }
        },
    }
    document = view_document("Inside one head", TABS / "inside_head.js", setup)
    return NotebookView("Inside one head", document, height=1200)


def show_map(translator, sentence, beam=1):
    """The Model map for `sentence`: the paper's Figure 1 drawn for this model, each box opening its numbers and
    every token's walk through the boxes (all computed with the view), and the code of `transformer/` that computes
    them."""
    inspection, payload = translated(translator, sentence, beam)
    internals = inspection.internals
    boxes = [(name, "embedding", 0) for name in STACKS]
    for name in STACKS:
        stack = internals.stack(name)
        boxes += [(name, "norm", i) for i in range(len(stack.norm_inputs))]
        boxes += [(name, "feed-forward", i) for i in range(len(stack.hidden))]
    found = [
        {"box": box, "stack": name, "index": index, **box_json(internals, box, name, index)}
        for name, box, index in boxes
    ]
    found += [
        {"box": "walk", "stack": name, "index": i, **walk_json(translator, inspection, name, i)}
        for name in STACKS
        for i in range(len(internals.stack(name).tokens))
    ]
    setup = {
        "payload": payload,
        "view": map_setup(translator.model.cfg, code_panels()),
        "store": {},
        "clicks": [],
        "answers": {
            "map_numbers": {
                "fields": ["box", "stack", "index"],
                "found": found,
                "missing": "the {box} box of the {stack}",
            }
        },
    }
    return NotebookView("Model map", view_document("Model map", TABS / "model_map.js", setup), height=800)
