"""Everything else the model computes for one translation, besides attention: the input embeddings and their
√d_model scale, the positional encoding added, the residual stream through every layer and what each sublayer writes
into it, every layer normalisation's input and output, the feed-forward network's hidden units, and the output
layer's logits. `inspection.inspect` records them in the teacher-forced pass that records the attention
(`recording_internals`: forward hooks on the model's own modules), so the numbers are those its forward computes, not
a copy of it, and one forward gives every view of a translation.
"""

import math
import threading
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

STACKS = ("encoder", "decoder")
SUBLAYERS = {
    "encoder": ("self-attention", "feed-forward"),
    "decoder": ("masked self-attention", "cross-attention", "feed-forward"),
}
FEED_FORWARD = "feed-forward"
# The temperatures the page's output view offers (those of the decoding settings' slider: 0.1 to 3.0 by 0.1): for
# each, the log-sum-exp of the tokens not shown, so that the page's softmax is exact for those it shows.
TEMPERATURES = tuple(round(0.1 * i, 1) for i in range(1, 31))
TOP_LOGITS = 50


@dataclass
class StackInternals:
    """One stack's numbers (encoder or decoder), float32 numpy, T = its tokens, C = d_model:
    `embedding` (T, C): each token's row of the embedding table, before the ×√d_model scale; `position` (T, C): the
    positional encoding added to it; `stream` (sublayers + 1, T, C): the residual stream entering each sublayer, in
    order (layer by layer), then leaving the last one; `writes` (sublayers, T, C): what each sublayer adds to it, its
    module's own output (pre-norm: stream[i + 1] = stream[i] + writes[i]); `norm_inputs` / `norm_outputs`
    (sublayers + 1, T, C): each layer norm's input and output, the sublayers' in order, then the stack's final norm
    (pre-norm); `hidden` (layers, T, d_ff): the feed-forward network's hidden units, after the ReLU."""

    tokens: list
    embedding: np.ndarray
    position: np.ndarray
    stream: np.ndarray
    writes: np.ndarray
    norm_inputs: np.ndarray
    norm_outputs: np.ndarray
    hidden: np.ndarray


@dataclass
class Internals:
    """The numbers of one translation's teacher-forced pass (`RecordedInternals`): per stack a `StackInternals`, the
    norms' learned gain and bias (per stack, (norms, C) each, in the order of `StackInternals.norm_inputs`), the output
    layer's logits (decoder positions, vocabulary) as decoding chose from them (what it never writes at −∞), the
    √d_model scale, the norms' ε, and whether the output layer's weights are the embedding's (tied)."""

    encoder: StackInternals
    decoder: StackInternals
    gains: dict
    biases: dict
    logits: np.ndarray
    scale: float
    eps: float
    tied: bool

    def stack(self, name):
        return {"encoder": self.encoder, "decoder": self.decoder}[name]

    @property
    def nbytes(self):
        """Bytes its arrays hold: what keeping it in memory costs."""
        arrays = [self.logits, *self.gains.values(), *self.biases.values()]
        arrays += [
            array
            for stack in (self.encoder, self.decoder)
            for array in vars(stack).values()
            if isinstance(array, np.ndarray)
        ]
        return sum(array.nbytes for array in arrays)


@contextmanager
def hooked(hooks):
    """Forward hooks (module, fn) registered for the block, removed after it even when it raises. Each fn sees only
    this thread's calls: a server runs the same model for other requests meanwhile, whose passes are not ours."""
    owner = threading.get_ident()

    def ours(fn):
        return lambda module, args, output: fn(module, args, output) if threading.get_ident() == owner else None

    handles = [module.register_forward_hook(ours(fn)) for module, fn in hooks]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def stack_modules(model, name):
    """(sublayer connections in order, the stack's final norm or None, the feed-forward networks) of a stack."""
    stack = model.encoder if name == "encoder" else model.decoder
    connections = [c for layer in stack.layers for c in layer.sublayer]
    final_norm = stack.norm if isinstance(stack.norm, torch.nn.LayerNorm) else None
    return connections, final_norm, [layer.feed_forward for layer in stack.layers]


def sublayer_modules(model, name):
    """Each sublayer's own module, in the order of `stack_modules`' connections: per layer its attention (the
    decoder's masked self- then cross-attention), then its feed-forward network."""
    stack = model.encoder if name == "encoder" else model.decoder
    attributes = {
        "encoder": ("self_attention", "feed_forward"),
        "decoder": ("self_attention", "cross_attention", "feed_forward"),
    }[name]
    return [getattr(layer, attribute) for layer in stack.layers for attribute in attributes]


def layer_norms(model, name):
    """Every LayerNorm of a stack: each sublayer's, then the final one (pre-norm)."""
    connections, final_norm, _ = stack_modules(model, name)
    return [c.norm for c in connections] + ([final_norm] if final_norm is not None else [])


def is_tied(model):
    """Whether the output layer's weight matrix is the embedding table itself (one tensor, not a copy)."""
    return model.output_projection.weight is model.src_embed.embedding.weight


def as_numpy(tensor):
    return tensor[0].detach().float().cpu().numpy()


class RecordedInternals:
    """What forward hooks on the model's own modules see of one teacher-forced pass (encode, then decode): the
    embedding, positional encoding, sublayer connections and their sublayers, layer norms and feed-forward networks'
    hidden units, made into `Internals` once the pass is over (`internals`)."""

    def __init__(self, model):
        self.model = model
        self.seen = {}  # module -> list of (inputs, output), one per call, in the order of the pass
        self.hidden = {}  # feed-forward -> its hidden units (the input of w_2: ReLU(x W_1 + b_1), dropout off)

    def hooks(self):
        """(module, fn) of every forward hook the recording needs."""
        model = self.model
        record = lambda module, args, output: self.seen.setdefault(module, []).append((args, output))  # noqa: E731
        modules = [model.src_embed.embedding, model.tgt_embed.embedding, model.positional_encoding]
        hooks = []
        for name in STACKS:
            connections, _, ffns = stack_modules(model, name)
            modules += connections + layer_norms(model, name) + sublayer_modules(model, name)
            hooks += [
                (ffn.w_2, lambda m, args, out, ffn=ffn: self.hidden.__setitem__(ffn, as_numpy(args[0]))) for ffn in ffns
            ]
        return [(m, record) for m in modules] + hooks

    def internals(self, tokenizer, source, target, logits):
        """The `Internals` of the pass over `source` and `target` (token ids, as the encoder and decoder read them);
        `logits` (T, V): its output layer's, as decoding chose from them (`inspection.teacher_forced_logits`)."""
        model, seen = self.model, self.seen
        passes = dict(zip(STACKS, seen[model.positional_encoding]))  # encode, then decode: (inputs, output) each
        embedded = {"encoder": model.src_embed.embedding, "decoder": model.tgt_embed.embedding}

        def stack(name, ids):
            connections, _, ffns = stack_modules(model, name)
            norms = layer_norms(model, name)
            (scaled, *_), with_position = passes[name]  # the positional encoding's input: embedding × √d_model
            stream = [as_numpy(seen[c][0][0][0]) for c in connections] + [as_numpy(seen[connections[-1]][0][1])]
            return StackInternals(
                tokens=[tokenizer.id_to_token(i) for i in ids],
                embedding=as_numpy(seen[embedded[name]][0][1]),
                position=as_numpy(with_position) - as_numpy(scaled),
                stream=np.stack(stream),
                writes=np.stack([as_numpy(seen[m][0][1]) for m in sublayer_modules(model, name)]),
                norm_inputs=np.stack([as_numpy(seen[n][0][0][0]) for n in norms]),
                norm_outputs=np.stack([as_numpy(seen[n][0][1]) for n in norms]),
                hidden=np.stack([self.hidden[f] for f in ffns]),
            )

        def norm_params(name, attr):
            return np.stack(
                [
                    getattr(n, attr).detach().float().cpu().numpy()  # noqa: E731
                    for n in layer_norms(model, name)
                ]
            )

        return Internals(
            encoder=stack("encoder", source),
            decoder=stack("decoder", target),
            gains={name: norm_params(name, "weight") for name in STACKS},
            biases={name: norm_params(name, "bias") for name in STACKS},
            logits=logits.cpu().numpy(),
            scale=math.sqrt(model.cfg.d_model),
            eps=layer_norms(model, "encoder")[0].eps,
            tied=is_tied(model),
        )


@contextmanager
def recording_internals(model):
    """Inside the block, the teacher-forced pass this thread makes through `model` is recorded by forward hooks on
    its own modules (`RecordedInternals`, yielded), so the numbers are those its forward computes, not a copy of it;
    other threads' passes meanwhile are not recorded (`hooked`)."""
    recorded = RecordedInternals(model)
    with hooked(recorded.hooks()):
        yield recorded


def sublayer_names(name, layers):
    """Each sublayer of a stack of `layers` layers as (layer, kind): (0, "self-attention"), (0, "feed-forward"), ..."""
    return [(layer, kind) for layer in range(layers) for kind in SUBLAYERS[name]]


def write_ratios(stack):
    """(sublayers, T): ‖what each sublayer adds‖ / ‖the stream it adds to‖, per token: which sublayers change which
    tokens most."""
    return np.linalg.norm(stack.writes, axis=-1) / np.maximum(np.linalg.norm(stack.stream[:-1], axis=-1), 1e-12)


def firing_share(stack):
    """(layers, T): the share of the feed-forward network's hidden units above zero (past the ReLU), per token."""
    return (stack.hidden > 0).mean(axis=-1)


def output_distribution(logits, top=TOP_LOGITS, temperatures=TEMPERATURES):
    """Per decoder position, (top ids, their logits, the log-sum-exp of the others' logits ÷ T for each temperature
    T): enough for softmax(logits / T) of the `top` tokens, exactly, at each of `temperatures`. logits (T, V), −∞ for
    tokens decoding never writes. Returns (ids (T, top), logits (T, top), rest (T, temperatures))."""
    logits = torch.as_tensor(logits, dtype=torch.float32)
    values, ids = logits.topk(min(top, logits.size(-1)), dim=-1)  # (T, top)
    rest = logits.scatter(-1, ids, float("-inf"))  # (T, V): the others
    largest = rest.amax(dim=-1, keepdim=True).clamp(min=-1e30)  # (T, 1); finite, so −∞ − largest stays −∞
    below = rest - largest  # (T, V), <= 0: exp never overflows, however small T
    lse = torch.stack([torch.exp(below / t).sum(dim=-1).log() + largest[:, 0] / t for t in temperatures], dim=-1)
    return ids.numpy(), values.numpy(), lse.numpy()  # lse: (T, temperatures)
