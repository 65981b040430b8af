"""The three kinds of attention as the tabs name and pick them: encoder self-attention, decoder self-attention and
encoder–decoder cross-attention, which of an `Inspection`'s tokens label their rows and columns, and the kind and
layer radios the attention, inside-one-head and heads tabs share."""

from dataclasses import dataclass

import gradio as gr


@dataclass(frozen=True)
class AttentionKind:
    title: str
    field: str  # Inspection attribute holding (layers, heads, queries, keys)
    query_side: str  # "source" or "target": which tokens label the rows
    key_side: str  # ... and the columns


ATTENTION_KINDS = {
    "encoder": AttentionKind("Encoder self-attention", "encoder_attention", "source", "source"),
    "decoder": AttentionKind("Decoder self-attention", "decoder_attention", "target", "target"),
    "cross": AttentionKind("Encoder–decoder cross-attention", "cross_attention", "target", "source"),
}


def attention_maps(inspection, kind):
    """(maps (layers, heads, queries, keys), query tokens, key tokens) of one kind of attention."""
    spec = ATTENTION_KINDS[kind]
    tokens = {"source": inspection.source_tokens, "target": inspection.target_tokens}
    return getattr(inspection, spec.field), tokens[spec.query_side], tokens[spec.key_side]


def kind_radio(elem_id, scale=3):
    """The radio of the kinds of attention (values: the kinds' ids), cross-attention chosen."""
    return gr.Radio([(spec.title, kind) for kind, spec in ATTENTION_KINDS.items()], value="cross", label="Attention",
                    scale=scale, elem_id=elem_id)


def layer_radio(served, elem_id):
    """The layer radio (1-based), for cross-attention's layers at first."""
    return gr.Radio(list(range(1, served.layers("cross") + 1)), value=1, label="Layer", scale=1, elem_id=elem_id)


def chosen_layer(served, kind, layer):
    """(0-based layer, the layer radio's choices for `kind`). The radio's value is never set here (the browser lowers
    it at once when the kind has fewer layers: `attention.clamp_layer_js`), so an answer never undoes a click made
    while it was computed."""
    n = served.layers(kind)
    return min(int(layer), n) - 1, gr.Radio(choices=list(range(1, n + 1)))
