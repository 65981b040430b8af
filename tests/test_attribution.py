"""Gradient attribution over the source tokens (`interpretability.attribution`): the rows line up with the inspection's
cross-attention and read like attention rows, gradient × input is the gradient autograd gives an untouched model,
integrated gradients add up to the change in log-probability from the baseline, Spearman's rank correlation is
right with ties, and the translator's own model is left exactly as it was, also under torch.inference_mode()."""

import gc
import weakref
from dataclasses import replace

import numpy as np
import pytest
import torch

from interpretability import inspect
from interpretability.attribution import (
    METHODS,
    average_ranks,
    float32_model,
    path_points,
    raw_attributions,
    source_attribution,
    spearman,
)
from interpretability.inspection import token_ids
from transformer import Translator
from transformer.tokenizer import EOS, EOS_ID

SENTENCE = "they love the city."


@pytest.fixture(scope="module")
def inspection(translator):
    return inspect(translator, SENTENCE)


def teacher_forcing_ids(translator, inspection):
    """src (1, S), decoder inputs (1, T) and the tokens they predict (1, T), as token ids."""
    target = token_ids(translator.tokenizer, inspection.target_tokens)
    return (
        torch.tensor([token_ids(translator.tokenizer, inspection.source_tokens)]),
        torch.tensor([target]),
        torch.tensor([target[1:] + [EOS_ID]]),
    )


@pytest.mark.parametrize("method", METHODS)
def test_rows_line_up_with_the_cross_attention_and_read_like_attention_rows(translator, inspection, method):
    result = source_attribution(translator, inspection, method=method, steps=4)
    T, S = inspection.cross_attention.shape[2:]
    assert result.scores.shape == result.attention.shape == (T, S)
    assert result.agreement.shape == (T,)
    assert result.output_tokens == inspection.target_tokens[1:] + [EOS]
    assert result.scores.dtype == result.attention.dtype == np.float32
    assert (result.scores >= 0).all()
    np.testing.assert_allclose(result.scores.sum(axis=1), 1, atol=1e-5)
    np.testing.assert_allclose(result.attention, inspection.cross_attention.mean(axis=(0, 1)), atol=1e-6)
    np.testing.assert_allclose(result.attention.sum(axis=1), 1, atol=1e-5)
    expected = [spearman(s, a) for s, a in zip(result.scores, result.attention)]
    np.testing.assert_allclose(result.agreement, expected, atol=1e-6)
    assert result.mean_agreement == pytest.approx(np.mean(expected), abs=1e-6)
    assert result.steps == (1 if method == "gradient_x_input" else 4) and result.seconds > 0


def test_the_attention_row_is_the_mean_over_layers_and_heads(translator, inspection):
    """The tiny model has one decoder layer: cross-attention of three layers, made up, tells a mean from one layer."""
    T, S = inspection.cross_attention.shape[2:]
    weights = np.random.default_rng(0).random((3, 2, T, S)).astype(np.float32)
    made_up = replace(inspection, cross_attention=weights / weights.sum(axis=-1, keepdims=True))
    result = source_attribution(translator, made_up)
    expected = made_up.cross_attention.mean(axis=(0, 1))  # (T, S)
    np.testing.assert_allclose(result.attention, expected, atol=1e-6)
    np.testing.assert_allclose(result.agreement, [spearman(s, a) for s, a in zip(result.scores, expected)], atol=1e-6)


def output_log_probs(model, src, tgt_in, tgt_out, embedded):
    """log p(y_t | y_<t, x) (T,) from the model's ordinary forward pass, with the output of its source embedding
    layer (embeddings × √d_model) swapped for `embedded` (1, S, C)."""
    hook = model.src_embed.register_forward_hook(lambda module, inputs, output: embedded)
    try:
        log_probs = model(src, tgt_in).log_softmax(dim=-1)  # (1, T, V)
    finally:
        hook.remove()
    return log_probs[0].gather(-1, tgt_out[0, :, None]).squeeze(-1)  # (T,)


def test_gradient_x_input_is_the_gradient_autograd_gives_an_untouched_model(tiny_model_dir, translator, inspection):
    """The gradient of log p(y_t) w.r.t. the source embeddings × √d_model, on a freshly loaded float32 model."""
    model = Translator.load(tiny_model_dir).model
    src, tgt_in, tgt_out = teacher_forcing_ids(translator, inspection)
    embedded = model.src_embed(src).detach().requires_grad_()  # (1, S, C)
    log_probs = output_log_probs(model, src, tgt_in, tgt_out, embedded)  # (T,)
    result = source_attribution(translator, inspection, method="gradient_x_input")
    for t in range(len(log_probs)):
        (grad,) = torch.autograd.grad(log_probs[t], embedded, retain_graph=True)  # (1, S, C)
        row = (grad * embedded).sum(dim=-1)[0].abs().detach().numpy()  # (S,)
        np.testing.assert_allclose(result.scores[t], row / row.sum(), atol=1e-5)


@pytest.mark.parametrize("steps", [4, 16, 64])
def test_integrated_gradients_add_up_to_the_change_from_the_baseline(translator, inspection, steps):
    """Completeness: Σ_i IG_i(y_t) = log p(y_t | x) - log p(y_t | 0), up to the Riemann sum's error, which shrinks
    as the steps grow (the tolerance with them)."""
    model = float32_model(translator)
    src, tgt_in, tgt_out = teacher_forcing_ids(translator, inspection)
    with torch.no_grad():
        embedded = model.src_embed(src)  # (1, S, C)
        change = (
            output_log_probs(model, src, tgt_in, tgt_out, embedded)
            - output_log_probs(model, src, tgt_in, tgt_out, torch.zeros_like(embedded))
        ).numpy()  # (T,)
    raw = raw_attributions(model, src, tgt_in, tgt_out, path_points("integrated_gradients", steps)).numpy()
    assert raw.shape == (len(change), src.size(1))
    np.testing.assert_allclose(raw.sum(axis=1), change, atol=np.abs(change).max() / (2 * steps))


def test_spearman_of_identical_and_reversed_rankings():
    values = np.array([0.1, 0.5, 0.2, 0.9])
    assert spearman(values, values) == pytest.approx(1)
    assert spearman(values, values**3 + 7) == pytest.approx(1)  # same order, other values
    assert spearman(values, -values) == pytest.approx(-1)


def test_spearman_averages_the_ranks_of_ties():
    np.testing.assert_array_equal(average_ranks(np.array([10, 20, 20, 5])), [2, 3.5, 3.5, 1])
    # ranks [1, 2.5, 2.5, 4] and [1, 3, 2, 4]: deviations (-1.5, 0, 0, 1.5) and (-1.5, .5, -.5, 1.5),
    # covariance 4.5, sums of squares 4.5 and 5: 4.5 / √22.5
    assert spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / np.sqrt(22.5))
    assert np.isnan(spearman([0.3, 0.3, 0.3], [1, 2, 3]))  # no order to compare


def test_the_translators_model_is_left_as_it_was(tiny_model_dir):
    translator = Translator.load(tiny_model_dir, dtype="float16")
    inspection = inspect(translator, SENTENCE)
    before = {name: p.detach().clone() for name, p in translator.model.named_parameters()}
    flags = {name: p.requires_grad for name, p in translator.model.named_parameters()}
    for method in METHODS:
        result = source_attribution(translator, inspection, method=method, steps=4)
        np.testing.assert_allclose(result.scores.sum(axis=1), 1, atol=1e-5)
    for name, p in translator.model.named_parameters():
        assert p.dtype == torch.float16 and p.grad is None and p.requires_grad == flags[name]
        assert torch.equal(p, before[name])
    assert not translator.model.training
    copy = float32_model(translator)
    assert copy is float32_model(translator) and copy is not translator.model  # made once, then reused
    assert all(p.dtype == torch.float32 and not p.requires_grad for p in copy.parameters())
    copied = copy.state_dict()
    assert all(torch.equal(copied[name], p.float()) for name, p in translator.model.state_dict().items())


def test_the_float32_copy_takes_no_hook_that_is_on_the_model_when_it_is_made(tiny_model_dir):
    translator = Translator.load(tiny_model_dir)
    inspection = inspect(translator, SENTENCE)

    def fail(module, inputs, output):
        raise AssertionError("the translator's encoder ran")

    hook = translator.model.encoder.register_forward_hook(fail)
    try:
        result = source_attribution(translator, inspection)
    finally:
        hook.remove()
    np.testing.assert_allclose(result.scores.sum(axis=1), 1, atol=1e-5)


def test_the_float32_copy_goes_with_its_model(tiny_model_dir):
    translator = Translator.load(tiny_model_dir)
    copy = weakref.ref(float32_model(translator))
    del translator
    gc.collect()
    assert copy() is None


def test_works_inside_inference_mode(tiny_model_dir, translator, inspection):
    expected = source_attribution(translator, inspection, method="integrated_gradients", steps=4)
    fresh = Translator.load(tiny_model_dir)  # its float32 copy is made inside inference mode
    with torch.inference_mode():
        result = source_attribution(fresh, inspect(fresh, SENTENCE), method="integrated_gradients", steps=4)
        assert torch.is_inference_mode_enabled()
    with torch.no_grad():
        source_attribution(fresh, inspection)
        assert not torch.is_grad_enabled()
    assert torch.is_grad_enabled()
    np.testing.assert_allclose(result.scores, expected.scores, atol=1e-6)


def test_bad_arguments_are_refused(translator, inspection):
    with pytest.raises(ValueError, match="method must be one of"):
        source_attribution(translator, inspection, method="attention_rollout")
    for steps in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="steps must be a whole number >= 1"):
            source_attribution(translator, inspection, method="integrated_gradients", steps=steps)
    foreign = replace(inspection, source_tokens=["▁not-a-token-of-this-vocabulary", EOS])
    with pytest.raises(ValueError, match="vocabulary lacks"):
        source_attribution(translator, foreign)
