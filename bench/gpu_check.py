"""The GPU path measured, in one prepared run on a lent GPU machine (one call of at most 8 minutes): the app started on
CUDA, its translations of `--sentences` dev sentences checked against the CPU's (equal, or different only where
float16 or bfloat16 flips a near tie: the CPU's logits of the two tokens at the first difference within `--tie`),
greedy and beam p50 latency, sentences per second at 1 and 16 light clients, and the trainer's target tokens per
second on the card with its share of the card's measured bf16 matrix-multiply peak. Writes `--out` (JSON), which
docs/benchmarks.md quotes once it has run on a GPU.

    python -m bench.gpu_check --out bench/gpu_check.json                # on a GPU machine
    python -m bench.gpu_check --dry-run --model DIR --data TSV --out X  # the same steps on the CPU, a few of each

`--dry-run` runs every step on the CPU with a handful of sentences and training steps, to test the script without a
GPU (tests/test_hardening.py runs it); its JSON says `"dry_run": true` and no number of it is a GPU's.
"""

import argparse
import csv
import json
import math
import tempfile
import time
from pathlib import Path

import torch

from bench.app_throughput import GREEDY, call, running_app, serve
from bench.common import DATA_DIR, ROOT, default_path, percentile, read_pairs
from bench.train_throughput import training_flops
from modeldir.directory import open_model
from training.configs import CONFIGS, model_config
from training.train import main as train_main
from transformer.tokenizer import BOS_ID

# A few of each on the CPU (the trainer logs its rate every 20 steps), and the real run's counts on a GPU.
DRY_RUN = dict(sentences=6, latency_calls=3, train_steps=20, config="tiny", peak_matrix=256)
ON_GPU = dict(sentences=200, latency_calls=30, train_steps=300, config="cpu", peak_matrix=4096)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=default_path(ROOT / "assets" / "model"), help="the model directory served")
    p.add_argument(
        "--data",
        default=default_path(ROOT / "data" / "en-it" / "dev.tsv", DATA_DIR / "dev.tsv"),
        help="English<TAB>Italian TSV: the sentences translated, and the trainer's data",
    )
    p.add_argument("--tie", type=float, default=0.05, help="logit gap below which a different token is a near tie")
    p.add_argument("--out", required=True, help="the JSON written")
    p.add_argument("--dry-run", action="store_true", help="every step on the CPU, a few sentences and steps")
    return p.parse_args(argv)


def first_difference(a, b):
    """The index of the first token where the token lists `a` and `b` differ (len of the shorter if one is the
    other's beginning)."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def near_tie(translator, text, ours, theirs, tie):
    """Whether the CPU's logits, after the common beginning of the two outputs `ours` (the CPU's token ids) and
    `theirs`, put their next tokens within `tie` of each other: a flip float16 or bfloat16 rounding can cause."""
    i = first_difference(ours, theirs)
    if i >= len(ours) or i >= len(theirs):
        return False
    (source,), _ = translator.encode_source([text])
    with torch.inference_mode():
        memory, mask = translator.model.encode(torch.tensor([source]))
        logits = translator.model.decode(torch.tensor([[BOS_ID, *ours[:i]]]), memory, mask)[0, -1].float()
    return abs(logits[ours[i]] - logits[theirs[i]]).item() <= tie


def agreement(url, model, sentences, tie):
    """How the served translations compare with the CPU's float32 ones: equal, near-tie flips, other differences."""
    import httpx

    cpu = open_model(model, dtype="float32", device="cpu").translator
    counts = {"sentences": len(sentences), "equal": 0, "near_tie": 0, "different": 0}
    with httpx.Client() as client:
        for text in sentences:
            served = call(client, url, "translate", [text, *GREEDY])[0]
            ours = cpu.translate(text)
            if served == ours:
                counts["equal"] += 1
                continue
            theirs = cpu.tokenizer.encode(served, add_special_tokens=False).ids  # as the CPU's tokenizer reads it
            counts["near_tie" if near_tie(cpu, text, cpu.translate_ids([text])[0], theirs, tie) else "different"] += 1
    return counts


def latency(url, sentences, decoding, beam, calls):
    """p50 milliseconds of one /translate call at a time."""
    import httpx

    seconds = []
    with httpx.Client() as client:
        for text in (sentences * calls)[:calls]:
            start = time.perf_counter()
            call(client, url, "translate", [text, decoding, beam, 1.0, 0, 0])
            seconds.append(time.perf_counter() - start)
    return round(1000 * percentile(seconds, 50), 1)


def matmul_peak(device, n, reps=5):
    """FLOP/s of the best of `reps` n x n bf16 matrix multiplies on `device`: the peak the trainer's share is of."""
    a, b = (torch.randn(n, n, dtype=torch.bfloat16, device=device) for _ in range(2))
    a @ b
    best = math.inf
    for _ in range(reps):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        a @ b
        if device.type == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best


def trainer(data, config, steps, device, pairs, peak_matrix):
    """The trainer's target tokens per second over its last logged window (metrics.csv), and that rate's share of
    the card's bf16 peak (forward and backward FLOPs of the data's mean sentence lengths, `training_flops`)."""
    with tempfile.TemporaryDirectory() as out:
        train_main(
            [
                "--config",
                config,
                "--train",
                data,
                "--dev",
                data,
                "--out",
                out,
                "--max-steps",
                str(steps),
                "--no-progress",
                "--set",
                f"eval_limit={len(pairs)}",  # the run's own dev score is not what is measured: a few sentences of it
            ]
        )
        rows = list(csv.DictReader(open(Path(out) / "metrics.csv", encoding="utf-8")))
    tokens_per_s = float(next(row["tokens_per_s"] for row in reversed(rows) if row.get("tokens_per_s")))
    model, train = CONFIGS[config]
    cfg = model_config(model, train["bpe_vocab_size"])
    source = sum(len(en.split()) for en, _ in pairs) / len(pairs) * 1.5  # about 1.5 tokens a word
    target = sum(len(it.split()) for _, it in pairs) / len(pairs) * 1.5
    flops_per_token = training_flops(cfg, [round(source)], [round(target)]) / target
    return {
        "config": config,
        "steps": steps,
        "target_tokens_per_s": round(tokens_per_s),
        "share_of_bf16_peak": round(tokens_per_s * flops_per_token / matmul_peak(device, peak_matrix), 4),
    }


def main(argv=None):
    args = parse_args(argv)
    sizes = DRY_RUN if args.dry_run else ON_GPU
    device = torch.device("cpu" if args.dry_run else "cuda")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("gpu_check: no CUDA GPU here (--dry-run runs the steps on the CPU)")
    pairs = read_pairs(args.data, sizes["sentences"])
    sentences = [english for english, _ in pairs]
    result = {
        "dry_run": args.dry_run,
        "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
        "model": str(args.model),
    }
    # DECODE_PROCESS=0: the dry run serves as the GPU does (batches decoded in the server's process), not as a CPU
    with running_app(ROOT, args.model, env={"MODEL_DEVICE": device.type, "DECODE_PROCESS": "0"}) as (url, pid):
        result["agreement"] = agreement(url, args.model, sentences, args.tie)
        result["greedy_p50_ms"] = latency(url, sentences, "greedy", 4, sizes["latency_calls"])
        result["beam4_p50_ms"] = latency(url, sentences, "beam", 4, sizes["latency_calls"])
        result["throughput"] = [serve(url, pid, sentences, clients)[0] for clients in (1, 16)]
    result["trainer"] = trainer(args.data, sizes["config"], sizes["train_steps"], device, pairs, sizes["peak_matrix"])
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
