"""Training: a toy task learned by the library's model, data reading and batching, the learning-rate
schedule, the real training script (resume, DDP, bad input) and the evaluation CLI."""

import csv
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

import pytest
import torch
import torch.nn.functional as F

from bench.model_shapes import GOAL_SIZE_MB
from helpers import (
    REPO,
    free_port,
    make_model,
    random_sequences,
    run_command,
    run_module,
    toy_pairs,
    train_args,
    write_tsv,
)
from modeldir.directory import open_model
from modeldir.files import scores
from training.configs import CONFIGS, TrainConfig, load_config, model_config, parse_overrides
from training.data import BPEDropout, TokenBatcher, TrainingData, load_pairs, read_tsv
from training.train import each_sentence_once, learning_rate
from training.train import main as train_main
from transformer.decoding import greedy_decode
from transformer.model import Transformer
from transformer.tokenizer import BOS_ID, EOS_ID, PAD_ID, load_tokenizer, pad_sequences


def reversal_batch(sequences):
    """src = x + EOS, tgt_in = BOS + reversed(x), tgt_out = reversed(x) + EOS."""
    return (
        pad_sequences([s + [EOS_ID] for s in sequences]),
        pad_sequences([[BOS_ID] + s[::-1] for s in sequences]),
        pad_sequences([s[::-1] + [EOS_ID] for s in sequences]),
    )


def test_tiny_transformer_learns_to_reverse_sequences():
    vocab_size = 14
    model = make_model(
        vocab_size=vocab_size, d_model=32, n_heads=4, n_encoder_layers=1, n_decoder_layers=1, d_ff=64, max_len=16
    ).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    rng = random.Random(0)
    for step in range(400):
        lengths = [rng.randint(3, 6) for _ in range(64)]
        src, tgt_in, tgt_out = reversal_batch(random_sequences(lengths, vocab_size, seed=step))
        loss = F.cross_entropy(model(src, tgt_in).transpose(1, 2), tgt_out, ignore_index=PAD_ID)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    test = random_sequences([rng.randint(3, 6) for _ in range(200)], vocab_size, seed=10_000)
    outputs = greedy_decode(model, reversal_batch(test)[0])
    accuracy = sum(out == seq[::-1] for out, seq in zip(outputs, test)) / len(test)
    assert accuracy >= 0.95


# ---- Data ----


def test_read_tsv_skips_and_counts_malformed_lines(tmp_path):
    path = tmp_path / "mixed.tsv"
    path.write_bytes(
        b"\xef\xbb\xbfI see the cat.\tio vedo il gatto.\n"  # starts with a UTF-8 byte-order mark
        b"three\tfields\there\n"
        b"one field only\n"
        b"\tmissing English\n"
        b"missing Italian\t  \n"
        b"bad bytes \xff\xfe\tciao\n"
        b"\n"
        b"  the dog. \t il cane. \r\n"
        b"L'ho vista.\tL'ho vista all'universit\xc3\xa0."
    )
    pairs, skipped = read_tsv(path)
    assert pairs == [
        ("I see the cat.", "io vedo il gatto."),
        ("the dog.", "il cane."),
        ("L'ho vista.", "L'ho vista all'università."),
    ]
    assert skipped == 5  # the blank line is not counted


def test_load_pairs_errors_name_the_file(tmp_path):
    empty = tmp_path / "empty.tsv"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match="empty.tsv"):
        load_pairs(str(empty))
    junk = tmp_path / "junk.tsv"
    junk.write_text("no tab here\nnor here\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"junk.tsv.*2 malformed"):
        load_pairs(str(junk))
    with pytest.raises(FileNotFoundError, match="missing.tsv"):
        load_pairs(str(tmp_path / "missing.tsv"))


def test_training_script_rejects_an_empty_training_file(tmp_path, toy_corpus):
    empty = tmp_path / "empty.tsv"
    empty.write_text("", encoding="utf-8")
    with pytest.raises((ValueError, SystemExit), match="empty.tsv"):
        train_main(["--train", str(empty), "--dev", str(toy_corpus[1]), "--out", str(tmp_path / "run")])


def test_training_script_rejects_data_with_no_usable_pairs(tmp_path, toy_corpus):
    words = " ".join(f"w{i}" for i in range(80))  # longer than the tiny config's max_len of 64 tokens
    too_long = write_tsv(tmp_path / "too_long.tsv", [(words, words)] * 5)
    with pytest.raises(ValueError, match="too_long.tsv"):
        train_main(["--train", str(too_long), "--dev", str(toy_corpus[1]), "--out", str(tmp_path / "run")])


def test_token_batcher_covers_every_pair_within_the_token_budget():
    rng = random.Random(0)
    src = random_sequences([rng.randint(1, 20) for _ in range(300)], 50, seed=1)
    tgt = random_sequences([rng.randint(1, 20) for _ in range(300)], 50, seed=2)
    batcher = TokenBatcher(src, tgt, max_tokens=100, seed=3, pool_size=64)
    batches = batcher.epoch_batches(0)
    assert sorted(i for batch in batches for i in batch) == list(range(300))
    for batch in batches:
        s, t_in, t_out = batcher.collate(batch)
        assert s.numel() <= 100 and t_in.numel() <= 100
        assert t_in.shape == t_out.shape
        assert (t_in[:, 0] == BOS_ID).all()
        assert all(s[k, len(src[i])] == EOS_ID and t_out[k, len(tgt[i])] == EOS_ID for k, i in enumerate(batch))
    assert batcher.epoch_batches(0) == batches  # the order depends only on (seed, epoch) ...
    assert batcher.epoch_batches(1) != batches  # ... and changes between epochs


def test_bpe_dropout_resegments_each_epoch_but_keeps_its_pairs_and_their_text():
    tokenizer = load_tokenizer(REPO / "assets" / "model" / "tokenizer.json")
    pairs = [
        ("I like tomatoes, bread and cheese.", "Mi piacciono i pomodori, il pane e il formaggio."),
        ("The agreement was signed in August 1992.", "L'accordo fu firmato nell'agosto del 1992."),
        ("Già città: ☃ fatto.", "Hai già visto l'università?"),
    ] * 4
    plain = TrainingData([(pairs, 1)], tokenizer, max_len=128, retype_share=0.3, join_share=0.3, seed=5)
    dropout = TrainingData(
        [(pairs, 1)], tokenizer, max_len=128, retype_share=0.3, join_share=0.3, bpe_dropout=0.3, seed=5
    )
    plain_src, plain_tgt = plain.epoch(0)
    epochs = [dropout.epoch(0) for _ in range(3)]
    for src, tgt in epochs:  # the same pairs, re-typed and joined alike, in the same order ...
        assert tokenizer.decode_batch(src) == tokenizer.decode_batch(plain_src)
        assert tokenizer.decode_batch(tgt) == tokenizer.decode_batch(plain_tgt)
        assert all(len(a) >= len(b) for a, b in zip(src + tgt, plain_src + plain_tgt))
    assert epochs[0] != epochs[1] != epochs[2]  # ... segmented afresh each time
    assert sum(map(len, epochs[0][0])) > sum(map(len, plain_src))
    assert BPEDropout(tokenizer, 0.0, max_len=128)(plain_src) == plain_src
    longest = max(plain_src, key=len)
    assert BPEDropout(tokenizer, 0.9, max_len=len(longest) + 1)([longest]) == [longest]  # too long: kept plain
    with pytest.raises(ValueError, match="bpe_dropout"):
        BPEDropout(tokenizer, 1.0, max_len=128)


# ---- Learning-rate schedule and configs ----


def test_a_check_on_a_dev_set_that_repeats_sentences_also_scores_each_sentence_once():
    pairs = [("I see the cat.", "Vedo il gatto."), ("I see the cat.", "Io vedo il gatto."), ("Hi.", "Ciao.")]
    result = {"hypotheses": ["Io vedo il gatto.", "Io vedo il gatto.", "Ciao."]}
    assert each_sentence_once(pairs, result) == "; each of 2 sentences once: BLEU 100.00"
    assert each_sentence_once(pairs[1:], {"hypotheses": result["hypotheses"][1:]}) == ""


def test_learning_rate_warmup_then_decay():
    cfg = TrainConfig(lr=1e-3, warmup_steps=10, min_lr=1e-5)
    lrs = [learning_rate(step, cfg) for step in range(1000)]
    assert lrs[:10] == sorted(lrs[:10]) and lrs[9] == pytest.approx(1e-3)
    assert lrs[39] == pytest.approx(1e-3 * (10 / 40) ** 0.5)
    assert lrs[10:] == sorted(lrs[10:], reverse=True) and min(lrs) >= 1e-5
    cosine = TrainConfig(lr=1e-3, warmup_steps=10, min_lr=1e-5, schedule="cosine", decay_steps=110)
    assert learning_rate(60, cosine) == pytest.approx((1e-3 + 1e-5) / 2)
    assert learning_rate(110, cosine) == learning_rate(500, cosine) == pytest.approx(1e-5)
    assert learning_rate(50, TrainConfig(schedule="cosine", warmup_steps=10), time_progress=1.0) == pytest.approx(1e-5)


def test_configs_leave_the_vocabulary_size_to_the_tokenizer(tmp_path):
    settings, train_cfg = load_config("tiny")
    assert "vocab_size" not in settings and train_cfg.bpe_vocab_size == 456
    assert model_config(settings, vocab_size=321).vocab_size == 321
    spec = tmp_path / "cfg.json"
    spec.write_text(json.dumps({"model": {"d_model": 8, "n_heads": 2}, "train": {"bpe_vocab_size": 77}}))
    settings, train_cfg = load_config(str(spec))
    assert (settings["d_model"], settings["max_len"], train_cfg.bpe_vocab_size) == (8, 256, 77)  # defaults filled in
    for part in ("model", "train"):
        spec.write_text(json.dumps({part: {"vocab_size": 77}}))
        with pytest.raises(ValueError, match="vocab_size is the tokenizer's; train.bpe_vocab_size"):
            load_config(str(spec))
    spec.write_text(json.dumps({"model": {"d_model": 30, "n_heads": 4}}))
    with pytest.raises(ValueError, match="divisible"):  # checked before any data is read
        load_config(str(spec))
    spec.write_text(json.dumps({"modle": {}}))
    with pytest.raises(ValueError, match=r'cfg.json: a config is a JSON object \{"model"'):
        load_config(str(spec))
    with pytest.raises(ValueError, match="unknown config"):
        load_config("huge")


def test_the_wide_config_stays_within_the_shipped_models_size_budget():
    """bench.model_shapes chose it for its latency on 2 cores; its float16 weights (with the shipped 8,256-token
    vocabulary) must also stay within the 60 MB, and its decoder, which runs once a token, shallower than the cpu
    config's."""
    wide, cpu = load_config("wide")[0], load_config("cpu")[0]
    model = Transformer(model_config(wide, vocab_size=8256))
    assert model.num_parameters() * 2 / 1e6 <= GOAL_SIZE_MB
    assert model.num_parameters() > 2 * Transformer(model_config(cpu, vocab_size=8256)).num_parameters()
    assert wide["n_decoder_layers"] < cpu["n_decoder_layers"] and wide["d_model"] > cpu["d_model"]


def test_overrides_reach_both_configs_parsed_by_type():
    model, train = parse_overrides(
        [
            "model.d_model=384",
            "model.norm_first=false",
            "model.dropout=0.2",
            "train.lr=5e-4",
            "eval_every=7",
            "schedule=cosine",
            "bpe_vocab_size=500",
        ]
    )
    assert model == {"d_model": 384, "norm_first": False, "dropout": 0.2}
    assert train == {"lr": 5e-4, "eval_every": 7, "schedule": "cosine", "bpe_vocab_size": 500}  # bare: training
    assert type(model["dropout"]) is float and parse_overrides(["model.tie_embeddings=True"])[0] == {
        "tie_embeddings": True
    }


@pytest.mark.parametrize(
    "item, message",
    [
        (
            "nonsense=1",
            r"--set nonsense=1: unknown train config keys: nonsense; the train settings are bpe_vocab_size, ",
        ),
        ("model.colour=red", r"unknown model config keys: colour; the model settings are d_model, n_heads"),
        ("model.vocab_size=9", "the model's vocab_size is the tokenizer's"),
        ("vocab_size=9", "train.bpe_vocab_size is how many BPE tokens to learn"),
        ("dropout=0.3", r"unknown train config keys: dropout \(the model settings hold dropout\); the train settings"),
        ("model.lr=1e-3", r"unknown model config keys: lr \(the train settings hold lr\)"),
        ("probes=a", "a list cannot be set on the command line: write it in a JSON config file"),
        ("lr=fast", "expected a number, got 'fast'"),
        ("lr=nan", "finite"),
        ("eval_every=2.5", "whole number"),
        ("model.norm_first=yes", "true or false"),
        ("lr", "KEY=VALUE"),
        ("optimizer.lr=1", "KEY=VALUE"),
    ],
)
def test_bad_overrides_say_what_is_allowed(item, message):
    with pytest.raises(ValueError, match=message):
        parse_overrides([item])


# ---- The training script ----


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory):
    """The toy training set with a 5-pair dev set (dev decoding is the slow part of short runs)."""
    root = tmp_path_factory.mktemp("small_corpus")
    return write_tsv(root / "train.tsv", toy_pairs()), write_tsv(root / "dev.tsv", toy_pairs()[:5])


@pytest.fixture(scope="module")
def dropout_config(tmp_path_factory):
    """The tiny config with dropout on, so that resuming must restore the random state too."""
    model, train = CONFIGS["tiny"]
    path = tmp_path_factory.mktemp("config") / "tiny_dropout.json"
    path.write_text(json.dumps({"model": {**model, "dropout": 0.1}, "train": train}), encoding="utf-8")
    return str(path)


def assert_same_run(straight_dir, resumed_dir, stopped_at):
    """Two runs' checkpoints hold the same state, weights and optimizer moments; their logs the same rows, but
    for the dev evaluation that ends every stint (the resumed run stopped once, at step `stopped_at`)."""
    straight = torch.load(straight_dir / "checkpoint.pt", weights_only=False)
    resumed = torch.load(resumed_dir / "checkpoint.pt", weights_only=False)
    for key in ("step", "epoch", "batch_in_epoch", "target_tokens"):
        assert straight["state"][key] == resumed["state"][key], key
    for name, tensor in straight["model"].items():
        torch.testing.assert_close(resumed["model"][name], tensor, rtol=0, atol=1e-6, msg=name)
    for index, slot in straight["optimizer"]["state"].items():
        torch.testing.assert_close(resumed["optimizer"]["state"][index]["exp_avg"], slot["exp_avg"], rtol=0, atol=1e-6)

    def logged_steps(run):
        return [row["step"] for row in csv.DictReader(open(run / "metrics.csv", encoding="utf-8"))]

    assert logged_steps(resumed_dir) == sorted(logged_steps(straight_dir) + [str(stopped_at)], key=int)
    return resumed


def test_resume_gives_the_same_weights_as_an_uninterrupted_run(small_corpus, dropout_config, tmp_path):
    train, dev = small_corpus
    total, half = 30, 13  # stops mid-epoch, after warmup (10 steps), crossing an epoch boundary on resume

    def args(out, steps, *extra):
        return train_args(train, dev, out, "--max-steps", str(steps), *extra, config=dropout_config)

    train_main(args(tmp_path / "straight", total))
    train_main(args(tmp_path / "resumed", half))
    shutil.copy(tmp_path / "resumed" / "checkpoint.pt", tmp_path / "at_half.pt")
    # A crash: the run goes on logging past its last checkpoint, then restarts from that checkpoint.
    train_main(args(tmp_path / "resumed", total, "--resume"))
    shutil.copy(tmp_path / "at_half.pt", tmp_path / "resumed" / "checkpoint.pt")
    train_main(args(tmp_path / "resumed", total, "--resume"))
    resumed = assert_same_run(tmp_path / "straight", tmp_path / "resumed", stopped_at=half)
    assert resumed["state"]["step"] == total
    assert len(resumed["state"]["commands"]) == 2  # the invocations that led to this checkpoint are recorded


def test_training_crosses_epochs_whose_batch_counts_differ(small_corpus, tmp_path, monkeypatch):
    """Small length pools make each epoch's batch count depend on its shuffle; the loop must follow it."""
    import training.train

    monkeypatch.setattr(
        training.train,
        "TokenBatcher",
        lambda src, tgt, max_tokens, seed: TokenBatcher(src, tgt, max_tokens, seed, pool_size=7),
    )
    rng = random.Random(0)
    lengths = [rng.randint(1, 12) for _ in range(200)]
    batcher = TokenBatcher([[5] * n for n in lengths], [[6] * n for n in lengths], max_tokens=48, pool_size=7)
    assert len({len(batcher.epoch_batches(epoch)) for epoch in range(6)}) > 1
    train, dev = small_corpus
    train_main(
        train_args(train, dev, tmp_path / "run", "--max-steps", "160", "--set", "max_tokens=48", "eval_every=1000")
    )
    state = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=False)["state"]
    assert state["step"] == 160 and state["epoch"] >= 3


def test_a_run_with_bpe_dropout_resegments_every_epoch_and_records_it(small_corpus, tmp_path, monkeypatch):
    import training.data

    calls = []
    resegment = training.data.BPEDropout.__call__
    monkeypatch.setattr(
        training.data.BPEDropout, "__call__", lambda self, seqs: calls.append(1) or resegment(self, seqs)
    )
    train, dev = small_corpus
    train_main(train_args(train, dev, tmp_path / "run", "--max-steps", "40", "--set", "bpe_dropout=0.2"))
    state = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=False)["state"]
    assert state["epoch"] >= 1 and len(calls) == 2 * (state["epoch"] + 1)  # both sides of each epoch begun
    metrics = json.loads((tmp_path / "run" / "model" / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["config"]["train"]["bpe_dropout"] == 0.2
    with pytest.raises(ValueError, match="bpe_dropout"):
        train_main(train_args(train, dev, tmp_path / "bad", "--max-steps", "2", "--set", "bpe_dropout=1"))


def test_resume_without_checkpoint_is_a_clear_error(small_corpus, tmp_path):
    train, dev = small_corpus
    with pytest.raises(ValueError, match="checkpoint.pt"):
        train_main(train_args(train, dev, tmp_path / "fresh", "--resume"))


def test_a_run_records_the_config_it_resolved(tiny_model_dir):
    metrics = json.loads((tiny_model_dir / "metrics.json").read_text(encoding="utf-8"))
    vocab_size = open_model(tiny_model_dir).translator.tokenizer.get_vocab_size()
    assert metrics["config"]["model"]["vocab_size"] == vocab_size  # the tokenizer's, the only source
    assert metrics["config"]["train"]["bpe_vocab_size"] == 456 and "vocab_size" not in metrics["config"]["train"]
    assert metrics["config"]["train"]["eval_every"] == 50  # --set eval_every=50
    checkpoint = torch.load(tiny_model_dir.parent / "checkpoint.pt", weights_only=False)
    assert checkpoint["model_config"]["vocab_size"] == vocab_size
    assert checkpoint["train_config"] == metrics["config"]["train"]


def test_model_settings_are_set_on_a_new_run_only(small_corpus, tmp_path):
    train, dev = small_corpus
    out = tmp_path / "run"
    train_main(train_args(train, dev, out, "--max-steps", "2", "--set", "model.d_model=48", "model.d_ff=96", "lr=2e-3"))
    config = json.loads((out / "model" / "config.json").read_text(encoding="utf-8"))
    assert (config["d_model"], config["d_ff"], config["n_heads"]) == (48, 96, 2)  # the rest: --config tiny's
    assert json.loads((out / "model" / "metrics.json").read_text(encoding="utf-8"))["config"]["train"]["lr"] == 2e-3
    for extra in (["--resume"], ["--init-from", str(out / "model")]):
        with pytest.raises(
            ValueError, match="--set model.d_model: model settings cannot change with --resume or --init-from"
        ):
            train_main(train_args(train, dev, tmp_path / "next", *extra, "--set", "model.d_model=64"))


def continued_weights(small_corpus, tiny_model_dir, out, steps, *settings):
    """The weights of the tiny model after `steps` steps continued from it (lr 3e-3 from the first step)."""
    train, dev = small_corpus
    args = ["--init-from", str(tiny_model_dir), "--max-steps", str(steps), "--set", "lr=3e-3", "warmup_steps=1"]
    train_main(train_args(train, dev, out, *args, *settings))
    return open_model(out / "model").translator.model.state_dict()


def test_anchor_decay_keeps_a_continued_run_near_the_model_it_continues(small_corpus, tiny_model_dir, tmp_path):
    """anchor_decay pulls every weight back towards --init-from's after each step: a strong pull ends nearer the start
    than no pull on the same batches, and a pull of the whole gap (lr * anchor_decay >= 1) ends exactly on it."""
    start = open_model(tiny_model_dir).translator.model.state_dict()

    def distance_after(out, *settings):
        weights = continued_weights(small_corpus, tiny_model_dir, out, 12, *settings)
        return sum(float((weights[name] - start[name]).square().sum()) for name in start) ** 0.5

    free, pulled = distance_after(tmp_path / "free"), distance_after(tmp_path / "pulled", "anchor_decay=100")
    assert 0 < pulled < 0.7 * free
    assert distance_after(tmp_path / "held", "anchor_decay=1e9") == 0.0


def test_teacher_weight_mixes_the_references_with_the_model_continued(tiny_model_dir):
    """teacher_weight w makes a step's loss (1 - w) * the references' cross-entropy + w * the KL divergence from the
    teacher's next-token distributions: nothing to learn from a teacher that is the model itself, and a step taken
    towards another teacher alone (w = 1) brings the model nearer it, whatever the references say."""
    from training.train import train_step

    student, teacher = (open_model(tiny_model_dir).translator.model.eval() for _ in range(2))
    torch.manual_seed(0)
    with torch.no_grad():
        for weight in teacher.parameters():
            weight.add_(0.05 * torch.randn_like(weight))
    src = pad_sequences([[5, 6, 7, EOS_ID], [8, 9, EOS_ID]])
    tgt = pad_sequences([[BOS_ID, 10, 11, 12, EOS_ID], [BOS_ID, 13, EOS_ID]])
    tgt_in, tgt_out = tgt[:, :-1].contiguous(), tgt[:, 1:].contiguous()
    real = tgt_out != PAD_ID

    def divergence():
        with torch.no_grad():
            ours, theirs = (m(src, tgt_in)[real].log_softmax(-1) for m in (student, teacher))
        return float(F.kl_div(ours, theirs, log_target=True, reduction="sum")) / int(real.sum())

    with torch.no_grad():
        cross_entropy = float(F.cross_entropy(student(src, tgt_in)[real], tgt_out[real], label_smoothing=0.1))
    optimizer = torch.optim.SGD(student.parameters(), lr=0.0)
    half, itself = TrainConfig(teacher_weight=0.5), TrainConfig(teacher_weight=1.0)
    batch, autocast = (src, tgt_in, tgt_out), torch.autocast("cpu", enabled=False)
    loss, n_tokens = train_step(student, optimizer, batch, 0.0, autocast, half, teacher)
    assert n_tokens == int(real.sum())
    assert loss == pytest.approx(0.5 * cross_entropy + 0.5 * divergence(), rel=1e-4)
    assert train_step(student, optimizer, batch, 0.0, autocast, itself, student)[0] == pytest.approx(0.0, abs=1e-6)
    before = divergence()
    train_step(student, optimizer, batch, 0.05, autocast, itself, teacher)
    assert divergence() < before


@pytest.mark.parametrize(
    "setting",
    ["anchor_decay=-1", "anchor_decay=10", "frozen_token_rows=-1", "frozen_token_rows=10", "teacher_weight=0.5"],
)
def test_settings_about_the_model_continued_need_it(small_corpus, tmp_path, setting):
    """anchor_decay pulls towards the --init-from model, frozen_token_rows keeps its rows and teacher_weight learns
    from it: without it, or out of range, they are refused before anything is written."""
    train, dev = small_corpus
    name = setting.split("=")[0]
    with pytest.raises(ValueError, match=f"{name}=.*needs --init-from"):
        train_main(train_args(train, dev, tmp_path / "run", "--max-steps", "2", "--set", setting))
    assert not (tmp_path / "run").exists()


def test_train_only_changes_the_named_weights_and_leaves_the_rest_as_they_were(small_corpus, tiny_model_dir, tmp_path):
    """train_only trains the weights under its prefixes alone (`*` for any one part of a name): after a continued run
    every other weight is exactly the --init-from model's, and the trained ones moved."""
    start = open_model(tiny_model_dir).translator.model.state_dict()
    settings = "train_only=decoder.layers.*.cross_attention, decoder.norm"
    weights = continued_weights(small_corpus, tiny_model_dir, tmp_path / "run", 4, settings)
    moved = {name for name in start if not torch.equal(weights[name], start[name])}
    assert moved and all(name.startswith(("decoder.layers.0.cross_attention.", "decoder.norm.")) for name in moved)
    assert {name.split(".")[1] for name in moved} == {"layers", "norm"}


def test_frozen_token_rows_train_the_rows_after_them_alone(small_corpus, tiny_model_dir, tmp_path):
    """frozen_token_rows=N keeps the (tied) embedding's first N rows exactly the --init-from model's, weight decay
    included, while the rows after them and the other weights trained move."""
    start = open_model(tiny_model_dir).translator.model.state_dict()
    name, n = "src_embed.embedding.weight", 200
    weights = continued_weights(small_corpus, tiny_model_dir, tmp_path / "run", 6, f"frozen_token_rows={n}")
    assert torch.equal(weights[name][:n], start[name][:n])
    assert not torch.equal(weights[name][n:], start[name][n:])
    assert not torch.equal(weights["decoder.norm.weight"], start["decoder.norm.weight"])


@pytest.mark.parametrize("prefix", ["decoder.layer", "embeddings", "decoder.layers.1", "decoder.*.cross_attention"])
def test_train_only_refuses_a_name_that_matches_no_weight(small_corpus, tmp_path, prefix):
    """A typo must not freeze the whole model unseen: it is refused, with the names there are, before any work."""
    train, dev = small_corpus
    with pytest.raises(ValueError, match=f"train_only={prefix}: no weight is named .*names start with decoder"):
        train_main(train_args(train, dev, tmp_path / "run", "--max-steps", "2", "--set", f"train_only={prefix}"))
    assert not (tmp_path / "run").exists()


def test_train_only_is_kept_on_resume_and_cannot_change(small_corpus, tmp_path, capsys):
    """A resumed run trains what it trained before (its optimizer holds only those weights); another train_only is
    refused."""
    train, dev = small_corpus
    out = tmp_path / "run"
    train_main(train_args(train, dev, out, "--max-steps", "2", "--set", "train_only=decoder"))
    with pytest.raises(ValueError, match="train_only cannot change within a run"):
        train_main(train_args(train, dev, out, "--resume", "--max-steps", "4", "--set", "train_only=encoder"))
    capsys.readouterr()
    train_main(train_args(train, dev, out, "--resume", "--max-steps", "4"))
    log = capsys.readouterr().out
    assert "trained: train_only=decoder)" in log and "done: 4 steps" in log


def test_a_new_model_can_take_an_existing_tokenizer_instead_of_learning_one(small_corpus, tiny_model_dir, tmp_path):
    """--tokenizer: a model of another shape, trained from scratch on the vocabulary of an exported one (its history
    starts at step 0); refused with --init-from, whose tokenizer is its own, and for a missing or broken file, before
    anything is written."""
    train, dev = small_corpus
    given = tiny_model_dir / "tokenizer.json"
    out = tmp_path / "run"
    train_main(
        train_args(
            train, dev, out, "--max-steps", "2", "--tokenizer", str(given), "--set", "model.d_model=48", "model.d_ff=96"
        )
    )
    assert (out / "model" / "tokenizer.json").read_bytes() == given.read_bytes()
    metrics = json.loads((out / "model" / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["config"]["train"]["bpe_vocab_size"] is None and metrics["history"] == []
    assert metrics["config"]["model"]["d_model"] == 48
    snapshots = json.loads((out / "model" / "training_snapshots.json").read_text(encoding="utf-8"))["snapshots"]
    assert snapshots[0]["step"] == 0
    with pytest.raises(ValueError, match="--tokenizer is for a new model"):
        train_main(
            train_args(train, dev, tmp_path / "next", "--tokenizer", str(given), "--init-from", str(tiny_model_dir))
        )
    with pytest.raises(ValueError, match="--tokenizer .*nothing.json: no such file"):
        train_main(train_args(train, dev, tmp_path / "next", "--tokenizer", str(tmp_path / "nothing.json")))
    (tmp_path / "garbage.json").write_text("not a tokenizer", encoding="utf-8")
    with pytest.raises(ValueError, match="--tokenizer .*garbage.json: not a tokenizer.json of this project"):
        train_main(train_args(train, dev, tmp_path / "next", "--tokenizer", str(tmp_path / "garbage.json")))
    assert not (tmp_path / "next").exists()


def succeeding(*args):
    """`python -m ARGS` (helpers.run_module)'s stdout; fails the test on an error."""
    proc = run_module(*args)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def two_processes(*args):
    """`python ARGS` as two processes of one run, started as torchrun starts them (RANK, WORLD_SIZE and the rest of
    its environment) but without its launcher, a third Python and torch start; the test fails unless both succeed.
    One stint of test_ddp_training... goes through torchrun itself. Each writes to a file, not a pipe: a process
    blocked on a full pipe would hold the other at their next collective."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2"}
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    logs = [tempfile.TemporaryFile("w+") for _ in range(2)]
    ranks = [
        subprocess.Popen(
            [sys.executable, *map(str, args)],
            cwd=REPO,
            env={**env, "RANK": str(rank), "LOCAL_RANK": str(rank)},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        for rank, log in enumerate(logs)
    ]
    try:
        for process, log in zip(ranks, logs):
            process.wait(timeout=300)
            log.seek(0)
            assert process.returncode == 0, f"exit {process.returncode}\n{log.read()[-3000:]}"
    finally:  # as torchrun does: one process failed, the other (waiting for it) is stopped
        for process, log in zip(ranks, logs):
            process.kill()
            process.wait()
            log.close()


def test_ddp_training_on_two_cpu_processes_resumes_exactly_and_exports_a_loadable_model(
    small_corpus, dropout_config, tmp_path
):
    """A one-process run's checkpoint (step 4) resumed by two processes (torchrun) warns and goes on, to step 8
    straight, or stopped at step 6 and resumed: the same weights (each process gets back its own random state)."""
    train, dev = small_corpus

    def args(out, steps, *extra):
        return train_args(train, dev, out, "--max-steps", str(steps), *extra, config=dropout_config)

    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    train_main(args(straight, 4))
    checkpoint = torch.load(straight / "checkpoint.pt", weights_only=False)
    checkpoint["state"]["best_bleu"] = -1.0  # forgotten: the two-process stints export the model (any BLEU beats it)
    torch.save(checkpoint, straight / "checkpoint.pt")
    shutil.copytree(straight, resumed)
    torchrun = ["torch.distributed.run", "--nproc_per_node=2", f"--master_port={free_port()}", "-m", "training.train"]
    assert "written by 1 process(es), this run has 2" in succeeding(*torchrun, *args(straight, 8, "--resume"))
    assert len(torch.load(straight / "checkpoint.pt", weights_only=False)["rng"]) == 2
    two_processes("-m", "training.train", *args(resumed, 6, "--resume"))
    two_processes("-m", "training.train", *args(resumed, 8, "--resume"))
    assert assert_same_run(straight, resumed, stopped_at=6)["state"]["step"] == 8
    directory = open_model(resumed / "model")
    assert isinstance(directory.translator.translate("I see the cat."), str)
    assert directory.metrics["training"]["hardware"].startswith("2 process(es)")


EPOCH_PER_PROCESS = """
import json, sys
from types import SimpleNamespace
from training.data import TrainingData
from training.runtime import Distributed
from training.train import epoch_pairs
from transformer.tokenizer import load_tokenizer

tokenizer = load_tokenizer(sys.argv[1])
pairs = [("I like tomatoes, bread and cheese.", "Mi piacciono i pomodori, il pane e il formaggio."),
         ("The agreement was signed in August 1992.", "L'accordo fu firmato nell'agosto del 1992.")] * 20
dist = Distributed()
drawn = {}
for bpe_dropout in (0, 0.3):
    training = TrainingData([(pairs, 1)], tokenizer, max_len=128, join_share=0.3, bpe_dropout=bpe_dropout, seed=5)
    drawn[bpe_dropout] = epoch_pairs(SimpleNamespace(dist=dist), SimpleNamespace(training=training), 0)
with open(f"{sys.argv[2]}.{dist.rank}", "w", encoding="utf-8") as out:
    json.dump(list(drawn.values()), out)
dist.close()
"""


def test_bpe_dropout_gives_every_process_the_same_epoch(tmp_path):
    """BPE-dropout takes no seed: each of two processes drawing its own segmentations would cut other batches."""
    script = tmp_path / "epoch.py"
    script.write_text(EPOCH_PER_PROCESS, encoding="utf-8")
    two_processes(script, REPO / "assets" / "model" / "tokenizer.json", tmp_path / "epoch")
    rank0, rank1 = (json.loads((tmp_path / f"epoch.{rank}").read_text(encoding="utf-8")) for rank in (0, 1))
    (plain, resegmented), (_, resegmented_too) = rank0, rank1
    assert resegmented == resegmented_too and resegmented != plain


def test_evaluate_cli_prints_json_and_records_scores(tiny_model_dir, toy_corpus, tmp_path):
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model_dir)
    stdout = succeeding(
        "training.evaluate",
        "--model",
        model_dir,
        "--data",
        toy_corpus[1],
        "--beam",
        "2",
        "--dtype",
        "float16",
        "--record",
        "toy dev",
    )
    summary = json.loads(stdout.strip().splitlines()[-1])
    assert {"bleu", "chrf", "n", "seconds"} <= set(summary) and summary["dtype"] == "float16"
    assert summary["n"] == 40 and summary["bleu"] > 90 and summary["chrf"] > 90
    records = scores(json.loads((model_dir / "metrics.json").read_text(encoding="utf-8")))
    recorded = [r for r in records if (r.data, r.decoding, r.precision) == ("toy dev", "beam 2", "float16")]
    assert len(recorded) == 1 and recorded[0].bleu == summary["bleu"] and "--record" in recorded[0].command
    assert "dev (during training)" in {r.data for r in records}


# ---- What a new user meets on the command line ----


def test_help_names_the_module_and_keeps_the_example_on_its_lines():
    status, help_text, _ = run_command(train_main, "--help")
    assert status == 0 and help_text.startswith("usage: python -m training.train")
    example = [line.strip() for line in help_text.splitlines() if "train-extra.tsv" in line or "--out runs/cpu" in line]
    assert example[0].endswith("\\") and example[-1].startswith("--dev")


def test_a_missing_file_is_one_clear_line_and_leaves_no_output_directory(tmp_path, toy_corpus):
    """The command as typed (`python -m training.train`): its `__main__` turns the error into one line."""
    proc = run_module(
        "training.train", "--train", tmp_path / "missing.tsv", "--dev", toy_corpus[1], "--out", tmp_path / "run"
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'missing.tsv'}: no such file "
        "(`python -m training.prepare_data --out data/en-it` rebuilds the "
        "project's data files)"
    ]
    assert not (tmp_path / "run").exists()


def test_a_name_that_is_neither_file_nor_dataset_says_so(tmp_path, toy_corpus, monkeypatch):
    import training.data

    def offline(*args):
        raise ConnectionError("Couldn't reach 'nosuchdata' on the Hub")

    monkeypatch.setattr(training.data, "read_hf_dataset", offline)
    with pytest.raises(
        FileNotFoundError,
        match=r"nosuchdata: no such file, and it could not be loaded as a Hugging "
        r"Face dataset id either \(Couldn't reach.*training.prepare_data",
    ):
        train_main(["--train", "nosuchdata", "--dev", str(toy_corpus[1]), "--out", str(tmp_path / "run")])
    assert not (tmp_path / "run").exists()


def test_a_bad_init_from_fails_before_reading_data_or_creating_the_output(tmp_path, toy_corpus):
    from modeldir.loading import ModelLoadError

    with pytest.raises(ModelLoadError, match="no-model"):
        train_main(
            [
                "--train",
                str(toy_corpus[0]),
                "--dev",
                str(toy_corpus[1]),
                "--out",
                str(tmp_path / "run"),
                "--init-from",
                str(tmp_path / "no-model"),
            ]
        )
    assert not (tmp_path / "run").exists()


def test_precisions_are_named_as_torch_names_them(small_corpus, tmp_path, capsys):
    train, dev = small_corpus
    for flag, name in (("--precision", "fp32"), ("--export-dtype", "fp16"), ("--precision", "fp8")):
        with pytest.raises(SystemExit):
            train_main(["--train", str(train), "--dev", str(dev), "--out", str(tmp_path / "x"), flag, name])
        assert f"{flag}: invalid choice: '{name}'" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_the_progress_bar_counts_steps_or_the_time_budget(small_corpus, tmp_path):
    from training.train import RunState, parse_args, progress_bar, set_up_run

    train, dev = small_corpus
    for extra, total, unit in (
        (["--max-steps", "7"], 7, "step"),
        (["--max-minutes", "2.5"], 2.5, "min"),
        ([], None, "step"),
    ):
        args = parse_args(["--train", str(train), "--dev", str(dev), "--out", str(tmp_path / "run"), *extra])
        bar = progress_bar(set_up_run(args, "command"), RunState())
        assert (bar.total, bar.unit) == (total, unit)
        bar.close()


@pytest.mark.parametrize("content", [b"", b"not a checkpoint at all", b"PK\x03\x04garbage"])
def test_resume_from_an_empty_or_garbage_checkpoint_is_one_line_naming_it(small_corpus, tmp_path, content):
    train, dev = small_corpus
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "checkpoint.pt").write_bytes(content)
    with pytest.raises(ValueError) as error:
        train_main(train_args(train, dev, tmp_path / "run", "--resume"))
    message = str(error.value)
    assert message.startswith(f"--resume: {tmp_path / 'run' / 'checkpoint.pt'} is not a checkpoint of training.train")
    assert "\n" not in message


def test_a_second_trainer_on_the_same_out_is_refused_and_the_lock_goes_with_the_run(small_corpus, tmp_path):
    from training.train import LOCK, sole_trainer

    train, dev = small_corpus
    with sole_trainer(tmp_path / "run"):  # a first trainer, still running
        with pytest.raises(ValueError, match="another training run is writing there"):
            train_main(train_args(train, dev, tmp_path / "run"))
        assert (tmp_path / "run" / LOCK).is_file()
    assert not (tmp_path / "run").exists()  # made for the lock, left empty: removed again
    train_main(train_args(train, dev, tmp_path / "run", "--max-steps", "2"))
    assert not (tmp_path / "run" / LOCK).exists() and (tmp_path / "run" / "checkpoint.pt").is_file()


def test_an_over_long_line_is_dropped_before_it_is_decoded_or_tokenised(tmp_path):
    path = tmp_path / "long.tsv"
    path.write_bytes(
        b"I see the cat.\tio vedo il gatto.\n" + b"word " * 1_000_000 + b"\tparola\n" + b"the dog.\til cane.\n"
    )
    pairs, skipped = read_tsv(path)
    assert pairs == [("I see the cat.", "io vedo il gatto."), ("the dog.", "il cane.")] and skipped == 1
