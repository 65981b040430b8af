"""Attention is not explanation: which source tokens a generated token depended on, measured by gradients, beside
where cross-attention looked while choosing it.

Cross-attention weights say how much each source position's value vector is mixed into one decoder layer's update;
they do not say how much the prediction depends on that source token (Jain & Wallace, 2019, "Attention is not
Explanation"): the value vectors differ in size and direction, later layers and the residual stream can undo or
ignore what was mixed in, and the encoder has already spread every word over every position. Gradients ask the
question directly: how much does log p(y_t | y_<t, x) change when the source token's input vector changes?

The input vector of source token i is its embedding × √d_model, as the model adds it to the positional encoding
(`InputEmbedding`). The positional encoding is left out of the input, and kept in the model: attribution is about
which *word* mattered, position is no property of the word, and the zero baseline of integrated gradients is then
"the same positions, holding no words" rather than an input with no positions, which the model never saw.

Gradients need float32 (the app runs the model in float16, where they under- and overflow), so they are computed on
a float32 copy of the translator's model, made the first time and kept while that model lives (`float32_model`):
the translator's own model is never changed, and its parameters never receive a gradient.
"""

import threading
import time
import weakref
from dataclasses import dataclass

import numpy as np
import torch

from inputs.checks import check_whole_number, echo
from transformer.model import Transformer, padding_mask
from transformer.tokenizer import EOS, EOS_ID

from .inspection import token_ids

METHODS = ("gradient_x_input", "integrated_gradients")
# Gradient × input is one backward pass per step; integrated gradients are one per point along the path. The first
# answers within the app's 1 s with room to spare (`python -m bench.app_latency` times both).
DEFAULT_METHOD = "gradient_x_input"
# Integrated gradients' points along the path. On the shipped model (three sentences), with 16 midpoints a row's
# attributions add up to log p(y_t | x) - log p(y_t | no words) within 1-6% on average (8 steps: 8-11%, 4: 24-34%):
# the completeness that makes integrated gradients worth their cost.
DEFAULT_STEPS = 16


@dataclass
class Attribution:
    """Per output token (rows: y_1 ... y_n then </s>, the tokens predicted from the decoder inputs <s> y_1 ... y_n
    of the inspection, so row t lines up with row t of its cross-attention) and source token (columns); float32
    numpy arrays."""

    method: str
    steps: int  # points along the path (integrated gradients); 1 for gradient × input
    output_tokens: list  # the token each row is about
    scores: np.ndarray  # (T, S) |attribution| of log p(y_t | y_<t, x) to each source token, each row summing to 1
    attention: np.ndarray  # (T, S) the cross-attention row of that step, averaged over layers and heads
    agreement: np.ndarray  # (T,) Spearman rank correlation of the two rows: 1 same order, -1 reversed
    mean_agreement: float  # mean of `agreement` over the rows where it is defined
    seconds: float  # the time the computation took (the first call also makes the float32 copy)


_FLOAT32_MODELS = weakref.WeakKeyDictionary()  # the translator's model -> its float32 copy, dropped with the model
_FLOAT32_MODELS_LOCK = threading.Lock()  # the app serves several requests at once: make one copy, not several


def float32_model(translator):
    """A float32 copy of the translator's model that needs no gradient for its own weights (only the inputs' are
    wanted), in eval mode (dropout would make the gradients random); made on the first call, reused afterwards.
    Built afresh and loaded with the weights, not deep-copied, so that no hook another caller has on the model at that
    moment (`capture_attention`) comes along. The weights are read once: a model trained further keeps a stale copy."""
    with _FLOAT32_MODELS_LOCK, torch.inference_mode(False):  # inference tensors could not be used by autograd
        if translator.model not in _FLOAT32_MODELS:
            model = Transformer(translator.model.cfg)
            model.load_state_dict(translator.model.state_dict())  # cast to the copy's float32 as they are loaded
            _FLOAT32_MODELS[translator.model] = model.to(translator.device).requires_grad_(False).eval()
        return _FLOAT32_MODELS[translator.model]


def decoder_states(model, src, embedded, tgt_in):
    """The decoder's output (B, T, C) before the output projection, the source read from the input vectors
    `embedded` (B, S, C) instead of looked up from the token ids `src` (B, S), which only give the mask."""
    src_mask = padding_mask(src, model.cfg.pad_id)  # (B, 1, 1, S)
    memory = model.encode_embeddings(embedded, src_mask)  # (B, S, C)
    return model.decoder_output(tgt_in, memory, src_mask)  # (B, T, C)


def path_points(method, steps):
    """Where along the straight path from the zero baseline (0) to the input (1) the gradient is taken: at the input
    only for gradient × input; for integrated gradients the midpoints of `steps` equal intervals (the midpoint
    Riemann sum: for a smooth function its error shrinks as 1/steps², like the trapezoid rule's)."""
    check_whole_number("steps", steps, 1)
    if method == "gradient_x_input":
        return torch.ones(1)
    return (torch.arange(steps) + 0.5) / steps


def raw_attributions(model, src, tgt_in, tgt_out, alphas):
    """Unnormalised attributions, (T, S): for each output token t and source token i, Σ_d x_id · mean_k ∂ log
    p(y_t) / ∂x_id, the gradient taken at the points alphas[k] · x (`path_points`). With alphas = [1] this is
    gradient × input; with the midpoints it is integrated gradients, whose row t adds up to log p(y_t | x) -
    log p(y_t | 0) (completeness). src (1, S), tgt_in and tgt_out (1, T) token ids; `model` in float32.

    One forward pass, then one backward pass per output token. Each position's output projection (d_model x
    vocabulary, the largest matrix) is applied on its own, so the backward pass for y_t goes through row t's only:
    integrated gradients take 40% less time than through one projection of all T rows."""
    embedded = model.src_embed(src).detach()  # (1, S, C): embeddings × √d_model, the inputs (not weights) we vary
    n, T = len(alphas), tgt_in.size(1)
    path = (alphas.to(embedded.device)[:, None, None] * embedded).requires_grad_()  # (n, S, C), the batch is the path
    hidden = decoder_states(model, src.expand(n, -1), path, tgt_in.expand(n, -1))  # (n, T, C)
    rows = []
    for t in range(T):
        # (n,) log p(y_t) along the path
        log_p = model.output_projection(hidden[:, t]).log_softmax(dim=-1)[:, tgt_out[0, t]]
        # The path's points are separate batch rows, so the gradient of the sum is each point's own gradient.
        (grads,) = torch.autograd.grad(log_p.sum(), path, retain_graph=t < T - 1)  # (n, S, C)
        rows.append((grads.mean(dim=0) * embedded[0]).sum(dim=-1))  # (S,)
    return torch.stack(rows)  # (T, S)


def normalise_rows(raw):
    """|attribution| scaled to sum to 1 per row, so a row reads like an attention row (where the weight goes). The
    sign is dropped: a token that makes y_t less likely matters as much as one that makes it more likely."""
    magnitude = np.abs(raw)
    return magnitude / magnitude.sum(axis=-1, keepdims=True)


def average_ranks(values):
    """1-based ranks of `values` (1-D), tied values sharing the mean of the ranks they span: [10, 20, 20, 5] ->
    [2, 3.5, 3.5, 1]."""
    _, run, run_length = np.unique(values, return_inverse=True, return_counts=True)  # runs of equal values, sorted
    last = np.cumsum(run_length)  # the rank of each run's last value
    return ((last - run_length + 1 + last) / 2)[run]  # mean of the ranks first..last


def spearman(a, b):
    """Spearman's rank correlation of two 1-D arrays: the Pearson correlation of their ranks (ties averaged). NaN
    when either is constant (one source token), where no order exists to compare."""
    ranks_a, ranks_b = average_ranks(np.asarray(a)), average_ranks(np.asarray(b))
    da, db = ranks_a - ranks_a.mean(), ranks_b - ranks_b.mean()
    norm = np.sqrt((da @ da) * (db @ db))
    return float(da @ db / norm) if norm > 0 else float("nan")


def cross_attention_rows(inspection):
    """(T, S): each step's cross-attention row, averaged over heads and layers. Every decoder layer reads the same
    encoder output, so every head's row is a distribution over the same source positions, and so is their mean; no
    single layer is *the* alignment (which one aligns best differs between models), so none is preferred."""
    return inspection.cross_attention.mean(axis=(0, 1)).astype(np.float32)


def source_attribution(translator, inspection, method=DEFAULT_METHOD, steps=DEFAULT_STEPS):
    """Gradient attribution of each output token of `inspection` (a `interpretability.inspect` result) over its source
    tokens, beside the cross-attention of that step and their rank agreement. Teacher-forced over the inspection's
    tokens, so the rows line up with its cross-attention. `method` is one of METHODS; `steps` is used by integrated
    gradients only. Works inside torch.inference_mode(), and leaves the translator's model as it was."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {echo(method)}")
    alphas = path_points(method, steps)
    source_ids = token_ids(translator.tokenizer, inspection.source_tokens)
    target_ids = token_ids(translator.tokenizer, inspection.target_tokens)
    if None in source_ids or None in target_ids:
        raise ValueError("the inspection has tokens this translator's vocabulary lacks: inspect with the same model")
    start = time.perf_counter()
    model = float32_model(translator)
    device = next(model.parameters()).device
    with torch.inference_mode(False), torch.enable_grad():  # tensors made in inference mode could not be used here
        src = torch.tensor([source_ids], device=device)  # (1, S)
        tgt_in = torch.tensor([target_ids], device=device)  # (1, T): <s> y_1 ... y_n
        tgt_out = torch.tensor([target_ids[1:] + [EOS_ID]], device=device)  # (1, T): y_1 ... y_n </s>
        raw = raw_attributions(model, src, tgt_in, tgt_out, alphas).cpu().numpy()
    scores = normalise_rows(raw).astype(np.float32)
    attention = cross_attention_rows(inspection)
    agreement = np.array([spearman(s, a) for s, a in zip(scores, attention)], dtype=np.float32)
    defined = agreement[~np.isnan(agreement)]
    return Attribution(
        method=method,
        steps=len(alphas),
        output_tokens=inspection.target_tokens[1:] + [EOS],
        scores=scores,
        attention=attention,
        agreement=agreement,
        mean_agreement=float(defined.mean()) if len(defined) else np.nan,
        seconds=time.perf_counter() - start,
    )
