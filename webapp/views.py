"""What the page shows of one `Inspection`, without drawing: the kinds of attention, decoding steps, raw weights as
JSON and tokens as HTML chips. Tokens are shown exactly as the tokenizer writes them ("▁" marks the start of a word).
"""

import html
import json
from dataclasses import dataclass

import numpy as np

from transformer.tokenizer import EOS, SPECIAL_TOKENS


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
SIDE_NAMES = {"source": "English source token", "target": "Italian decoder input"}


def attention_maps(inspection, kind):
    """(maps (layers, heads, queries, keys), query tokens, key tokens) of one kind of attention."""
    spec = ATTENTION_KINDS[kind]
    tokens = {"source": inspection.source_tokens, "target": inspection.target_tokens}
    return getattr(inspection, spec.field), tokens[spec.query_side], tokens[spec.key_side]


def axis_titles(kind):
    """(column title, row title) of a heatmap of one kind."""
    spec = ATTENTION_KINDS[kind]
    return f"Key: {SIDE_NAMES[spec.key_side]} (columns)", f"Query: {SIDE_NAMES[spec.query_side]} (rows)"


def head_label(head):
    """Words for a head choice: "mean", "all" or a 0-based index."""
    return {"mean": "mean over heads", "all": "all heads"}.get(head) or f"head {head + 1}"


def attention_json(inspection, kind):
    """The raw weights of one kind with their tokens, as a self-describing JSON document."""
    maps, queries, keys = attention_maps(inspection, kind)
    return json.dumps({
        "kind": ATTENTION_KINDS[kind].title,
        "shape": "layers x heads x queries x keys (each row sums to 1)",
        "query_tokens": queries,
        "key_tokens": keys,
        "translation": inspection.translation,
        "attention": np.round(maps.astype(np.float64), 6).tolist(),
    }, ensure_ascii=False)


def decoding_steps(inspection):
    """Number of decoder steps: one per generated token plus the step that produced EOS."""
    return len(inspection.target_tokens)


def step_tokens(inspection, step):
    """(prefix the decoder sees, token it chose) at 1-based `step`."""
    targets = inspection.target_tokens
    return targets[:step], targets[step] if step < len(targets) else EOS


def output_tokens(inspection):
    """The tokens the decoder wrote, EOS included."""
    return inspection.target_tokens[1:] + [EOS]


def token_chips(tokens, label, highlight=None):
    """HTML chips for tokens (escaped: a token may be a piece of the user's input); special tokens are greyed and
    the token at index `highlight` is marked."""
    chips = "".join(
        f'<span class="chip{" special" if t in SPECIAL_TOKENS else ""}{" chosen" if i == highlight else ""}" '
        f'title="position {i}">{html.escape(t)}</span>'
        for i, t in enumerate(tokens)
    )
    return f'<div class="chips"><span class="chips-label">{html.escape(label)}</span>{chips}</div>'
