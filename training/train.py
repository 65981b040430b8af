"""Train an English -> Italian Transformer: data -> BPE tokenizer -> token-bucketed batches -> AdamW with warmup
-> dev BLEU/chrF -> exported model directory.

    python -m training.train --config cpu --train ../shared/data/en-it/train.tsv \
        --dev ../shared/data/en-it/dev.tsv --out runs/cpu --max-minutes 120

One process on CPU or one GPU; under `torchrun --nproc_per_node=N` the same script trains with
DistributedDataParallel (gloo on CPU, NCCL on GPUs). `--resume` continues from OUT/checkpoint.pt exactly where
the run stopped (model, optimizer, schedule, RNG, data position). The best model so far (by dev BLEU) is
exported to OUT/model, which `Translator.load` reads.
"""

import argparse
import csv
import math
import os
import platform
import random
import shlex
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from tqdm import tqdm

from transformer import Translator
from transformer.model import Transformer, TransformerConfig
from transformer.tokenizer import PAD_ID, encode_batch, load_tokenizer, train_tokenizer
from transformer.translator import save_model_dir

from .configs import config_dict, load_config
from .data import TokenBatcher, load_pairs
from .evaluate import score

CHECKPOINT = "checkpoint.pt"
LOG_COLUMNS = ["step", "epoch", "minutes", "target_tokens", "train_loss", "lr", "tokens_per_s", "dev_bleu", "dev_chrf"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="tiny", help="tiny | cpu | base, or a JSON file")
    p.add_argument("--train", required=True, help="TSV of English<TAB>Italian pairs, or a Hugging Face dataset id")
    p.add_argument("--dev", required=True, help="TSV (or dataset id) for validation")
    p.add_argument("--out", required=True, help="run directory: checkpoint, logs, exported model")
    p.add_argument("--hf-config", help="dataset config for a Hugging Face id (e.g. en-it for opus_books)")
    p.add_argument("--hf-dev-split", default="train", help="split of a Hugging Face --dev dataset")
    p.add_argument("--src-lang", default="en")
    p.add_argument("--tgt-lang", default="it")
    p.add_argument("--max-minutes", type=float, default=0, help="stop cleanly (and export) after this long")
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many optimizer steps in total")
    p.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    p.add_argument("--init-from", help="start from the weights and tokenizer of an exported model directory")
    p.add_argument("--limit-train", type=int, default=0, help="use only the first N training pairs")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="override train config values")
    p.add_argument("--precision", choices=["bf16", "fp32"], default="bf16", help="autocast dtype where supported")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = default)")
    p.add_argument("--export-dtype", choices=["fp16", "bf16", "fp32"], default="fp16")
    p.add_argument("--no-progress", action="store_true")
    return p.parse_args(argv)


class Distributed:
    """Rank/world of this process; under torchrun (WORLD_SIZE > 1) it sets up the process group."""

    def __init__(self):
        self.world = int(os.environ.get("WORLD_SIZE", 1))
        self.rank = int(os.environ.get("RANK", 0))
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
        if torch.cuda.is_available():
            self.device = torch.device("cuda", local_rank)
            torch.cuda.set_device(self.device)
        else:
            self.device = torch.device("cpu")
        if self.world > 1:
            dist.init_process_group("nccl" if self.device.type == "cuda" else "gloo")

    @property
    def main(self):
        return self.rank == 0

    def barrier(self):
        if self.world > 1:
            dist.barrier()

    def all_reduce_sum(self, value):
        if self.world == 1:
            return value
        t = torch.tensor(float(value), dtype=torch.float64, device=self.device)  # NCCL needs GPU tensors
        dist.all_reduce(t)
        return t.item()

    def all_gather_object(self, obj):
        """Every rank's `obj`, in rank order, on every rank."""
        if self.world == 1:
            return [obj]
        gathered = [None] * self.world
        dist.all_gather_object(gathered, obj)
        return gathered

    def broadcast_flag(self, flag):
        """Rank 0 decides (e.g. the time budget is spent); every rank follows."""
        if self.world == 1:
            return flag
        t = torch.tensor(int(flag), device=self.device)
        dist.broadcast(t, 0)
        return bool(t.item())

    def close(self):
        if self.world > 1:
            dist.destroy_process_group()


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


def make_optimizer(model, train_cfg):
    """AdamW with the paper's betas; weight decay on matrices only (not on biases and LayerNorm gains)."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": train_cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=train_cfg.lr, betas=(0.9, 0.98), eps=1e-9,
    )


def train_step(model, optimizer, batch, lr, autocast, train_cfg):
    """One optimizer step on (src, tgt_in, tgt_out): label-smoothed cross-entropy averaged over the real
    (non-padding) target tokens, clipped gradients. Returns (loss, real target tokens)."""
    src, tgt_in, tgt_out = batch
    for group in optimizer.param_groups:
        group["lr"] = lr
    with autocast:
        logits = model(src, tgt_in)  # (B, T, V)
    n_tokens = int((tgt_out != PAD_ID).sum())
    loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), tgt_out.view(-1), ignore_index=PAD_ID,
                           label_smoothing=train_cfg.label_smoothing, reduction="sum") / n_tokens
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), train_cfg.clip_norm)
    optimizer.step()
    return loss.item(), n_tokens


def apply_overrides(train_cfg, overrides):
    for item in overrides:
        key, _, value = item.partition("=")
        if not hasattr(train_cfg, key):
            raise ValueError(f"--set {item}: unknown train config key {key!r}")
        setattr(train_cfg, key, type(getattr(train_cfg, key))(value))


def autocast_context(device, precision):
    """bf16 autocast where the hardware runs it natively (recent x86 CPUs with AVX512-BF16/AMX, Ampere+ GPUs)."""
    if precision == "bf16":
        if device.type == "cuda" and torch.cuda.is_bf16_supported():
            return torch.autocast("cuda", dtype=torch.bfloat16)
        if device.type == "cpu" and torch.backends.mkldnn.is_available() and _cpu_has_bf16():
            return torch.autocast("cpu", dtype=torch.bfloat16)
    return torch.autocast(device.type, enabled=False)


def _cpu_has_bf16():
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def hardware_description(device, world):
    if device.type == "cuda":
        return f"{world} x {torch.cuda.get_device_name(device)}"
    return f"{world} process(es) x {torch.get_num_threads()} CPU threads ({platform.processor() or platform.machine()})"


def rng_state(device):
    """This process's random generators: dropout draws from torch's (CUDA's on a GPU)."""
    return {"torch": torch.get_rng_state(), "python": random.getstate(),
            "cuda": torch.cuda.get_rng_state(device) if device.type == "cuda" else None}


def set_rng_state(state, device):
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    if device.type == "cuda" and state["cuda"] is not None:
        torch.cuda.set_rng_state(state["cuda"], device)


def truncate_log(log_path, step):
    """Drop the metrics rows logged after `step`: a run resumed from the checkpoint of `step` logs them again."""
    with open(log_path, newline="", encoding="utf-8") as f:
        rows = [row for row in csv.DictReader(f) if int(row["step"]) <= step]
    with open(log_path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, LOG_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def save_atomic(obj, path):
    tmp = Path(str(path) + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def plot_curve(log_path, png_path):
    """Train loss and dev BLEU against training minutes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(csv.DictReader(open(log_path, encoding="utf-8")))
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    train = [(float(r["minutes"]), float(r["train_loss"])) for r in rows if r["train_loss"]]
    ax.plot(*zip(*train), color="tab:blue", label="train loss")
    ax.set_xlabel("training minutes")
    ax.set_ylabel("train loss (label-smoothed cross-entropy)", color="tab:blue")
    dev = [(float(r["minutes"]), float(r["dev_bleu"])) for r in rows if r["dev_bleu"]]
    if dev:
        ax2 = ax.twinx()
        ax2.plot(*zip(*dev), "o-", color="tab:red", label="dev BLEU")
        ax2.set_ylabel("dev BLEU", color="tab:red")
    ax.set_title("Training curve")
    fig.tight_layout()
    fig.savefig(png_path)
    plt.close(fig)


def build_tokenizer(args, train_pairs, out, dist_ctx, vocab_size):
    """Rank 0 learns the BPE vocabulary (or reuses the run's / --init-from's); the other ranks read it."""
    path = out / "tokenizer.json"
    if args.init_from:
        path = Path(args.init_from) / "tokenizer.json"
    elif dist_ctx.main and not args.resume:
        train_tokenizer((s for pair in train_pairs for s in pair), vocab_size).save(str(path))
    dist_ctx.barrier()
    return load_tokenizer(path)


def encode_pairs(tokenizer, pairs, max_len):
    """Token ids of both sides; pairs longer than the model's max_len are dropped (and counted)."""
    src = encode_batch(tokenizer, [s for s, _ in pairs])
    tgt = encode_batch(tokenizer, [t for _, t in pairs])
    keep = [i for i in range(len(pairs)) if len(src[i]) < max_len and len(tgt[i]) < max_len]
    return [src[i] for i in keep], [tgt[i] for i in keep], len(pairs) - len(keep)


def main(argv=None):
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    dist_ctx = Distributed()
    device = dist_ctx.device
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = print if dist_ctx.main else (lambda *a, **k: None)

    model_cfg, train_cfg = load_config(args.config)
    apply_overrides(train_cfg, args.set)
    checkpoint = None
    if not args.resume and (out / CHECKPOINT).is_file():
        raise SystemExit(f"{out} already holds a run: add --resume to continue it, or choose another --out")
    if args.resume:
        if not (out / CHECKPOINT).is_file():
            raise SystemExit(f"--resume: no {out / CHECKPOINT} to resume from")
        checkpoint = torch.load(out / CHECKPOINT, map_location="cpu", weights_only=False)
        model_cfg = TransformerConfig(**checkpoint["model_config"])
        for key, value in checkpoint["train_config"].items():
            setattr(train_cfg, key, value)
        apply_overrides(train_cfg, args.set)  # e.g. a longer decay for a continued run

    # Data: malformed lines are counted, never fatal.
    train_pairs, skipped = load_pairs(args.train, args.hf_config, "train", args.src_lang, args.tgt_lang)
    dev_pairs, dev_skipped = load_pairs(args.dev, args.hf_config, args.hf_dev_split, args.src_lang, args.tgt_lang)
    if args.limit_train:
        train_pairs = train_pairs[: args.limit_train]
    log(f"data: {len(train_pairs):,} training pairs ({skipped} malformed lines skipped), "
        f"{len(dev_pairs):,} dev pairs ({dev_skipped} skipped)")
    if train_cfg.eval_limit:
        dev_pairs = dev_pairs[: train_cfg.eval_limit]

    tokenizer = build_tokenizer(args, train_pairs, out, dist_ctx, train_cfg.vocab_size)
    model_cfg.vocab_size = tokenizer.get_vocab_size()
    src_ids, tgt_ids, too_long = encode_pairs(tokenizer, train_pairs, model_cfg.max_len)
    log(f"tokenizer: {model_cfg.vocab_size} BPE tokens; {too_long} pairs longer than {model_cfg.max_len} tokens dropped")
    batcher = TokenBatcher(src_ids, tgt_ids, train_cfg.max_tokens, seed=train_cfg.seed)

    torch.manual_seed(train_cfg.seed)
    random.seed(train_cfg.seed)
    model = Transformer(model_cfg).to(device)
    history = []
    if args.init_from:
        init = Translator.load(args.init_from)
        if asdict(init.model.cfg) != asdict(model_cfg):
            raise SystemExit(f"--init-from {args.init_from}: its config.json differs from --config {args.config}")
        model.load_state_dict(init.model.state_dict())
        history = init.metrics.get("history", []) + [init.metrics.get("training", {})]
    optimizer = make_optimizer(model, train_cfg)
    state = {"step": 0, "epoch": 0, "batch_in_epoch": 0, "target_tokens": 0, "train_seconds": 0.0,
             "best_bleu": -1.0, "history": history, "commands": []}
    if checkpoint:
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        state = checkpoint["state"]
        saved_rng = checkpoint["rng"]  # one state per process of the run that saved it
        if len(saved_rng) != dist_ctx.world:
            log(f"warning: the checkpoint was written by {len(saved_rng)} process(es), this run has "
                f"{dist_ctx.world}: training goes on, but its batches and dropout differ from an unbroken run's")
        set_rng_state(saved_rng[dist_ctx.rank % len(saved_rng)], device)
        log(f"resumed at step {state['step']} (epoch {state['epoch']}, batch {state['batch_in_epoch']})")
    state["commands"].append("python -m training.train " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:])))
    log(f"model: {model.num_parameters():,} parameters; {hardware_description(device, dist_ctx.world)}")

    train_model = model
    if args.compile:
        train_model = torch.compile(model)
    if dist_ctx.world > 1:
        train_model = torch.nn.parallel.DistributedDataParallel(train_model)
    autocast = autocast_context(device, args.precision)

    log_path = out / "metrics.csv"
    if dist_ctx.main:
        if args.resume and log_path.is_file():
            truncate_log(log_path, state["step"])
        else:
            with open(log_path, "w", newline="", encoding="utf-8") as f:
                csv.writer(f).writerow(LOG_COLUMNS)

    def write_log(row):
        with open(log_path, "a", newline="", encoding="utf-8") as f:
            csv.writer(f).writerow([row.get(c, "") for c in LOG_COLUMNS])

    def evaluate_and_checkpoint():
        """Dev BLEU/chrF with batched greedy decoding (rank 0), best model exported, state checkpointed."""
        rng = dist_ctx.all_gather_object(rng_state(device))
        if not dist_ctx.main:
            return
        model.eval()
        result = score(Translator(model, tokenizer), dev_pairs, beam=1, progress=False)
        model.train()
        minutes = state["train_seconds"] / 60
        write_log({"step": state["step"], "epoch": state["epoch"], "minutes": f"{minutes:.2f}",
                   "target_tokens": state["target_tokens"], "dev_bleu": result["bleu"], "dev_chrf": result["chrf"]})
        plot_curve(log_path, out / "loss_curve.png")
        improved = result["bleu"] > state["best_bleu"]
        if improved:
            state["best_bleu"] = result["bleu"]
            export(result)
        tqdm.write(f"step {state['step']}: dev BLEU {result['bleu']:.2f} chrF {result['chrf']:.2f} "
                   f"({result['n']} pairs){' - best so far, exported' if improved else ''}")
        save_atomic({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "state": state,
                     "model_config": asdict(model_cfg), "train_config": asdict(train_cfg),
                     "rng": rng},
                    out / CHECKPOINT)

    def export(dev_result):
        metrics = {
            "parameters": model.num_parameters(),
            "config": config_dict(model_cfg, train_cfg),
            "training": {
                "minutes": round(state["train_seconds"] / 60, 1),
                "steps": state["step"],
                "epochs": round(state["epoch"] + state["batch_in_epoch"] / max(1, n_batches), 2),
                "target_tokens_seen": state["target_tokens"],
                "hardware": hardware_description(device, dist_ctx.world),
                "precision": args.precision,
                "commands": state["commands"],
                "data": {"train": str(args.train), "train_pairs": len(src_ids), "dev": str(args.dev)},
            },
            "history": state["history"],
            "scores": {"dev (during training)": {"greedy": {k: dev_result[k] for k in ("bleu", "chrf", "n")}}},
        }
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[args.export_dtype]
        tmp = out / "model.tmp"
        save_model_dir(model, tokenizer, tmp, dtype=dtype, metrics=metrics)
        if (out / "loss_curve.png").is_file():
            (tmp / "loss_curve.png").write_bytes((out / "loss_curve.png").read_bytes())
        if (out / "model").exists():
            os.replace(out / "model", out / "model.old")
        os.replace(tmp, out / "model")
        if (out / "model.old").exists():
            for f in (out / "model.old").iterdir():
                f.unlink()
            (out / "model.old").rmdir()

    model.train()
    budget = args.max_minutes * 60 if args.max_minutes else float("inf")
    start = time.time()
    seconds_at_start = state["train_seconds"]
    state.setdefault("lr_horizon_seconds", budget)  # a resumed run keeps its first run's schedule
    bar = tqdm(total=args.max_steps or None, initial=state["step"], unit="step", dynamic_ncols=True,
               disable=args.no_progress or not dist_ctx.main)
    window_loss, window_tokens, window_start = 0.0, 0, time.time()
    batches = batcher.epoch_batches(state["epoch"])
    n_batches = len(batches) // dist_ctx.world
    if n_batches == 0:
        raise SystemExit(f"{args.train}: {len(src_ids)} usable training pairs make {len(batches)} batches, "
                         f"too few for {dist_ctx.world} process(es) (pairs over {model_cfg.max_len} tokens are dropped)")
    stop = False
    while not stop:
        if state["batch_in_epoch"] >= n_batches:
            state["epoch"] += 1
            state["batch_in_epoch"] = 0
            batches = batcher.epoch_batches(state["epoch"])
            n_batches = len(batches) // dist_ctx.world  # pools cut differently each epoch
        batch = batches[state["batch_in_epoch"] * dist_ctx.world + dist_ctx.rank]
        src, tgt_in, tgt_out = (t.to(device) for t in batcher.collate(batch))
        horizon = state["lr_horizon_seconds"]
        time_progress = state["train_seconds"] / horizon if math.isfinite(horizon) else None
        lr = learning_rate(state["step"], train_cfg, time_progress)
        loss, n_tokens = train_step(train_model, optimizer, (src, tgt_in, tgt_out), lr, autocast, train_cfg)

        state["step"] += 1
        state["batch_in_epoch"] += 1
        state["target_tokens"] += int(dist_ctx.all_reduce_sum(n_tokens))
        state["train_seconds"] = seconds_at_start + (time.time() - start)
        window_loss += loss * n_tokens
        window_tokens += n_tokens
        bar.update(1)

        if state["step"] % 20 == 0 or state["step"] % train_cfg.eval_every == 0:
            elapsed = time.time() - window_start
            tokens_per_s = dist_ctx.all_reduce_sum(window_tokens) / max(elapsed, 1e-9)
            left = budget - (time.time() - start)
            postfix = {"loss": f"{window_loss / window_tokens:.3f}", "tok/s": f"{tokens_per_s:,.0f}", "lr": f"{lr:.2e}"}
            if math.isfinite(left):
                postfix["budget_left"] = f"{max(0, left) / 60:.1f}min"
            bar.set_postfix(postfix)
            if dist_ctx.main:
                write_log({"step": state["step"], "epoch": state["epoch"], "minutes": f"{state['train_seconds'] / 60:.2f}",
                           "target_tokens": state["target_tokens"], "train_loss": f"{window_loss / window_tokens:.4f}",
                           "lr": f"{lr:.3e}", "tokens_per_s": f"{tokens_per_s:.0f}"})
            window_loss, window_tokens, window_start = 0.0, 0, time.time()

        out_of_time = time.time() - start >= budget
        stop = dist_ctx.broadcast_flag(out_of_time or (args.max_steps and state["step"] >= args.max_steps))
        if stop or state["step"] % train_cfg.eval_every == 0:
            evaluate_and_checkpoint()
            dist_ctx.barrier()
    bar.close()
    if dist_ctx.main:
        log(f"done: {state['step']} steps, {state['train_seconds'] / 60:.1f} min; best dev BLEU "
            f"{state['best_bleu']:.2f}; model exported to {out / 'model'}")
    dist_ctx.close()


if __name__ == "__main__":
    main()
