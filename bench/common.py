"""Helpers shared by the benchmark scripts: paths, thread setup, the tokenizer, percentiles and output."""

import argparse
import json
import os
import platform
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch

from modeldir.device import fast_cpu_dtype
from modeldir.loading import DTYPES
from training.data import read_tsv
from transformer.tokenizer import load_tokenizer, train_tokenizer

ROOT = Path(__file__).resolve().parent.parent  # the repository
DATA_DIR = ROOT / "data" / "en-it"  # what `python -m training.prepare_data` writes
RESULTS = ROOT / "bench" / "results"  # each NAME.json: a run saved with --save NAME, the source of the docs' numbers


def default_path(*candidates):
    """The first candidate that exists (as a string), else None."""
    for path in candidates:
        if Path(path).exists():
            return str(path)
    return None


def refuse_missing(parser, paths, hint=""):
    """`parser.error` (one line, exit 2) naming every path of `paths` that does not exist, `hint` after them."""
    missing = [str(path) for path in paths if not Path(path).exists()]
    if missing:
        parser.error(f"not found: {', '.join(missing)}{hint}")


def add_sentence_timing_arguments(parser, per):
    """The options of a bench that times translations one sentence at a time: --data, --sentences and --warmup (per
    `per`: a mode, a shape), --threads, --dtype."""
    parser.add_argument("--data", default=default_path(DATA_DIR / "test-tatoeba.tsv"), help="TSV with the sentences")
    parser.add_argument("--sentences", type=int, default=100, help=f"how many sentences are timed per {per}")
    parser.add_argument("--warmup", type=int, default=5, help=f"untimed sentences per {per}")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument(
        "--dtype",
        choices=DTYPES,
        default=fast_cpu_dtype(),
        help="precision the model runs in (default as in the app: float16 where the CPU has fast kernels)",
    )


def parse_timing_args(parser, argv):
    """`parser.parse_args(argv)`, refused with one line when --data has no default here and none was given."""
    args = parser.parse_args(argv)
    if args.data is None:
        parser.error(
            "--data is required (no data/en-it/test-tatoeba.tsv here: python -m training.prepare_data writes it)"
        )
    return args


def set_threads(threads):
    """torch.set_num_threads(threads) when threads > 0; returns the number of threads in use."""
    if threads:
        torch.set_num_threads(threads)
    return torch.get_num_threads()


def read_pairs(tsv, limit=0):
    """English<TAB>Italian pairs of a TSV (malformed lines skipped), the first `limit` if limit > 0."""
    pairs, _ = read_tsv(tsv)
    if not pairs:
        raise SystemExit(f"{tsv}: no English<TAB>Italian pairs")
    return pairs[:limit] if limit else pairs


def get_tokenizer(path, pairs, vocab_size):
    """The tokenizer at `path` if given, else a BPE vocabulary learnt from `pairs` (both sides).
    Returns (tokenizer, a line saying where it came from)."""
    if path:
        tokenizer = load_tokenizer(path)
        return tokenizer, f"tokenizer {path} ({tokenizer.get_vocab_size()} tokens)"
    start = time.perf_counter()
    tokenizer = train_tokenizer((s for pair in pairs for s in pair), vocab_size)
    seconds = time.perf_counter() - start
    return tokenizer, (
        f"tokenizer trained on {len(pairs):,} pairs in {seconds:.1f}s ({tokenizer.get_vocab_size()} tokens)"
    )


def percentile(values, q):
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def print_table(headers, rows, text_columns=1):
    """The first `text_columns` columns left-aligned, the rest (numbers) right-aligned; cells are strings."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(c.ljust(w) if i < text_columns else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    print(line(headers))
    print(line(["-" * w for w in widths]))
    for row in rows:
        print(line(row))


def result_name(name):
    """`--save`'s NAME, checked when the arguments are read: a run takes minutes, and a path ("/tmp/x.json") would
    only fail once it is over."""
    if not name or name != Path(name).name or name.endswith(".json") or name.startswith("."):
        raise argparse.ArgumentTypeError(f"a name for bench/results/NAME.json, not a path or a file name: {name!r}")
    return name


def add_save_argument(parser):
    parser.add_argument(
        "--save",
        metavar="NAME",
        type=result_name,
        help="also write the result to bench/results/NAME.json, where the "
        "docs' numbers are read from (tests/test_docs.py)",
    )


def machine():
    """Where and when a run was made: enough to tell two runs' conditions apart (a loaded machine shows in its load
    average)."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit.stdout.strip(),
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "load_average": [round(load, 2) for load in os.getloadavg()],
        "torch": torch.__version__,
    }


def print_json(result, save_as=None):
    """The machine-readable summary: always the last line of the output; with `save_as`, also
    bench/results/SAVE_AS.json, with the machine it ran on."""
    if save_as:
        RESULTS.mkdir(exist_ok=True)
        path = RESULTS / f"{save_as}.json"
        path.write_text(json.dumps({"machine": machine(), **result}, indent=1) + "\n", encoding="utf-8")
        print(f"saved to {path.relative_to(ROOT)}")
    print(json.dumps(result, sort_keys=False), flush=True)
