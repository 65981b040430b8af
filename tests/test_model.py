"""The Transformer itself: shapes, positional encoding, embedding scale, attention, masks, variants."""

import contextlib
import math
import threading

import pytest
import torch
import torch.nn.functional as F

from helpers import make_model, random_sequences, tiny_config
from interpretability.kinds import ATTENTION_KINDS, head_grid
from modeldir.loading import checked_config
from transformer.model import (
    InputEmbedding,
    MultiHeadAttention,
    PositionalEncoding,
    TransformerConfig,
    causal_mask,
    padding_mask,
    recording_attention,
    sinusoidal_positional_encoding,
)
from transformer.tokenizer import PAD_ID, SPECIAL_TOKENS, pad_sequences


def padded_batch(lengths, vocab_size, seed=0):
    """(B, T) right-padded tensor of random tokens with the given real lengths."""
    return pad_sequences(random_sequences(lengths, vocab_size, seed))


def run_with_weights(model, src, tgt, record=True):
    """memory, logits and the attention maps of each kind: recorded (`recording_attention`), or None without."""
    with recording_attention(model) if record else contextlib.nullcontext() as recorded:
        memory, src_mask = model.encode(src)
        logits = model.decode(tgt, memory, src_mask)
    maps = [recorded.maps(kind) if record else None for kind in ("encoder", "decoder", "cross")]
    return memory, logits, *maps


def test_logits_and_attention_map_shapes():
    cfg = tiny_config()
    model = make_model()
    B, S, T = 3, 7, 5
    src = padded_batch([7, 4, 2], cfg.vocab_size)
    tgt = padded_batch([5, 5, 3], cfg.vocab_size, seed=1)
    memory, logits, enc_maps, dec_maps, cross_maps = run_with_weights(model, src, tgt)

    assert memory.shape == (B, S, cfg.d_model)
    assert logits.shape == (B, T, cfg.vocab_size)
    assert model(src, tgt).shape == (B, T, cfg.vocab_size)
    assert len(enc_maps) == cfg.n_encoder_layers
    assert len(dec_maps) == len(cross_maps) == cfg.n_decoder_layers
    assert all(m.shape == (B, cfg.n_heads, S, S) for m in enc_maps)
    assert all(m.shape == (B, cfg.n_heads, T, T) for m in dec_maps)
    assert all(m.shape == (B, cfg.n_heads, T, S) for m in cross_maps)


def test_positional_encoding_matches_the_formula():
    max_len, d = 50, 16
    expected = torch.zeros(max_len, d)
    for pos in range(max_len):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            expected[pos, 2 * i] = math.sin(angle)
            expected[pos, 2 * i + 1] = math.cos(angle)
    torch.testing.assert_close(sinusoidal_positional_encoding(max_len, d), expected, atol=1e-5, rtol=1e-5)

    # The module adds the table from position `offset` on (used by cached decoding).
    pe = PositionalEncoding(d, max_len, dropout=0.0)
    x = torch.randn(2, 4, d)
    torch.testing.assert_close(pe(x, offset=7), x + expected[7:11], atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="max_len"):
        pe(torch.zeros(1, max_len + 1, d))


def test_input_embedding_is_scaled_by_sqrt_d_model():
    emb = InputEmbedding(vocab_size=20, d_model=64)
    tokens = torch.tensor([[4, 5, 19]])
    torch.testing.assert_close(emb(tokens), emb.embedding.weight[tokens] * 8.0)


def test_encoder_input_is_scaled_embedding_plus_positions():
    cfg = tiny_config()
    model = make_model()
    src = padded_batch([6], cfg.vocab_size)
    seen = {}
    model.encoder.register_forward_pre_hook(lambda module, args: seen.update(x=args[0]))
    model.encode(src)
    expected = model.src_embed.embedding.weight[src] * math.sqrt(cfg.d_model) + sinusoidal_positional_encoding(
        6, cfg.d_model
    )
    torch.testing.assert_close(seen["x"], expected)


def test_attention_rows_sum_to_one_and_ignore_padding_keys():
    cfg = tiny_config()
    model = make_model()
    lengths = [7, 3, 5]
    src = padded_batch(lengths, cfg.vocab_size)
    tgt = padded_batch([4, 4, 4], cfg.vocab_size, seed=1)
    _, _, enc_maps, dec_maps, cross_maps = run_with_weights(model, src, tgt)
    for maps in (enc_maps, dec_maps, cross_maps):
        for m in maps:
            torch.testing.assert_close(m.sum(-1), torch.ones(m.shape[:-1]))
    for b, n in enumerate(lengths):
        for m in enc_maps + cross_maps:
            assert torch.all(m[b, ..., n:] == 0), "attention on padding keys"
            assert torch.all(m[b, ..., :n] > 0)
    for m in dec_maps:  # causal: no weight above the diagonal
        assert torch.all(m.triu(diagonal=1) == 0)


@pytest.mark.parametrize("mask_kind", ["none", "padding", "causal"])
def test_explicit_softmax_path_equals_fused_kernel(mask_kind):
    torch.manual_seed(0)
    attn = MultiHeadAttention(d_model=16, n_heads=4, dropout=0.0).eval()
    tokens = padded_batch([6, 2], vocab_size=30)
    x = torch.randn(2, 6, 16)
    mask = {"none": None, "padding": padding_mask(tokens, PAD_ID), "causal": causal_mask(6)}[mask_kind]
    with recording_attention(attn) as recorded:
        explicit = attn(x, x, mask)
    fused = attn(x, x, mask)
    assert recorded[attn].shape == (2, 4, 6, 6)
    torch.testing.assert_close(explicit, fused, atol=1e-5, rtol=1e-5)


def test_only_the_recording_thread_records_attention():
    """The app serves several people at once: a pass in another thread neither records nor overwrites."""
    cfg = tiny_config()
    model = make_model()
    src = padded_batch([5], cfg.vocab_size)
    with recording_attention(model) as recorded:
        thread = threading.Thread(target=model.encode, args=(padded_batch([9], cfg.vocab_size, seed=3),))
        thread.start()
        thread.join()
        assert not recorded
        model.encode(src)
    assert [m.shape[-1] for m in recorded.maps("encoder")] == [5] * cfg.n_encoder_layers


def test_model_outputs_do_not_depend_on_recording_attention():
    cfg = tiny_config()
    model = make_model()
    src = padded_batch([7, 3], cfg.vocab_size)
    tgt = padded_batch([5, 2], cfg.vocab_size, seed=1)
    memory_w, logits_w, *_ = run_with_weights(model, src, tgt, record=True)
    memory, logits, *_ = run_with_weights(model, src, tgt, record=False)
    torch.testing.assert_close(memory_w, memory, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(logits_w, logits, atol=1e-5, rtol=1e-5)


def test_decoder_is_causal():
    cfg = tiny_config()
    model = make_model()
    src = padded_batch([6], cfg.vocab_size)
    tgt = padded_batch([8], cfg.vocab_size, seed=1)
    changed = tgt.clone()
    first = len(SPECIAL_TOKENS)  # ordinary tokens follow the special ones
    changed[0, 5:] = (changed[0, 5:] - first + 1) % (cfg.vocab_size - first) + first  # other ones from position 5
    before, after = model(src, tgt), model(src, changed)
    torch.testing.assert_close(before[:, :5], after[:, :5])
    assert not torch.allclose(before[:, 5], after[:, 5]), "the changed position itself must see its new token"


def test_sentence_alone_equals_sentence_padded_in_batch():
    cfg = tiny_config()
    model = make_model()
    src_seqs = random_sequences([4, 9, 7], cfg.vocab_size)
    tgt_seqs = random_sequences([3, 8, 6], cfg.vocab_size, seed=1)
    batch_memory, _ = model.encode(pad_sequences(src_seqs))
    batch_logits = model(pad_sequences(src_seqs), pad_sequences(tgt_seqs))
    for b, (s, t) in enumerate(zip(src_seqs, tgt_seqs)):
        alone_memory, _ = model.encode(torch.tensor([s]))
        alone_logits = model(torch.tensor([s]), torch.tensor([t]))
        torch.testing.assert_close(batch_memory[b, : len(s)], alone_memory[0], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(batch_logits[b, : len(t)], alone_logits[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("norm_first", [True, False], ids=["pre-norm", "post-norm"])
@pytest.mark.parametrize("tie", [True, False], ids=["tied", "untied"])
def test_variants_run_and_every_parameter_trains(norm_first, tie):
    cfg = tiny_config(norm_first=norm_first, tie_embeddings=tie)
    model = make_model(norm_first=norm_first, tie_embeddings=tie).train()
    src = padded_batch([6, 4], cfg.vocab_size)
    tgt = padded_batch([5, 3], cfg.vocab_size, seed=1)
    logits = model(src, tgt)
    assert logits.shape == (2, 5, cfg.vocab_size)
    loss = F.cross_entropy(logits.transpose(1, 2), tgt, ignore_index=PAD_ID)
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, f"{name} gets no gradient"
    if not norm_first:  # post-norm: every layer output (and so the encoder output) is layer-normalised
        memory, _ = model.encode(src)
        torch.testing.assert_close(memory.mean(-1), torch.zeros(2, 6), atol=1e-5, rtol=0)


def test_tied_embeddings_share_one_tensor_and_untied_do_not():
    tied, untied = make_model(tie_embeddings=True), make_model(tie_embeddings=False)
    ptr = tied.src_embed.embedding.weight.data_ptr()
    assert tied.tgt_embed.embedding.weight.data_ptr() == ptr == tied.output_projection.weight.data_ptr()
    with torch.no_grad():
        tied.src_embed.embedding.weight[5, 0] = 123.0
    assert tied.output_projection.weight[5, 0] == 123.0 == tied.tgt_embed.embedding.weight[5, 0]
    pointers = {
        untied.src_embed.embedding.weight.data_ptr(),
        untied.tgt_embed.embedding.weight.data_ptr(),
        untied.output_projection.weight.data_ptr(),
    }
    assert len(pointers) == 3
    cfg = tiny_config()
    assert untied.num_parameters() - tied.num_parameters() == 2 * cfg.vocab_size * cfg.d_model


def test_masks():
    tokens = torch.tensor([[5, 6, PAD_ID], [7, PAD_ID, PAD_ID]])
    assert padding_mask(tokens, PAD_ID).shape == (2, 1, 1, 3)
    assert padding_mask(tokens, PAD_ID)[:, 0, 0].tolist() == [[True, True, False], [True, False, False]]
    assert torch.equal(causal_mask(3)[0, 0], torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool))
    # Two new positions after three cached ones see all of the cache and themselves causally.
    assert causal_mask(2, offset=3)[0, 0].int().tolist() == [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]


def test_config_validation():
    """The lesson's dataclass trusts its values; the model directory and the training configs check them."""
    with pytest.raises(ValueError, match="divisible"):
        checked_config(dict(d_model=30, n_heads=4))
    for bad in (dict(n_heads=0), dict(d_model=-8, n_heads=2), dict(vocab_size=10.0), dict(max_len="64")):
        with pytest.raises(ValueError, match="must be a positive integer"):
            checked_config(bad)
    with pytest.raises(ValueError, match="unknown config keys: colour"):
        checked_config({"d_model": 32, "colour": "red"})
    with pytest.raises(ValueError, match="dropout must be a probability"):
        checked_config({"dropout": 1.5})
    assert checked_config({"d_model": 32, "n_heads": 2}) == TransformerConfig(d_model=32, n_heads=2)


def test_the_attention_kinds_are_the_models_own_layers():
    """ATTENTION_KINDS, defined once, names the model's attention sub-layers in order, and head_grid their shape."""
    model = make_model()  # 2 encoder and 3 decoder layers: a kind given the other stack's depth cannot pass
    layers = model.attention_layers()
    assert list(layers) == list(ATTENTION_KINDS) == ["encoder", "decoder", "cross"]
    assert head_grid(model.cfg) == {kind: (len(modules), modules[0].n_heads) for kind, modules in layers.items()}
    assert layers["cross"] == [layer.cross_attention for layer in model.decoder.layers]


def test_encode_and_decode_are_their_two_halves():
    """The public halves interpretability reads the model through compute what `encode` and `decode` compute."""
    model = make_model()
    src = padded_batch([7, 4, 2], model.cfg.vocab_size)
    tgt = padded_batch([5, 5, 3], model.cfg.vocab_size, seed=1)
    memory, src_mask = model.encode(src)
    assert torch.equal(model.encode_embeddings(model.src_embed(src), src_mask), memory)
    hidden = model.decoder_output(tgt, memory, src_mask)
    assert torch.equal(model.output_projection(hidden), model.decode(tgt, memory, src_mask))
