"""Inside one attention head: the arithmetic of softmax(q·Kᵀ / √d_k + M)·V for one query token, step by step,
with the model's own weights (named as in the paper: W_Q, W_K, W_V, W_O, d_k).

The model's attention computes all heads and queries at once (one fused kernel on the fast path), so its
intermediates never exist one head at a time. Here they are recomputed from the inputs x (layer-normalised: the
model is pre-norm by default) that a teacher-forced pass fed to one attention sub-layer, caught by hooks that exist
only during that pass (`capture_attention`: the translate path is untouched), so that a learner can follow one
number per key token from score to weight: the score, the score ÷ √d_k, exp(score − the largest score) and the sum
of those exps, the weight. `head_details` gives one query token's numbers, or with query "all" every query token's
at once (one pass: what a page needs to answer a click on any query token by itself).
"""

import math
import threading
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from inputs.checks import check_whole_number, echo
from transformer.model import causal_mask, padding_mask

from .inspection import token_ids
from .kinds import ATTENTION_KINDS

ALL_QUERIES = "all"  # head_details' query for every query token at once


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
    exps: np.ndarray  # (keys,) exp(scaled_j − max of the visible scaled): ≤ 1; 0 where masked
    weights: np.ndarray  # (keys,) softmax over the visible keys (exps / Σ exps, as the model computes); 0 if masked
    output: np.ndarray  # (d_k,) Σ_j w_j v_j
    concat: np.ndarray  # (C,) every head's output side by side; this head's is concat[head * d_k : (head + 1) * d_k]
    contribution: np.ndarray  # (C,) output W_O^head: this head's share of the sub-layer's output
    attention_output: np.ndarray  # (C,) concat W_O + b_O, as the model computed it: added to the residual stream

    @property
    def d_k(self):
        return len(self.q)

    @property
    def top_scaled(self):
        """The largest visible scaled score: what softmax subtracts before exp."""
        return float(self.scaled[~self.masked].max())

    @property
    def exp_sum(self):
        """Σ_j exp(scaled_j − max): the softmax's denominator (weights = exps / exp_sum)."""
        return float(self.exps.sum())


@dataclass
class HeadQueries:
    """One head of one attention sub-layer for every query token at once: HeadDetails' fields with a first axis of
    queries (q (queries, d_k); scores, masked, exps, weights (queries, keys); x, concat, contribution,
    attention_output (queries, C)); k and v, the same for every query, once. `at(query)` is one query's
    HeadDetails."""

    kind: str
    layer: int
    head: int
    query_tokens: list
    key_tokens: list
    x: np.ndarray
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    scores: np.ndarray
    scaled: np.ndarray
    masked: np.ndarray
    exps: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    concat: np.ndarray
    contribution: np.ndarray
    attention_output: np.ndarray

    @property
    def d_k(self):
        return self.q.shape[1]

    def at(self, query):
        """The HeadDetails of the query at (0-based) position `query`."""
        shared = {name: getattr(self, name) for name in ("kind", "layer", "head", "key_tokens", "k", "v")}
        per_query = {
            name: getattr(self, name)[query]
            for name in (
                "x",
                "q",
                "scores",
                "scaled",
                "masked",
                "exps",
                "weights",
                "output",
                "concat",
                "contribution",
                "attention_output",
            )
        }
        return HeadDetails(query=query, query_token=self.query_tokens[query], **shared, **per_query)


def attention_module(model, kind, layer):
    """The MultiHeadAttention of one kind (ATTENTION_KINDS) in one (0-based) layer."""
    if kind not in ATTENTION_KINDS:
        raise ValueError(f"kind must be one of {', '.join(ATTENTION_KINDS)}, got {echo(kind)}")
    layers = model.attention_layers()[kind]
    if not 0 <= layer < len(layers):
        raise ValueError(f"layer must be in 0..{len(layers) - 1} for {kind}, got {echo(layer)}")
    return layers[layer]


def head_attention(model, kind, layer, head):
    """The MultiHeadAttention that holds head (kind, layer, head) of `model`; ValueError naming the range when there
    is no such head."""
    check_whole_number("layer", layer)
    check_whole_number("head", head)
    attn = attention_module(model, kind, layer)
    if not 0 <= head < attn.n_heads:
        raise ValueError(f"head must be in 0..{attn.n_heads - 1}, got {echo(head)}")
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


def head_arithmetic(attn, x_queries, x_keys, masked, head):
    """Every head's attention for every query, in the paper's terms; the numbers of head `head` returned as a dict
    of HeadQueries fields. x_queries (Tq, C), x_keys (Tk, C), masked (Tq, Tk) bool."""
    nh, d_k = attn.n_heads, attn.d_k
    W_Q, W_K, W_V, W_O = (p.weight.float().T for p in (attn.w_q, attn.w_k, attn.w_v, attn.w_o))
    b_Q, b_K, b_V = (p.bias.float() for p in (attn.w_q, attn.w_k, attn.w_v))
    x, X = x_queries.float(), x_keys.float()

    def heads(t):  # (T, nh * d_k) -> (nh, T, d_k)
        return t.view(len(t), nh, d_k).transpose(0, 1)

    Q, K, V = heads(x @ W_Q + b_Q), heads(X @ W_K + b_K), heads(X @ W_V + b_V)
    scores = Q @ K.transpose(1, 2)  # (nh, Tq, Tk)
    scaled = scores / math.sqrt(d_k)
    logits = scaled.masked_fill(masked, float("-inf"))
    exps = torch.exp(logits - logits.max(dim=-1, keepdim=True).values)  # ≤ 1; exp(-inf) = 0 where masked
    weights = F.softmax(logits, dim=-1)  # (nh, Tq, Tk): exps / Σ exps, by the model's own function
    outputs = weights @ V  # (nh, Tq, d_k)
    head_slice = slice(head * d_k, (head + 1) * d_k)
    numbers = dict(
        x=x,
        q=Q[head],
        k=K[head],
        v=V[head],
        scores=scores[head],
        scaled=scaled[head],
        exps=exps[head],
        weights=weights[head],
        output=outputs[head],
        concat=outputs.transpose(0, 1).reshape(len(x), -1),
        contribution=outputs[head] @ W_O[head_slice],
    )  # (Tq, C): W_O^head is W_O's rows of this head
    return {name: t.cpu().numpy() for name, t in numbers.items()}


@torch.inference_mode()
def head_queries(translator, inspection, kind, layer, head):
    """Inside one attention head (`kind` "encoder", "decoder" or "cross"; 0-based layer and head) for every query
    token of the sentence of `inspection` at once (a `HeadQueries`), recomputed from the model's weights and the
    inputs x the sub-layer read in a teacher-forced pass over the inspected tokens (`inspect` itself captures
    nothing, so it stays as fast)."""
    attn = head_attention(translator.model, kind, layer, head)
    _, queries, keys = inspection.attention(kind)
    src = torch.tensor([token_ids(translator.tokenizer, inspection.source_tokens)], device=translator.device)  # (1, S)
    tgt = torch.tensor([token_ids(translator.tokenizer, inspection.target_tokens)], device=translator.device)  # (1, T)
    with capture_attention(attn) as seen:
        memory, src_mask = translator.model.encode(src)
        if kind != "encoder":
            translator.model.decode(tgt, memory, src_mask)
    if kind == "decoder":  # the future is hidden
        masked = ~causal_mask(len(keys), src.device)[0, 0]  # (T, T)
    else:  # padding is hidden (none in one sentence, but the model's rule all the same)
        masked = ~padding_mask(src, translator.model.cfg.pad_id)[0, 0, 0].expand(len(queries), -1)  # (Tq, S)
    numbers = head_arithmetic(attn, seen[attn.w_q][0][0], seen[attn.w_k][0][0], masked, head)
    return HeadQueries(
        kind=kind,
        layer=layer,
        head=head,
        query_tokens=list(queries),
        key_tokens=list(keys),
        masked=masked.cpu().numpy(),
        attention_output=seen[attn.w_o][1][0].float().cpu().numpy(),
        **numbers,
    )


def head_details(translator, inspection, kind, layer, head, query):
    """Inside one attention head (`kind` "encoder", "decoder" or "cross"; 0-based layer, head and query
    position) for the sentence of `inspection`: q, K, V, scores, mask, the softmax's exps and weights, output and
    its share of the sub-layer's output (a `HeadDetails`); with query `ALL_QUERIES` ("all"), those of every query
    token at once (`head_queries`: one pass, a `HeadQueries`)."""
    if isinstance(query, str) and query == ALL_QUERIES:
        return head_queries(translator, inspection, kind, layer, head)
    head_attention(translator.model, kind, layer, head)  # the kind, layer and head checked first
    _, queries, _ = inspection.attention(kind)
    check_whole_number("query", query, 0, len(queries) - 1)
    return head_queries(translator, inspection, kind, layer, head).at(query)
