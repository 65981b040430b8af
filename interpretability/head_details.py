"""Inside one attention head: the arithmetic of softmax(q·Kᵀ / √d_k + M)·V for one query token, step by step,
with the model's own weights (named as in the paper: W_Q, W_K, W_V, W_O, d_k).

The model's attention computes all heads and queries at once (one fused kernel on the fast path), so its
intermediates never exist one head at a time. Here they are recomputed from the inputs x (layer-normalised: the
model is pre-norm by default) that a teacher-forced pass fed to one attention sub-layer, caught by hooks that exist
only during that pass (`capture_attention`: the translate path is untouched), so that a learner can follow one
number per key token from score to weight.
"""

import math
import numbers
import threading
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from transformer.decoding import check_whole_number
from transformer.model import causal_mask, padding_mask

from .inspection import token_ids

KINDS = ("encoder", "decoder", "cross")  # encoder self-, decoder self-, encoder-decoder cross-attention


@dataclass
class HeadDetails:
    """One head of one attention sub-layer, for one query token; float32 numpy arrays. Positions and indices are
    0-based; keys are the tokens the query may look at (source tokens, or decoder inputs for decoder
    self-attention)."""

    kind: str
    layer: int
    head: int
    query: int  # position of the query token
    query_token: str
    key_tokens: list
    x: np.ndarray  # (C,) the query token's input to the sub-layer (after its LayerNorm in a pre-norm model)
    q: np.ndarray  # (d_k,) q = x W_Q + b_Q, this head's slice
    k: np.ndarray  # (keys, d_k) k_j = x_j W_K + b_K
    v: np.ndarray  # (keys, d_k) v_j = x_j W_V + b_V
    scores: np.ndarray  # (keys,) q · k_j
    scaled: np.ndarray  # (keys,) q · k_j / √d_k
    masked: np.ndarray  # (keys,) bool: True where the key is hidden (future position, padding): M_j = -inf
    weights: np.ndarray  # (keys,) softmax over the visible keys; 0 where masked
    output: np.ndarray  # (d_k,) Σ_j w_j v_j
    concat: np.ndarray  # (C,) every head's output side by side; this head's is concat[head * d_k : (head + 1) * d_k]
    contribution: np.ndarray  # (C,) output W_O^head: this head's share of the sub-layer's output
    attention_output: np.ndarray  # (C,) concat W_O + b_O, as the model computed it: added to the residual stream

    @property
    def d_k(self):
        return len(self.q)


def attention_module(model, kind, layer):
    """The MultiHeadAttention of one kind in one (0-based) layer."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    stack = model.encoder if kind == "encoder" else model.decoder
    if not 0 <= layer < len(stack.layers):
        raise ValueError(f"layer must be in 0..{len(stack.layers) - 1} for {kind}, got {layer}")
    block = stack.layers[layer]
    return block.cross_attention if kind == "cross" else block.self_attention


def head_attention(model, kind, layer, head):
    """The MultiHeadAttention that holds head (kind, layer, head) of `model`; ValueError naming the range when there
    is no such head."""
    for name, index in (("layer", layer), ("head", head)):
        if isinstance(index, bool) or not isinstance(index, numbers.Integral):
            raise ValueError(f"{name} must be a whole number, got {index!r}")
    attn = attention_module(model, kind, layer)
    if not 0 <= head < attn.n_heads:
        raise ValueError(f"head must be in 0..{attn.n_heads - 1}, got {head}")
    return attn


@contextmanager
def capture_attention(attn):
    """Records what one MultiHeadAttention's projections read and write during the passes run inside the block:
    `seen[attn.w_q]` is (x (B, Tq, C), x W_Q + b_Q), likewise for W_K and W_O. Hooks fire for every caller of
    the module, so only calls from this thread are recorded (the app translates other sentences with the same
    model at the same time)."""
    seen, thread = {}, threading.get_ident()

    def keep(module, inputs, output):
        if threading.get_ident() == thread:
            seen[module] = (inputs[0], output)

    handles = [p.register_forward_hook(keep) for p in (attn.w_q, attn.w_k, attn.w_o)]
    try:
        yield seen
    finally:
        for handle in handles:
            handle.remove()


def head_arithmetic(attn, x_query, x_keys, masked, head):
    """Every head's attention for one query, in the paper's terms; the numbers of head `head` returned as a dict
    of HeadDetails fields. x_query (C,), x_keys (Tk, C), masked (Tk,) bool."""
    nh, d_k = attn.n_heads, attn.d_k
    W_Q, W_K, W_V, W_O = (p.weight.float().T for p in (attn.w_q, attn.w_k, attn.w_v, attn.w_o))
    b_Q, b_K, b_V = (p.bias.float() for p in (attn.w_q, attn.w_k, attn.w_v))
    x, X = x_query.float(), x_keys.float()
    q = (x @ W_Q + b_Q).view(nh, d_k)  # (nh, d_k)
    K = (X @ W_K + b_K).view(len(X), nh, d_k).transpose(0, 1)  # (nh, Tk, d_k)
    V = (X @ W_V + b_V).view(len(X), nh, d_k).transpose(0, 1)  # (nh, Tk, d_k)
    scores = (K @ q.unsqueeze(-1)).squeeze(-1)  # (nh, Tk)
    scaled = scores / math.sqrt(d_k)
    weights = F.softmax(scaled.masked_fill(masked, float("-inf")), dim=-1)  # (nh, Tk)
    outputs = (weights.unsqueeze(1) @ V).squeeze(1)  # (nh, d_k)
    head_slice = slice(head * d_k, (head + 1) * d_k)
    numbers = dict(x=x, q=q[head], k=K[head], v=V[head], scores=scores[head], scaled=scaled[head],
                   weights=weights[head], output=outputs[head], concat=outputs.reshape(nh * d_k),
                   contribution=outputs[head] @ W_O[head_slice])  # (C,): W_O^head is W_O's rows of this head
    return {name: t.cpu().numpy() for name, t in numbers.items()}


@torch.inference_mode()
def head_details(translator, inspection, kind, layer, head, query):
    """Inside one attention head (`kind` "encoder", "decoder" or "cross"; 0-based layer, head and query
    position) for the sentence of `inspection`: q, K, V, scores, mask, softmax weights, output and its share
    of the sub-layer's output, recomputed from the model's weights and the inputs x the sub-layer read in a
    teacher-forced pass over the inspected tokens (`inspect` itself captures nothing, so it stays as fast)."""
    attn = head_attention(translator.model, kind, layer, head)
    queries = inspection.source_tokens if kind == "encoder" else inspection.target_tokens
    keys = inspection.target_tokens if kind == "decoder" else inspection.source_tokens
    check_whole_number("query", query, 0, len(queries) - 1)
    src = torch.tensor([token_ids(translator.tokenizer, inspection.source_tokens)], device=translator._device)  # (1, S)
    tgt = torch.tensor([token_ids(translator.tokenizer, inspection.target_tokens)], device=translator._device)  # (1, T)
    with capture_attention(attn) as seen:
        memory, src_mask = translator.model.encode(src)
        if kind != "encoder":
            translator.model.decode(tgt, memory, src_mask)
    if kind == "decoder":  # the future is hidden
        masked = ~causal_mask(len(keys), src.device)[0, 0, query]  # (T,)
    else:  # padding is hidden (none in one sentence, but the model's rule all the same)
        masked = ~padding_mask(src, translator.model.cfg.pad_id)[0, 0, 0]  # (S,)
    numbers = head_arithmetic(attn, seen[attn.w_q][0][0, query], seen[attn.w_k][0][0], masked, head)
    return HeadDetails(
        kind=kind, layer=layer, head=head, query=query, query_token=queries[query], key_tokens=list(keys),
        masked=masked.cpu().numpy(), attention_output=seen[attn.w_o][1][0, query].float().cpu().numpy(),
        **numbers,
    )
