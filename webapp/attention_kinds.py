"""The three kinds of attention as the tabs name and pick them: encoder self-attention, decoder self-attention and
encoder–decoder cross-attention, which of an `Inspection`'s tokens label their rows and columns, and the kind and
layer radios the attention, inside-one-head and heads tabs share.

The encoder and the decoder may differ in depth, so the layer radio offers the layers of the kind shown. Its value is
clamped, never rejected: the browser lowers it at once when a shallower kind is chosen (`clamp_layer_js`), the server
reads whatever layer arrives (`controls.NumberRadio`: a click landing while the choices change sends a layer the new
kind lacks) and draws the kind's nearest layer, setting the radio to it (`chosen_layer`), so the radio and the figure
always name the same layer."""

import json
from dataclasses import dataclass

import gradio as gr

from .controls import NumberRadio


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
    return NumberRadio(list(range(1, served.layers("cross") + 1)), value=1, label="Layer", scale=1, elem_id=elem_id)


def clamp_layer(n_layers, layer):
    """A 1-based layer within 1..n_layers: the nearest one, the last when none is chosen."""
    return n_layers if layer is None else max(1, min(int(layer), n_layers))


def chosen_layer(served, kind, layer):
    """(0-based layer to draw, the layer radio's update: the choices of `kind`). The radio's value is sent only when
    the layer read was not one of the kind's (then it moves to the one drawn), so an answer never undoes a click on a
    valid layer made while it was computed."""
    n = served.layers(kind)
    shown = clamp_layer(n, layer)
    choices = list(range(1, n + 1))
    return shown - 1, gr.Radio(choices=choices) if shown == layer else gr.Radio(choices=choices, value=shown)


def clamp_layer_js(depths):
    """Browser code for a new kind of attention: the layer radio drops to the kind's last layer (`depths`: kind ->
    layers) when it was deeper (or none was chosen), at once, before any answer from the server could overwrite a later
    click."""
    return f"(kind, layer) => {{ const n = {json.dumps(depths)}[kind]; return Math.min(layer || n, n); }}"


def clamp_layer_on_kind_change(served, kind, layer, **options):
    """Wire `clamp_layer_js` to the kind radio `kind` and its layer radio `layer` (`options`: the event's)."""
    depths = {k: served.layers(k) for k in ATTENTION_KINDS}
    kind.input(None, [kind, layer], layer, js=clamp_layer_js(depths), **options)
