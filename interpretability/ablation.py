"""Switching attention heads off, to see what each one does for the translation.

A head is named by (kind, layer, head): kind one of the model's ATTENTION_KINDS, 0-based layer and head. An
attention sub-layer writes concat(head_1, ..., head_h) W_O + b_O = Σ_h head_h W_O^h + b_O to the residual stream,
where W_O^h are the d_k rows of W_O that read head h's output. Zeroing W_O^h therefore removes exactly that head's
share: it is the head's output set to zero before W_O, and b_O stays. The model's fast path needs no flag for it.

`training.head_importance` measures the BLEU each head is worth this way and writes it to the model directory, where
`modeldir.files.read_head_importance` finds it.
"""

import copy

import torch

from .head_details import head_attention
from .kinds import head_grid


def every_head(cfg):
    """Every (kind, layer, head) of a model with this TransformerConfig, kind by kind, layer by layer."""
    return [
        (kind, layer, head)
        for kind, (n_layers, n_heads) in head_grid(cfg).items()
        for layer in range(n_layers)
        for head in range(n_heads)
    ]


@torch.no_grad()
def ablate_heads(model, heads):
    """A copy of `model` with each (kind, layer, head) of `heads` switched off: the columns of `w_o.weight`
    (nn.Linear stores W_O transposed) that multiply the head's output are zeroed, so concat·W_O = Σ_h head_h·W_O^h
    loses that head's term and nothing else; b_O stays. The copy leaves `model` untouched, so sentences that other
    requests translate with it at the same time are unaffected; the tensors that do not change are shared with it."""
    heads = list(heads)
    changed = {id(head_attention(model, kind, layer, head).w_o.weight) for kind, layer, head in heads}
    # Only the W_O matrices that change are copied: every other tensor is shared with `model` (the deepcopy memo maps
    # it to itself), so a copy costs a few W_O's, not the whole model.
    shared = {id(t): t for t in [*model.parameters(), *model.buffers()] if id(t) not in changed}
    model = copy.deepcopy(model, memo=shared)
    for kind, layer, head in heads:
        attn = head_attention(model, kind, layer, head)
        attn.w_o.weight[:, head * attn.d_k : (head + 1) * attn.d_k] = 0  # W_O^head, (C, d_k)
    return model


def ablated(translator, heads):
    """`translator` with the attention heads `heads` ((kind, layer, head) each) switched off (`ablate_heads`); the
    tokenizer and settings are shared, the model is a copy. A decoding rule that looks ahead with the model
    (`inputs.rules.Rules.for_model`) looks ahead with the copy, remembering nothing of the translator's own decoding."""
    switched_off = copy.copy(translator)
    switched_off.model = ablate_heads(translator.model, heads)
    if hasattr(translator.rule, "for_model"):
        switched_off.rule = translator.rule.for_model(switched_off.model)
    return switched_off
