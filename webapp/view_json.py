"""What each view is given besides a translation's payload (`webapp.payload`): its setup, drawn before any sentence
(`attention_setup`, `map_setup` with the `code_panels`), and the numbers its questions are answered with (one head's
for Inside one head, `head_json`; a box's or a walk's for the Model map, `box_json`, `walk_json`). The app's tabs
(`webapp.tabs`) answer their views with them, and a notebook's views (`webapp.notebook`) are drawn from them with no
server, as bertviz ships the same numbers to its JavaScript from a notebook cell. No Gradio here: a notebook never
imports the web app's framework.
"""

import inspect
from pathlib import Path

import numpy as np

from interpretability.internals import SUBLAYERS
from interpretability.walk import walk
from modeldir.seen import seen_words
from transformer import decoding, model

from .attention_kinds import ATTENTION_KINDS
from .payload import exact, quantized, rounded

ROOT = Path(__file__).resolve().parents[1]  # the repository: the code panels name files relative to it
# The Attention view. The kind radio's order: cross-attention first, the kind a translator's alignment is read from.
RADIO_ORDER = sorted(ATTENTION_KINDS, key=lambda kind: kind != "cross")


def attention_setup(depths, n_heads):
    """What the Attention view draws its controls from before a translation: each kind's depth (`depths`), its
    title in the radio's order, and the number of heads."""
    return {"depths": depths, "titles": {kind: ATTENTION_KINDS[kind].title for kind in RADIO_ORDER}, "heads": n_heads}


def head_json(details):
    """What the page draws one head from, for every query token (`details`: a `HeadQueries`): its kind, 1-based
    layer and head, d_k, the query and key tokens, and per query its q, scores, scores ÷ √d_k, mask (1: hidden),
    exp(scaled − max) (0 where hidden), weights, output, the concatenated heads' outputs, this head's share through
    W_O and the sub-layer's output; k and v, one row per key."""
    arrays = (
        "q",
        "k",
        "v",
        "scores",
        "scaled",
        "exps",
        "weights",
        "output",
        "concat",
        "contribution",
        "attention_output",
    )
    return {
        "kind": details.kind,
        "layer": details.layer + 1,
        "head": details.head + 1,
        "d_k": details.d_k,
        "query_tokens": details.query_tokens,
        "key_tokens": details.key_tokens,
        "masked": details.masked.astype(int).tolist(),
        **{name: rounded(getattr(details, name)) for name in arrays},
    }


# The Model map. Each box of the map -> the code that computes it, in the order a reader would follow it.
# A box of each stack is named "<box>" (both stacks the same code) or "<stack> <box>".
CODE = {
    "embedding": [model.InputEmbedding],
    "position": [model.PositionalEncoding, model.sinusoidal_positional_encoding],
    "self-attention": [model.MultiHeadAttention, model.scaled_dot_product_attention],
    "masked self-attention": [
        model.DecoderLayer.forward,
        model.Transformer.decoder_output,
        model.causal_mask,
        model.MultiHeadAttention,
        model.scaled_dot_product_attention,
    ],
    "cross-attention": [model.DecoderLayer.forward, model.MultiHeadAttention],
    "norm": [model.SublayerConnection],
    "encoder residual": [model.SublayerConnection, model.EncoderLayer],
    "decoder residual": [model.SublayerConnection, model.DecoderLayer],
    "feed-forward": [model.PositionwiseFeedForward],
    "encoder final-norm": [model.Encoder],
    "decoder final-norm": [model.Decoder],
    "linear": [model.Transformer.__init__, model.Transformer.decode],
    "softmax": [decoding.tempered_distribution, decoding.draw_tokens, decoding.greedy_decode],
}
PRE_NORM_NOTE = (
    "Drawn as this model computes it: pre-norm, x + Sublayer(LayerNorm(x)), with one more LayerNorm at "
    "the top of each stack. The paper's Figure 1 is post-norm, LayerNorm(x + Sublayer(x)); pre-norm keeps "
    "an unnormalised path from the input to the output, so it trains stably without the long learning-"
    "rate warm-up post-norm needs (Xiong et al., 2020)."
)


def source_of(obj):
    """{name, file (relative to the repository), start, end, lines} of a class or function, read from its file now
    (a decorated function's own code, not its decorator's)."""
    obj = inspect.unwrap(obj)
    lines, start = inspect.getsourcelines(obj)
    path = Path(inspect.getsourcefile(obj)).resolve()
    return {
        "name": obj.__qualname__,
        "file": path.relative_to(ROOT).as_posix(),
        "start": start,
        "end": start + len(lines) - 1,
        "lines": [line.rstrip("\n") for line in lines],
    }


def code_panels():
    """Per box of the map, the source of each class or function that computes it (`source_of`)."""
    return {box: [source_of(obj) for obj in objects] for box, objects in CODE.items()}


def map_setup(cfg, code):
    """What the Model map draws the map from before any sentence: the config's sizes, the sublayers of each stack, the
    pre-norm note and the code panels."""
    return {
        "d_model": cfg.d_model,
        "n_heads": cfg.n_heads,
        "d_k": cfg.d_model // cfg.n_heads,
        "d_ff": cfg.d_ff,
        "vocab_size": cfg.vocab_size,
        "layers": {"encoder": cfg.n_encoder_layers, "decoder": cfg.n_decoder_layers},
        "norm_first": cfg.norm_first,
        "tied": cfg.tie_embeddings,
        "sublayers": SUBLAYERS,
        "note": PRE_NORM_NOTE,
        "code": code,
    }


def packed_vectors(values):
    """Vectors as int16 bytes (`payload.quantized`), scaled to their largest magnitude: within 1/65,534 of it."""
    largest = float(abs(values).max()) or 1.0
    return quantized(values, 32767 / largest, "int16")


def seen_json(inspection, counts):
    """Per English token, [its word, the training pairs that held it] (None for punctuation and special tokens) and
    whether the model has rarely seen it, and the pairs counted (`modeldir.seen`); None without the model
    directory's word counts."""
    if counts is None:
        return None
    seen = seen_words(inspection.source_tokens, counts)
    return {"words": seen.words, "rare": [seen.is_rare(i) for i in range(len(seen.words))], "pairs": seen.pairs}


def box_json(internals, box, stack_name, index):
    """The vectors of one box for every token of its stack: `embedding` (rows before the scale, and the positional
    encoding added), `norm` number `index` (its input and output, gain and bias), `feed-forward` of layer `index`
    (the hidden units), `output` of decoding step `index` (its finite logits over the whole vocabulary, largest
    first, float32: top-k and top-p are then exact however far they reach). None for a box or index the model
    lacks."""
    stack = internals.stack(stack_name)
    if box == "embedding":
        return {"rows": packed_vectors(stack.embedding), "position": packed_vectors(stack.position)}
    if box == "output" and 0 <= index < len(internals.logits):
        logits = internals.logits[index]
        return {"sorted": exact(-np.sort(-logits[np.isfinite(logits)]))}
    if box == "norm" and 0 <= index < len(stack.norm_inputs):
        return {
            "inputs": packed_vectors(stack.norm_inputs[index]),
            "outputs": packed_vectors(stack.norm_outputs[index]),
            "gain": rounded(internals.gains[stack_name][index]),
            "bias": rounded(internals.biases[stack_name][index]),
        }
    if box == "feed-forward" and 0 <= index < len(stack.hidden):
        return {"hidden": packed_vectors(stack.hidden[index])}
    return None


def walk_json(translator, inspection, stack, position, counts=None):
    """The walk of token `position` of `stack` (`interpretability.walk`) through `translator`'s model: per box, its
    name, layer and kind, the vector it outputs (float32, as the model computed it: its input is the previous box's
    output) and the numbers it computes with; with the model directory's word `counts`, the English token's word and
    its training pairs at the embedding (`seen_json`). None for a position the stack lacks."""
    if not 0 <= position < len(inspection.internals.stack(stack).tokens):
        return None
    tokenizer, seen = translator.tokenizer, seen_json(inspection, counts)

    def numbers_json(step):
        numbers = {
            name: exact(value) if isinstance(value, np.ndarray) else value
            for name, value in step.numbers.items()
            if name != "ids"
        }
        if "ids" in step.numbers:
            numbers["tokens"] = [tokenizer.id_to_token(int(i)) for i in step.numbers["ids"]]
        if step.box == "embedding" and stack == "encoder" and seen:
            numbers["seen"] = {"word": seen["words"][position], "rare": seen["rare"][position], "pairs": seen["pairs"]}
        return numbers

    steps = walk(inspection, translator.model, stack, position)
    return {
        "steps": [
            {
                "box": step.box,
                "layer": step.layer,
                "kind": step.kind,
                "output": exact(step.output),
                "numbers": numbers_json(step),
            }
            for step in steps
        ]
    }
