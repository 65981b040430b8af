"""What the page shows of one `Inspection`, without drawing: the kinds of attention (row labels, masked cells),
decoding steps, raw weights as JSON, tokens as HTML chips, the status line with its warnings, and the two small
browser scripts of the controls. Tokens are shown exactly as the tokenizer writes them ("▁" marks the start of a word).
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
SIDE_NAMES = {"source": "English source token", "target": "Italian decoder input",
              "produced": "Italian token produced at that step"}
ROW_LABELS = {"input": "decoder input", "produced": "token produced"}  # the two namings of Italian rows


def attention_maps(inspection, kind):
    """(maps (layers, heads, queries, keys), query tokens, key tokens) of one kind of attention."""
    spec = ATTENTION_KINDS[kind]
    tokens = {"source": inspection.source_tokens, "target": inspection.target_tokens}
    return getattr(inspection, spec.field), tokens[spec.query_side], tokens[spec.key_side]


MASKED = "#cfcfcf"  # the colour of masked cells (future positions): the background seen through NaN cells


def causal_masked(weights, kind):
    """Decoder self-attention with the future positions (keys after the query) as NaN, to be drawn grey, not as
    zeros; other kinds unchanged."""
    if kind != "decoder":
        return weights
    weights = np.array(weights, dtype=np.float64)
    weights[..., np.triu(np.ones(weights.shape[-2:], dtype=bool), k=1)] = np.nan
    return weights


def query_tokens(inspection, kind, rows="input"):
    """The row labels of one kind: with `rows="produced"`, Italian rows are named by the token chosen at that step
    (row `▁amo` of "ti amo." becomes `.`), so a beginner sees "amo" line up with "love"."""
    _, queries, _ = attention_maps(inspection, kind)
    return output_tokens(inspection) if rows == "produced" and ATTENTION_KINDS[kind].query_side == "target" else queries


def axis_titles(kind, rows="input"):
    """(column title, row title) of a heatmap of one kind."""
    spec = ATTENTION_KINDS[kind]
    query_side = "produced" if rows == "produced" and spec.query_side == "target" else spec.query_side
    return f"Key: {SIDE_NAMES[spec.key_side]} (columns)", f"Query: {SIDE_NAMES[query_side]} (rows)"


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


def token_chips(tokens, label, highlight=None, changed=()):
    """HTML chips for tokens (escaped: a token may be a piece of the user's input); special tokens are greyed, the
    token at index `highlight` is marked, and so are those at the indices `changed` (in another colour)."""
    chips = "".join(
        f'<span class="chip{" special" if t in SPECIAL_TOKENS else ""}{" chosen" if i == highlight else ""}'
        f'{" changed" if i in changed else ""}" title="position {i}">{html.escape(t)}</span>'
        for i, t in enumerate(tokens)
    )
    return f'<div class="chips"><span class="chips-label">{html.escape(label)}</span>{chips}</div>'


def decoding_label(beam, sampling=None):
    """Words for a decoding: greedy, beam search with its width, or sampling with its settings."""
    if sampling is not None:
        top_k = f", top-{sampling.top_k}" if sampling.top_k else ""
        return f"sampling (temperature {sampling.temperature:g}{top_k}, seed {sampling.seed})"
    return "greedy" if beam == 1 else f"beam search ({beam} beams)"


def translation_status(seconds, decoding, report, italian_tokens, max_tokens):
    """The status line under a translation (`decoding`: `decoding_label`; tokens counted without the closing </s>, as
    the truncation note does), then a warning for each thing in the input the model may not have read
    (`interpretability.input_report`)."""
    lines = [f"Translated in {seconds:.2f} s · {decoding} · {report.tokens} English → {italian_tokens} Italian tokens "
             f"(not counting `{EOS}`)"]
    if report.unreadable:
        strength = "Warning" if report.unreadable_share >= 0.25 else "Note"
        lines.append(f"**⚠️ {strength}: {report.unreadable} of the {report.tokens} English tokens "
                     f"({report.unreadable_share:.0%}) are characters this model never learnt (emoji, other scripts, "
                     "symbols), read as unknown or byte by byte: the translation of those parts is a guess.**")
    if report.truncated:
        lines.append(f"**⚠️ Note: your text is longer than the model reads ({max_tokens} tokens): only the beginning "
                     "was translated.**")
    elif report.long:
        lines.append(f"**⚠️ Note: {report.tokens} tokens is far longer than the sentences this model learnt from: "
                     "expect a weaker translation, or translate one sentence at a time.**")
    return "\n\n".join(lines)


def clamp_layer_js(depths):
    """Browser code for a new kind of attention: the layer radio drops to the kind's last layer (`depths`: kind ->
    layers) when it was deeper, at once, before any answer from the server could overwrite a later click."""
    return f"(kind, layer) => Math.min(layer, {json.dumps(depths)}[kind])"


def move_step_js(slider_id, delta):
    """Browser code for ◀/▶: the step slider moves at once, within its ends, with no round trip to the server."""
    return (f"(step) => {{ const r = document.querySelector('#{slider_id} input[type=range]'); "
            f"return Math.max(1, Math.min(step + ({delta}), r ? Number(r.max) : step)); }}")
