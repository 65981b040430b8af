"""Translation latency per sentence, as an app user sees it: one sentence at a time (batch 1), greedy and beam
search, with and without the decoder's key/value cache, in one run.

    python -m bench.decode_latency --threads 2 [--dtype float32]

(about a minute on 2 idle cores with the cpu-config model; e.g. `--sentences 10` for a smoke run).

Sentences: the first `--sentences` distinct English sentences of 6-15 words in `--data` (default
data/en-it/test-tatoeba.tsv). Model: `--model DIR`, else assets/model, else runs/cpu/model; if none
exists, a randomly initialised model of `--config` (default cpu) with a tokenizer learnt quickly from the
training data (or `--tokenizer`). A random model's outputs run to other lengths than a trained model's (often to
the length cap), so its latencies are only indicative; the output says so. `bench.model_shapes` times untrained
models of other shapes at a trained model's output lengths.

The model runs in `--dtype`, by default as in the app: float16 where the CPU has vectorised float16 kernels. A
decoder step at batch 1 is a chain of matrix-vector products that wait on reading the weights from memory, and
float16 halves the bytes read.
Each call is `Translator.translate_ids([sentence], beam, use_cache)`: tokenisation, encoder, decoding loop: the
lesson's translator, or with `--rules` the app's (`modeldir.directory.open_model`: the text read as the app reads it,
and its decoding rules, which follow numbers, names and the words the model would copy or make up, looking ahead at
a copy and at a word's first token).
Every mode first translates `--warmup` sentences untimed. Reported per mode: p50 / p95 / mean milliseconds, the
mean number of generated tokens, and for the uncached modes how many outputs equal the cached mode's (they
should all, up to floating-point ties). Goal, the shipped model's budget whatever its shape: cached greedy float16
p50 <= 20 ms on 2 cores (`bench.model_shapes` times untrained shapes against the same goal).
The last line of the output is a JSON summary.
"""

import argparse
import time

import torch

from bench.common import (
    DATA_DIR,
    ROOT,
    add_save_argument,
    add_sentence_timing_arguments,
    default_path,
    get_tokenizer,
    parse_timing_args,
    percentile,
    print_json,
    print_table,
    read_pairs,
    set_threads,
)
from modeldir.directory import open_model
from modeldir.loading import DTYPES, WEIGHTS
from training.configs import load_config, model_config
from transformer import Translator
from transformer.model import Transformer

GOAL_GREEDY_P50_MS = 20.0  # the shipped model's budget, with at most 60 MB on disk (bench.model_shapes)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m bench.decode_latency", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_sentence_timing_arguments(p, per="mode")
    p.add_argument("--min-words", type=int, default=6)
    p.add_argument("--max-words", type=int, default=15)
    p.add_argument("--model", help="model directory (default: assets/model, else runs/cpu/model)")
    p.add_argument("--config", default="cpu", help="config of the random model used when there is no model")
    p.add_argument("--tokenizer", help="tokenizer.json for the random model (default: learnt from --train-data)")
    p.add_argument(
        "--train-data",
        default=default_path(DATA_DIR / "train.tsv"),
        help="TSV the random model's tokenizer is learnt from (default: train.tsv, else --data)",
    )
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--rules", action="store_true", help="time the app's translator, with its reading and rules")
    add_save_argument(p)
    return parse_timing_args(p, argv)


def select_sentences(tsv, n, min_words, max_words):
    """The first n distinct English sentences of min_words..max_words words."""
    chosen = []
    for english, _ in read_pairs(tsv):
        if min_words <= len(english.split()) <= max_words and english not in chosen:
            chosen.append(english)
            if len(chosen) == n:
                break
    if not chosen:
        raise SystemExit(f"{tsv}: no English sentence of {min_words}-{max_words} words")
    return chosen


def find_model_dir(requested):
    if requested:
        return requested
    for candidate in (ROOT / "assets" / "model", ROOT / "runs" / "cpu" / "model"):
        if (candidate / WEIGHTS).is_file():
            return str(candidate)
    return None


def random_translator(args):
    """A randomly initialised model of args.config, and a tokenizer loaded or learnt on 50,000 pairs."""
    settings, train_cfg = load_config(args.config)
    pairs = [] if args.tokenizer else read_pairs(args.train_data or args.data, limit=50_000)
    tokenizer, note = get_tokenizer(args.tokenizer, pairs, train_cfg.bpe_vocab_size)
    model_cfg = model_config(settings, tokenizer.get_vocab_size())
    torch.manual_seed(0)
    return Translator(Transformer(model_cfg).to(DTYPES[args.dtype]), tokenizer), note


def load_translator(args):
    """(translator, description, trained?)"""
    model_dir = find_model_dir(args.model)
    if model_dir and args.rules:
        return open_model(model_dir, dtype=args.dtype).translator, f"model {model_dir}, the app's rules", True
    if model_dir:
        return Translator.load(model_dir, dtype=args.dtype), f"model {model_dir}", True
    if args.rules:
        raise SystemExit("--rules needs a trained model directory (--model, assets/model or runs/cpu/model)")
    translator, note = random_translator(args)
    return (
        translator,
        (
            f"RANDOM-INIT model of config {args.config} (no --model, assets/model or runs/cpu/model); "
            f"{note}. Output lengths differ from a trained model's: latencies are indicative only"
        ),
        False,
    )


def time_mode(translator, sentences, beam, use_cache):
    """Per sentence: (milliseconds, generated token ids)."""
    results = []
    for sentence in sentences:
        start = time.perf_counter()
        ids = translator.translate_ids([sentence], beam=beam, use_cache=use_cache)[0]
        results.append(((time.perf_counter() - start) * 1000, ids))
    return results


def summarise(name, beam, use_cache, results, reference=None):
    ms = [m for m, _ in results]
    row = {
        "mode": name,
        "beam": beam,
        "cached": use_cache,
        "p50_ms": round(percentile(ms, 50), 2),
        "p95_ms": round(percentile(ms, 95), 2),
        "mean_ms": round(sum(ms) / len(ms), 2),
        "mean_output_tokens": round(sum(len(ids) for _, ids in results) / len(results), 2),
    }
    if reference is not None:
        row["same_output_as_cached"] = sum(a == b for (_, a), (_, b) in zip(results, reference))
    return row


def print_report(rows, n):
    print()
    print_table(
        ["mode", "p50 ms", "p95 ms", "mean ms", "mean out tokens", "same as cached"],
        [
            [
                r["mode"],
                f"{r['p50_ms']:.1f}",
                f"{r['p95_ms']:.1f}",
                f"{r['mean_ms']:.1f}",
                f"{r['mean_output_tokens']:.1f}",
                f"{r['same_output_as_cached']}/{n}" if "same_output_as_cached" in r else "",
            ]
            for r in rows
        ],
    )


def main(argv=None):
    started = time.perf_counter()
    args = parse_args(argv)
    threads = set_threads(args.threads)
    translator, model_note, trained = load_translator(args)
    cfg = translator.model.cfg
    sentences = select_sentences(args.data, args.sentences + args.warmup, args.min_words, args.max_words)
    warmup, sentences = sentences[: args.warmup], sentences[args.warmup :]
    print(model_note)
    print(
        f"model: d_model {cfg.d_model}, {cfg.n_encoder_layers}+{cfg.n_decoder_layers} layers, vocabulary "
        f"{cfg.vocab_size}, {translator.model.num_parameters():,} parameters, run in {args.dtype}; threads: {threads}"
    )
    print(
        f"{len(sentences)} sentences of {args.min_words}-{args.max_words} words from {args.data}, batch 1, "
        f"{len(warmup)} warm-up sentences per mode"
    )

    rows = []
    for beam, label in ((1, "greedy"), (args.beam, f"beam {args.beam}")):
        cached = None
        for use_cache in (True, False):
            name = f"{label}, {'cached' if use_cache else 'uncached'}"
            print(f"timing {name} ...", flush=True)
            time_mode(translator, warmup, beam, use_cache)
            results = time_mode(translator, sentences, beam, use_cache)
            rows.append(summarise(name, beam, use_cache, results, reference=cached))
            if use_cache:
                cached = results
    print_report(rows, len(sentences))

    greedy_p50 = rows[0]["p50_ms"]
    met = greedy_p50 <= GOAL_GREEDY_P50_MS
    caveats = [
        c
        for c, applies in (
            ("random-init model", not trained),
            (f"{args.dtype}, not float16", args.dtype != "float16"),
            (f"{threads} threads, not 2", threads != 2),
        )
        if applies
    ]
    print(
        f"\ncached greedy p50 {greedy_p50:.1f} ms (goal <= {GOAL_GREEDY_P50_MS:.0f} ms in float16 on 2 cores: "
        f"{'met' if met else 'NOT met'}{''.join('; ' + c for c in caveats)})"
    )
    print(f"benchmark wall time: {time.perf_counter() - started:.0f} s")
    print_json(
        {
            "benchmark": "decode_latency",
            "model": model_note if trained else "random-init",
            "trained_model": trained,
            "d_model": cfg.d_model,
            "layers": [cfg.n_encoder_layers, cfg.n_decoder_layers],
            "parameters": translator.model.num_parameters(),
            "dtype": args.dtype,
            "threads": threads,
            "sentences": len(sentences),
            "modes": rows,
            "goal_greedy_p50_ms": GOAL_GREEDY_P50_MS,
            "goal_met": met,
            "caveats": caveats,
            "wall_seconds": round(time.perf_counter() - started, 1),
        },
        save_as=args.save,
    )


if __name__ == "__main__":
    main()
