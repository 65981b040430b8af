"""One token followed through the whole model, box by box in the order the model computes (the model map's "Follow a
token"): embedding × √d_model, + positional encoding, then per sublayer its layer norm, the sublayer, and the add
back into the residual stream, the stack's final norm, and for a decoder position the output layer (h · E[token],
the tied logits) and the softmax. Each step's input is the previous step's output, so the walk is one continuous
computation, and every vector is the one the model's forward computed (`Inspection.internals`, recorded by hooks),
not a copy of it (tests/test_walk.py checks both, and that the last step equals the model's own logits).
"""

from dataclasses import dataclass, field

import numpy as np
import torch

from .internals import sublayer_names

WALK_TOP = 8  # the output layer's logits computed for this many of the most probable tokens
# Each attention sublayer -> its maps in the inspection (`Inspection.attention`).
ATTENTION_OF = {"self-attention": "encoder", "masked self-attention": "decoder", "cross-attention": "cross"}


@dataclass
class WalkStep:
    """One box of the walk: `box` (embedding, position, norm, attention, feed-forward, add, final-norm, linear,
    softmax), its `stack`, `layer` (1-based; None outside the layers) and sublayer `kind`; the vector that comes in
    (`input`, None for the embedding, whose input is the token) and the one that goes out (`output`); `numbers`:
    what else the box computes with (the residual x of an add, a norm's gain, a head's weights...)."""

    box: str
    stack: str
    input: np.ndarray | None
    output: np.ndarray
    layer: int | None = None
    kind: str | None = None
    numbers: dict = field(default_factory=dict)


def norm_numbers(internals, stack, index, x):
    """What layer norm `index` of `stack` computes for one vector x: its mean, its standard deviation √(var + ε)
    (what it divides by), the normalised vector (x − mean) ÷ std, and the learned gain and bias."""
    mean, std = x.mean(), np.sqrt(x.var() + internals.eps)
    return {
        "mean": float(mean),
        "std": float(std),
        "normalised": (x - mean) / std,
        "gain": internals.gains[stack][index],
        "bias": internals.biases[stack][index],
    }


def attention_rows(inspection, kind, layer, position):
    """(heads, keys) weights of one query `position` in attention sub-layer `kind` of `layer` (0-based), and the key
    tokens; masked self-attention's keys stop at the query (the later ones are masked)."""
    maps, _, keys = inspection.attention(kind)
    rows = maps[layer, :, position]
    if kind == "decoder":
        rows, keys = rows[:, : position + 1], keys[: position + 1]
    return rows, keys


def walk(inspection, model, stack, position, top=WALK_TOP):
    """The `WalkStep`s of token `position` of `stack` ("encoder": an English token; "decoder": an Italian step, the
    decoder input at that position) through `inspection`'s pass of `model`; the output layer's logits are computed
    for the step's `top` most probable tokens."""
    internals = inspection.internals
    s = internals.stack(stack)
    row = s.embedding[position]
    scaled = row * internals.scale
    steps = [
        WalkStep(
            "embedding",
            stack,
            None,
            scaled,
            numbers={"token": s.tokens[position], "row": row, "scale": internals.scale},
        ),
        WalkStep("position", stack, scaled, s.stream[0, position], numbers={"pe": s.position[position]}),
    ]
    for i, (layer, kind) in enumerate(sublayer_names(stack, len(s.hidden))):
        x, normed, written = s.stream[i, position], s.norm_outputs[i, position], s.writes[i, position]
        steps.append(WalkStep("norm", stack, x, normed, layer + 1, kind, norm_numbers(internals, stack, i, x)))
        if kind == "feed-forward":
            numbers = {"hidden": s.hidden[layer, position]}
            steps.append(WalkStep("feed-forward", stack, normed, written, layer + 1, kind, numbers))
        else:
            weights, keys = attention_rows(inspection, ATTENTION_OF[kind], layer, position)
            steps.append(
                WalkStep("attention", stack, normed, written, layer + 1, kind, {"weights": weights, "keys": keys})
            )
        steps.append(WalkStep("add", stack, written, s.stream[i + 1, position], layer + 1, kind, {"x": x}))
    last = len(s.norm_outputs) - 1
    h = s.norm_outputs[last, position]
    steps.append(
        WalkStep(
            "final-norm",
            stack,
            s.stream[-1, position],
            h,
            numbers=norm_numbers(internals, stack, last, s.stream[-1, position]),
        )
    )
    if stack == "decoder":
        logits = internals.logits[position]
        ids = np.argsort(-logits, kind="stable")[:top]
        rows = model.output_projection.weight[torch.as_tensor(ids)].detach().float().cpu().numpy()  # E[token], tied
        steps.append(WalkStep("linear", stack, h, logits[ids], numbers={"ids": ids, "rows": rows}))
        finite = logits[np.isfinite(logits)].astype(np.float64)
        lse = float(finite.max() + np.log(np.exp(finite - finite.max()).sum()))  # over the whole vocabulary
        steps.append(
            WalkStep("softmax", stack, logits[ids], np.exp(logits[ids] - lse), numbers={"ids": ids, "lse": lse})
        )
    return steps
