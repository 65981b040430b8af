"""training.recipes.deepen: a trained model grown deeper by encoder layers that compute the identity, translating as
before, that the trainer then goes on training."""

import json
from dataclasses import asdict

import pytest
import torch

from helpers import make_model, run_module, train_args
from modeldir.card import training_markdown
from modeldir.directory import open_model
from training.configs import load_config, model_config
from training.recipes.deepen import deepen
from training.recipes.deepen import main as deepen_main
from training.train import main as train_main
from transformer.model import Transformer
from transformer.tokenizer import BOS_ID, EOS_ID


def test_the_grown_model_computes_what_the_old_one_does():
    old = make_model(seed=3).eval()
    grown = deepen(old, old.cfg.n_encoder_layers + 2).eval()
    assert grown.cfg.n_encoder_layers == len(grown.encoder.layers) == old.cfg.n_encoder_layers + 2
    src = torch.tensor([[5, 9, 12, 7, EOS_ID], [8, 6, EOS_ID, 0, 0]])
    tgt = torch.tensor([[BOS_ID, 11, 4, 9], [BOS_ID, 7, 7, 0]])
    with torch.no_grad():
        assert torch.allclose(grown(src, tgt), old(src, tgt), atol=1e-6)
    new_layer = grown.encoder.layers[-1]
    assert not new_layer.self_attention.w_o.weight.any() and not new_layer.feed_forward.w_2.bias.any()
    assert new_layer.self_attention.w_q.weight.any()  # the rest is initialised, so that it can learn once w_o moves


def test_only_more_layers_of_a_pre_norm_model():
    old = make_model()
    with pytest.raises(ValueError, match="already has"):
        deepen(old, old.cfg.n_encoder_layers)
    with pytest.raises(ValueError, match="pre-norm"):
        deepen(make_model(norm_first=False), old.cfg.n_encoder_layers + 1)


def test_the_command_writes_a_model_that_translates_the_same_and_trains_on(tiny_model_dir, toy_corpus, tmp_path):
    old = open_model(tiny_model_dir, dtype="float32", device="cpu")
    layers = old.translator.model.cfg.n_encoder_layers + 1
    deepen_main(["--model", str(tiny_model_dir), "--encoder-layers", str(layers), "--out", str(tmp_path / "deep")])
    grown = open_model(tmp_path / "deep", dtype="float32", device="cpu")
    sentences = ["I see the cat.", "We like the red book.", "Where is the station?"]
    assert grown.translator.translate(sentences) == old.translator.translate(sentences)
    assert grown.metrics["training"]["grown"]["encoder_layers"] == [layers - 1, layers]
    assert grown.metrics["config"]["model"]["n_encoder_layers"] == layers and "scores" not in grown.metrics
    assert grown.history == old.history  # its training snapshots go on
    assert grown.word_counts.english == old.word_counts.english  # and the words it was trained on
    assert f"then grown from {layers - 1} to {layers} encoder layers" in training_markdown(grown.metrics)

    config = tmp_path / "deep.json"
    settings = {
        k: v for k, v in json.loads((tmp_path / "deep" / "config.json").read_text()).items() if k != "vocab_size"
    }
    config.write_text(json.dumps({"model": settings, "train": {"max_tokens": 512, "eval_every": 10}}))
    train, dev = toy_corpus
    train_main(
        train_args(
            train,
            dev,
            tmp_path / "run",
            "--init-from",
            str(tmp_path / "deep"),
            "--max-steps",
            "10",
            "--set",
            "lr=1e-3",
            "warmup_steps=1",
            config=config,
        )
    )
    trained = open_model(tmp_path / "run" / "model", dtype="float32", device="cpu").translator.model
    assert trained.encoder.layers[-1].self_attention.w_o.weight.abs().sum() > 0  # the new layer learns
    record = json.loads((tmp_path / "run" / "model" / "metrics.json").read_text())
    assert record["history"][-1]["grown"]["encoder_layers"] == [layers - 1, layers]  # kept in the history


def test_a_model_that_is_not_there_is_one_clear_line(tmp_path):
    result = run_module(
        "training.recipes.deepen", "--model", tmp_path / "none", "--encoder-layers", "6", "--out", tmp_path / "out"
    )
    assert result.returncode != 0 and "Traceback" not in result.stderr and "none" in result.stderr


def test_the_deep_config_is_the_shipped_shape_grown_to_8_encoder_layers():
    """`--config deep --init-from` accepts the shipped model grown to 8 layers: the trainer refuses a config that
    differs from the model's."""
    cpu, deep = load_config("cpu")[0], load_config("deep")[0]
    grown = deepen(Transformer(model_config(cpu, vocab_size=64)), 8)
    assert {k: v for k, v in asdict(grown.cfg).items() if k != "vocab_size"} == deep
