"""Shared fixtures: the toy corpus (tests/helpers.py) on disk, and a tiny model trained on it with the real
training script (a few seconds on CPU). Tests import plain helpers from `helpers`, fixtures come from here."""

import pytest

from helpers import toy_pairs, write_tsv


def pytest_configure(config):
    """The test models are tiny: one torch thread is as fast as several, and far faster when another process
    (a long training run) keeps the cores busy, where idle-spinning thread pools slow the suite down ~5x."""
    import torch

    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def toy_corpus(tmp_path_factory):
    """(train.tsv, dev.tsv) paths of the toy corpus."""
    root = tmp_path_factory.mktemp("toy_corpus")
    pairs = toy_pairs()
    return write_tsv(root / "train.tsv", pairs), write_tsv(root / "dev.tsv", pairs[:40])


def train_toy_model(toy_corpus, out, config="tiny"):
    """The model directory `python -m training.train --config CONFIG` exports after 150 steps on the toy corpus."""
    from training.train import main

    train, dev = toy_corpus
    main(["--config", str(config), "--train", str(train), "--dev", str(dev), "--out", str(out),
          "--max-steps", "150", "--set", "eval_every=50", "--no-progress", "--precision", "float32"])
    return out / "model"


@pytest.fixture(scope="session")
def tiny_model_dir(toy_corpus, tmp_path_factory):
    """A model directory exported by `python -m training.train --config tiny` on the toy corpus."""
    return train_toy_model(toy_corpus, tmp_path_factory.mktemp("tiny_run"))


@pytest.fixture(scope="session")
def translator(tiny_model_dir):
    """`Translator.load` of the tiny model trained on the toy corpus."""
    from transformer import Translator

    return Translator.load(tiny_model_dir)
