"""Inside one head (`interpretability.head_details`): the intermediates are the model's own. The softmax of q·K/√d_k and
the mask gives back the head's attention map of `inspect`, masked keys weigh nothing, the heads' shares through
W_O add up to the sub-layer's output as the model computes it, and decoder self-attention hides the future;
every query at once (query "all") is each query alone, and exp(s − max) ÷ Σ exp is the weights."""

import threading

import numpy as np
import pytest
import torch

from interpretability import HeadDetails, head_details, inspect
from interpretability.head_details import ALL_QUERIES, HeadQueries, attention_module, capture_attention
from transformer import Translator

MAPS = {"encoder": "encoder_attention", "decoder": "decoder_attention", "cross": "cross_attention"}


@pytest.fixture(scope="module")
def inspection(translator):
    return inspect(translator, "they love the city.")


def every_case(inspection):
    """(kind, layer, head, query) for every layer, head and query position of every kind."""
    for kind, field in MAPS.items():
        n_layers, n_heads, n_queries, _ = getattr(inspection, field).shape
        for layer in range(n_layers):
            for head in range(n_heads):
                for query in range(n_queries):
                    yield kind, layer, head, query


def model_pass(translator, inspection, kind, layer):
    """A teacher-forced pass over the inspected tokens with this test's own hooks on one attention sub-layer:
    what its W_Q and W_O wrote, (Tq, C) each."""
    attn = attention_module(translator.model, kind, layer)
    written = {}
    hooks = [
        proj.register_forward_hook(lambda m, i, out, name=name: written.__setitem__(name, out[0].float()))
        for name, proj in [("q", attn.w_q), ("out", attn.w_o)]
    ]
    ids = lambda tokens: torch.tensor([[translator.tokenizer.token_to_id(t) for t in tokens]])  # noqa: E731
    with torch.inference_mode():
        memory, src_mask = translator.model.encode(ids(inspection.source_tokens))
        translator.model.decode(ids(inspection.target_tokens), memory, src_mask)
    for hook in hooks:
        hook.remove()
    return written["q"].numpy(), written["out"].numpy()


def test_weights_from_q_k_and_mask_are_the_attention_map(translator, inspection):
    for kind, layer, head, query in every_case(inspection):
        d = head_details(translator, inspection, kind, layer, head, query)
        logits = np.where(d.masked, -np.inf, d.k @ d.q / np.sqrt(d.d_k))
        weights = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
        expected = getattr(inspection, MAPS[kind])[layer, head, query]
        np.testing.assert_allclose(weights, expected, atol=1e-5)
        np.testing.assert_allclose(d.weights, expected, atol=1e-5)
        np.testing.assert_allclose(d.scaled, d.scores / np.sqrt(d.d_k), rtol=1e-6)
        np.testing.assert_allclose(d.output, d.weights @ d.v, atol=1e-6)


def test_masked_keys_get_no_weight_and_decoder_self_attention_hides_the_future(translator, inspection):
    T = len(inspection.target_tokens)
    for query in range(T):
        d = head_details(translator, inspection, "decoder", 0, 0, query)
        assert d.masked.tolist() == [j > query for j in range(T)]
        assert np.all(d.weights[query + 1 :] == 0) and d.weights[: query + 1].sum() == pytest.approx(1, abs=1e-6)
    for kind in ("encoder", "cross"):  # one sentence has no padding: every source token is visible
        d = head_details(translator, inspection, kind, 0, 0, 0)
        assert not d.masked.any() and d.key_tokens == inspection.source_tokens


@pytest.mark.parametrize("kind", list(MAPS))
def test_heads_through_w_o_add_up_to_the_sub_layers_output(translator, inspection, kind):
    cfg = translator.model.cfg
    layer = (cfg.n_encoder_layers if kind == "encoder" else cfg.n_decoder_layers) - 1  # the last: reads all below
    model_q, model_out = model_pass(translator, inspection, kind, layer)
    b_O = attention_module(translator.model, kind, layer).w_o.bias.detach().float().numpy()
    for query in range(len(model_out)):
        heads = [head_details(translator, inspection, kind, layer, h, query) for h in range(cfg.n_heads)]
        np.testing.assert_allclose(sum(d.contribution for d in heads) + b_O, model_out[query], atol=1e-5)
        np.testing.assert_allclose(heads[0].attention_output, model_out[query], atol=1e-6)
        np.testing.assert_allclose(np.concatenate([d.q for d in heads]), model_q[query], atol=1e-5)
        for d in heads:
            np.testing.assert_array_equal(d.concat[d.head * d.d_k : (d.head + 1) * d.d_k], d.output)


def test_tokens_and_shapes(translator, inspection):
    cfg = translator.model.cfg
    d = head_details(translator, inspection, "cross", 0, 1, 2)
    assert isinstance(d, HeadDetails) and (d.kind, d.layer, d.head, d.query) == ("cross", 0, 1, 2)
    assert d.query_token == inspection.target_tokens[2] and d.key_tokens == inspection.source_tokens
    S, d_k = len(inspection.source_tokens), cfg.d_model // cfg.n_heads
    assert d.q.shape == (d_k,) and d.k.shape == d.v.shape == (S, d_k) and d.x.shape == (cfg.d_model,)
    assert d.scores.shape == d.weights.shape == d.masked.shape == (S,)
    assert d.contribution.shape == d.concat.shape == d.attention_output.shape == (cfg.d_model,)
    assert all(a.dtype == np.float32 for a in (d.q, d.k, d.v, d.weights, d.contribution))


def test_float16_model_gives_its_own_maps(tiny_model_dir):
    half = Translator.load(tiny_model_dir, dtype="float16")
    inspection = inspect(half, "I see the cat.")
    d = head_details(half, inspection, "cross", 0, 1, 3)
    np.testing.assert_allclose(d.weights, inspection.cross_attention[0, 1, 3], atol=2e-3)


@pytest.mark.parametrize(
    "args, message",
    [
        (("self", 0, 0, 0), "kind"),
        (("encoder", 9, 0, 0), "layer"),
        (("decoder", 0, 9, 0), "head"),
        (("cross", 0, 0, 99), "query"),
    ],
)
def test_out_of_range_choices_are_refused(translator, inspection, args, message):
    with pytest.raises(ValueError, match=message):
        head_details(translator, inspection, *args)


def test_capture_leaves_no_hooks_and_ignores_other_threads(translator, inspection):
    """The app runs other requests on the same model meanwhile: their passes must not be recorded."""
    attn = attention_module(translator.model, "encoder", 0)
    with capture_attention(attn) as seen:
        other = threading.Thread(target=translator.translate, args=["I see the cat."])
        other.start()
        other.join()
        assert seen == {}
    head_details(translator, inspection, "encoder", 0, 0, 0)
    assert not attn.w_q._forward_hooks and not attn.w_k._forward_hooks and not attn.w_o._forward_hooks


@pytest.mark.parametrize("kind", list(MAPS))
def test_every_query_at_once_is_each_query_alone(translator, inspection, kind):
    """query "all": one pass gives every query token's numbers, each those of the query alone."""
    every = head_details(translator, inspection, kind, 0, 1, ALL_QUERIES)
    assert isinstance(every, HeadQueries) and (every.kind, every.layer, every.head) == (kind, 0, 1)
    n_queries = getattr(inspection, MAPS[kind]).shape[2]
    assert len(every.query_tokens) == len(every.q) == len(every.weights) == n_queries
    for query in range(n_queries):
        alone, at = head_details(translator, inspection, kind, 0, 1, query), every.at(query)
        assert (at.query, at.query_token, at.key_tokens) == (alone.query, alone.query_token, alone.key_tokens)
        for name in (
            "x",
            "q",
            "k",
            "v",
            "scores",
            "scaled",
            "masked",
            "exps",
            "weights",
            "output",
            "concat",
            "contribution",
            "attention_output",
        ):
            np.testing.assert_allclose(getattr(at, name), getattr(alone, name), atol=1e-6, err_msg=name)


def test_the_softmax_taken_apart_gives_the_weights(translator, inspection):
    """exp(s − max) over the visible keys: at most 1, exactly 1 at the largest score, 0 where hidden; divided by
    their sum, the weights."""
    for query in range(len(inspection.target_tokens)):
        d = head_details(translator, inspection, "decoder", 0, 1, query)
        visible = ~d.masked
        assert d.top_scaled == pytest.approx(d.scaled[visible].max())
        np.testing.assert_allclose(d.exps[visible], np.exp(d.scaled[visible] - d.top_scaled), rtol=1e-5)
        assert np.all(d.exps[d.masked] == 0) and d.exps.max() == pytest.approx(1) and np.all(d.exps <= 1)
        np.testing.assert_allclose(d.exps / d.exp_sum, d.weights, atol=1e-6)
