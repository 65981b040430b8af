r"""Train an English -> Italian Transformer: data -> BPE tokenizer -> token-bucketed batches -> AdamW with warmup
-> dev BLEU/chrF -> exported model directory.

    python -m training.train --config cpu \
        --train data/en-it/train.tsv data/en-it/train-extra.tsv --train-weights 1 2 \
        --dev data/en-it/dev.tsv --out runs/cpu --max-minutes 120

One process on CPU or one GPU; under `torchrun --nproc_per_node=N` the same script trains with
DistributedDataParallel (gloo on CPU, NCCL on GPUs). `--resume` continues from OUT/checkpoint.pt exactly where
the run stopped (model, optimizer, schedule, RNG, data position; with train.bpe_dropout, the epoch's pairs are
segmented afresh). The best model so far (by dev BLEU) is exported to OUT/model, which `Translator.load` (and
`modeldir.directory.open_model`) reads.
"""

import argparse
import contextlib
import csv
import fcntl
import math
import os
import random
import re
import shutil
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from tqdm import tqdm

from inputs.text import CheckedTranslator
from modeldir.directory import ModelDirectory, open_model, save_model_dir
from modeldir.files import LOSS_CURVE, SNAPSHOTS, Score, add_score
from modeldir.loading import DTYPES, TOKEN_ROWS, TOKENIZER, tied_weight_names
from modeldir.seen import WordCounts, counted, read_word_counts, write_word_counts
from transformer.model import Transformer, TransformerConfig
from transformer.tokenizer import PAD_ID, load_tokenizer

from .cli import check_writable, command_line, non_negative_float, non_negative_int, positive_float, run_cli
from .configs import (
    CONFIGS,
    TrainConfig,
    config_dict,
    load_config,
    model_config,
    model_settings,
    parse_overrides,
    train_config,
)
from .curve import plot_curve
from .data import TokenBatcher, TrainingData, build_tokenizer, load_pairs
from .evaluate import multi_reference_scores, score
from .runtime import Distributed, autocast_context, hardware_description, rng_state, save_atomic, set_rng_state
from .snapshots import History

CHECKPOINT = "checkpoint.pt"
WEIGHTS_KEPT = "weights"  # the last evaluations' weights (`keep_weights`)
LOG = "metrics.csv"
LOG_COLUMNS = ["step", "epoch", "minutes", "target_tokens", "train_loss", "lr", "tokens_per_s", "dev_bleu", "dev_chrf"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m training.train", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--config", default="tiny", help=f"{' | '.join(CONFIGS)}, or a JSON file")
    p.add_argument(
        "--train",
        required=True,
        nargs="+",
        metavar="DATA",
        help="TSV files of English<TAB>Italian pairs or Hugging Face dataset ids (several, or a comma list)",
    )
    p.add_argument(
        "--train-weights",
        nargs="+",
        type=positive_float,
        metavar="W",
        help="how often each --train source is seen per epoch (default 1 each; 2.5 = twice and a random half)",
    )
    p.add_argument("--dev", required=True, help="TSV (or dataset id) for validation")
    p.add_argument("--out", required=True, help="run directory: checkpoint, logs, exported model")
    p.add_argument("--hf-config", help="dataset config for a Hugging Face id (e.g. en-it for opus_books)")
    p.add_argument("--hf-dev-split", default="train", help="split of a Hugging Face --dev dataset")
    p.add_argument("--src-lang", default="en")
    p.add_argument("--tgt-lang", default="it")
    p.add_argument(
        "--max-minutes",
        type=non_negative_float,
        default=0,
        help="stop cleanly (and export) after this long (0: no limit)",
    )
    p.add_argument(
        "--max-steps",
        type=non_negative_int,
        default=0,
        help="stop after this many optimizer steps in total (0: no limit)",
    )
    p.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    p.add_argument("--init-from", help="start from the weights and tokenizer of an exported model directory")
    p.add_argument(
        "--tokenizer",
        help="a new model's tokenizer.json, instead of learning one (models trained from "
        "scratch on one vocabulary can then be compared)",
    )
    p.add_argument(
        "--limit-train",
        type=non_negative_int,
        default=0,
        help="use only the first N pairs of each training source (0: all)",
    )
    p.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="override config values: KEY=VALUE or train.KEY=VALUE a training setting, model.KEY=VALUE a "
        "model setting (not with --resume or --init-from)",
    )
    p.add_argument(
        "--precision",
        choices=["bfloat16", "float32"],
        default="bfloat16",
        help="autocast dtype where the hardware has it",
    )
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--threads", type=non_negative_int, default=0, help="torch CPU threads (0 = default)")
    p.add_argument(
        "--export-dtype",
        choices=["float16", "bfloat16", "float32"],
        default="float16",
        help="precision of the exported weights",
    )
    p.add_argument("--no-progress", action="store_true")
    return p.parse_args(argv)


def learning_rate(step, cfg, time_progress=None):
    """Linear warmup to cfg.lr, then inverse-square-root decay (paper, section 5.3) or cosine decay to min_lr.
    Cosine decays over cfg.decay_steps, or, when that is 0, over the --max-minutes budget (`time_progress`
    in [0, 1]), so a time-limited run ends at a low learning rate however fast the machine is."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    if cfg.schedule == "cosine":
        if cfg.decay_steps:
            progress = (step - cfg.warmup_steps) / max(1, cfg.decay_steps - cfg.warmup_steps)
        elif time_progress is not None:
            progress = time_progress
        else:
            raise ValueError("the cosine schedule needs decay_steps or --max-minutes")
        return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi * min(1.0, progress)))
    return max(cfg.min_lr, cfg.lr * math.sqrt(cfg.warmup_steps / (step + 1)))


def trained_names(names, train_only):
    """The weight names `train_only` keeps trained (all of them when it is empty): each comma-separated prefix names
    whole components of the dotted names, `*` standing for any one (`decoder.layers.*.cross_attention`). A prefix
    that names no weight is a ValueError, so that a typo cannot freeze the whole model unseen."""
    prefixes = [prefix.strip() for prefix in train_only.split(",") if prefix.strip()]
    if not prefixes:
        return set(names)
    chosen = set()
    for prefix in prefixes:
        pattern = re.compile(re.escape(prefix).replace(r"\*", r"[^.]+") + r"(\.|$)")
        named = {name for name in names if pattern.match(name)}
        if not named:
            tops = sorted({name.split(".")[0] for name in names})
            raise ValueError(
                f"train_only={train_only}: no weight is named {prefix!r}; names start with {', '.join(tops)} "
                "(e.g. decoder.layers.*.cross_attention)"
            )
        chosen |= named
    return chosen


def freeze_all_but(model, train_only):
    """Fine-tuning a subnetwork (Thompson et al., 2018): weights outside `train_only` get no gradient."""
    chosen = trained_names([name for name, _ in model.named_parameters()], train_only)
    for name, weight in model.named_parameters():
        weight.requires_grad_(name in chosen)


def make_optimizer(model, train_cfg):
    """AdamW with the paper's betas; weight decay on matrices only (not on biases and LayerNorm gains); frozen
    weights (`train_only`) are left out."""
    trained = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in trained if p.dim() >= 2]
    no_decay = [p for p in trained if p.dim() < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": train_cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=train_cfg.lr,
        betas=(0.9, 0.98),
        eps=1e-9,
    )


def train_step(model, optimizer, batch, lr, autocast, train_cfg, teacher=None):
    """One optimizer step on (src, tgt_in, tgt_out): label-smoothed cross-entropy averaged over the real
    (non-padding) target tokens, with the `teacher` model's (`teacher_weight`) KL divergence beside it; clipped
    gradients. Returns (loss, real target tokens)."""
    src, tgt_in, tgt_out = batch
    for group in optimizer.param_groups:
        group["lr"] = lr
    with autocast:
        logits = model(src, tgt_in)  # (B, T, V)
    real = tgt_out.view(-1) != PAD_ID  # (B*T,)
    n_tokens = int(real.sum())
    logits = logits.float().view(-1, logits.size(-1))  # (B*T, V)
    loss = (
        F.cross_entropy(
            logits,
            tgt_out.view(-1),
            ignore_index=PAD_ID,
            label_smoothing=train_cfg.label_smoothing,
            reduction="sum",
        )
        / n_tokens
    )
    if teacher is not None:
        with torch.no_grad(), autocast:
            taught = teacher(src, tgt_in).float().view_as(logits).log_softmax(-1)  # (B*T, V)
        kl = F.kl_div(logits[real].log_softmax(-1), taught[real], log_target=True, reduction="sum") / n_tokens
        loss = (1 - train_cfg.teacher_weight) * loss + train_cfg.teacher_weight * kl
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), train_cfg.clip_norm)
    optimizer.step()
    return loss.item(), n_tokens


class Anchor:
    """The weights a continued run is pulled back towards (`anchor_decay`): L2-SP (Li et al., 2018), the regulariser
    that Barone et al. (2017) and Thompson et al. (2019) use so that fine-tuning an NMT model on a new domain does not
    forget the old one. The pull is decoupled from the gradient, as AdamW's weight decay is: w += lr * strength *
    (w_start - w) after each step."""

    def __init__(self, model, start, strength):
        self.strength = strength
        # The --init-from model is never trained, so its own weights serve (copied only to another device). Weights
        # frozen by train_only never leave their start: no pull to spend on them each step.
        self.pairs = [
            (weight, initial.detach().to(weight.device))
            for weight, initial in zip(model.parameters(), start.parameters())
            if weight.requires_grad
        ]

    @torch.no_grad()
    def pull(self, lr):
        for weight, start in self.pairs:
            weight.lerp_(start, min(1.0, lr * self.strength))


class FrozenTokenRows:
    """Keeps the rows of the token-indexed weights (the embeddings and the output layer) below `n` as they were
    (`frozen_token_rows`): their gradient is zeroed, so clipping and Adam see only the rows trained, and after each
    step they are written back, undoing weight decay."""

    def __init__(self, model, n):
        weights = dict(model.named_parameters())  # a tied matrix once, under its first name
        trained = [weights[name] for name in TOKEN_ROWS if name in weights and weights[name].requires_grad]
        self.saved = [(weight, weight.detach()[:n].clone()) for weight in trained]
        for weight in trained:
            weight.register_hook(lambda grad: torch.cat([torch.zeros_like(grad[:n]), grad[n:]]))

    @torch.no_grad()
    def restore(self):
        for weight, rows in self.saved:
            weight[: len(rows)] = rows


@dataclass
class RunState:
    """Where training stands: saved in every checkpoint, so `--resume` continues exactly from here."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    target_tokens: int = 0
    train_seconds: float = 0.0
    best_bleu: float = -1.0
    lr_horizon_seconds: float | None = None  # the cosine's length: the first invocation's time budget (inf: none)
    history: list = field(default_factory=list)  # metrics.json "training" of the runs this one continues
    commands: list = field(default_factory=list)  # every invocation that led here

    def time_progress(self):
        """How far through the time budget the cosine schedule decays over (None without a budget)."""
        return self.train_seconds / self.lr_horizon_seconds if math.isfinite(self.lr_horizon_seconds) else None


@dataclass
class Run:
    """What the phases of `main` share: the arguments, this process, the configs, the models started from."""

    args: argparse.Namespace
    dist: Distributed
    out: Path
    model_settings: dict  # the model's config but its vocabulary size (`configs.model_settings`)
    train_cfg: TrainConfig
    checkpoint: dict | None
    init: ModelDirectory | None  # the exported model of --init-from
    command: str  # this invocation, recorded in metrics.json
    model_cfg: TransformerConfig | None = None  # the model settings with the tokenizer's vocab_size, once it exists
    snapshots: History | None = None  # how the model learned (rank 0 only): training_snapshots.json

    def log(self, *message):
        if self.dist.main:
            print(*message)


@dataclass
class Data:
    """What the run trains and is scored on, and the tokenizer shared by both."""

    sources: list  # (spec, weight, pairs) per --train source
    dev_pairs: list
    tokenizer: object
    training: TrainingData
    word_counts: WordCounts  # how many training pairs hold each word, written beside the model at export


def set_up_run(args, command):
    """This process, the configs (from --config, or the checkpoint's on --resume; --set applied), the checkpoint,
    and the model of --init-from. Everything that can be checked before the data is read is checked here."""
    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.out)
    check_writable(out, "--out")
    settings, train_cfg = load_config(args.config)
    model_changes, train_changes = parse_overrides(args.set)
    if model_changes and (args.resume or args.init_from):
        raise ValueError(
            f"--set model.{next(iter(model_changes))}: model settings cannot change with --resume or "
            f"--init-from, which continue a model as its checkpoint or config.json describes it"
        )
    checkpoint = None
    if not args.resume and (out / CHECKPOINT).is_file():
        raise ValueError(f"{out} already holds a run: add --resume to continue it, or choose another --out")
    if args.resume:
        if not (out / CHECKPOINT).is_file():
            raise ValueError(f"--resume: no {out / CHECKPOINT} to resume from")
        try:
            checkpoint = torch.load(out / CHECKPOINT, map_location="cpu", weights_only=False)
            settings = {k: v for k, v in checkpoint["model_config"].items() if k != "vocab_size"}
            train_cfg = train_config(checkpoint["train_config"])
        except Exception as e:  # empty, cut short, garbage, another program's: torch's errors vary, some many lines
            first_line = (str(e).strip().splitlines() or [""])[0][:80]
            raise ValueError(
                f"--resume: {out / CHECKPOINT} is not a checkpoint of training.train ({type(e).__name__}: {first_line})"
            ) from e
    settings = model_settings({**settings, **model_changes})
    train_cfg = replace(train_cfg, **train_changes)  # on --resume, e.g. a longer decay for a continued run
    if args.tokenizer:
        if args.init_from or args.resume:
            raise ValueError(
                "--tokenizer is for a new model: --init-from and --resume continue with their own tokenizer"
            )
        check_tokenizer(args.tokenizer)
    if args.init_from or args.tokenizer:
        train_cfg = replace(train_cfg, bpe_vocab_size=None)  # no BPE vocabulary is learnt: the tokenizer is given
    if train_cfg.anchor_decay < 0 or (train_cfg.anchor_decay and not args.init_from):
        raise ValueError(
            f"anchor_decay={train_cfg.anchor_decay:g}: a run is pulled towards the model it continues, so anchor_decay "
            "is a number >= 0, and above 0 it needs --init-from (on --resume too: the same model)"
        )
    if not 0 <= train_cfg.teacher_weight <= 1 or (train_cfg.teacher_weight and not args.init_from):
        raise ValueError(
            f"teacher_weight={train_cfg.teacher_weight:g}: the teacher is the model a run continues, so teacher_weight "
            "is a number from 0 to 1, and above 0 it needs --init-from (on --resume too: the same model)"
        )
    if train_cfg.frozen_token_rows < 0 or (train_cfg.frozen_token_rows and not args.init_from):
        raise ValueError(
            f"frozen_token_rows={train_cfg.frozen_token_rows}: the rows kept are the --init-from model's, so "
            "frozen_token_rows is a number >= 0, and above 0 it needs --init-from"
        )
    if checkpoint and train_cfg.train_only != checkpoint["train_config"].get("train_only", ""):
        raise ValueError("--resume: train_only cannot change within a run (its optimizer holds those weights' state)")
    with torch.device("meta"):  # the weights' names only: no memory, no vocabulary needed yet
        names = [name for name, _ in Transformer(model_config(settings, 8)).named_parameters()]
    trained_names(names, train_cfg.train_only)
    init = load_init_model(args, settings) if args.init_from else None
    return Run(args, Distributed(), out, settings, train_cfg, checkpoint, init, command)


def check_tokenizer(path):
    """A ValueError unless `path` is a tokenizer file this project can use, checked before any data is read."""
    if not Path(path).is_file():
        raise ValueError(f"--tokenizer {path}: no such file")
    try:
        load_tokenizer(path)
    except Exception as e:  # the tokenizers library's errors are plain Exceptions
        raise ValueError(f"--tokenizer {path}: not a tokenizer.json of this project ({e})") from e


def load_init_model(args, settings):
    """The exported model of --init-from, read before any data: a wrong path or config fails at once."""
    init = open_model(args.init_from, device="cpu")
    if {k: v for k, v in asdict(init.translator.model.cfg).items() if k != "vocab_size"} != settings:
        raise ValueError(f"--init-from {args.init_from}: its config.json differs from --config {args.config}")
    return init


def load_sources(run):
    """-> [(spec, weight, pairs)] of the --train sources (malformed lines counted, never fatal)."""
    args = run.args
    specs = [spec for item in args.train for spec in item.split(",") if spec]
    weights = args.train_weights or [1.0] * len(specs)
    if len(weights) != len(specs):
        raise ValueError(f"--train-weights: give one positive weight per --train source ({len(specs)})")
    sources = []
    for spec, weight in zip(specs, weights):
        pairs, skipped = load_pairs(spec, args.hf_config, "train", args.src_lang, args.tgt_lang)
        pairs = pairs[: args.limit_train] if args.limit_train else pairs
        run.log(f"data: {len(pairs):,} training pairs of {spec} x {weight:g} ({skipped} malformed lines skipped)")
        sources.append((spec, weight, pairs))
    return sources


def make_tokenizer(run, sources):
    """A new run's tokenizer (learnt, --init-from's or --tokenizer's) is saved to OUT by rank 0, which creates OUT only
    now: a run that fails on its data or tokenizer leaves nothing behind. Every process then reads it from there."""
    if run.dist.main and not run.args.resume:
        init_tokenizer = run.init.path / TOKENIZER if run.init else run.args.tokenizer
        tokenizer, note = build_tokenizer(
            [pairs for _, _, pairs in sources], run.train_cfg.bpe_vocab_size, init_tokenizer
        )
        run.out.mkdir(parents=True, exist_ok=True)
        tokenizer.save(str(run.out / TOKENIZER))
        run.log(f"tokenizer: {note}")
    run.dist.barrier()
    return load_tokenizer(run.out / TOKENIZER)


def build_data(run):
    """Training sources and dev pairs, the tokenizer, and the drawer of each epoch's pairs."""
    args, cfg = run.args, run.train_cfg
    sources = load_sources(run)
    dev_pairs, dev_skipped = load_pairs(args.dev, args.hf_config, args.hf_dev_split, args.src_lang, args.tgt_lang)
    run.log(f"data: {len(dev_pairs):,} dev pairs ({dev_skipped} skipped)")
    tokenizer = make_tokenizer(run, sources)
    run.model_cfg = model_config(run.model_settings, tokenizer.get_vocab_size())
    training = TrainingData(
        [(pairs, weight) for _, weight, pairs in sources],
        tokenizer,
        run.model_cfg.max_len,
        cfg.retype_share,
        cfg.join_share,
        cfg.long_weight,
        cfg.long_words,
        cfg.bpe_dropout,
        seed=cfg.seed,
    )
    run.log(
        f"{len(training):,} pairs per epoch; {training.too_long} pairs longer than {run.model_cfg.max_len} "
        f"tokens dropped; {cfg.retype_share:.0%} re-typed, {cfg.join_share:.0%} joined into longer pairs; "
        f"pairs of {cfg.long_words}+ English words seen {cfg.long_weight:g}x as often"
        + (f"; BPE-dropout {cfg.bpe_dropout:g}" if cfg.bpe_dropout else "")
    )
    counts = training_word_counts(run, sources, tokenizer)
    return Data(sources, dev_pairs[: cfg.eval_limit or None], tokenizer, training, counts)


def training_word_counts(run, sources, tokenizer):
    """How many of the --train pairs hold each word, at least as many as the --init-from model had seen, and the words
    they translate rather than copy (`modeldir.seen.translations`, by the model's `tokenizer`)."""
    training_pairs = [pair for _, _, pairs in sources for pair in pairs]
    counts = counted(training_pairs, [str(spec) for spec, _, _ in sources], tokenizer)
    earlier = read_word_counts(run.args.init_from) if run.args.init_from else None
    return counts.at_least(earlier) if earlier else counts


def build_model(run):
    """The model (fresh, --init-from an exported one, or the checkpoint's), its optimizer and the run state."""
    torch.manual_seed(run.train_cfg.seed)
    random.seed(run.train_cfg.seed)
    model = Transformer(run.model_cfg).to(run.dist.device)
    state = RunState()
    if run.init:
        model.load_state_dict(run.init.translator.model.state_dict())
        state.history = run.init.metrics.get("history", []) + [run.init.metrics.get("training", {})]
    freeze_all_but(model, run.train_cfg.train_only)
    optimizer = make_optimizer(model, run.train_cfg)
    if run.checkpoint:
        model.load_state_dict(run.checkpoint["model"])
        optimizer.load_state_dict(run.checkpoint["optimizer"])
        state = RunState(**run.checkpoint["state"])
        saved_rng = run.checkpoint["rng"]  # one state per process of the run that saved it
        if len(saved_rng) != run.dist.world:
            run.log(
                f"warning: the checkpoint was written by {len(saved_rng)} process(es), this run has "
                f"{run.dist.world}: training goes on, but its batches and dropout differ from an unbroken run's"
            )
        set_rng_state(saved_rng[run.dist.rank % len(saved_rng)], run.dist.device)
        run.log(f"resumed at step {state.step} (epoch {state.epoch}, batch {state.batch_in_epoch})")
    state.commands.append(run.command)
    if run.dist.main:
        run.snapshots = start_snapshots(run, state)
    trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    frozen = f" ({trained:,} trained: train_only={run.train_cfg.train_only})" if run.train_cfg.train_only else ""
    run.log(
        f"model: {model.num_parameters():,} parameters{frozen}; {hardware_description(run.dist.device, run.dist.world)}"
    )
    return model, optimizer, state


def start_snapshots(run, state):
    """This run's snapshot history: the checkpoint's on --resume, else a new part (continuing the history of the
    --init-from model, whose training steps and minutes come first)."""
    if run.args.resume:
        return History.resume(run.out, state.step)
    parts = run.init.metrics.get("history", []) + [run.init.metrics.get("training", {})] if run.init else []
    return History.start(
        run.out,
        run.train_cfg.probes,
        run.command,
        run.args.init_from,
        init_steps=sum(p.get("steps", 0) for p in parts),
        init_minutes=sum(p.get("minutes", 0) for p in parts),
    )


def snapshot(run, data, model, state, dev_bleu=None):
    """Record the probes' translations and cross-attention now (rank 0) and save the history."""
    model.eval()
    seconds = run.snapshots.record(
        CheckedTranslator(model, data.tokenizer), state.step, state.train_seconds / 60, dev_bleu
    )
    model.train()
    run.snapshots.save()
    return seconds


def export(run, data, model, state, dev_result, n_batches):
    """Write the best model so far to OUT/model (replaced atomically), with its metrics.json, training curve and
    model card."""
    metrics = {
        "parameters": model.num_parameters(),
        "config": config_dict(run.model_cfg, run.train_cfg),
        "training": {
            "minutes": round(state.train_seconds / 60, 1),
            "steps": state.step,
            "epochs": round(state.epoch + state.batch_in_epoch / max(1, n_batches), 2),
            "target_tokens_seen": state.target_tokens,
            "hardware": hardware_description(run.dist.device, run.dist.world),
            "precision": run.args.precision,
            "commands": state.commands,
            "data": {
                "train": [spec for spec, _, _ in data.sources],
                "weights": [w for _, w, _ in data.sources],
                "pairs_per_epoch": len(data.training),
                "retype_share": run.train_cfg.retype_share,
                "join_share": run.train_cfg.join_share,
                "long_weight": run.train_cfg.long_weight,
                "long_words": run.train_cfg.long_words,
                "dev": str(run.args.dev),
            },
        },
        "history": state.history,
    }
    add_score(
        metrics,
        Score(
            data="dev (during training)",
            decoding="greedy",
            precision="float32",
            **{k: dev_result[k] for k in ("bleu", "chrf", "n", "seconds")},
        ),
    )
    tmp, final = run.out / "model.tmp", run.out / "model"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    if (run.out / LOSS_CURVE).is_file():  # first, so the model card (README.md) shows it
        shutil.copyfile(run.out / LOSS_CURVE, tmp / LOSS_CURVE)
    shutil.copyfile(run.out / SNAPSHOTS, tmp / SNAPSHOTS)
    write_word_counts(tmp, data.word_counts)
    save_model_dir(model, data.tokenizer, tmp, dtype=DTYPES[run.args.export_dtype], metrics=metrics)
    if final.exists():
        os.replace(final, run.out / "model.old")
    os.replace(tmp, final)
    shutil.rmtree(run.out / "model.old", ignore_errors=True)


def evaluate_and_checkpoint(run, data, model, optimizer, state, n_batches):
    """Dev BLEU/chrF with batched greedy decoding (rank 0), best model exported, state checkpointed."""
    rng = run.dist.all_gather_object(rng_state(run.dist.device))
    if not run.dist.main:
        return
    model.eval()
    result = score(CheckedTranslator(model, data.tokenizer), data.dev_pairs, beam=1, progress=False)
    model.train()
    run.snapshots.add_curve_point(state.step, dev_bleu=result["bleu"])
    snapshot_seconds = snapshot(run, data, model, state, result["bleu"])
    write_log(
        run.out / LOG,
        {
            "step": state.step,
            "epoch": state.epoch,
            "minutes": f"{state.train_seconds / 60:.2f}",
            "target_tokens": state.target_tokens,
            "dev_bleu": result["bleu"],
            "dev_chrf": result["chrf"],
        },
    )
    plot_curve(run.out / LOG, run.out / LOSS_CURVE)
    improved = result["bleu"] > state.best_bleu
    if improved:
        state.best_bleu = result["bleu"]
        export(run, data, model, state, result, n_batches)
    tqdm.write(
        f"step {state.step}: dev BLEU {result['bleu']:.2f} chrF {result['chrf']:.2f} "
        f"({result['n']} pairs{each_sentence_once(data.dev_pairs, result)})"
        f"{' - best so far, exported' if improved else ''}; probes snapshotted in "
        f"{snapshot_seconds:.1f} s ({run.snapshots.overhead(state.train_seconds):.2%} of training so far)"
    )
    save_atomic(
        {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "state": asdict(state),
            "model_config": asdict(run.model_cfg),
            "train_config": asdict(run.train_cfg),
            "rng": rng,
        },
        run.out / CHECKPOINT,
    )
    keep_weights(run, model, state.step)


def each_sentence_once(pairs, result):
    """The log's "; each of N sentences once: BLEU x" where the dev set repeats an English sentence
    (`multi_reference_scores`): a sudden fall in pair BLEU may be one sentence's new wording over its 12 references."""
    sentences = len({src for src, _ in pairs})
    if sentences == len(pairs):
        return ""
    bleu = multi_reference_scores(pairs, result["hypotheses"])["bleu"]
    return f"; each of {sentences} sentences once: BLEU {bleu:.2f}"


def keep_weights(run, model, step):
    """The weights of this evaluation in OUT/weights/step-N.safetensors (float32), only the last `keep_weights`
    kept: averaging a run's last checkpoints (`training.recipes.average`) often scores a little above any one of
    them."""
    if not run.train_cfg.keep_weights:
        return
    folder = run.out / WEIGHTS_KEPT
    folder.mkdir(exist_ok=True)
    tmp = folder / f".step-{step}.tmp"
    save_file(
        {
            name: t.detach().float().cpu().contiguous()
            for name, t in model.state_dict().items()
            if name not in tied_weight_names(model.cfg)
        },
        str(tmp),
    )
    os.replace(tmp, folder / f"step-{step}.safetensors")
    for old in sorted(folder.glob("step-*.safetensors"), key=kept_step)[: -run.train_cfg.keep_weights]:
        old.unlink()


def kept_step(path):
    """The step of a kept weights file, step-N.safetensors; None for a file of any other name."""
    match = re.fullmatch(r"step-(\d+)\.safetensors", Path(path).name)
    return int(match.group(1)) if match else None


def truncate_log(log_path, step):
    """Drop the metrics rows logged after `step`: a run resumed from the checkpoint of `step` logs them again."""
    with open(log_path, newline="", encoding="utf-8") as f:
        rows = [row for row in csv.DictReader(f) if int(row["step"]) <= step]
    with open(log_path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, LOG_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def write_log(log_path, row):
    with open(log_path, "a", newline="", encoding="utf-8") as f:
        csv.writer(f).writerow([row.get(c, "") for c in LOG_COLUMNS])


def open_log(run, state):
    """OUT/metrics.csv: new, or on --resume cut back to the checkpoint's step."""
    if not run.dist.main:
        return
    if run.args.resume and (run.out / LOG).is_file():
        truncate_log(run.out / LOG, state.step)
    else:
        with open(run.out / LOG, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerow(LOG_COLUMNS)


def counts_minutes(args):
    """Whether the progress bar shows the --max-minutes budget: when there is one and no --max-steps."""
    return bool(args.max_minutes and not args.max_steps)


def progress_bar(run, state):
    """Steps out of --max-steps; else minutes out of the --max-minutes budget; else an open count of steps."""
    disable = run.args.no_progress or not run.dist.main
    if not counts_minutes(run.args):
        return tqdm(
            total=run.args.max_steps or None, initial=state.step, unit="step", dynamic_ncols=True, disable=disable
        )
    return tqdm(
        total=run.args.max_minutes,
        unit="min",
        dynamic_ncols=True,
        disable=disable,
        bar_format="{l_bar}{bar}| {n:.3g}/{total:g} min [{elapsed}{postfix}]",
    )


@dataclass
class LossWindow:
    """The steps since the last log line: their mean train loss and throughput make the next one."""

    loss_sum: float = 0.0
    tokens: int = 0
    start: float = field(default_factory=time.time)

    def add(self, loss, n_tokens):
        self.loss_sum, self.tokens = self.loss_sum + loss * n_tokens, self.tokens + n_tokens


def log_progress(run, state, window, lr, bar):
    """A metrics.csv row (rank 0) and the progress bar's loss, tokens/s and learning rate."""
    tokens_per_s = run.dist.all_reduce_sum(window.tokens) / max(time.time() - window.start, 1e-9)
    row = {
        "step": state.step,
        "epoch": state.epoch,
        "minutes": f"{state.train_seconds / 60:.2f}",
        "target_tokens": state.target_tokens,
        "train_loss": f"{window.loss_sum / window.tokens:.4f}",
        "lr": f"{lr:.3e}",
        "tokens_per_s": f"{tokens_per_s:.0f}",
    }
    bar.set_postfix({"loss": row["train_loss"], "tok/s": f"{tokens_per_s:,.0f}", "lr": row["lr"]})
    if run.dist.main:
        write_log(run.out / LOG, row)
        run.snapshots.add_curve_point(state.step, train_loss=round(window.loss_sum / window.tokens, 4))


def epoch_pairs(run, data, epoch):
    """This epoch's (source ids, target ids), the same in every process. BPE-dropout's segmentations take no seed,
    so rank 0 draws them and sends them to the others, which would otherwise cut other batches of other lengths."""
    if not data.training.resegment:
        return data.training.epoch(epoch)
    return run.dist.broadcast_object(data.training.epoch(epoch) if run.dist.main else None)


def epoch_batches(run, data, epoch):
    """This epoch's batcher and batches, and how many batches each process takes (pools are cut differently
    each epoch, so the count changes too)."""
    batcher = TokenBatcher(*epoch_pairs(run, data, epoch), run.train_cfg.max_tokens, seed=run.train_cfg.seed)
    batches = batcher.epoch_batches(epoch)
    n_batches = len(batches) // run.dist.world
    if n_batches == 0:
        raise ValueError(
            f"{', '.join(s for s, _, _ in data.sources)}: {len(batcher.src_ids)} usable training pairs "
            f"make {len(batches)} batches, too few for {run.dist.world} process(es) "
            f"(pairs over {run.model_cfg.max_len} tokens are dropped)"
        )
    return batcher, batches, n_batches


def wrap_model(run, model):
    """The model the steps run: compiled with --compile, in DistributedDataParallel under torchrun."""
    train_model = torch.compile(model) if run.args.compile else model
    if run.dist.world > 1:
        train_model = torch.nn.parallel.DistributedDataParallel(train_model)
    return train_model


def train(run, data, model, optimizer, state):
    """The training loop: one batch per step, logged every 20 steps, evaluated and checkpointed every eval_every
    steps and at the end (--max-steps reached or --max-minutes spent)."""
    train_model, autocast = wrap_model(run, model), autocast_context(run.dist.device, run.args.precision)
    open_log(run, state)
    model.train()
    budget = run.args.max_minutes * 60 if run.args.max_minutes else math.inf
    if state.lr_horizon_seconds is None:
        state.lr_horizon_seconds = budget  # a resumed run keeps its first run's schedule
    start, seconds_at_start = time.time(), state.train_seconds
    bar, by_minutes, window = progress_bar(run, state), counts_minutes(run.args), LossWindow()
    anchor = (
        Anchor(model, run.init.translator.model, run.train_cfg.anchor_decay) if run.train_cfg.anchor_decay else None
    )
    frozen_rows = FrozenTokenRows(model, run.train_cfg.frozen_token_rows) if run.train_cfg.frozen_token_rows else None
    teacher = run.init.translator.model.to(run.dist.device).eval() if run.train_cfg.teacher_weight else None
    batcher, batches, n_batches = epoch_batches(run, data, state.epoch)
    if run.dist.main and state.step == 0:
        snapshot(run, data, model, state)  # what the model makes of the probes before it has learnt anything
    stop = False
    while not stop:
        if state.batch_in_epoch >= n_batches:
            state.epoch, state.batch_in_epoch = state.epoch + 1, 0
            batcher, batches, n_batches = epoch_batches(run, data, state.epoch)
        batch = batcher.collate(batches[state.batch_in_epoch * run.dist.world + run.dist.rank])
        lr = learning_rate(state.step, run.train_cfg, state.time_progress())
        loss, n_tokens = train_step(
            train_model, optimizer, [t.to(run.dist.device) for t in batch], lr, autocast, run.train_cfg, teacher
        )
        if anchor:
            anchor.pull(lr)
        if frozen_rows:
            frozen_rows.restore()
        state.step, state.batch_in_epoch = state.step + 1, state.batch_in_epoch + 1
        state.target_tokens += int(run.dist.all_reduce_sum(n_tokens))
        state.train_seconds = seconds_at_start + (time.time() - start)
        window.add(loss, n_tokens)
        bar.update(min(time.time() - start, budget) / 60 - bar.n if by_minutes else 1)
        if state.step % 20 == 0 or state.step % run.train_cfg.eval_every == 0:
            log_progress(run, state, window, lr, bar)
            window = LossWindow()
        out_of_time = time.time() - start >= budget
        stop = run.dist.broadcast_flag(out_of_time or (run.args.max_steps and state.step >= run.args.max_steps))
        if stop or state.step % run.train_cfg.eval_every == 0:
            evaluate_and_checkpoint(run, data, model, optimizer, state, n_batches)
            run.dist.barrier()
    bar.close()


LOCK = "train.lock"


@contextlib.contextmanager
def sole_trainer(out):
    """Hold OUT/train.lock (an flock, freed by the system however the process ends) while training: a second trainer
    on the same --out is refused at once instead of overwriting the first one's checkpoints. OUT is made for it and,
    if nothing else was written there, removed again (a run that fails on its data leaves nothing behind)."""
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    path = out / LOCK
    with open(path, "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(
                f"--out {out}: another training run is writing there (it holds {path}); wait for it to "
                "end, or choose another --out"
            ) from None
        try:
            yield
        finally:
            path.unlink(missing_ok=True)
            if created and not any(out.iterdir()):
                out.rmdir()


def main(argv=None):
    """Set up the run, build the data, build the model, train (evaluating, checkpointing and exporting on the way)."""
    args = parse_args(argv)
    command = command_line("training.train", argv)
    run = set_up_run(args, command)
    with sole_trainer(run.out) if run.dist.main else contextlib.nullcontext():
        data = build_data(run)
        model, optimizer, state = build_model(run)
        train(run, data, model, optimizer, state)
    run.log(
        f"done: {state.step} steps, {state.train_seconds / 60:.1f} min; best dev BLEU {state.best_bleu:.2f}; "
        f"model exported to {run.out / 'model'}"
    )
    run.dist.close()


if __name__ == "__main__":
    run_cli(main)
