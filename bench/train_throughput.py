"""Training throughput: our trainer against a naive pipeline, same model, same data, one run.

    nice -n 19 python -m bench.train_throughput --config base --threads 2

(about 3-4 minutes on 2 idle cores; `--quick` for a smoke run in well under a minute, e.g.
`python -m bench.train_throughput --config tiny --quick`).

Two pipelines train the same freshly initialised model (same seed) on the same pairs:

* naive   -- the kind of loop the project started from: pairs in file order, 8 at a time, every source and
             target padded to 350 tokens, fp32.
* trainer -- what training/train.py does: token-bucketed batches of similar-length pairs
             (training.data.TokenBatcher, the config's max_tokens), bf16 autocast (training.runtime.autocast_context).

Both run the trainer's own step (training.train.train_step: forward under the pipeline's autocast,
label-smoothed cross-entropy over non-padding targets, AdamW from training.train.make_optimizer, gradient
clipping) with its learning-rate schedule (training.train.learning_rate).
The first step of each pipeline is a warm-up and is not timed; then each runs `--steps` steps, or steps until
`--seconds` have passed. The naive model's positional table is extended to 350 positions (a buffer, no weights).

Reported: real target tokens/s (non-padding target tokens, the quantity the trainer logs), their ratio
(goal >= 50x), and FLOP/s as a share of the machine's peak, measured here with a 4096^3 bf16 matmul (and
fp32 for reference). FLOPs are counted analytically for the matrix multiplies only (`training_flops`):
forward multiply-adds of every Linear layer, attention scores and attention-weighted values (full T x T: the
kernel does not skip masked positions) and the output projection, x 2 FLOPs per multiply-add, x 3 for forward +
backward. "executed" counts the padded shapes the hardware actually multiplies, "useful" only the real tokens.
`--check-flops` compares the analytic count with torch.utils.flop_counter.FlopCounterMode on one batch: they
agree exactly (attention too when SDPA takes its math path, as it does in training with dropout > 0;
FlopCounterMode does not count the fused CPU flash-attention kernel, used when dropout is 0, e.g. `tiny`).
The last line of the output is a JSON summary.
"""

import argparse
import dataclasses
import itertools
import math
import time

import torch
import torch.nn.functional as F

from bench.common import DATA_DIR, default_path, get_tokenizer, print_json, print_table, read_pairs, set_threads
from training.configs import load_config, model_config
from training.data import TokenBatcher, encode_pairs
from training.runtime import autocast_context
from training.train import learning_rate, make_optimizer, train_step
from transformer.model import Transformer
from transformer.tokenizer import PAD_ID

GOAL_SPEEDUP = 50.0


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m bench.train_throughput",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--data", default=default_path(DATA_DIR / "train.tsv"), help="English<TAB>Italian TSV")
    p.add_argument("--config", default="base", help="tiny | cpu | wide | base, or a JSON config file")
    p.add_argument("--tokenizer", help="tokenizer.json to use instead of training one on the data")
    p.add_argument("--limit-pairs", type=int, default=50_000, help="pairs read (and the tokenizer learnt from)")
    p.add_argument("--steps", type=int, default=0, help="timed steps per pipeline (0: use --seconds)")
    p.add_argument("--seconds", type=float, default=60.0, help="timed seconds per pipeline when --steps is 0")
    p.add_argument("--max-tokens", type=int, default=0, help="trainer batch size in tokens (0: the config's)")
    p.add_argument("--naive-seq-len", type=int, default=350)
    p.add_argument("--naive-batch", type=int, default=8)
    p.add_argument(
        "--precision", choices=["bfloat16", "float32"], default="bfloat16", help="the trainer pipeline's autocast"
    )
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--matmul-size", type=int, default=4096, help="n of the n x n x n matmul measuring peak FLOP/s")
    p.add_argument("--check-flops", action="store_true", help="compare the analytic FLOPs with FlopCounterMode")
    p.add_argument("--quick", action="store_true", help="smoke run: 2 steps, 5,000 pairs, 1024^3 matmul")
    args = p.parse_args(argv)
    if args.data is None:
        p.error("--data is required (no data/en-it/train.tsv here: python -m training.prepare_data writes it)")
    if args.quick:
        args.steps = args.steps or 2
        args.limit_pairs = min(args.limit_pairs, 5_000)
        args.matmul_size = min(args.matmul_size, 1024)
    return args


# --- FLOPs -------------------------------------------------------------------------------------------------


def forward_macs(cfg, s, t, attention=True):
    """Multiply-adds of one forward pass over one pair with s source and t target positions: the Linear
    layers, plus (if `attention`) the attention scores QK^T and weighted values AV."""
    d, f, h = cfg.d_model, cfg.d_ff, cfg.vocab_size
    encoder = s * (4 * d * d + 2 * d * f)  # self-attention Q,K,V,O; FFN
    decoder = t * (4 * d * d + 2 * d * d + 2 * d * f) + s * 2 * d * d  # self Q,K,V,O; cross Q,O; FFN; cross K,V
    if attention:
        encoder += 2 * s * s * d
        decoder += 2 * t * t * d + 2 * t * s * d  # self- and cross-attention
    return cfg.n_encoder_layers * encoder + cfg.n_decoder_layers * decoder + t * d * h  # + output projection


def training_flops(cfg, src_lengths, tgt_lengths, attention=True):
    """FLOPs of forward + backward (= 3 x forward) over pairs of the given lengths."""
    return 6 * sum(forward_macs(cfg, s, t, attention) for s, t in zip(src_lengths, tgt_lengths))


def batch_flops(cfg, batch):
    """(executed, useful): FLOPs over the padded shapes, and over the real tokens only."""
    src, tgt_in, _ = batch
    (B, S), T = src.shape, tgt_in.size(1)
    executed = training_flops(cfg, [S] * B, [T] * B)
    useful = training_flops(cfg, (src != PAD_ID).sum(1).tolist(), (tgt_in != PAD_ID).sum(1).tolist())
    return executed, useful


def matmul_rate(dtype, n, reps=3):
    """FLOP/s of the best of `reps` n x n x n matrix multiplies (after one warm-up)."""
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    a @ b
    best = math.inf
    for _ in range(reps):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best


# --- the two pipelines ---------------------------------------------------------------------------------------


def bucketed_batches(batcher):
    """The trainer's batches, epoch after epoch: (src, tgt_in, tgt_out), right-padded to the batch's longest."""
    for epoch in itertools.count():
        for batch in batcher.epoch_batches(epoch):
            yield batcher.collate(batch)


def naive_batches(batcher, batch_size, seq_len):
    """Pairs in data order, `batch_size` at a time, each side padded to `seq_len` positions."""
    starts = range(0, len(batcher.src_ids) - batch_size + 1, batch_size)
    for start in itertools.cycle(starts):
        tensors = batcher.collate(range(start, start + batch_size))
        yield tuple(F.pad(t, (0, max(0, seq_len - t.size(1))), value=PAD_ID) for t in tensors)


def run_pipeline(model_cfg, train_cfg, batches, autocast, steps, seconds, warmup=1):
    """Train a fresh model on `batches`: `warmup` untimed steps, then `steps` steps (or until `seconds`)."""
    torch.manual_seed(train_cfg.seed)
    model = Transformer(model_cfg).train()
    optimizer = make_optimizer(model, train_cfg)
    for step in range(warmup):
        train_step(model, optimizer, next(batches), learning_rate(step, train_cfg, 0.0), autocast, train_cfg)
    totals = dict(steps=0, seconds=0.0, real_tokens=0, padded_tokens=0, executed_flops=0, useful_flops=0)
    while (totals["steps"] < steps) if steps else (totals["steps"] < 2 or totals["seconds"] < seconds):
        batch = next(batches)
        start = time.perf_counter()
        lr = learning_rate(warmup + totals["steps"], train_cfg, 0.0)
        loss, n_tokens = train_step(model, optimizer, batch, lr, autocast, train_cfg)
        totals["seconds"] += time.perf_counter() - start
        executed, useful = batch_flops(model_cfg, batch)
        totals["steps"] += 1
        totals["real_tokens"] += n_tokens
        totals["padded_tokens"] += batch[2].numel()
        totals["executed_flops"] += executed
        totals["useful_flops"] += useful
    totals["last_loss"] = loss
    return totals


def flop_counter_check(model_cfg, train_cfg, batch, autocast):
    """Analytic against torch.utils.flop_counter.FlopCounterMode FLOPs of one forward + backward on `batch`:
    -> (analytic Linear, counted mm/addmm, analytic attention, counted bmm). FlopCounterMode counts attention
    only when SDPA takes its math path (bmm; in training with dropout > 0): it has no formula for the fused
    CPU flash-attention kernel."""
    from torch.utils.flop_counter import FlopCounterMode

    model = Transformer(model_cfg).train()
    optimizer = make_optimizer(model, train_cfg)
    src, tgt_in, _ = batch
    with FlopCounterMode(display=False) as counter:
        train_step(model, optimizer, batch, train_cfg.lr, autocast, train_cfg)
    counts = {str(op).split(".")[-1]: n for op, n in counter.get_flop_counts().get("Global", {}).items()}
    (B, S), T = src.shape, tgt_in.size(1)
    linear = training_flops(model_cfg, [S] * B, [T] * B, attention=False)
    attention = training_flops(model_cfg, [S] * B, [T] * B) - linear
    return linear, counts.get("mm", 0) + counts.get("addmm", 0), attention, counts.get("bmm", 0)


# --- report ----------------------------------------------------------------------------------------------------


def summarise(name, description, precision, totals, peak_bf16):
    s = totals["seconds"]
    return {
        "pipeline": name,
        "batches": description,
        "precision": precision,
        "steps": totals["steps"],
        "seconds": round(s, 2),
        "real_target_tokens_per_s": round(totals["real_tokens"] / s, 2),
        "padding_share": round(1 - totals["real_tokens"] / totals["padded_tokens"], 3),
        "executed_gflops": round(totals["executed_flops"] / s / 1e9, 2),
        "executed_share_of_bf16_peak": round(totals["executed_flops"] / s / peak_bf16, 4),
        "useful_gflops": round(totals["useful_flops"] / s / 1e9, 2),
        "useful_share_of_bf16_peak": round(totals["useful_flops"] / s / peak_bf16, 4),
        "last_loss": round(totals["last_loss"], 3),
    }


def print_report(rows, speedup):
    print()
    print_table(
        [
            "pipeline",
            "batches",
            "prec",
            "steps",
            "s",
            "real tgt tok/s",
            "tgt padding",
            "exec GFLOP/s",
            "% bf16 peak",
            "useful GFLOP/s",
            "% bf16 peak",
        ],
        [
            [
                r["pipeline"],
                r["batches"],
                r["precision"],
                str(r["steps"]),
                f"{r['seconds']:.1f}",
                f"{r['real_target_tokens_per_s']:,.1f}",
                f"{100 * r['padding_share']:.0f}%",
                f"{r['executed_gflops']:.1f}",
                f"{100 * r['executed_share_of_bf16_peak']:.1f}%",
                f"{r['useful_gflops']:.1f}",
                f"{100 * r['useful_share_of_bf16_peak']:.1f}%",
            ]
            for r in rows
        ],
        text_columns=3,
    )
    verdict = "met" if speedup >= GOAL_SPEEDUP else "NOT met"
    print(
        f"\nspeed-up in real target tokens/s, trainer / naive: {speedup:.1f}x (goal >= {GOAL_SPEEDUP:.0f}x: {verdict})"
    )


def main(argv=None):
    started = time.perf_counter()
    args = parse_args(argv)
    threads = set_threads(args.threads)
    settings, train_cfg = load_config(args.config)
    max_tokens = args.max_tokens or train_cfg.max_tokens

    pairs = read_pairs(args.data, args.limit_pairs)
    tokenizer, tokenizer_note = get_tokenizer(args.tokenizer, pairs, train_cfg.bpe_vocab_size)
    model_cfg = model_config(settings, tokenizer.get_vocab_size())
    src_ids, tgt_ids, kept = encode_pairs(tokenizer, pairs, model_cfg.max_len)
    dropped = len(pairs) - len(kept)
    batcher = TokenBatcher(src_ids, tgt_ids, max_tokens, seed=train_cfg.seed)
    n_params = Transformer(model_cfg).num_parameters()
    print(f"config {args.config}: {n_params:,} parameters, vocabulary {model_cfg.vocab_size}, threads: {threads}")
    print(f"data: {len(src_ids):,} pairs of {args.data} ({dropped} longer than max_len dropped); {tokenizer_note}")

    peak_bf16 = matmul_rate(torch.bfloat16, args.matmul_size)
    peak_fp32 = matmul_rate(torch.float32, args.matmul_size)
    print(
        f"peak matmul ({args.matmul_size}^3, best of 3): bf16 {peak_bf16 / 1e9:.0f} GFLOP/s, "
        f"fp32 {peak_fp32 / 1e9:.0f} GFLOP/s"
    )

    trainer_autocast = autocast_context(torch.device("cpu"), args.precision)
    # autocast_context falls back to float32 on CPUs without AVX512-BF16/AMX.
    trainer_precision = args.precision if getattr(trainer_autocast, "_enabled", True) else "float32"
    if args.check_flops:
        linear, mm, attention, bmm = flop_counter_check(
            model_cfg, train_cfg, next(bucketed_batches(batcher)), trainer_autocast
        )
        print(
            f"FLOP check on one trainer batch, analytic vs FlopCounterMode: Linear layers {linear / 1e9:.3f} vs "
            f"{mm / 1e9:.3f} GFLOP; attention {attention / 1e9:.3f} vs {bmm / 1e9:.3f} GFLOP (0 when SDPA runs "
            f"the fused CPU kernel, which FlopCounterMode does not count)"
        )

    naive_cfg = dataclasses.replace(model_cfg, max_len=max(model_cfg.max_len, args.naive_seq_len))
    pipelines = [
        (
            "naive",
            f"{args.naive_batch} pairs padded to {args.naive_seq_len}",
            "float32",
            naive_cfg,
            naive_batches(batcher, args.naive_batch, args.naive_seq_len),
            autocast_context(torch.device("cpu"), "float32"),
        ),
        (
            "trainer",
            f"token-bucketed, {max_tokens} tokens",
            trainer_precision,
            model_cfg,
            bucketed_batches(batcher),
            trainer_autocast,
        ),
    ]
    rows = []
    for name, description, precision, cfg, batches, autocast in pipelines:
        print(f"running {name} ({description}, {precision}) ...", flush=True)
        totals = run_pipeline(cfg, train_cfg, batches, autocast, args.steps, args.seconds)
        rows.append(summarise(name, description, precision, totals, peak_bf16))
    speedup = rows[1]["real_target_tokens_per_s"] / rows[0]["real_target_tokens_per_s"]
    print_report(rows, speedup)
    print(f"benchmark wall time: {time.perf_counter() - started:.0f} s")
    print_json(
        {
            "benchmark": "train_throughput",
            "config": args.config,
            "parameters": n_params,
            "vocab_size": model_cfg.vocab_size,
            "threads": threads,
            "peak_bf16_gflops": round(peak_bf16 / 1e9, 1),
            "peak_fp32_gflops": round(peak_fp32 / 1e9, 1),
            "pipelines": rows,
            "speedup": round(speedup, 2),
            "goal_speedup": GOAL_SPEEDUP,
            "goal_met": speedup >= GOAL_SPEEDUP,
            "wall_seconds": round(time.perf_counter() - started, 1),
        }
    )


if __name__ == "__main__":
    main()
