"""interpretability/internals.py: each number `inspect` records for one translation (`Inspection.internals`) equals
the same number computed directly from the model's modules, step by step as the paper writes them (embedding ×
√d_model + PE, then per layer x + Sublayer(LayerNorm(x)), the feed-forward's ReLU(x W_1 + b_1), the final norm, the
output layer), and comes from the pass that gave the inspection's candidates; the page's softmax at a temperature is
exact over the tokens shown."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from interpretability import inspect
from interpretability.inspection import teacher_forced_logits
from interpretability.internals import (
    TEMPERATURES,
    firing_share,
    is_tied,
    output_distribution,
    sublayer_names,
    write_ratios,
)
from transformer.model import causal_mask, padding_mask, sinusoidal_positional_encoding

SENTENCE = "I see the cat and we love the dog."


@pytest.fixture(scope="module")
def recorded(translator):
    inspection = inspect(translator, SENTENCE)
    return inspection, inspection.internals


def ids(translator, tokens):
    return torch.tensor([[translator.tokenizer.token_to_id(t) for t in tokens]])


def layer_norm(norm, x):
    """LayerNorm as the paper's reference computes it: (x − mean) / √(var + ε) · gain + bias."""
    mean, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
    return (x - mean) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias


def by_hand(model, src, tgt):
    """The pass written out with the model's modules: per stack, the stream entering each sublayer then leaving the
    last, each norm's (input, output), each feed-forward's hidden units; and the logits."""
    d_model = model.cfg.d_model
    src_mask, tgt_mask = padding_mask(src, model.cfg.pad_id), causal_mask(tgt.size(1))
    out = {}
    memory = None
    for name, tokens, stack, embed in [
        ("encoder", src, model.encoder, model.src_embed),
        ("decoder", tgt, model.decoder, model.tgt_embed),
    ]:
        pe = sinusoidal_positional_encoding(tokens.size(1), d_model)
        x = embed.embedding.weight[tokens] * math.sqrt(d_model) + pe
        stream, norms, hidden = [], [], []
        for layer in stack.layers:
            sublayers = [lambda h, layer=layer: layer.self_attention(h, h, src_mask if name == "encoder" else tgt_mask)]
            if name == "decoder":
                sublayers.append(lambda h, layer=layer: layer.cross_attention(h, memory, src_mask))
            ffn = layer.feed_forward
            sublayers.append(
                lambda h, ffn=ffn: F.relu(h @ ffn.w_1.weight.T + ffn.w_1.bias) @ ffn.w_2.weight.T + ffn.w_2.bias
            )
            for connection, sublayer in zip(layer.sublayer, sublayers):
                h = layer_norm(connection.norm, x)
                stream.append(x)
                norms.append((x, h))
                if sublayer is sublayers[-1]:
                    hidden.append(F.relu(h @ ffn.w_1.weight.T + ffn.w_1.bias))
                x = x + sublayer(h)
        stream.append(x)
        final = layer_norm(stack.norm, x)
        norms.append((x, final))
        out[name] = (pe, stream, norms, hidden)
        memory = final
    return out, final @ model.output_projection.weight.T


@torch.inference_mode()
def test_every_recorded_number_is_the_models(translator, recorded):
    inspection, internals = recorded
    model = translator.model
    src, tgt = ids(translator, inspection.source_tokens), ids(translator, inspection.target_tokens)
    expected, logits = by_hand(model, src, tgt)
    for name, tokens in [("encoder", src), ("decoder", tgt)]:
        stack = internals.stack(name)
        pe, stream, norms, hidden = expected[name]
        assert stack.tokens == (inspection.source_tokens if name == "encoder" else inspection.target_tokens)
        assert np.allclose(stack.embedding, model.src_embed.embedding.weight[tokens[0]].numpy(), atol=1e-6)
        assert np.allclose(stack.position, pe.numpy(), atol=1e-5)
        assert np.allclose(stack.stream, torch.stack([s[0] for s in stream]).numpy(), atol=1e-4)
        assert np.allclose(stack.norm_inputs, torch.stack([i[0] for i, _ in norms]).numpy(), atol=1e-4)
        assert np.allclose(stack.norm_outputs, torch.stack([o[0] for _, o in norms]).numpy(), atol=1e-4)
        assert np.allclose(stack.hidden, torch.stack([h[0] for h in hidden]).numpy(), atol=1e-4)
        norm_modules = [
            c.norm for layer in (model.encoder if name == "encoder" else model.decoder).layers for c in layer.sublayer
        ] + [(model.encoder if name == "encoder" else model.decoder).norm]
        assert np.array_equal(internals.gains[name], torch.stack([n.weight for n in norm_modules]).numpy())
        assert np.array_equal(internals.biases[name], torch.stack([n.bias for n in norm_modules]).numpy())
    assert internals.scale == math.sqrt(model.cfg.d_model)
    expected_logits = teacher_forced_logits(logits, tgt, translator.no_repeat_ngram, translator.rule, src).numpy()
    finite = np.isfinite(expected_logits)
    assert np.array_equal(np.isfinite(internals.logits), finite)  # what decoding never writes: −∞ in both
    assert np.allclose(internals.logits[finite], expected_logits[finite], atol=1e-3)


def test_the_logits_are_those_of_the_pass_that_gave_the_candidates(translator, recorded):
    """One teacher-forced pass gives the attention, the candidates and the internals: the candidates' probabilities
    are the softmax of the recorded logits to the last bit (a second pass, by the fused attention kernel, may differ
    in the last bits)."""
    inspection, internals = recorded
    probs = torch.softmax(torch.from_numpy(internals.logits), dim=-1)  # (T, V), as `inspect` computes them
    for row, candidates in zip(probs, inspection.top_candidates, strict=True):
        assert [p for _, p in candidates] == [row[translator.tokenizer.token_to_id(t)].item() for t, _ in candidates]
    assert internals.encoder.tokens == inspection.source_tokens and internals.decoder.tokens == inspection.target_tokens


def test_summaries_are_the_vectors_own(translator, recorded):
    _, internals = recorded
    stack = internals.encoder
    x, out = stack.stream[0], stack.stream[1]
    assert np.allclose(write_ratios(stack)[0], np.linalg.norm(out - x, axis=-1) / np.linalg.norm(x, axis=-1))
    assert firing_share(stack)[0, 0] == pytest.approx(np.count_nonzero(stack.hidden[0, 0]) / stack.hidden.shape[-1])
    layers = translator.model.cfg.n_decoder_layers
    assert sublayer_names("decoder", layers)[:3] == [
        (0, "masked self-attention"),
        (0, "cross-attention"),
        (0, "feed-forward"),
    ]
    assert len(sublayer_names("decoder", layers)) == internals.decoder.writes.shape[0] == 3 * layers


def test_the_output_layer_is_the_embedding_table(translator):
    model = translator.model
    assert is_tied(model) == model.cfg.tie_embeddings
    assert model.output_projection.weight.data_ptr() == model.src_embed.embedding.weight.data_ptr()


@pytest.mark.parametrize("temperature", [0.1, 0.7, 1.0, 2.5])
def test_softmax_at_a_temperature_is_exact_over_the_shown_tokens(recorded, temperature):
    _, internals = recorded
    ids, top, rest = output_distribution(internals.logits, top=20)
    column = TEMPERATURES.index(temperature)
    probs = torch.softmax(torch.tensor(internals.logits, dtype=torch.float64) / temperature, dim=-1).numpy()
    top, rest = top.astype(np.float64), rest.astype(np.float64)
    shown = np.exp(
        top / temperature - np.logaddexp(np.logaddexp.reduce(top / temperature, axis=-1), rest[:, column])[:, None]
    )
    assert np.allclose(shown, np.take_along_axis(probs, ids, axis=-1), rtol=1e-5, atol=1e-9)
    # in order, a step a decoding rule held ending in its forbidden tokens (-inf: ties, not NaN as np.diff makes them)
    assert (top[:, :-1] >= top[:, 1:]).all() and (ids[:, 0] == internals.logits.argmax(-1)).all()


def test_other_threads_running_the_model_meanwhile_are_not_recorded(translator, recorded):
    """A server translates other sentences with the same model while it records one: their passes (other lengths)
    must not enter this recording (they made np.stack fail on ragged shapes)."""
    import threading

    _, alone = recorded
    others = ["Tom.", "We love the cat and I see the dog and we love the cat again."]
    stop = threading.Event()

    def translate_others():
        while not stop.is_set():
            translator.translate(others)

    worker = threading.Thread(target=translate_others)
    worker.start()
    try:
        together = [inspect(translator, SENTENCE).internals for _ in range(40)]
    finally:
        stop.set()
        worker.join()
    for internals in together:
        np.testing.assert_allclose(internals.encoder.stream, alone.encoder.stream, atol=1e-5)
        np.testing.assert_allclose(internals.decoder.hidden, alone.decoder.hidden, atol=1e-5)
        np.testing.assert_allclose(internals.logits, alone.logits, atol=1e-5)
