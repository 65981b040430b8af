"""Proof against a reference no one here wrote: our weights, copied into PyTorch's own `torch.nn.Transformer` and
`torch.nn.MultiheadAttention`, give the same numbers as our from-scratch modules.

The reference runs only the encoder and decoder stacks; our input embedding (×√d_model), sinusoidal positional
encoding and output projection are put around it, as `Transformer.encode` and `Transformer.decode` put them around
ours. Where the two may disagree by design, the test says why:

- `torch.nn.Transformer` always ends each stack with a LayerNorm; ours does with pre-norm (`norm_first=True`, every
  model here) and not with the paper's post-norm, so the comparison is made with pre-norm.
- Our decoder takes no target padding mask: targets are right-padded, so the causal mask alone keeps every padding
  position out of every real one. The reference is given the target padding mask all the same; logits agree at every
  real target position, and at padding positions (which no loss and no decoding step reads) they may differ: ours
  attend to themselves, the reference's may not.
"""

import time

import pytest
import torch
import torch.nn as nn

from helpers import make_model, random_sequences
from transformer.model import MultiHeadAttention, causal_mask, padding_mask
from transformer.tokenizer import PAD_ID, pad_sequences
from transformer.translator import Translator

SHIPPED_MODEL = "assets/model"
# PyTorch says it takes no nested-tensor fast path with norm_first=True: the plain path is the one compared.
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")


def copy_attention(ours, theirs):
    """Our W_Q, W_K, W_V (and biases) are the three row blocks of PyTorch's packed in-projection; W_O is out_proj."""
    theirs.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight]))
    theirs.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias]))
    theirs.out_proj.weight.copy_(ours.w_o.weight)
    theirs.out_proj.bias.copy_(ours.w_o.bias)


def copy_linear(ours, theirs):
    theirs.weight.copy_(ours.weight)
    theirs.bias.copy_(ours.bias)


def copy_norm(ours, theirs):
    theirs.weight.copy_(ours.weight)
    theirs.bias.copy_(ours.bias)


def copy_feed_forward(ours, theirs):
    copy_linear(ours.w_1, theirs.linear1)
    copy_linear(ours.w_2, theirs.linear2)


@torch.no_grad()
def reference_transformer(model):
    """`torch.nn.Transformer` of the same shape as `model`, holding its encoder and decoder weights, in eval mode.
    PyTorch's layer norms: norm1 before self-attention, norm2 before cross-attention (decoder) or the feed-forward
    network (encoder), norm3 before the decoder's feed-forward network: our sublayer[0], [1], [2]."""
    cfg = model.cfg
    reference = nn.Transformer(
        d_model=cfg.d_model,
        nhead=cfg.n_heads,
        num_encoder_layers=cfg.n_encoder_layers,
        num_decoder_layers=cfg.n_decoder_layers,
        dim_feedforward=cfg.d_ff,
        dropout=0.0,
        activation="relu",
        batch_first=True,
        norm_first=True,
    )
    for ours, theirs in zip(model.encoder.layers, reference.encoder.layers, strict=True):
        copy_attention(ours.self_attention, theirs.self_attn)
        copy_feed_forward(ours.feed_forward, theirs)
        copy_norm(ours.sublayer[0].norm, theirs.norm1)
        copy_norm(ours.sublayer[1].norm, theirs.norm2)
    for ours, theirs in zip(model.decoder.layers, reference.decoder.layers, strict=True):
        copy_attention(ours.self_attention, theirs.self_attn)
        copy_attention(ours.cross_attention, theirs.multihead_attn)
        copy_feed_forward(ours.feed_forward, theirs)
        for i, norm in enumerate((theirs.norm1, theirs.norm2, theirs.norm3)):
            copy_norm(ours.sublayer[i].norm, norm)
    copy_norm(model.encoder.norm, reference.encoder.norm)
    copy_norm(model.decoder.norm, reference.decoder.norm)
    return reference.eval()


@torch.no_grad()
def reference_logits(model, reference, src, tgt):
    """Logits (B, T, V) of our embeddings, positional encoding and output projection around the reference stacks,
    with PyTorch's masks: True where a key is padding (source and target), and the causal mask over the target."""
    src_embedded = model.positional_encoding(model.src_embed(src))  # (B, S, C)
    tgt_embedded = model.positional_encoding(model.tgt_embed(tgt))  # (B, T, C)
    future = ~causal_mask(tgt.size(1))[0, 0]  # (T, T): True where a query may not look
    hidden = reference(
        src_embedded,
        tgt_embedded,
        tgt_mask=future,
        src_key_padding_mask=src == PAD_ID,
        memory_key_padding_mask=src == PAD_ID,
        tgt_key_padding_mask=tgt == PAD_ID,
    )  # (B, T, C)
    return model.output_projection(hidden)


def padded_pair(vocab_size, seed=0):
    """A source and a target batch, right-padded, of different lengths per sentence (B = 3)."""
    src = pad_sequences(random_sequences([7, 3, 5], vocab_size, seed))
    tgt = pad_sequences(random_sequences([6, 6, 2], vocab_size, seed + 1))
    return src, tgt


def assert_same_logits(model, src, tgt, atol, rtol=0.0):
    model = model.float().eval()
    with torch.no_grad():
        ours = model(src, tgt)
    theirs = reference_logits(model, reference_transformer(model), src, tgt)
    real = tgt != PAD_ID  # (B, T): the positions whose logits are compared (see the module's docstring)
    assert real.sum() < real.numel()  # the batch does hold target padding
    torch.testing.assert_close(ours[real], theirs[real], atol=atol, rtol=rtol)


@pytest.mark.parametrize("seed", [0, 1])
def test_our_transformer_computes_what_torch_nn_transformer_computes(seed):
    model = make_model(seed=seed)  # 2 encoder and 3 decoder layers: a mix-up of the two stacks cannot pass
    assert model.cfg.norm_first
    src, tgt = padded_pair(model.cfg.vocab_size, seed)
    assert_same_logits(model, src, tgt, atol=1e-5)


def test_the_shipped_model_computes_what_torch_nn_transformer_computes():
    """The same on the shipped model's own weights (float16 on disk, both run in float32)."""
    start = time.perf_counter()
    translator = Translator.load(SHIPPED_MODEL)
    if time.perf_counter() - start > 2:
        pytest.skip("loading the shipped model took over 2 s here: the random models above prove the same")
    src, tgt = padded_pair(translator.model.cfg.vocab_size, seed=3)
    # Its logits reach about 13, and float32 sums over 7 layers in another order (threads, AVX-512) differ by up to
    # about 1.5e-5 there: the tolerance grows with the logit, as a wrong weight's error (0.1 or more) would not.
    assert_same_logits(translator.model, src, tgt, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("with_padding", [False, True])
def test_multi_head_attention_equals_torch_nn_multihead_attention(with_padding):
    torch.manual_seed(0)
    d_model, n_heads = 16, 4
    ours = MultiHeadAttention(d_model, n_heads, dropout=0.0).eval()
    theirs = nn.MultiheadAttention(d_model, n_heads, dropout=0.0, batch_first=True).eval()
    with torch.no_grad():
        copy_attention(ours, theirs)
    keys = pad_sequences(random_sequences([5, 2, 4] if with_padding else [5, 5, 5], 30))  # (B, S): token ids
    query, key_value = torch.randn(3, 4, d_model), torch.randn(3, keys.size(1), d_model)
    with torch.no_grad():
        expected, _ = theirs(query, key_value, key_value, key_padding_mask=keys == PAD_ID, need_weights=False)
        got = ours(query, key_value, padding_mask(keys, PAD_ID))
    torch.testing.assert_close(got, expected, atol=1e-6, rtol=0)
