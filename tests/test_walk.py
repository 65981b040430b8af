"""interpretability/walk.py: following one token is one continuous computation (each box's input is the previous
box's output), each box computes what it says with its own numbers, and the walk ends on the model's own numbers:
the encoder's memory row, the decoder's logits and probabilities from a forward of the model."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from interpretability import inspect
from interpretability.inspection import teacher_forced_logits
from interpretability.walk import WALK_TOP, walk

SENTENCE = "We are going to the beach tomorrow."


@pytest.fixture(scope="module")
def inspection(translator):
    return inspect(translator, SENTENCE)


def ids(translator, tokens):
    return torch.tensor([[translator.tokenizer.token_to_id(t) for t in tokens]])


@pytest.mark.parametrize("stack, position", [("encoder", 0), ("encoder", 3), ("decoder", 0), ("decoder", 4)])
def test_each_box_starts_from_the_previous_ones_output(translator, inspection, stack, position):
    steps = walk(inspection, translator.model, stack, position)
    cfg = translator.model.cfg
    layers = cfg.n_encoder_layers if stack == "encoder" else cfg.n_decoder_layers
    sublayers = 2 if stack == "encoder" else 3
    assert len(steps) == 2 + 3 * sublayers * layers + 1 + (2 if stack == "decoder" else 0)
    assert steps[0].input is None and steps[0].box == "embedding"
    for before, after in zip(steps, steps[1:]):
        assert np.array_equal(before.output, after.input), (before.box, after.box)


@pytest.mark.parametrize("stack, position", [("encoder", 2), ("decoder", 3)])
def test_each_box_computes_its_output_from_its_input(translator, inspection, stack, position):
    model = translator.model
    steps = walk(inspection, translator.model, stack, position)
    token = translator.tokenizer.token_to_id(steps[0].numbers["token"])
    embedding = model.src_embed.embedding.weight[token].detach().numpy()
    assert np.allclose(steps[0].output, embedding * math.sqrt(model.cfg.d_model), atol=1e-6)
    for step in steps[1:]:
        n = step.numbers
        if step.box == "position":
            expected = step.input + n["pe"]
        elif step.box in ("norm", "final-norm"):
            assert n["normalised"].mean() == pytest.approx(0, abs=1e-5)
            assert n["normalised"].std() == pytest.approx(1, abs=1e-3)
            expected = n["normalised"] * n["gain"] + n["bias"]
        elif step.box == "add":
            expected = n["x"] + step.input
        elif step.box == "feed-forward":
            ffn = (
                model.decoder.layers[step.layer - 1].feed_forward
                if stack == "decoder"
                else model.encoder.layers[step.layer - 1].feed_forward
            )
            hidden = F.relu(ffn.w_1(torch.from_numpy(step.input))).detach().numpy()
            assert np.allclose(n["hidden"], hidden, atol=1e-4)
            expected = ffn.w_2(torch.from_numpy(n["hidden"])).detach().numpy()
        elif step.box == "attention":
            assert np.allclose(n["weights"].sum(-1), 1, atol=1e-5)
            assert n["weights"].shape[-1] == len(n["keys"])
            continue
        elif step.box == "linear":
            expected = n["rows"] @ step.input  # h · E[token]: the tied logits
        else:
            assert step.box == "softmax"
            expected = np.exp(step.input - n["lse"])
        assert np.allclose(step.output, expected, atol=1e-4), step.box


@torch.inference_mode()
def test_the_walk_ends_on_the_models_own_numbers(translator, inspection):
    model = translator.model
    src, tgt = ids(translator, inspection.source_tokens), ids(translator, inspection.target_tokens)
    memory, src_mask = model.encode(src)
    logits = teacher_forced_logits(
        model.decode(tgt, memory, src_mask), tgt, translator.no_repeat_ngram, translator.rule, src
    )
    for position in range(len(inspection.source_tokens)):
        last = walk(inspection, translator.model, "encoder", position)[-1]
        assert last.box == "final-norm" and np.allclose(last.output, memory[0, position].numpy(), atol=1e-4)
    for position in range(len(inspection.target_tokens)):
        *_, linear, softmax = walk(inspection, translator.model, "decoder", position)
        top = logits[position].topk(WALK_TOP)
        assert list(linear.numbers["ids"]) == top.indices.tolist()
        assert np.allclose(linear.output, top.values.numpy(), atol=1e-4)
        assert np.allclose(softmax.output, torch.softmax(logits[position], -1)[top.indices].numpy(), atol=1e-5)


def test_the_residual_stream_is_x_plus_what_each_sublayer_writes(inspection):
    for stack in (inspection.internals.encoder, inspection.internals.decoder):
        assert np.allclose(stack.stream[1:], stack.stream[:-1] + stack.writes, atol=1e-5)
