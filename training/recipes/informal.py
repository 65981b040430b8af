"""One way to say "you": keep the informal singular (tu) where the training data offers it.

Italian addresses one friend as *tu*, several people as *voi* and a stranger as *Lei*, and Tatoeba often holds all
three translations of one English sentence ("I love you." -> "Ti amo.", "Vi amo.", "La amo."). A model trained on
all of them picks a register by chance, sentence by sentence ("I miss you." -> "Mi mancate."); a learner typing to
one person expects *tu*. This writes a training file again without the lines that would teach another register:

    python -m training.recipes.informal --references data/en-it/train.tsv --out runs/train-tu.tsv
    python -m training.recipes.informal --references data/en-it/train.tsv --data runs/kd/train.tsv \\
        --out runs/kd/train-tu.tsv

An English sentence that speaks to one person ("you", "your", not "yourselves" or "you guys") and that has at least
one informal-singular reference loses its other translations, in `--references` and in any `--data` file of the same
English (e.g. a teacher's distilled translations). Every other line is kept as it is. The registers are recognised
by their pronouns, possessives and most common verbs, so a translation that shows none ("Mi manchi.") counts as not
informal: a few good lines are lost, never a wrong one kept.
"""

import argparse
import re
import sys

from ..cli import checked_out_file, run_cli
from ..evaluate import pairs_to_score
from .distill import write_pairs

SPEAKS_TO_YOU = re.compile(r"\byou(r|rs|rself)?\b", re.IGNORECASE)
SPEAKS_TO_SEVERAL = re.compile(
    r"\b(yourselves|you guys|you all|all of you|you two|both of you|you three|you people"
    r"|you boys|you girls|you kids|you children)\b",
    re.IGNORECASE,
)
INFORMAL_SINGULAR = re.compile(
    r"\b(tu|ti|te|tuo|tua|tuoi|tue|t'|sei|hai|puoi|vuoi|sai|devi|fai|vai|stai|eri|avevi"
    r"|potresti|vorresti|dovresti|\w+r(?:ti|te))\b",
    re.IGNORECASE,
)
PLURAL_OR_FORMAL = re.compile(
    r"\b([Vv]oi|[Vv]i|[Vv]ostr[oaie]|[Vv]'|[Ss]iete|[Aa]vete|[Pp]otete|[Vv]olete|[Ss]apete"
    r"|[Dd]ovete|\w+rvi|Lei|Suo|Sua|Suoi|Sue)\b"
)


def is_informal_singular(italian):
    """True when the translation addresses one person as tu ("Ti amo.", "Come ti chiami?") and shows no voi or
    Lei form ("Vi amo.", "Qual è il Suo nome?")."""
    return bool(INFORMAL_SINGULAR.search(italian)) and not PLURAL_OR_FORMAL.search(italian)


def speaks_to_one_person(english):
    return bool(SPEAKS_TO_YOU.search(english)) and not SPEAKS_TO_SEVERAL.search(english)


def informal_english(references):
    """The English sentences of `references` (pairs) that speak to one person and have an informal-singular
    translation among their references."""
    return {en for en, it in references if is_informal_singular(it) and speaks_to_one_person(en)}


def keep_informal(pairs, english):
    """`pairs` without the lines whose English is in `english` and whose translation is not in the informal
    singular -> (kept pairs, number dropped)."""
    kept = [(en, it) for en, it in pairs if en not in english or is_informal_singular(it)]
    return kept, len(pairs) - len(kept)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m training.recipes.informal",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--references",
        required=True,
        help="TSV file of human translations: which English sentences have an informal one",
    )
    parser.add_argument("--data", help="TSV file to write again (default: the --references file)")
    parser.add_argument("--out", required=True, help="TSV file to write")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    out = checked_out_file(args.out, [args.references, args.data])
    references = pairs_to_score(args.references)  # read once: it is also the --data file by default
    english = informal_english(references)
    kept, dropped = keep_informal(pairs_to_score(args.data) if args.data else references, english)
    write_pairs(out, kept)
    print(
        f"{out}: {len(kept)} pairs kept, {dropped} dropped (not the informal singular, for {len(english)} English "
        "sentences that have one)",
        file=sys.stderr,
    )


if __name__ == "__main__":
    run_cli(main)
