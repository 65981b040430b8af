"""The three kinds of attention (`interpretability.kinds.ATTENTION_KINDS`) as the tabs name them, and which of an
`Inspection`'s tokens label their rows and columns. The encoder and the decoder may differ in depth: a layer asked of
a shallower kind is clamped to its nearest layer, never refused (`clamp_layer`; the page's views clamp the same way as
the kind changes)."""

from dataclasses import dataclass

from inputs.checks import as_whole_number
from interpretability.kinds import ATTENTION_KINDS as MODEL_KINDS

TITLES = {
    "encoder": "Encoder self-attention",
    "decoder": "Decoder self-attention",
    "cross": "Encoder–decoder cross-attention",
}


@dataclass(frozen=True)
class AttentionKind:
    title: str
    query_side: str  # "source" or "target": which tokens label the rows
    key_side: str  # ... and the columns


ATTENTION_KINDS = {kind: AttentionKind(TITLES[kind], *sides) for kind, sides in MODEL_KINDS.items()}


def attention_maps(inspection, kind):
    """(maps (layers, heads, queries, keys), query tokens, key tokens) of one kind of attention."""
    return inspection.attention(kind)


def whole_number(value, default=None):
    """`value` as the page sent it (a number, a numeric string), as an int; `default` when it is none."""
    number = as_whole_number(value)
    return default if number is None else number


def clamp_layer(n_layers, layer):
    """A 1-based layer within 1..n_layers: the nearest one, the last when none (or no number) is chosen."""
    layer = whole_number(layer)
    return n_layers if layer is None else max(1, min(layer, n_layers))
