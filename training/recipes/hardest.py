"""Keep the human pairs a model finds hardest: the ones it would translate otherwise.

A model continued on its whole training mix sees each pair as often as every other, so what it already translates
as the reference does (most of Tatoeba) takes nearly all of its steps, and a mistake it learnt from a teacher's
distilled file stays: part 12 of the shipped model gave "Buongiorno." for "Good morning." a probability of 0.002,
while its training file holds the human pair. This scores every pair of a human-translated file by the model's
teacher-forced cross-entropy per reference token (`training.evaluate.reference_losses`) and writes again the hardest
`--share` of them, to be trained on beside the whole mix:

    python -m training.recipes.hardest --model assets/model --data runs/train-tu.tsv --out runs/train-hard.tsv

The very hardest `--skip` share is left out: a reference the model finds that unlikely is more often a loose or
misaligned translation than a lesson. Pairs are ranked by loss per token, so a long sentence is not hard for being
long.

Measured in round 5 (docs/training-log.md, run S): three times an epoch beside the whole mix, it scored below the
same continuation without it, on dev and on the demo set; the hardest human pairs are also the loosest.
"""

import argparse
import sys

import torch

from modeldir.directory import open_model

from ..cli import checked_out_file, non_negative_float, positive_float, positive_int, run_cli
from ..evaluate import pairs_to_score, reference_losses
from .distill import write_pairs


def hardest(pairs, losses, share, skip=0.0):
    """The pairs of `pairs` ranked from `skip` to `skip + share` (fractions of the whole) by loss per token
    (`losses`: [(loss, tokens)] as `reference_losses` gives them), hardest first, skipping the hardest `skip`."""
    ranked = sorted(range(len(pairs)), key=lambda i: losses[i][0] / losses[i][1], reverse=True)
    first = round(skip * len(pairs))
    return [pairs[i] for i in ranked[first : first + round(share * len(pairs))]]


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m training.recipes.hardest",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--model", required=True, help="model directory whose loss ranks the pairs")
    parser.add_argument("--data", required=True, help="TSV file of human English<TAB>Italian pairs")
    parser.add_argument("--out", required=True, help="TSV file to write")
    parser.add_argument("--share", type=positive_float, default=0.1, help="fraction of the pairs to keep")
    parser.add_argument(
        "--skip", type=non_negative_float, default=0.01, help="fraction of the very hardest pairs to leave out"
    )
    parser.add_argument("--batch-size", type=positive_int, default=256)
    parser.add_argument("--threads", type=positive_int, help="torch CPU threads (default: torch's)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    if args.share + args.skip > 1:
        parser.error(f"--share {args.share:g} and --skip {args.skip:g} add up to more than the whole file")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    out = checked_out_file(args.out, [args.data])
    translator = open_model(args.model).translator
    pairs = pairs_to_score(args.data)
    losses = reference_losses(translator, pairs, args.batch_size, progress=not args.no_progress)
    kept = hardest(pairs, losses, args.share, args.skip)
    write_pairs(out, kept)
    print(
        f"{out}: the {len(kept)} hardest of {len(pairs)} pairs (after the hardest {args.skip:g}, by "
        f"{args.model}'s loss per reference token)",
        file=sys.stderr,
    )


if __name__ == "__main__":
    run_cli(main)
