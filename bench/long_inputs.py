"""Decoding long, unfamiliar inputs: how often greedy decoding loops and beam search cuts the output short, for
each setting of the two rules that guard against it (no repeated n-grams; beam search's length penalty alpha).

    python -m bench.long_inputs --threads 2
    python -m bench.long_inputs --model assets/model --no-repeat 0 3 4 6 --alpha 0.6 1.0 1.5

Data: `--data` (default data/en-it/dev-news.tsv: 502 news sentences, about four times longer than the
Tatoeba sentences the model learnt from). For each setting: sacreBLEU and chrF, the outputs with fewer than half
as many words as their source ("short"), and the outputs in which some three-word sequence occurs three times or
more ("looping": runaway repetition). Greedy runs once per `--no-repeat` value; beam search (`--beam`) once per
`--alpha` value, with the translator's own no-repeat rule. About five minutes on 2 cores with the defaults.
The last line of the output is a JSON summary.
"""

import argparse
from collections import Counter

from bench.common import DATA_DIR, ROOT, default_path, print_json, print_table, read_pairs, set_threads
from inputs.text import CheckedTranslator
from training.evaluate import corpus_scores, translate_all
from transformer.translator import NO_REPEAT_NGRAM


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m bench.long_inputs", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--model", default=str(ROOT / "assets" / "model"), help="model directory")
    p.add_argument("--data", default=default_path(DATA_DIR / "dev-news.tsv"), help="TSV of English<TAB>Italian")
    p.add_argument("--limit", type=int, default=0, help="use only the first N pairs")
    p.add_argument(
        "--no-repeat",
        type=int,
        nargs="+",
        default=[0, 3, 4, 6],
        metavar="N",
        help="greedy settings: n-gram size never repeated (0: no rule)",
    )
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--alpha", type=float, nargs="+", default=[0.6, 1.0, 1.5], help="beam length penalty exponents")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = default)")
    args = p.parse_args(argv)
    if not args.data:
        p.error(
            "no --data given and data/en-it/dev-news.tsv does not exist (python -m training.prepare_data writes it)"
        )
    return args


def is_short(output, source):
    return len(output.split()) < len(source.split()) / 2


def is_looping(output):
    words = output.split()
    return any(n >= 3 for n in Counter(zip(words, words[1:], words[2:])).values())


def measure(translator, pairs, beam):
    """One decoding setting over `pairs`: scores, short and looping output counts."""
    sources, references = [s for s, _ in pairs], [r for _, r in pairs]
    outputs = translate_all(translator, sources, beam=beam, progress=False)
    return dict(
        **corpus_scores(outputs, references),
        short=sum(map(is_short, outputs, sources)),
        looping=sum(map(is_looping, outputs)),
    )


def main(argv=None):
    args = parse_args(argv)
    threads = set_threads(args.threads)
    translator = CheckedTranslator.load(args.model)
    pairs = read_pairs(args.data, args.limit)
    print(f"{args.model} on {len(pairs)} pairs of {args.data}, {threads} threads")
    results = {}
    for n in args.no_repeat:
        translator.no_repeat_ngram = n
        results[f"greedy, no repeated {n}-grams" if n else "greedy, no rule"] = measure(translator, pairs, 1)
    translator.no_repeat_ngram = NO_REPEAT_NGRAM
    for alpha in args.alpha:
        translator.beam_alpha = alpha
        results[f"beam {args.beam}, alpha {alpha}"] = measure(translator, pairs, args.beam)
    print_table(
        ["decoding", "BLEU", "chrF", "short", "looping"],
        [
            [name, f"{r['bleu']:.2f}", f"{r['chrf']:.2f}", str(r["short"]), str(r["looping"])]
            for name, r in results.items()
        ],
    )
    print_json({"model": args.model, "data": args.data, "pairs": len(pairs), "results": results})


if __name__ == "__main__":
    main()
