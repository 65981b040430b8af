"""Sampling with a temperature and top-k: reproducible per seed, greedy in the limit, drawing from
`tempered_distribution`, and the distribution `interpretability.inspect` shows is the one the sampler drew from."""

import math

import pytest
import torch
import torch.nn.functional as F

from helpers import make_model, toy_pairs
from inputs.checks import MAX_SEED, MAX_TEMPERATURE, MIN_TEMPERATURE, check_decoding, check_sampling
from interpretability import inspect
from transformer.decoding import Sampling, generate, greedy_decode, sample_decode, tempered_distribution
from transformer.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID, pad_sequences

# Toy-corpus sentences plus a few the tiny model never saw, so that its distributions are not all peaked.
SENTENCES = [en for en, _ in toy_pairs()[:4]] + ["Tom", "the cat and the dog.", "I eat the house the car."]


def source_batch(translator, sentences):
    sources, _ = translator.encode_source(sentences)
    return pad_sequences(sources)


def entropy(probs):
    return -(probs * probs.clamp_min(1e-30).log()).sum(dim=-1)


def test_same_seed_same_output_and_different_seeds_differ(translator):
    def hot(seed):
        return translator.translate(SENTENCES, sampling=Sampling(temperature=3.0, seed=seed))

    assert hot(7) == hot(7)
    by_seed = [hot(seed) for seed in range(5)]
    differing = sum(len(set(outputs)) > 1 for outputs in zip(*by_seed))  # sentences whose output varies by seed
    assert differing >= len(SENTENCES) // 2


def test_a_sentence_samples_the_same_alone_in_any_batch_and_without_the_cache(translator):
    src = source_batch(translator, SENTENCES)
    batched = sample_decode(translator.model, src, temperature=2.0, seed=3)
    uncached = sample_decode(translator.model, src, temperature=2.0, seed=3, use_cache=False)
    alone = [
        sample_decode(translator.model, source_batch(translator, [s]), temperature=2.0, seed=3)[0] for s in SENTENCES
    ]
    assert batched == uncached == alone
    assert batched != greedy_decode(translator.model, src)  # at temperature 2 the draws leave the argmax


@pytest.mark.parametrize(
    "sampling",
    [
        Sampling(top_k=1, seed=5),
        Sampling(temperature=MIN_TEMPERATURE, seed=5),
        Sampling(temperature=MIN_TEMPERATURE, top_k=3, seed=1),
    ],
)
def test_top_1_and_the_lowest_temperature_are_greedy(translator, sampling):
    """Top-1 on any model; the lowest temperature on a trained one (an untrained model's best logits can tie within
    0.01, where even MIN_TEMPERATURE leaves a choice)."""
    models = [translator.model]
    if sampling.top_k == 1:
        models.append(make_model(seed=4, vocab_size=translator.model.cfg.vocab_size))
    for model in models:
        src = source_batch(translator, SENTENCES)
        assert generate(model, src, sampling=sampling, no_repeat_ngram=2) == greedy_decode(
            model, src, no_repeat_ngram=2
        )


def test_the_extreme_temperatures_draw_real_tokens(translator):
    """1e-46 and 1e39 once divided the logits into NaN (an IndexError deep in the draw); the range's ends work."""
    src = source_batch(translator, SENTENCES)
    for temperature in (MIN_TEMPERATURE, MAX_TEMPERATURE):
        outputs = sample_decode(translator.model, src, temperature=temperature, top_k=10**9, seed=MAX_SEED)
        assert all(0 <= t < translator.model.cfg.vocab_size for out in outputs for t in out)


def test_tempered_distribution_at_temperature_1_is_the_softmax():
    logits = torch.randn(3, 50, generator=torch.Generator().manual_seed(0)) * 4
    torch.testing.assert_close(tempered_distribution(logits, 1.0, 0), F.softmax(logits, dim=-1))
    torch.testing.assert_close(tempered_distribution(logits, 0.5, 0), F.softmax(logits * 2, dim=-1))


def test_higher_temperature_flattens_the_distribution():
    logits = torch.randn(4, 50, generator=torch.Generator().manual_seed(1)) * 3
    entropies = torch.stack([entropy(tempered_distribution(logits, t, 0)) for t in (0.3, 0.7, 1.0, 2.0, 10.0)])
    assert (entropies[1:] > entropies[:-1]).all()
    assert (entropies[-1] < math.log(50)).all()  # flatter and flatter, never beyond uniform
    assert (entropy(tempered_distribution(logits, 1e-4, 0)) < 1e-3).all()  # nearly all on the argmax


def test_top_k_keeps_the_k_most_probable_in_proportion():
    logits = torch.randn(4, 50, generator=torch.Generator().manual_seed(2))
    logits[:, 7] = float("-inf")  # a forbidden token stays forbidden
    full = tempered_distribution(logits, 1.5, 0)
    for k in (1, 3, 10):
        probs = tempered_distribution(logits, 1.5, k)
        kept = probs > 0
        assert (kept.sum(dim=-1) == k).all()
        assert torch.equal(kept, torch.zeros_like(kept).scatter_(-1, logits.topk(k, dim=-1).indices, True))
        torch.testing.assert_close(probs.sum(dim=-1), torch.ones(4))
        torch.testing.assert_close(probs[kept], (full * kept / (full * kept).sum(-1, keepdim=True))[kept])
    assert full[:, 7].eq(0).all()
    torch.testing.assert_close(tempered_distribution(logits, 1.5, 50), full)  # k = V keeps all


@pytest.mark.parametrize("temperature, top_k", [(1.0, 0), (2.0, 0), (1.0, 3)])
def test_first_token_frequencies_over_seeds_match_tempered_distribution(temperature, top_k):
    model = make_model(seed=0, vocab_size=12, max_len=2)  # one token drawn: a seed costs about a millisecond
    src = pad_sequences([[5]])
    memory, src_mask = model.encode(src)
    logits = model.decode(torch.tensor([[BOS_ID]]), memory, src_mask)[0, -1].float()  # (V,)
    logits[[PAD_ID, BOS_ID, UNK_ID]] = float("-inf")  # never generated
    expected = tempered_distribution(logits, temperature, top_k)
    n = 800
    first = [(sample_decode(model, src, temperature, top_k, seed=seed)[0] or [EOS_ID])[0] for seed in range(n)]
    frequency = torch.bincount(torch.tensor(first), minlength=12).float() / n
    tolerance = 4 * (expected * (1 - expected) / n).sqrt() + 1e-3  # four standard deviations of a frequency
    assert (expected.max() < 0.8) and ((frequency - expected).abs() <= tolerance).all(), (frequency, expected)


def test_inspect_shows_the_distribution_the_sampler_drew_from(translator):
    text = "the cat and the dog."
    sampling = Sampling(temperature=2.5, top_k=3, seed=2)
    view = inspect(translator, text, top_k=5, sampling=sampling)
    assert view.translation == translator.translate(text, sampling=sampling)
    assert view.sampling == sampling
    assert len(view.tempered_candidates) == len(view.top_candidates) == len(view.target_tokens)
    drawn = view.target_tokens[1:] + ["</s>"]
    for token, candidates in zip(drawn, view.tempered_candidates):
        probs = [p for _, p in candidates]
        assert 0 < len(candidates) <= 3 and probs == sorted(probs, reverse=True)
        assert abs(sum(probs) - 1) < 1e-5  # top-3 sampling: these three are the whole distribution
        assert token in dict(candidates)  # every drawn token had a probability in what the step shows
    for tempered, top in zip(view.tempered_candidates, view.top_candidates):  # ratios shrink to their 2.5th root
        (a, pa), (b, pb) = tempered[:2]
        at_one = dict(top)
        assert math.log(pa / pb) == pytest.approx(math.log(at_one[a] / at_one[b]) / 2.5, rel=1e-3, abs=1e-4)


def test_tempered_candidates_at_temperature_1_are_the_top_candidates(translator):
    text = "I eat the house the car."
    generated = translator.translate_ids([text], sampling=Sampling(temperature=2.0, seed=1))[0]
    plain = inspect(translator, text, generated=generated)
    assert plain.tempered_candidates == [] and plain.sampling is None
    view = inspect(translator, text, generated=generated, sampling=Sampling())
    assert view.target_tokens == plain.target_tokens
    for tempered, top in zip(view.tempered_candidates, view.top_candidates, strict=True):
        assert [t for t, _ in tempered] == [t for t, _ in top]
        assert [p for _, p in tempered] == pytest.approx([p for _, p in top], abs=1e-6)
        assert sum(p for _, p in tempered) <= 1 + 1e-6


@pytest.mark.parametrize(
    "values, message",
    [
        (dict(temperature=0), "temperature"),
        (dict(temperature=-1.0), "temperature"),
        (dict(temperature=float("inf")), "temperature"),
        (dict(temperature=float("nan")), "temperature"),
        (dict(temperature="1"), "temperature"),
        (dict(temperature=1e39), r"temperature must be a number in 0\.01\.\.100"),
        (dict(temperature=1e-46), "temperature"),
        (dict(temperature=MAX_TEMPERATURE * 1.01), "temperature"),
        (dict(temperature=MIN_TEMPERATURE / 2), "temperature"),
        (dict(top_k=-1), "top_k must be a whole number >= 0"),
        (dict(top_k=2.5), "top_k"),
        (dict(top_k=True), "top_k"),
        (dict(top_k=float("inf")), "top_k"),
        (dict(top_k=float("nan")), "top_k"),
        (dict(seed=-1), "seed"),
        (dict(seed=MAX_SEED + 1), rf"seed must be a whole number in 0\.\.{MAX_SEED}"),
        (dict(seed=0.5), "seed"),
        (dict(seed=float("inf")), "seed"),
        (dict(seed=float("nan")), "seed"),
    ],
)
def test_bad_sampling_values_are_clear_errors(translator, values, message):
    with pytest.raises(ValueError, match=message):
        check_sampling(Sampling(**values))
    with pytest.raises(ValueError, match=message):
        translator.translate("I see the cat.", sampling=Sampling(**values))


def test_sampling_wants_beam_1_and_a_sampling(translator):
    with pytest.raises(ValueError, match="beam 1"):
        check_decoding(3, Sampling())
    with pytest.raises(ValueError, match="beam 1"):
        translator.translate("I see the cat.", beam=2, sampling=Sampling())
    with pytest.raises(ValueError, match="beam 1"):
        inspect(translator, "I see the cat.", beam=4, generated=[5, 6], sampling=Sampling())
    with pytest.raises(ValueError, match="Sampling"):
        check_decoding(1, {"temperature": 2.0})
