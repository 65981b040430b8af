"""Count what a model has seen, for a model trained before the trainer wrote `word_counts.json.gz` itself: how many of
its training pairs hold each word (`modeldir.seen`), from the files its card names.

    python -m training.word_counts --model assets/model \\
        --train data/en-it/train.tsv data/en-it/train-extra.tsv data/en-it/train-docs.tsv
"""

import argparse

from modeldir.seen import WordCounts, write_word_counts

from .cli import run_cli
from .data import load_pairs


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m training.word_counts", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="the model directory to write word_counts.json.gz into")
    p.add_argument("--train", nargs="+", required=True, help="the TSV files of English<TAB>Italian pairs it trained on")
    args = p.parse_args(argv)
    counts = WordCounts(0, sources=list(args.train))
    for spec in args.train:
        counts.add(load_pairs(spec)[0])
    path = write_word_counts(args.model, counts)
    print(
        f"{path}: {len(counts.english):,} English and {len(counts.italian):,} Italian words "
        f"in {counts.pairs:,} pairs ({path.stat().st_size / 1e6:.2f} MB)"
    )


if __name__ == "__main__":
    run_cli(main)
