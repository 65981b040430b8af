"""Shared fixtures: a small synthetic English-Italian corpus written by the tests themselves, and a tiny model
trained on it with the real training script (a few seconds on CPU)."""

import itertools
import random

import pytest

SUBJECTS = [("I", "io"), ("you", "tu"), ("Tom", "Tom"), ("we", "noi"), ("they", "loro")]
VERBS = [("see", "vedo"), ("love", "amo"), ("want", "voglio"), ("have", "ho"), ("eat", "mangio")]
OBJECTS = [("the cat", "il gatto"), ("the dog", "il cane"), ("the apple", "la mela"), ("the book", "il libro"),
           ("the house", "la casa"), ("the car", "la macchina"), ("the water", "l'acqua"), ("the city", "la città")]


def pytest_configure(config):
    """The test models are tiny: one torch thread is as fast as several, and far faster when another process
    (a long training run) keeps the cores busy, where idle-spinning thread pools slow the suite down ~5x."""
    import torch

    torch.set_num_threads(1)


def toy_pairs():
    """Deterministic word-for-word pairs ("I see the cat." -> "io vedo il gatto."): learnable in seconds."""
    pairs = []
    for (se, si), (ve, vi), (oe, oi) in itertools.product(SUBJECTS, VERBS, OBJECTS):
        pairs.append((f"{se} {ve} {oe}.", f"{si} {vi} {oi}."))
    random.Random(0).shuffle(pairs)
    return pairs


def write_tsv(path, pairs):
    path.write_text("".join(f"{en}\t{it}\n" for en, it in pairs), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def toy_corpus(tmp_path_factory):
    """(train.tsv, dev.tsv) paths of the toy corpus."""
    root = tmp_path_factory.mktemp("toy_corpus")
    pairs = toy_pairs()
    return write_tsv(root / "train.tsv", pairs), write_tsv(root / "dev.tsv", pairs[:40])


@pytest.fixture(scope="session")
def tiny_model_dir(toy_corpus, tmp_path_factory):
    """A model directory exported by `python -m training.train --config tiny` on the toy corpus."""
    from training.train import main

    out = tmp_path_factory.mktemp("tiny_run")
    train, dev = toy_corpus
    main(["--config", "tiny", "--train", str(train), "--dev", str(dev), "--out", str(out),
          "--max-steps", "150", "--set", "eval_every=50", "--no-progress", "--precision", "fp32"])
    return out / "model"


# ---- Helpers for the library tests (model, decoding, tokenizer, training, translator) ----

def tiny_config(**overrides):
    """A TransformerConfig small enough for unit tests; different encoder/decoder depths so shapes can't mix."""
    from transformer.model import TransformerConfig

    values = dict(vocab_size=40, d_model=16, n_heads=2, n_encoder_layers=2, n_decoder_layers=3, d_ff=32,
                  dropout=0.0, max_len=48)
    return TransformerConfig(**{**values, **overrides})


def make_model(seed=0, **overrides):
    """A randomly initialised Transformer (eval mode) built from `tiny_config(**overrides)`."""
    import torch

    from transformer.model import Transformer

    torch.manual_seed(seed)
    return Transformer(tiny_config(**overrides)).eval()


def random_sequences(lengths, vocab_size, seed=0):
    """Lists of random ordinary token ids (never pad/<s>/</s>/<unk>), one per requested length."""
    rng = random.Random(seed)
    return [[rng.randrange(4, vocab_size) for _ in range(n)] for n in lengths]


@pytest.fixture(scope="session")
def translator(tiny_model_dir):
    """`Translator.load` of the tiny model trained on the toy corpus."""
    from transformer import Translator

    return Translator.load(tiny_model_dir)
