"""Which model shapes fit the shipped model's budget (at most 60 MB on disk, cached greedy float16 p50 at most 20 ms
a sentence on 2 cores), measured before any hours of training are spent on one.

    python -m bench.model_shapes --threads 2
    python -m bench.model_shapes --threads 2 --shape d_model=384,n_heads=6,d_ff=1536,n_encoder_layers=6

Every shape is an untrained model. A decoder step costs what the shape says, whatever its weights hold, but an
untrained model ends its outputs at other lengths than a trained one (often at the length cap). So each shape is
made to do a trained model's work: for every sentence it is fed, token by token through its key/value cache and
the decoding rules, the very tokens the reference model (`--model`, the shipped one by default) writes greedily,
then EOS; `decoding.decode_token_by_token` runs the loop, with a choice that ignores the logits. The reference
model is timed twice, greedy and fed its own output, to show that the two cost the same. All shapes use the
reference's tokenizer, so a larger `vocab_size` widens the embedding and the output layer but not the sentences
(a 16k vocabulary writes 4% fewer Italian tokens than the shipped one on the Tatoeba test, 13% on news,
`bench/vocab_split.py`: its time here is an upper bound).

Sentences as in `bench.decode_latency`: the first `--sentences` distinct English ones of 6-15 words in `--data`.
Size: the float16 `model.safetensors` that `save_model_dir` writes (tied weights once). A `--shape` is the
reference's config with some `TransformerConfig` fields changed (`vocab_size` too); without one, a grid of
wider and deeper models. A few seconds a shape on 2 cores. The last line of the output is a JSON summary.
"""

import argparse
import tempfile
import time
from dataclasses import asdict, fields
from pathlib import Path

import torch

from bench.common import (
    add_sentence_timing_arguments,
    parse_timing_args,
    percentile,
    print_json,
    print_table,
    refuse_missing,
    set_threads,
)
from bench.decode_latency import GOAL_GREEDY_P50_MS, select_sentences
from modeldir.directory import save_model_dir
from modeldir.loading import DTYPES, WEIGHTS, checked_config
from transformer import Translator
from transformer.decoding import decode_token_by_token
from transformer.model import Transformer, TransformerConfig
from transformer.tokenizer import EOS_ID, pad_sequences

GOAL_SIZE_MB = 60.0

# Without --shape: the shipped shape's neighbours, wider (d_model 384 and 512) and deeper. The
# encoder runs once a sentence and the decoder once a token, so the grid moves layers from the decoder to the encoder
# (a deep encoder and a shallow decoder: Kasai et al., 2021, "Deep Encoder, Shallow Decoder").
W384, W512 = dict(d_model=384, n_heads=6, d_ff=1536), dict(d_model=512, n_heads=8, d_ff=2048)
GRID = [
    dict(n_encoder_layers=8),
    dict(n_encoder_layers=8, n_decoder_layers=2),
    dict(vocab_size=16256),
    W384,
    dict(W384, n_encoder_layers=6, n_decoder_layers=2),
    dict(W384, n_encoder_layers=8, n_decoder_layers=2),
    dict(W384, n_encoder_layers=8, n_decoder_layers=2, vocab_size=16256),
    dict(W384, n_encoder_layers=10, n_decoder_layers=1),
    dict(W512, n_encoder_layers=6, n_decoder_layers=2),
    dict(W512, n_encoder_layers=6, n_decoder_layers=1),
    dict(W512, n_encoder_layers=6, n_decoder_layers=6, vocab_size=16256),
]


def parse_shape(text):
    """'d_model=384,n_heads=6' -> {"d_model": 384, "n_heads": 6}: TransformerConfig fields with whole numbers."""
    names = {f.name for f in fields(TransformerConfig) if f.type is int or f.type == "int"}
    shape = {}
    for item in text.split(","):
        name, _, value = item.partition("=")
        name = name.strip()
        if name not in names:
            raise argparse.ArgumentTypeError(
                f"{name!r} is not a whole-number field of TransformerConfig ({', '.join(sorted(names))})"
            )
        try:
            shape[name] = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}={value!r}: not a whole number") from None
    return shape


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m bench.model_shapes", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--model", default="assets/model", help="the trained reference model (its tokenizer and outputs)")
    p.add_argument(
        "--shape",
        type=parse_shape,
        action="append",
        help="config fields to change, e.g. "
        "d_model=384,n_heads=6,d_ff=1536 (repeatable; default: a grid of wider and deeper models)",
    )
    add_sentence_timing_arguments(p, per="shape")
    args = parse_timing_args(p, argv)
    refuse_missing(p, [args.model, args.data])
    return args


def shape_configs(reference, shapes):
    """[(the shape as written, its TransformerConfig)]: the reference config with each shape's fields. A shape that
    makes no valid model (d_model not divisible by n_heads, say) is refused before anything is timed."""
    configs = []
    for shape in shapes:
        written = ",".join(f"{k}={v}" for k, v in shape.items())
        try:
            configs.append((written, checked_config({**asdict(reference), **shape})))
        except ValueError as e:
            raise SystemExit(f"python -m bench.model_shapes: --shape {written}: {e}") from None
    return configs


def feed(tokens, device):
    """A choice for `decode_token_by_token` (one sentence) that writes `tokens`, then EOS, whatever the logits say."""
    queue = iter([*tokens, EOS_ID])
    return lambda logits: torch.tensor([next(queue)], device=device)


@torch.inference_mode()
def fed_translation(translator, sentence, tokens):
    """What `translator.translate_ids([sentence])` does (tokenise, encode, cached greedy loop with the decoding
    rules), with `tokens` written instead of the argmax: the token ids written."""
    sources, _ = translator.encode_source([sentence])
    src = pad_sequences(sources)  # (1, S)
    return decode_token_by_token(translator.model, src, feed(tokens, src.device), True, translator.no_repeat_ngram)[0]


def time_calls(call, sentences, warmup):
    """Milliseconds of `call(i, sentence)` for each sentence, after `warmup` untimed calls."""
    for i, sentence in enumerate(sentences[:warmup]):
        call(i, sentence)
    ms = []
    for i, sentence in enumerate(sentences):
        start = time.perf_counter()
        call(i, sentence)
        ms.append((time.perf_counter() - start) * 1000)
    return ms


def disk_mb(translator):
    """Megabytes of the float16 weights file `save_model_dir` writes for this model."""
    with tempfile.TemporaryDirectory() as tmp:
        save_model_dir(translator.model, translator.tokenizer, tmp)
        return (Path(tmp) / WEIGHTS).stat().st_size / 1e6


def row(name, translator, ms, size):
    """One line of the report: the model's shape, parameters, `size` (disk_mb) and the percentiles of `ms`."""
    cfg = translator.model.cfg
    shape = {
        k: getattr(cfg, k) for k in ("d_model", "n_heads", "n_encoder_layers", "n_decoder_layers", "d_ff", "vocab_size")
    }
    p50 = percentile(ms, 50)
    return {
        "name": name,
        **shape,
        "parameters": translator.model.num_parameters(),
        "size_mb": round(size, 1),
        "p50_ms": round(p50, 2),
        "p95_ms": round(percentile(ms, 95), 2),
        "fits": size <= GOAL_SIZE_MB and p50 <= GOAL_GREEDY_P50_MS,
    }


def main(argv=None):
    started = time.perf_counter()
    args = parse_args(argv)
    threads = set_threads(args.threads)
    reference = Translator.load(args.model, dtype=args.dtype)
    shapes = shape_configs(reference.model.cfg, args.shape or GRID)
    sentences = select_sentences(args.data, args.sentences, 6, 15)
    outputs = reference.translate_ids(sentences)  # what the trained model writes, greedy: every shape writes it
    print(
        f"reference {args.model}; {len(sentences)} sentences of 6-15 words from {args.data}, "
        f"{sum(map(len, outputs)) / len(outputs):.1f} output tokens on average; {args.dtype}, {threads} threads"
    )

    greedy = time_calls(lambda i, s: reference.translate_ids([s]), sentences, args.warmup)
    fed = time_calls(lambda i, s: fed_translation(reference, s, outputs[i]), sentences, args.warmup)
    reference_mb = disk_mb(reference)
    rows = [
        row("reference (greedy)", reference, greedy, reference_mb),
        row("reference (fed)", reference, fed, reference_mb),
    ]
    for shape, cfg in shapes:
        print(f"timing {shape} ...", flush=True)
        torch.manual_seed(0)
        candidate = Translator(Transformer(cfg).to(DTYPES[args.dtype]), reference.tokenizer)
        ms = time_calls(lambda i, s: fed_translation(candidate, s, outputs[i]), sentences, args.warmup)
        rows.append(row("untrained", candidate, ms, disk_mb(candidate)))

    print()
    print_table(
        ["model", "d_model", "layers", "d_ff", "vocab", "params", "MB", "p50 ms", "p95 ms", "fits"],
        [
            [
                r["name"],
                str(r["d_model"]),
                f"{r['n_encoder_layers']}+{r['n_decoder_layers']}",
                str(r["d_ff"]),
                str(r["vocab_size"]),
                f"{r['parameters'] / 1e6:.1f}M",
                f"{r['size_mb']:.1f}",
                f"{r['p50_ms']:.1f}",
                f"{r['p95_ms']:.1f}",
                "yes" if r["fits"] else "no",
            ]
            for r in rows
        ],
    )
    print(
        f"\nfits: <= {GOAL_SIZE_MB:.0f} MB and cached greedy p50 <= {GOAL_GREEDY_P50_MS:.0f} ms"
        f"{'' if threads == 2 else f' (measured on {threads} threads, the goal is for 2)'}"
    )
    print(f"benchmark wall time: {time.perf_counter() - started:.0f} s")
    print_json(
        {
            "benchmark": "model_shapes",
            "reference": args.model,
            "reference_config": asdict(reference.model.cfg),
            "dtype": args.dtype,
            "threads": threads,
            "sentences": len(sentences),
            "goal_size_mb": GOAL_SIZE_MB,
            "goal_greedy_p50_ms": GOAL_GREEDY_P50_MS,
            "shapes": rows,
            "wall_seconds": round(time.perf_counter() - started, 1),
        }
    )


if __name__ == "__main__":
    main()
