"""How finely the BPE vocabulary cuts words: subword tokens per word, English and Italian, for a model's tokenizer
(the shipped one by default) and for vocabularies of other sizes learnt from the training data, on all sentences and
on long ones.

A larger vocabulary shortens the sequences the model reads and writes, at the cost of d_model parameters a token in
each embedding table (one in the shipped model: the encoder, the decoder and the output layer share it); this says
where the shorter sequences would be, before any hours of training are spent on a same-minutes comparison.

    python -m bench.vocab_split
    python -m bench.vocab_split --sizes 8256 16256 32256 --data D/test-tatoeba.tsv D/dev-news.tsv

`--train` (default: train.tsv, train-extra.tsv and train-docs.tsv of data/en-it) is what each new
vocabulary is learnt from, both languages together as `training.train` learns one; a size equal to the model's
tells how much of any difference is the data rather than the size. About 25 s in all with the defaults
(6–8 s to learn each vocabulary). The last line of the output is a JSON summary.
"""

import argparse
from pathlib import Path

from bench.common import DATA_DIR, ROOT, get_tokenizer, print_json, print_table, read_pairs, refuse_missing
from transformer import Translator
from transformer.tokenizer import encode_batch


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m bench.vocab_split", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--model", default=str(ROOT / "assets" / "model"), help="model directory (its tokenizer.json)")
    p.add_argument(
        "--train",
        nargs="+",
        default=[str(DATA_DIR / f) for f in ("train.tsv", "train-extra.tsv", "train-docs.tsv")],
        help="TSVs the new vocabularies are learnt from",
    )
    p.add_argument(
        "--data",
        nargs="+",
        default=[str(DATA_DIR / f) for f in ("test-tatoeba.tsv", "dev-news.tsv")],
        help="TSVs to measure on",
    )
    p.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[8256, 16256, 32256],
        help="vocabulary sizes to learn, byte tokens included",
    )
    p.add_argument("--long-words", type=int, default=11, help="a sentence of this many English words or more is long")
    args = p.parse_args(argv)
    refuse_missing(p, args.train + args.data, " (make the data with python -m training.prepare_data)")
    return args


def tokens_per_word(tokenizer, sentences):
    """Subword tokens per whitespace-separated word, to 3 decimals; None when there are no words."""
    words = sum(len(s.split()) for s in sentences)
    return round(sum(map(len, encode_batch(tokenizer, sentences))) / words, 3) if words else None


def split_rates(tokenizer, pairs, long_words):
    """Tokens per word of English and Italian, over all pairs and over those with a long English side."""
    long_pairs = [(en, it) for en, it in pairs if len(en.split()) >= long_words]
    return {
        f"{side} {which}": tokens_per_word(tokenizer, [pair[i] for pair in subset])
        for which, subset in (("all", pairs), ("long", long_pairs))
        for i, side in enumerate(("en", "it"))
    }


def main(argv=None):
    args = parse_args(argv)
    translator = Translator.load(args.model)
    own, cfg = translator.tokenizer, translator.model.cfg
    tables = 1 if cfg.tie_embeddings else 3  # source, target and output embeddings: one shared table or three
    print(f"model: tokenizer of {args.model} ({own.get_vocab_size()} tokens)")
    train_pairs = [pair for path in args.train for pair in read_pairs(path)]
    tokenizers = [("model", own)]
    for size in args.sizes:
        tokenizer, line = get_tokenizer(None, train_pairs, size)
        print(line)
        tokenizers.append((f"learnt {size}", tokenizer))
    measured = {path: read_pairs(path) for path in args.data}
    results, rows = [], []
    for name, tokenizer in tokenizers:
        extra = (tokenizer.get_vocab_size() - own.get_vocab_size()) * cfg.d_model * tables
        for path, pairs in measured.items():
            rates = split_rates(tokenizer, pairs, args.long_words)
            results.append(
                dict(
                    tokenizer=name,
                    size=tokenizer.get_vocab_size(),
                    data=Path(path).name,
                    extra_parameters=extra,
                    **rates,
                )
            )
            rows.append(
                [
                    name,
                    Path(path).name,
                    f"{tokenizer.get_vocab_size():,}",
                    f"{extra:+,}",
                    *("-" if v is None else f"{v:.3f}" for v in rates.values()),
                ]
            )
    print(
        f"\nsubword tokens per word ('long': {args.long_words}+ English words); extra parameters against the "
        f"model (d_model {cfg.d_model}, {tables} embedding table(s))"
    )
    print_table(
        ["tokenizer", "data", "size", "extra params", "en all", "it all", "en long", "it long"], rows, text_columns=2
    )
    print_json(results)


if __name__ == "__main__":
    main()
