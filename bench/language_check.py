"""How well `inputs.language` tells English from French, German, Spanish and Italian: false alarms (English
sentences it would warn about) on the English side of test sets, and the share of other-language sentences it warns
about, with the language it names, on the project's own lists (data/demo/not-english.tsv, the list the word lists
were tuned on, and data/demo/not-english-heldout.tsv, written before that tuning and never tuned on).

    python -m bench.language_check
    python -m bench.language_check --english D/test-tatoeba.tsv --foreign data/demo/not-english.tsv --show 10

Takes about a second. The last line of the output is a JSON summary.
"""

import argparse
import csv
from pathlib import Path

from bench.common import DATA_DIR, ROOT, print_json, print_table, read_pairs, refuse_missing
from inputs.language import check_language

DEMO_DIR = ROOT / "data" / "demo"


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m bench.language_check", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--english",
        nargs="+",
        default=[str(DATA_DIR / f) for f in ("test-tatoeba.tsv", "dev.tsv", "dev-news.tsv")],
        help="TSVs of English<TAB>Italian pairs: false alarms on their English side",
    )
    p.add_argument(
        "--foreign",
        nargs="+",
        default=[str(DEMO_DIR / f) for f in ("not-english.tsv", "not-english-heldout.tsv")],
        help="TSVs with a header 'language<TAB>sentence': detection on their sentences",
    )
    p.add_argument("--show", type=int, default=5, help="print this many misses of each kind")
    args = p.parse_args(argv)
    refuse_missing(p, args.english + args.foreign)
    return args


def read_labelled(path):
    """[(language, sentence)] of a TSV with a 'language<TAB>sentence' header."""
    with open(path, encoding="utf-8", newline="") as f:
        return [(row["language"], row["sentence"]) for row in csv.DictReader(f, delimiter="\t")]


def false_alarms(sentences):
    """The English sentences that would get a warning."""
    return [s for s in sentences if not check_language(s).looks_english]


def detection(labelled):
    """(sentences warned about, of them the ones whose language was named right, the ones missed)."""
    checks = [(language, sentence, check_language(sentence)) for language, sentence in labelled]
    warned = [c for c in checks if not c[2].looks_english]
    return (
        len(warned),
        sum(language == check.language for language, _, check in warned),
        [sentence for _, sentence, check in checks if check.looks_english],
    )


def percent(part, whole):
    return round(100 * part / whole, 2) if whole else None


def main(argv=None):
    args = parse_args(argv)
    results, rows = [], []
    for path in args.english:
        sentences = [en for en, _ in read_pairs(path)]
        alarms = false_alarms(sentences)
        results.append(
            dict(
                data=Path(path).name,
                kind="English",
                n=len(sentences),
                warned=len(alarms),
                false_alarm_percent=percent(len(alarms), len(sentences)),
            )
        )
        rows.append(
            [
                Path(path).name,
                "English",
                f"{len(sentences):,}",
                f"{len(alarms)}",
                f"{percent(len(alarms), len(sentences)):.2f}% false alarms",
                "",
            ]
        )
        for sentence in alarms[: args.show]:
            print(f"false alarm ({Path(path).name}): {sentence}")
    for path in args.foreign:
        labelled = read_labelled(path)
        for language in sorted({lang for lang, _ in labelled}) + ["all"]:
            subset = [(lang, s) for lang, s in labelled if language in ("all", lang)]
            warned, named, missed = detection(subset)
            results.append(
                dict(
                    data=Path(path).name,
                    kind=language,
                    n=len(subset),
                    warned=warned,
                    detected_percent=percent(warned, len(subset)),
                    language_named_right=named,
                )
            )
            rows.append(
                [
                    Path(path).name,
                    language,
                    f"{len(subset)}",
                    f"{warned}",
                    f"{percent(warned, len(subset)):.1f}% detected",
                    f"{named} of {warned}",
                ]
            )
            if language == "all":
                for sentence in missed[: args.show]:
                    print(f"missed ({Path(path).name}): {sentence}")
    print()
    print_table(["data", "sentences", "n", "warned", "rate", "language named right"], rows, text_columns=2)
    print_json(results)


if __name__ == "__main__":
    main()
