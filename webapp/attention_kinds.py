"""The three kinds of attention as the tabs name them: encoder self-attention, decoder self-attention and
encoder–decoder cross-attention, and which of an `Inspection`'s tokens label their rows and columns. The encoder and
the decoder may differ in depth: a layer asked of a shallower kind is clamped to its nearest layer, never refused
(`clamp_layer`; the page's views clamp the same way as the kind changes)."""

from dataclasses import dataclass


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


def whole_number(value, default=None):
    """`value` as the page sent it (a number, a numeric string), as an int; `default` when it is none."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def clamp_layer(n_layers, layer):
    """A 1-based layer within 1..n_layers: the nearest one, the last when none (or no number) is chosen."""
    layer = whole_number(layer)
    return n_layers if layer is None else max(1, min(layer, n_layers))
