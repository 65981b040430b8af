"""The "Model map" tab: Figure 1 of the paper drawn for the loaded model (its layer counts, d_model, h, d_k, d_ff), as
the model is (pre-norm: Norm → sublayer → Add), each arrow carrying its tensor's shape for the sentence translated.
Every box opens its live numbers and the code that computes them: the class or function of `transformer/`, with its
file and line numbers, read from the source when the app starts (`code_panels`), never a copy that can drift.

One view drawn in the browser (`model_map.js`, styled by `model_map.css`), from the setup `setup_json` gives it.
What a box shows at once comes in the translation's payload (`webapp.payload.map_json`: lengths, ratios, statistics,
the output layer's top logits); the vectors themselves (a token's embedding row, a norm's input and output, the
feed-forward's hidden units, a step's logits over the whole vocabulary) come in one request when a box is first
opened for a translation (the view's question `map_numbers`, answered by `map_numbers` for the translation the page
shows, as "Inside one head" asks for a head). The attention boxes open the Attention and Inside one head tabs.

"Follow a token", the first thing the map offers, walks one English token or one Italian step through every box in
the order the model computes (`interpretability.walk`): its vectors come in one request (`walk_json`), and every box
after that is drawn in the page.
"""

import inspect
from pathlib import Path

import gradio as gr
import numpy as np

from interpretability.internals import STACKS, SUBLAYERS
from interpretability.walk import walk
from modeldir.seen import seen_words
from transformer import decoding, model

from ..events import QUIET
from ..payload import exact, quantized, rounded
from ..translation import shown_inspection
from ..views import answer, browser_view, question

ROOT = Path(__file__).resolve().parents[2]
# Each box of the map -> the code that computes it, in the order a reader would follow it.
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


def setup_json(cfg, code):
    """What the view draws the map from before any sentence: the config's sizes, the sublayers of each stack, the
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


def map_numbers(served, evt: gr.EventData):
    """The answer to the view's `map_numbers` event ({translation, shown, box, stack, index}: the payload's id, its
    request, and the box opened, or "walk" and the token followed): `box_json` or `walk_json` of the translation the
    page shows (`translation.shown_inspection`), the question echoed so the page draws only the answer to its latest
    one; None before any translation or for a box the model lacks."""
    asked = question(evt, "translation", "shown", "box", "stack", "index")
    stack, box = asked["stack"], asked["box"]
    index = asked["index"] if isinstance(asked["index"], int) else 0
    inspection = shown_inspection(served, asked["shown"]) if stack in STACKS else None
    if inspection is None:
        numbers = None
    elif box == "walk":
        numbers = walk_json(served.translator, inspection, stack, index, served.directory.word_counts)
    else:
        numbers = box_json(inspection.internals, box, stack, index)
        if box == "embedding" and stack == "encoder" and numbers is not None:
            numbers["seen"] = seen_json(inspection, served.directory.word_counts)
    if numbers is None:
        return answer(asked, None)
    return answer(asked, {"translation": asked["translation"], "box": box, "stack": stack, "index": index, **numbers})


def build(served):
    """The map's view; its boxes ask for their vectors with the `map_numbers` event, answered into the view's
    value."""
    view = browser_view(
        Path(__file__).with_suffix(".js"),
        "model-map",
        questions=["map_numbers"],
        setup=setup_json(served.cfg, code_panels()),
    )
    view.map_numbers(served.bind(map_numbers), None, view, **QUIET)
    return view
