"""Keep a teacher's translations only where they agree with a human one.

Sequence-level distillation (`training.recipes.distill`) trains the student on the teacher's beam-search output,
mistakes included, and a mistake on a frequent short sentence is then taught once for every training pair that holds
it: the part-8 teacher says "Buon mattina." for "Good morning." and "Il rilasciato di incontrarti." for "Pleased to
meet you.", so its distilled file teaches both, while every human reference says "Buongiorno." and "Piacere di
conoscerti.". This writes a distilled file again without the lines whose translation is far from every human
reference of the same English (sentence chrF below `--min-chrf`); the references themselves stay in the training mix,
so a dropped line only loses the teacher's version:

    python -m training.recipes.agree --references data/en-it/train.tsv --data runs/kd/train-tu.tsv \\
        --out runs/kd/train-tu-agree.tsv

chrF (character n-grams) rather than BLEU, because one short sentence rarely shares a 4-gram even when right. A
line whose English has no reference is kept: there is nothing to check it against.
"""

import argparse
import sys
from collections import defaultdict

from sacrebleu.metrics import CHRF
from tqdm import tqdm

from ..cli import checked_out_file, non_negative_float, run_cli
from ..evaluate import pairs_to_score
from .distill import one_spaced, write_pairs


def references_by_english(references):
    """{English sentence: [its human translations]} of `references` (pairs)."""
    out = defaultdict(list)
    for english, italian in references:
        out[one_spaced(english)].append(italian)
    return out


def keep_agreeing(pairs, references, min_chrf, progress=True):
    """`pairs` without the lines whose translation scores a sentence chrF below `min_chrf` against all the human
    translations `references` ({English: [Italian]}) gives for its English -> (kept pairs, number dropped)."""
    chrf = CHRF()
    scores = {}
    kept = []
    for english, italian in tqdm(pairs, unit="pair", desc="checking against the references", disable=not progress):
        human = references.get(one_spaced(english))
        if human and (english, italian) not in scores:
            scores[english, italian] = chrf.sentence_score(italian, human).score
        if not human or scores[english, italian] >= min_chrf:
            kept.append((english, italian))
    return kept, len(pairs) - len(kept)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m training.recipes.agree",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--references", required=True, help="TSV file of human translations of the same English")
    parser.add_argument("--data", required=True, help="TSV file of a teacher's translations to write again")
    parser.add_argument("--out", required=True, help="TSV file to write")
    parser.add_argument(
        "--min-chrf",
        type=non_negative_float,
        default=50,
        help="drop a translation whose sentence chrF against every reference is below this (0-100)",
    )
    parser.add_argument("--no-progress", action="store_true")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    out = checked_out_file(args.out, [args.references, args.data])
    references = references_by_english(pairs_to_score(args.references))
    kept, dropped = keep_agreeing(pairs_to_score(args.data), references, args.min_chrf, progress=not args.no_progress)
    write_pairs(out, kept)
    print(
        f"{out}: {len(kept)} pairs kept, {dropped} dropped (sentence chrF below {args.min_chrf:g} against every "
        "human reference)",
        file=sys.stderr,
    )


if __name__ == "__main__":
    run_cli(main)
