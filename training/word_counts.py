"""Count what a model has seen, for a model trained before the trainer wrote `word_counts.json.gz` itself: how many of
its training pairs hold each word, and the words they translate rather than copy (`modeldir.seen`), from the files its
card names.

    python -m training.word_counts --model assets/model \\
        --train data/en-it/train.tsv data/en-it/train-extra.tsv data/en-it/train-docs.tsv data/domain/*.tsv

`--add` keeps the counts the directory has, each word's the larger of the two (`WordCounts.at_least`): for counts
its file lacks, such as the capitalised words (or the translated ones) a file written before they were counted has
none of. With `--add`, `--train` may be left out: the directory's counts are kept as they are.

`--lexicon` reads another corpus's pairs for the words the training pairs hold too rarely to translate
(`WordCounts.with_lexicon`), as the shipped model reads Europarl (its counts are the two in one command, the first's
files with `--lexicon data/en-it/train-europarl.tsv.gz`; or with `--add` alone, the directory's counts kept):

    python -m training.word_counts --model assets/model --add --lexicon data/en-it/train-europarl.tsv.gz

The training pairs' own translations stay; a lexicon's are kept apart (`from_lexicon`), and reading one anew
replaces those read before: the same files give the same counts.
"""

import argparse

from modeldir.loading import read_tokenizer
from modeldir.seen import counted, read_word_counts, write_word_counts

from .cli import run_cli
from .data import load_pairs


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m training.word_counts", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="the model directory to write word_counts.json.gz into")
    p.add_argument("--train", nargs="+", default=[], help="the TSV files of English<TAB>Italian pairs it trained on")
    p.add_argument("--add", action="store_true", help="keep the directory's counts, each word's the larger")
    p.add_argument("--lexicon", nargs="+", default=[], help="TSV files of other pairs, read for the words too rare")
    args = p.parse_args(argv)
    if not args.train and not args.add:
        p.error("give the --train files, or --add to keep the directory's counts")
    tokenizer = read_tokenizer(args.model)  # before the pairs: a directory without one fails at once
    earlier = read_word_counts(args.model) if args.add else None
    if not args.train and earlier is None:
        p.error(f"--add: {args.model} has no word counts to keep; give the --train files")
    if args.train:
        counts = counted([pair for spec in args.train for pair in load_pairs(spec)[0]], args.train, tokenizer)
        counts = counts.at_least(earlier) if earlier else counts
    else:
        counts = earlier
    if args.lexicon:
        counts.with_lexicon([pair for spec in args.lexicon for pair in load_pairs(spec)[0]], args.lexicon, tokenizer)
    path = write_word_counts(args.model, counts)
    print(
        f"{path}: {len(counts.english):,} English and {len(counts.italian):,} Italian words "
        f"in {counts.pairs:,} pairs, {len(counts.translated):,} English words translated, not copied, and "
        f"{len(counts.from_lexicon):,} more from the lexicon ({path.stat().st_size / 1e6:.2f} MB)"
    )


if __name__ == "__main__":
    run_cli(main)
