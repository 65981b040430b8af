"""Greedy and beam-search decoding: the key/value cache, beam 1 = greedy, batching, length caps."""

import copy
from collections import Counter

import pytest
import torch

from helpers import make_model, random_sequences, suppress_eos, tiny_config, toy_pairs
from transformer.decoding import KVCache, Sampling, beam_search, generate, greedy_decode, max_output_lengths
from transformer.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID, pad_sequences

# Toy-corpus sentences plus a few the tiny model never saw, so outputs are not all perfect copies.
SENTENCES = [en for en, _ in toy_pairs()[:6]] + ["Tom", "the cat and the dog.", "I eat the house the car the water."]


def source_batch(translator, sentences):
    sources, _ = translator.encode_source(sentences)
    return pad_sequences(sources)


def encoded_pair_and_full_logits():
    """A random model, an encoded source batch, a target prefix and its uncached logits (one full pass)."""
    cfg = tiny_config()
    model = make_model()
    src = pad_sequences(random_sequences([6, 3], cfg.vocab_size))
    tgt = torch.tensor([[BOS_ID] + seq for seq in random_sequences([7, 7], cfg.vocab_size, seed=1)])
    memory, src_mask = model.encode(src)
    full = model.decode(tgt, memory, src_mask)
    return cfg, model, tgt, memory, src_mask, full


def test_cached_step_logits_equal_full_prefix_logits():
    cfg, model, tgt, memory, src_mask, full = encoded_pair_and_full_logits()
    cache = KVCache(model.cfg.n_decoder_layers)
    for t in range(tgt.size(1)):
        step = model.decode(tgt[:, t : t + 1], memory, src_mask, cache)
        torch.testing.assert_close(step[:, 0], full[:, t], atol=1e-5, rtol=1e-5)
    assert cache.layers[0].self_k.shape == (2, cfg.n_heads, tgt.size(1), cfg.d_model // cfg.n_heads)


def test_cache_accepts_several_new_tokens_at_once():
    cfg, model, tgt, memory, src_mask, full = encoded_pair_and_full_logits()
    cache = KVCache(model.cfg.n_decoder_layers)
    chunks = [(0, 3), (3, 7), (7, 8)]  # a prompt, then a chunk of several tokens, then one token
    steps = torch.cat([model.decode(tgt[:, a:b], memory, src_mask, cache) for a, b in chunks], dim=1)
    torch.testing.assert_close(steps, full, atol=1e-5, rtol=1e-5)
    assert cache.length == tgt.size(1)


def test_cache_length_grows_by_one_per_cached_step():
    cfg, model, tgt, memory, src_mask, _ = encoded_pair_and_full_logits()
    cache = KVCache(cfg.n_decoder_layers)
    assert cache.length == 0
    for t in range(tgt.size(1)):
        model.decode(tgt[:, t : t + 1], memory, src_mask, cache)
        assert cache.length == t + 1
        assert all(layer.self_k.size(2) == layer.self_v.size(2) == t + 1 for layer in cache.layers)


def test_cross_attention_keys_values_are_projected_once():
    cfg, model, tgt, memory, src_mask, _ = encoded_pair_and_full_logits()
    calls = Counter()
    for layer in model.decoder.layers:
        layer.self_attention.w_k.register_forward_hook(lambda *_: calls.update(["self"]))
        layer.cross_attention.w_k.register_forward_hook(lambda *_: calls.update(["cross"]))
    cache = KVCache(model.cfg.n_decoder_layers)
    model.decode(tgt[:, :1], memory, src_mask, cache)
    first_cross = [(layer.cross_k, layer.cross_v) for layer in cache.layers]
    for t in range(1, tgt.size(1)):
        model.decode(tgt[:, t : t + 1], memory, src_mask, cache)
    assert calls == {"self": cfg.n_decoder_layers * tgt.size(1), "cross": cfg.n_decoder_layers}
    for layer, (k, v) in zip(cache.layers, first_cross):
        assert layer.cross_k is k and layer.cross_v is v
        assert k.shape == (2, cfg.n_heads, memory.size(1), cfg.d_model // cfg.n_heads)


def test_reorder_keeps_the_chosen_hypotheses():
    """After `reorder(index)` the cache is the one of hypotheses `index`: its tensors are those rows, and the next
    step's logits equal a pass from scratch over the reordered prefixes (across sentences and batch sizes too)."""
    _, model, tgt, memory, src_mask, _ = encoded_pair_and_full_logits()
    cache = KVCache(model.cfg.n_decoder_layers)
    model.decode(tgt[:, :5], memory, src_mask, cache)
    before = [copy.copy(layer) for layer in cache.layers]
    index = torch.tensor([1, 0, 1])  # sentences swapped, one repeated: three hypotheses from two
    cache.reorder(index)
    for layer, old in zip(cache.layers, before):
        for name, cached in vars(layer).items():
            assert torch.equal(cached, getattr(old, name)[index]), name
    step = model.decode(tgt[index, 5:6], memory[index], src_mask[index], cache)
    scratch = model.decode(tgt[index, :6], memory[index], src_mask[index])
    torch.testing.assert_close(step[:, 0], scratch[:, -1], atol=1e-5, rtol=1e-5)
    assert cache.length == 6


@pytest.mark.parametrize("beam", [1, 4])
def test_cached_decoding_equals_uncached(translator, beam):
    src = source_batch(translator, SENTENCES)
    cached = generate(translator.model, src, beam=beam, use_cache=True)
    uncached = generate(translator.model, src, beam=beam, use_cache=False)
    assert cached == uncached
    assert all(len(out) > 0 for out in cached)


def test_beam_of_one_is_greedy(translator):
    for model in (translator.model, make_model(vocab_size=translator.model.cfg.vocab_size)):
        src = source_batch(translator, SENTENCES)
        assert beam_search(model, src, beam=1) == greedy_decode(model, src)


@pytest.mark.parametrize("beam", [1, 3])
def test_batched_decoding_equals_one_sentence_at_a_time(translator, beam):
    batched = generate(translator.model, source_batch(translator, SENTENCES), beam=beam)
    assert len(batched) == len(SENTENCES)
    for sentence, out in zip(SENTENCES, batched):
        assert generate(translator.model, source_batch(translator, [sentence]), beam=beam) == [out]


def test_trained_model_translates_toy_sentences_with_beam(translator):
    for en, it in toy_pairs()[:10]:
        assert translator.translate(en, beam=4) == it


def test_max_output_lengths_grow_with_source_and_respect_max_len():
    model = make_model(max_len=30)
    src = pad_sequences([[5] * n for n in (1, 2, 5, 20, 29)])
    limits = max_output_lengths(src, model).tolist()
    assert limits == sorted(limits) and limits[0] < limits[1] < limits[2]
    assert limits[0] >= 2  # even a one-token source gets room for a translation
    assert max(limits) == model.cfg.max_len - 1  # longest sources are capped by the positional table


@pytest.mark.parametrize("beam", [1, 3])
@pytest.mark.parametrize("seed", [2, 3, 6])
def test_outputs_stop_at_their_own_length_cap(beam, seed):
    cfg = tiny_config(max_len=40)
    model = suppress_eos(make_model(seed=seed, max_len=40))
    sequences = random_sequences([2, 9, 4], cfg.vocab_size, seed=seed)
    src = pad_sequences(sequences)
    limits = max_output_lengths(src, model).tolist()
    assert len(set(limits)) == 3  # different caps inside one batch
    outputs = generate(model, src, beam=beam)
    assert [len(out) for out in outputs] == limits
    for out in outputs:
        assert not {PAD_ID, BOS_ID, EOS_ID} & set(out)
    # A sentence capped before the rest of its batch gets the output it gets alone.
    assert outputs == [generate(model, pad_sequences([seq]), beam=beam)[0] for seq in sequences]


def test_beam_search_returns_one_hypothesis_per_sentence_without_specials():
    cfg = tiny_config()
    model = make_model()
    src = pad_sequences(random_sequences([3, 8, 5, 1], cfg.vocab_size))
    outputs = beam_search(model, src, beam=4)
    assert len(outputs) == 4
    for out, limit in zip(outputs, max_output_lengths(src, model).tolist()):
        assert len(out) <= limit
        assert not {PAD_ID, BOS_ID, EOS_ID} & set(out)


def test_block_repeated_ngrams_forbids_exactly_the_tokens_that_repeat_an_ngram():
    from transformer.decoding import block_repeated_ngrams

    ys = torch.tensor([[BOS_ID, 5, 6, 7, 5, 6], [BOS_ID, 5, 6, 7, 8, 9]])
    logits = torch.zeros(2, 12)
    block_repeated_ngrams(logits, ys, 3)
    assert torch.isinf(logits[0]).nonzero().flatten().tolist() == [7]  # "5 6 7" would repeat
    assert not torch.isinf(logits[1]).any()
    logits = torch.zeros(2, 12)
    block_repeated_ngrams(logits, ys[:, :2], 3)  # prefix shorter than n: nothing to block
    assert not torch.isinf(logits).any()
    logits = torch.full((2, 12), float("-inf"))
    logits[:, 7] = 0.0  # a rule allows one token only (the next digit of a number): the repeat is kept
    block_repeated_ngrams(logits, ys, 3)
    assert logits[:, 7].tolist() == [0.0, 0.0]


@pytest.mark.parametrize("strategy", [dict(beam=1), dict(beam=3), dict(sampling=Sampling(seed=4))])
def test_a_decoding_rule_sees_each_rows_source_and_forbids_at_every_step(strategy):
    model = suppress_eos(make_model(seed=3, vocab_size=12))
    src = pad_sequences(random_sequences([5, 9], 12))
    seen = []

    def odd_tokens_after_even_sources(logits, ys, row_src):
        """Forbid the odd tokens in the rows whose source starts with an even token, the even ones elsewhere."""
        assert row_src.size(0) == ys.size(0) == logits.size(0)
        seen.append(row_src[:, 0].tolist())
        for row, first in enumerate(row_src[:, 0].tolist()):
            logits[row, (first + 1) % 2 :: 2] = float("-inf")

    outputs = generate(model, src, rule=odd_tokens_after_even_sources, **strategy)
    for first, out in zip(src[:, 0].tolist(), outputs):
        assert out and all(token % 2 == first % 2 for token in out)
    K = strategy.get("beam", 1)
    assert seen[0] == [first for first in src[:, 0].tolist() for _ in range(K)]  # each hypothesis its own source


@pytest.mark.parametrize("beam", [1, 3])
def test_decoding_with_no_repeat_ngram_never_repeats_one(beam):
    model = suppress_eos(make_model(seed=3, vocab_size=12))  # few tokens, no EOS: loops are all it can do
    src = pad_sequences(random_sequences([5, 9], 12))
    for out in generate(model, src, beam=beam, no_repeat_ngram=2):
        bigrams = list(zip(out, out[1:]))
        assert len(bigrams) == len(set(bigrams)) and len(out) > 2
    looping = generate(model, src, beam=beam)
    assert any(len(set(zip(o, o[1:]))) < len(o) - 1 for o in looping)  # without the rule it loops


def test_beam_search_keeps_searching_while_a_live_beam_can_still_win():
    from transformer.decoding import _beam_finished

    finished = [(-2.0, [5]), (-3.0, [6])]
    assert not _beam_finished(finished[:1], torch.tensor([-1.0]), K=2, length=3, alpha=0.6)  # too few finished
    assert not _beam_finished(finished, torch.tensor([-1.0, -9.0]), K=2, length=3, alpha=0.6)  # -1/1.27 > -2
    assert _beam_finished(finished, torch.tensor([-4.0, -9.0]), K=2, length=3, alpha=0.6)


def test_decoding_never_writes_padding_start_or_unknown_tokens():
    model = make_model(seed=5, vocab_size=12)
    bias = torch.zeros(12)
    bias[[PAD_ID, BOS_ID, UNK_ID]] = 100.0  # the model prefers them above all ...
    bias[EOS_ID] = -100.0  # ... and writes on to the length cap
    model.output_projection.register_forward_hook(lambda module, inputs, logits: logits + bias)
    src = pad_sequences(random_sequences([4, 7], 12))
    for beam in (1, 3):
        outputs = generate(model, src, beam=beam)
        assert all(out and not {PAD_ID, BOS_ID, UNK_ID} & set(out) for out in outputs)
