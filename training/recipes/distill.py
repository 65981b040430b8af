"""Sequence-level knowledge distillation (Kim & Rush 2016): a model's beam-search translations of a TSV file's
English, written as a new TSV file of English<TAB>translation pairs to train on beside (or instead of) the
human references, so that greedy decoding learns what beam search finds.

    python -m training.recipes.distill --model assets/model --data data/en-it/train.tsv \\
        --out runs/kd/train.tsv

Translating a few hundred thousand sentences takes hours on a CPU, so the work is written a chunk at a time and a
second run with the same `--out` goes on where the first stopped (`--max-minutes` stops one cleanly). A sentence
whose translation comes out empty keeps its reference, so the output has one line for every pair of the input.
"""

import argparse
import os
import sys
import time
from pathlib import Path

import torch
from tqdm import tqdm

from modeldir.directory import open_model

from ..cli import checked_out_file, non_negative_float, positive_int, run_cli
from ..evaluate import pairs_to_score


def lines_done(out):
    """How many complete lines `out` holds; a last line cut short (the run killed while writing it) is removed."""
    if not out.exists():
        return 0
    data = out.read_bytes()
    complete = data.rfind(b"\n") + 1
    if complete < len(data):
        with open(out, "r+b") as f:
            f.truncate(complete)
    return data.count(b"\n", 0, complete)


def one_spaced(text):
    """`text` with every run of white space (tabs, line breaks, no-break spaces) made one space."""
    return " ".join(text.split())


def tsv_line(english, italian):
    """One TSV line, each sentence `one_spaced`, so the line stays one pair."""
    return f"{one_spaced(english)}\t{one_spaced(italian)}\n"


def write_pairs(out, pairs):
    """Write `pairs` to the TSV file `out`, one `tsv_line` each, making its folder where needed."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(tsv_line(en, it) for en, it in pairs), encoding="utf-8")


def distill(translator, pairs, out, beam=4, chunk=2048, max_minutes=0, progress=True):
    """Append the beam-`beam` translations of the English of `pairs` to `out`, from the first pair it does not hold
    yet, `chunk` sentences at a time (each chunk decoded in length-sorted batches, then written and flushed).
    Stops after the chunk that passes `max_minutes` (0: no limit). -> number of pairs `out` holds."""
    out = Path(out)
    done = lines_done(out)
    if done > len(pairs):
        raise ValueError(
            f"{out} has {done} lines but the input only {len(pairs)} pairs: is it the output of another file?"
        )
    start = time.time()
    with (
        open(out, "a", encoding="utf-8") as f,
        tqdm(
            total=len(pairs), initial=done, unit="sent", desc=f"distilling (beam {beam})", disable=not progress
        ) as bar,
    ):
        while done < len(pairs):
            batch = pairs[done : done + chunk]
            hypotheses = translator.translate([src for src, _ in batch], beam=beam)
            f.writelines(tsv_line(src, hyp if hyp.strip() else ref) for (src, ref), hyp in zip(batch, hypotheses))
            f.flush()
            os.fsync(f.fileno())
            done += len(batch)
            bar.update(len(batch))
            if max_minutes and time.time() - start > max_minutes * 60:
                break
    return done


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m training.recipes.distill",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--model", required=True, help="the teacher: a model directory")
    parser.add_argument("--data", required=True, help="TSV file of English<TAB>Italian pairs to translate")
    parser.add_argument("--out", required=True, help="TSV file to write (a run with the same --out resumes it)")
    parser.add_argument("--beam", type=positive_int, default=4, help="beam width of the teacher's translations")
    parser.add_argument("--chunk", type=positive_int, default=2048, help="sentences decoded between two writes")
    parser.add_argument("--limit", type=positive_int, help="translate only the first N pairs")
    parser.add_argument("--max-minutes", type=non_negative_float, default=0, help="stop after this long (0 = no limit)")
    parser.add_argument("--threads", type=positive_int, help="torch CPU threads (default: torch's)")
    parser.add_argument("--no-progress", action="store_true")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    out = checked_out_file(args.out, [args.data])
    out.parent.mkdir(parents=True, exist_ok=True)
    translator = open_model(args.model).translator
    pairs = pairs_to_score(args.data, args.limit)
    done = distill(
        translator,
        pairs,
        out,
        beam=args.beam,
        chunk=args.chunk,
        max_minutes=args.max_minutes,
        progress=not args.no_progress,
    )
    state = "complete" if done == len(pairs) else "stopped; run the same command again to go on"
    print(f"{out}: {done} of {len(pairs)} pairs translated (beam {args.beam}), {state}", file=sys.stderr)


if __name__ == "__main__":
    run_cli(main)
