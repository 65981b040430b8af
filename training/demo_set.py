"""Score a model on what people type first into a translation demo: the project's own demo set (data/demo/).

    python -m training.demo_set --model assets/model                       # the demo set, greedy, as the app runs
    python -m training.demo_set --model assets/model --set heldout --show-wrong
    python -m training.demo_set --model runs/x/model --compare assets/model --json demo.json

Each sentence carries its "required words": the Italian words a right translation must contain, one requirement
after another separated by ";", alternatives within one by "|" (`buongiorno|buon giorno; come stai`). A
translation is *right* when every requirement has an alternative in it, matched as whole words (or whole phrases)
after lower-casing both. Printed: the share right, chrF and BLEU (sacreBLEU) overall and per kind of sentence;
`--show-wrong` lists the wrong ones with the words they miss; `--compare OTHER` scores the other model too and
lists the sentences that went right -> wrong and wrong -> right from OTHER to MODEL, with the sign test's p-value
of that split (a handful of changed sentences proves little). The demo set chooses models;
the held-out set, of the same kinds, only checks the choice. `--json` writes everything, per sentence included.
"""

import argparse
import csv
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import torch

from modeldir.directory import open_model
from modeldir.loading import DTYPES

from .cli import checked_out_file, positive_int, run_cli
from .evaluate import corpus_scores, translate_all

DEMO_DIR = Path(__file__).resolve().parent.parent / "data" / "demo"
SETS = {"demo": DEMO_DIR / "demo.tsv", "heldout": DEMO_DIR / "heldout.tsv"}
COLUMNS = ["english", "italian", "required", "kind"]


@dataclass(frozen=True)
class DemoSentence:
    english: str
    italian: str  # the reference translation
    required: tuple  # requirements, each a tuple of alternatives (lower-cased words or phrases)
    kind: str


def parse_required(text):
    """`"buongiorno|buon giorno; come stai"` -> (("buongiorno", "buon giorno"), ("come stai",)); empty parts dropped."""
    requirements = (tuple(alt.strip().lower() for alt in part.split("|") if alt.strip()) for part in text.split(";"))
    return tuple(alternatives for alternatives in requirements if alternatives)


def read_demo_set(path):
    """The sentences of a demo-set TSV (header: english, italian, required, kind); a ValueError naming the file
    and line for a row that lacks a field or requires nothing."""
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None)
        if header != COLUMNS:
            raise ValueError(f"{path}: the first line must be the header {' '.join(COLUMNS)}, got {header}")
        sentences = []
        for line, row in enumerate(reader, start=2):
            if len(row) != len(COLUMNS) or not all(cell.strip() for cell in row):
                raise ValueError(f"{path}:{line}: expected {len(COLUMNS)} non-empty tab-separated fields")
            english, italian, required, kind = (cell.strip() for cell in row)
            if not parse_required(required):
                raise ValueError(f"{path}:{line}: no required words")
            sentences.append(DemoSentence(english, italian, parse_required(required), kind))
    if not sentences:
        raise ValueError(f"{path}: no sentences after the header")
    return sentences


def normalised(text):
    """Lower-cased, typographic apostrophes as plain ones: what the required words are matched against."""
    return text.lower().replace("’", "'")


def contains_words(text, phrase):
    """Whether `phrase` occurs in `text` as whole words ("anno" is in "l'anno scorso", not in "annoiato")."""
    return re.search(rf"(?<!\w){re.escape(normalised(phrase))}(?!\w)", normalised(text)) is not None


def missing_requirements(translation, required):
    """The requirements (alternatives joined by "|") of which `translation` contains no alternative."""
    return ["|".join(alts) for alts in required if not any(contains_words(translation, alt) for alt in alts)]


def scores(rows):
    """Share right, chrF and BLEU of the per-sentence rows of `score_demo_set`."""
    right = sum(row["right"] for row in rows)
    return {
        **corpus_scores([row["translation"] for row in rows], [row["reference"] for row in rows]),
        "right": right,
        "right_percent": round(100 * right / len(rows), 1),
    }


def score_demo_set(sentences, translations):
    """{"all": scores, "by_kind": {kind: scores}, "sentences": [per sentence: english, reference, translation,
    kind, right, missing]} for `translations` of `sentences` (in order)."""
    rows = []
    for sentence, translation in zip(sentences, translations):
        missing = missing_requirements(translation, sentence.required)
        rows.append(
            dict(
                english=sentence.english,
                reference=sentence.italian,
                translation=translation,
                kind=sentence.kind,
                right=not missing,
                missing=missing,
            )
        )
    kinds = dict.fromkeys(row["kind"] for row in rows)  # in the order of the file
    return {
        "all": scores(rows),
        "by_kind": {kind: scores([r for r in rows if r["kind"] == kind]) for kind in kinds},
        "sentences": rows,
    }


def translate_and_score(translator, sentences, beam=1, batch_size=256):
    """`score_demo_set` of `translator`'s translations of `sentences` (greedy, as the app runs, unless `beam`)."""
    english = [sentence.english for sentence in sentences]
    return score_demo_set(sentences, translate_all(translator, english, beam, batch_size, progress=False))


def changes(before, after):
    """The sentences that `after` (a `score_demo_set` result) gets wrong and `before` right, and the other way round:
    {"right_to_wrong": [...], "wrong_to_right": [...]}, each item english, translation before and after."""
    out = {"right_to_wrong": [], "wrong_to_right": []}
    for old, new in zip(before["sentences"], after["sentences"]):
        if old["right"] != new["right"]:
            key = "right_to_wrong" if old["right"] else "wrong_to_right"
            out[key].append(dict(english=new["english"], before=old["translation"], after=new["translation"]))
    return out


def sign_test(gained, lost):
    """McNemar's exact test on the sentences that changed: the two-sided probability that fair coins split
    `gained + lost` changes at least as unevenly as this (1.0 when none changed)."""
    n = gained + lost
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(min(gained, lost) + 1)) / 2**n) if n else 1.0


def score_line(name, result):
    return (
        f"{name:<10} {result['right']:>3}/{result['n']:<3} right {result['right_percent']:5.1f}%   "
        f"chrF {result['chrf']:5.1f}   BLEU {result['bleu']:5.1f}"
    )


def print_report(title, result, show_wrong):
    print(title)
    print(score_line("all", result["all"]))
    for kind, kind_result in result["by_kind"].items():
        print(score_line(kind, kind_result))
    if show_wrong:
        wrong = [row for row in result["sentences"] if not row["right"]]
        print(f"\nwrong ({len(wrong)}):")
        for row in wrong:
            print(
                f"  [{row['kind']}] {row['english']}\n      -> {row['translation']}\n      "
                f"missing: {'; '.join(row['missing'])}"
            )


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m training.demo_set", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", required=True, help="model directory to score")
    parser.add_argument("--set", choices=SETS, default="demo", help="demo: chooses models; heldout: only checks")
    parser.add_argument("--data", help="another TSV in the demo-set format, instead of --set")
    parser.add_argument("--beam", type=positive_int, default=1, help="beam width (1 = greedy, as the app runs)")
    parser.add_argument(
        "--dtype", choices=DTYPES, default="float32", help="precision the model runs in (the app on a CPU: float32)"
    )
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument("--threads", type=positive_int, help="torch CPU threads (default: torch's)")
    parser.add_argument("--show-wrong", action="store_true", help="list the sentences translated wrong")
    parser.add_argument("--compare", metavar="OTHER_MODEL", help="also score this model; list what changed")
    parser.add_argument("--json", metavar="OUT", help="write the scores and every translation to this JSON file")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    data = Path(args.data) if args.data else SETS[args.set]
    out = checked_out_file(args.json, [data], "--json") if args.json else None
    if args.threads:
        torch.set_num_threads(args.threads)
    sentences = read_demo_set(data)
    # Both models opened before either translates: a wrong --compare is said at once, not after the first run.
    translators = [open_model(model, dtype=args.dtype).translator for model in (args.model, args.compare) if model]

    def scored(translator):
        return translate_and_score(translator, sentences, args.beam, args.batch_size)

    result = scored(translators[0])
    summary = dict(model=args.model, data=str(data), beam=args.beam, dtype=args.dtype, **result)
    print_report(
        f"{args.model} on {data.name} ({'greedy' if args.beam == 1 else f'beam {args.beam}'})", result, args.show_wrong
    )
    if args.compare:
        other = scored(translators[1])
        print()
        print_report(f"{args.compare} on {data.name}", other, show_wrong=False)
        summary.update(compare=dict(model=args.compare, **other), changes=changes(other, result))
        for key, title in (("right_to_wrong", "right -> wrong"), ("wrong_to_right", "wrong -> right")):
            rows = summary["changes"][key]
            print(f"\n{title} from {args.compare} to {args.model} ({len(rows)}):")
            for row in rows:
                print(f"  {row['english']}\n      {row['before']}\n   -> {row['after']}")
        gained, lost = len(summary["changes"]["wrong_to_right"]), len(summary["changes"]["right_to_wrong"])
        summary["sign_test_p"] = round(sign_test(gained, lost), 4)
        print(f"\nsign test: {gained} gained, {lost} lost, p = {summary['sign_test_p']:.3g} (two-sided)")
    if out:
        out.write_text(json.dumps(summary, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    run_cli(main)
