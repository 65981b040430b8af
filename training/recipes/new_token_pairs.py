"""Pick out the pairs that hold the tokens `new_vocabulary --add-tokens` added, to be drawn more often.

A token added to a trained model starts at the mean of the rows of its old pieces and is learnt from the sentences
that hold it. In a mix of Tatoeba, where few added tokens occur, most of a short run's steps never meet them: the
English names of months, joined into one token each, stayed untaught (docs/training-log.md, run X5). This writes
the pairs of `--data` whose English or Italian holds an added token, to be trained on beside the whole mix:

    python -m training.recipes.new_vocabulary --model assets/model --add-tokens 1000 --train ... --out runs/x1n
    python -m training.recipes.new_token_pairs --model runs/x1n --data runs/train-tu.tsv --out runs/tu-new.tsv

Measured in round 5 (docs/training-log.md, runs X6 to X10), not in the shipped recipe.
"""

import argparse
import sys

from modeldir.directory import open_model
from transformer.tokenizer import encode_batch

from ..cli import checked_out_file, run_cli
from ..data import read_tsv
from .distill import write_pairs


def first_new_id(metrics):
    """The first id `new_vocabulary --add-tokens` gave a token, from a model directory's metrics.json."""
    record = metrics.get("training", {}).get("new_vocabulary", {})
    if "first_new_id" not in record:
        raise ValueError("the model's vocabulary was not extended by `new_vocabulary --add-tokens`: no token is new")
    return record["first_new_id"]


def pairs_with_new_tokens(tokenizer, pairs, first_new):
    """The pairs of `pairs` whose English or Italian `tokenizer` cuts into a token of id `first_new` or above."""
    english = encode_batch(tokenizer, [en for en, _ in pairs])
    italian = encode_batch(tokenizer, [it for _, it in pairs])
    return [pair for pair, en, it in zip(pairs, english, italian) if max(en + it, default=0) >= first_new]


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m training.recipes.new_token_pairs",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--model", required=True, help="model directory made by `new_vocabulary --add-tokens`")
    parser.add_argument("--data", required=True, help="TSV file (.tsv or .tsv.gz) of English<TAB>Italian pairs")
    parser.add_argument("--out", required=True, help="TSV file to write")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    out = checked_out_file(args.out, [args.data])
    model = open_model(args.model, device="cpu")
    first_new = first_new_id(model.metrics)
    pairs, skipped = read_tsv(args.data)
    kept = pairs_with_new_tokens(model.translator.tokenizer, pairs, first_new)
    write_pairs(out, kept)
    print(
        f"{out}: {len(kept):,} of {len(pairs):,} pairs hold a token of id {first_new:,} or above "
        f"({skipped:,} malformed lines skipped)",
        file=sys.stderr,
    )


if __name__ == "__main__":
    run_cli(main)
