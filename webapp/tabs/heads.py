"""The "Heads: switch off" tab, the experiments on attention heads: what each head of one kind does for this sentence
(diagnostics: how peaked its attention is and where it goes), the translation with the heads ticked switched off
beside the normal one (with its steps), and how much each head matters over many sentences (the model directory's
head_importance.json). It shows that heads specialise, and that some matter far more than others.

The diagnostics are drawn in the browser from the translation's payload (`heads.js`: kind and measure answered in the
page, a head clicked opened in the Attention tab); the switch-off is the one request, its answer (the comparison and
the new run's payload) drawn in the page too, its steps by the steps tab's panel (`step_panel.js`); a new translation
clears it there. The importance heatmaps are a view of their own (`head_importance.js`), whose clicks tick boxes.

A head is named on the page and in the API as "<kind> L<layer> H<head>" ("cross L2 H3"), 1-based like the radios.
"""

import difflib
import html
import itertools
import re
from pathlib import Path

import gradio as gr
import numpy as np

from inputs.checks import echo
from interpretability.ablation import head_grid

from ..attention_kinds import ATTENTION_KINDS
from ..events import Refusal
from ..payload import translation_payload
from ..texts import ABLATION_HELP, ABLATION_NOT_YET, EMPTY_MESSAGE, HEADS_HELP, IMPORTANCE_MISSING
from ..tokens import output_tokens, token_chips
from ..translation import SHOWN_TRANSLATION, decoding_label, decoding_settings, one_line
from ..views import browser_view
from .steps import markdown_html

HEAD_NAME = re.compile(r"(encoder|decoder|cross) L([0-9]+) H([0-9]+)")  # ASCII digits only: "L١" is no layer
SCRIPT = Path(__file__).with_suffix(".js")  # both views of the tab: the diagnostics, and the switch-off's result
_answers = itertools.count(1)  # each switch-off answer differs from the one before, even for the same heads

# What each diagnostic measures, in the words of the page; `alignment` exists for cross-attention only.
MEASURES = {
    "entropy": "entropy (0 = peaked on one token, 1 = spread evenly)",
    "same": "share on the token itself",
    "previous": "share on the previous token",
    "eos": "share on </s>",
    "punctuation": "share on punctuation",
    "alignment": "one-to-one alignment (cross)",
}


def head_name(kind, layer, head):
    """The page's name of a head from 0-based `layer` and `head`."""
    return f"{kind} L{layer + 1} H{head + 1}"


def parse_head_name(name, grid):
    """(kind, 0-based layer, 0-based head) of a head's name, one of the model's (`grid`: kind -> (layers, heads),
    `ablation.head_grid`); a ValueError that says the format or the model's heads otherwise."""
    match = HEAD_NAME.fullmatch(str(name).strip())
    if not match:
        raise ValueError(
            f"{echo(name)} is not a head: write it as '<kind> L<layer> H<head>', kind one of "
            f"{', '.join(ATTENTION_KINDS)}, e.g. 'cross L2 H3'"
        )
    kind, layer, head = match.group(1), int(match.group(2)), int(match.group(3))
    n_layers, n_heads = grid[kind]
    if not (1 <= layer <= n_layers and 1 <= head <= n_heads):
        raise ValueError(
            f"{echo(name)} is not a head of this model: its {kind} heads are L1..L{n_layers} H1..H{n_heads}"
        )
    return kind, layer - 1, head - 1


def head_choices(kind, n_layers, n_heads):
    """Checkbox choices (label, value) for every head of one kind."""
    return [(f"L{i + 1} H{h + 1}", head_name(kind, i, h)) for i in range(n_layers) for h in range(n_heads)]


# --- Head importance ----------------------------------------------------------------------------------------------


def importance_data(importance):
    """What the importance view draws (`head_importance.js`) of a head_importance.json (`training.head_importance`):
    the BLEU with every head, the largest drop (the colour scale runs from minus it to it, centred on 0), and per
    kind its title and the BLEU drop of each head alone switched off (layers × heads)."""
    drops = {kind: np.round(np.asarray(importance["drop"][kind], dtype=float), 2) for kind in ATTENTION_KINDS}
    limit = max(float(np.abs(d).max()) for d in drops.values()) or 1.0
    return {
        "bleu": float(importance["bleu"]),
        "limit": limit,
        "kinds": [[kind, ATTENTION_KINDS[kind].title, drop.tolist()] for kind, drop in drops.items()],
    }


# --- Heads switched off -----------------------------------------------------------------------------------------


def ablation_html(normal, ablated, heads):
    """The normal translation and the one with `heads` (names) switched off, token by token, the tokens that
    changed marked on both sides (a token-level diff)."""
    before, after = output_tokens(normal), output_tokens(ablated)
    removed, added = set(), set()
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if op != "equal":
            removed.update(range(i1, i2))
            added.update(range(j1, j2))
    off = ", ".join(heads) if heads else "none"
    verdict = (
        "The translation did not change."
        if before == after
        else f"{len(removed)} of the {len(before)} normal tokens and {len(added)} of the {len(after)} with the "
        "heads off differ (marked)."
    )
    return (
        f'<div class="ablation"><p><b>Heads switched off:</b> {html.escape(off)}. {verdict}</p>'
        f"<p><b>Normal:</b> {html.escape(normal.translation)}</p>"
        + token_chips(before, "normal", changed=removed)
        + f"<p><b>With the heads off:</b> {html.escape(ablated.translation)}</p>"
        + token_chips(after, "heads off", changed=added)
        + "</div>"
    )


# --- Events and layout -----------------------------------------------------------------------------------------------


def chosen_heads(served, names):
    """(kind, 0-based layer, 0-based head) of head names ("cross L2 H3"); a gr.Error that says the format or the
    model's heads otherwise."""
    try:
        return [parse_head_name(name, head_grid(served.cfg)) for name in names]
    except ValueError as e:
        raise Refusal(str(e)) from e


def switch_heads_off(served, text, decoding, beam, temperature, top_k, seed, *ticked):
    """The sentence (its lines read as one, as the translation box reads them) translated as usual and with the
    ticked heads (one list per kind) switched off, as the result view's value: the two side by side with the changed
    tokens marked (`comparison`), the heads, and the payload of the run with the heads off (its step panel)."""
    text, _ = one_line(text or "")
    if not text.strip():
        return {"comparison": markdown_html(EMPTY_MESSAGE), "heads": [], "payload": None, "answer": next(_answers)}
    names = [name for group in ticked for name in group or []]
    beam, sampling = decoding_settings(decoding, beam, temperature, top_k, seed)
    normal = served.inspect(text, beam, sampling)
    off = served.inspect(text, beam, sampling, chosen_heads(served, names))
    return {
        "comparison": ablation_html(normal, off, names),
        "heads": names,
        "answer": next(_answers),
        "payload": translation_payload(served.translator, off, decoding_label(beam, sampling)),
    }


def importance_panel(served):
    """The heatmaps of how much each head matters (drawn in the page, a head clicked ticks its box), or how to measure
    it when the model directory has no head_importance.json."""
    measured = served.directory.head_importance
    if not measured:
        gr.Markdown(IMPORTANCE_MISSING.format(model_dir=served.source))
        return
    gr.Markdown(
        f"**How much each head matters:** {measured['data']} BLEU {measured['bleu']:.1f} "
        f"({measured.get('n', '?')} sentences, {measured.get('decoding', 'greedy')}) minus the BLEU with that "
        f"head alone switched off; red: worse without it. Click a head to tick it above."
    )
    browser_view(Path(__file__).with_name("head_importance.js"), "head-importance", setup=importance_data(measured))
    gr.Markdown(f"Measured with `{measured['command']}`.")


def diagnostics_setup():
    """What heads.js draws the diagnostics view's controls and grid from: the kinds and measures, in the page's
    words."""
    return {
        "view": "diagnostics",
        "kinds": [[kind, spec.title] for kind, spec in ATTENTION_KINDS.items()],
        "measures": [list(item) for item in MEASURES.items()],
    }


def result_setup():
    """What heads.js draws the switch-off result view from: what to do, until a switch-off's answer."""
    return {"view": "result", "not_yet": ABLATION_NOT_YET}


def build(served, text, decoding_controls):
    """The tab, wired: the diagnostics of each translation (drawn in the page), the heads to switch off and the
    translation the page shows without them (its sentence and settings sent in place of `text` and the
    `decoding_controls`: `translation.SHOWN_TRANSLATION`) with its steps, and the importance of each head. No event
    of the tab runs on a translation."""
    gr.Markdown(HEADS_HELP)
    browser_view(SCRIPT, "head-diagnostics", setup=diagnostics_setup())
    gr.Markdown(ABLATION_HELP)
    with gr.Row():  # each kind's boxes a grid, one row per layer, one column per head (style.py: .head-grid)
        heads_off = [
            gr.CheckboxGroup(
                head_choices(kind_id, *shape),
                label=ATTENTION_KINDS[kind_id].title,
                elem_id=f"off-{kind_id}",
                elem_classes=["head-grid", f"heads-{shape[1]}"],
                min_width=76 * shape[1] + 40,
            )  # a layer's heads on one line
            for kind_id, shape in head_grid(served.cfg).items()
        ]
    button = gr.Button("Translate with these heads switched off", variant="primary", elem_id="ablate")
    result = browser_view(SCRIPT, "ablation-result", setup=result_setup())
    importance_panel(served)
    button.click(
        served.bind(switch_heads_off),
        [text, *decoding_controls, *heads_off],
        result,
        js=SHOWN_TRANSLATION,
        api_visibility="private",
        **served.queue,
    )
