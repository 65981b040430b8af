"""Helpers the tests share (plain functions; the fixtures built on them live in conftest.py): a small synthetic
English-Italian corpus written by the tests themselves, tiny random models, and a Hugging Face cache made by hand."""

import contextlib
import io
import itertools
import os
import random
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from unittest import mock

SUBJECTS = [("I", "io"), ("you", "tu"), ("Tom", "Tom"), ("we", "noi"), ("they", "loro")]
VERBS = [("see", "vedo"), ("love", "amo"), ("want", "voglio"), ("have", "ho"), ("eat", "mangio")]
OBJECTS = [
    ("the cat", "il gatto"),
    ("the dog", "il cane"),
    ("the apple", "la mela"),
    ("the book", "il libro"),
    ("the house", "la casa"),
    ("the car", "la macchina"),
    ("the water", "l'acqua"),
    ("the city", "la città"),
]


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


def tiny_config(**overrides):
    """A TransformerConfig small enough for unit tests; different encoder/decoder depths so shapes can't mix."""
    from transformer.model import TransformerConfig

    values = dict(
        vocab_size=40, d_model=16, n_heads=2, n_encoder_layers=2, n_decoder_layers=3, d_ff=32, dropout=0.0, max_len=48
    )
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


def hub_cache(root, model_dir, repo_id):
    """A Hugging Face hub cache at `root` holding `model_dir` as the main revision of model repository `repo_id`,
    laid out as huggingface_hub lays it out: models--user--name/refs/main names the commit, snapshots/COMMIT holds
    its files. Point HF_HUB_CACHE at it (and set HF_HUB_OFFLINE=1) to load `repo_id` without a network."""
    repo = root / ("models--" + repo_id.replace("/", "--"))
    commit = "0123456789abcdef0123456789abcdef01234567"
    shutil.copytree(model_dir, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit, encoding="utf-8")
    return root


def suppress_eos(model):
    """Make `model` never end a sentence (a hook sets the logit of </s> to -inf), so every output runs to its length
    cap."""
    from transformer.tokenizer import EOS_ID

    def hook(module, inputs, logits):
        logits = logits.clone()
        logits[..., EOS_ID] = float("-inf")
        return logits

    model.output_projection.register_forward_hook(hook)
    return model


def free_port():
    """A TCP port nothing listens on now (for an app or a process group's rendezvous)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


REPO = Path(__file__).resolve().parents[1]


def run_module(*args, timeout=300):
    """`python -m ARGS` in a subprocess from the repository root, as a user types it: the completed process, its
    output as text. Each command's own `__main__` is checked once this way; the rest of its behaviour in this process
    (`run_command`), which spares a Python and torch start-up each time."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", *map(str, args)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_command(main, *args):
    """What `python -m MODULE ARGS` does, run in this process, for a MODULE whose `__main__` is `run_cli(main)`:
    (exit status, stdout, stderr). The help is laid out for 80 columns, as for output to a pipe."""
    from inputs.command_line import run_cli

    out, err = io.StringIO(), io.StringIO()
    with mock.patch.dict(os.environ, COLUMNS="80"), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            run_cli(lambda: main([str(arg) for arg in args]))
            status = 0
        except SystemExit as end:
            status = end.code or 0
    return status, out.getvalue(), err.getvalue()


def train_args(train, dev, out, *extra, config="tiny"):
    """`python -m training.train`'s arguments for a test run: CONFIG on the file or files TRAIN, checked on DEV, into
    OUT, then EXTRA."""
    files = train if isinstance(train, (list, tuple)) else [train]
    return [
        "--config",
        str(config),
        "--train",
        *map(str, files),
        "--dev",
        str(dev),
        "--out",
        str(out),
        "--no-progress",
        "--precision",
        "float32",
        *extra,
    ]


def allowed_after(rule, tokenizer, source, written, among, best=None, best_score=1.0):
    """Which of the tokens `among` a decoding `rule` (`inputs.rules`) lets follow the Italian `written` so far when
    the English is `source` (and the model ranks the token `best` first, where given, with the logit `best_score`
    against 0 for every other token: 1.0 ranks it first but unsure, 20.0 makes it sure)."""
    import torch

    from transformer.tokenizer import BOS_ID, EOS_ID

    logits = torch.zeros(1, tokenizer.get_vocab_size())
    if best is not None:
        logits[0, tokenizer.token_to_id(best)] = best_score
    src = torch.tensor([tokenizer.encode(source).ids + [EOS_ID]])
    rule(logits, torch.tensor([[BOS_ID] + tokenizer.encode(written).ids]), src)
    token_ids = {token: tokenizer.token_to_id(token) for token in among}
    assert None not in token_ids.values(), token_ids
    return {token for token, i in token_ids.items() if torch.isfinite(logits[0, i])}
