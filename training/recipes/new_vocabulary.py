"""Give a trained model a new, larger BPE vocabulary, to go on training it instead of starting again from scratch.

    python -m training.recipes.new_vocabulary --model assets/model --vocab-size 16000 \\
        --train runs/train-tu.tsv data/en-it/train-extra.tsv --out runs/v16
    python -m training.recipes.new_vocabulary --model assets/model --add-tokens 4000 \\
        --train runs/ep25-noyou.tsv data/en-it/train-extra.tsv --out runs/x4k
    python -m training.train --config cpu --init-from runs/v16 --train ... --out runs/v16-part1

`--vocab-size` learns a whole new vocabulary, which cuts even the words the model knew best in new places.
`--add-tokens` keeps the old vocabulary and its merges and learns that many more merges after them, on how the old
vocabulary cuts `--train`'s words: a word keeps its old tokens unless a new merge joins two of them ("▁Parl"
"amento" -> "▁Parlamento"), so the model reads most sentences exactly as before.
`--known FILE` leaves out of what those merges are learnt on the words FILE holds often (`--known-count`), so the
new tokens go to the words the model rarely saw; `--english-only` learns them on `--train`'s English alone.

The new vocabulary is learnt on `--train` as the trainer learns one. Its embedding rows (one matrix for the source
and target embeddings and the output layer, tied) come from the old model: a token both vocabularies have keeps its
row, and a new token starts at the mean of the rows of the old pieces that spell it ("▁flour" at the mean of "▁fl"
and "our"), so the model reads a new token about as it read the pieces, and writes it about where it wrote the first
of them. (Initialising a domain vocabulary's embeddings from the old one's is Sato et al., 2020, "Vocabulary
Adaptation for Domain Adaptation in Neural Machine Translation".) Every other weight is the old model's. So the
model reads a sentence whose tokens both vocabularies share exactly as before; the rest it translates somewhat worse
at first (the training log measures how much), and training takes it from there, where a model trained from scratch
on a 16k vocabulary would have to relearn everything the shipped one knows.

The new model keeps the old one's training snapshots, word counts and notes; its training record says what its
vocabulary replaced.
"""

import argparse
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from modeldir.directory import open_model, save_remade_model
from modeldir.loading import DTYPES, TOKEN_ROWS
from transformer.model import Transformer
from transformer.tokenizer import BYTE_TOKEN, train_tokenizer, with_byte_fallback

from ..cli import check_writable, command_line, positive_int, run_cli
from ..data import read_tsv

# Each old token stands for one character of Unicode's plane-15 private use area while new merges are learnt, so the
# Hugging Face BPE trainer learns merges of whole old tokens.
PRIVATE_USE = 0xF0000


def sentences(paths, english_only=False):
    """The sentences of the TSV files `paths`: both sides of each pair, or its English alone."""
    sides = 1 if english_only else 2
    return (sentence for path in paths for pair in read_tsv(path)[0] for sentence in pair[:sides])


def words_of(tokenizer, text):
    """The words `tokenizer` cuts `text` into tokens word by word ("▁Good", ",", "▁night")."""
    return [word for word, _ in tokenizer.pre_tokenizer.pre_tokenize_str(tokenizer.normalizer.normalize_str(text))]


def known_words(tokenizer, texts, count):
    """The words (`words_of`) that `texts` hold at least `count` times."""
    counts = Counter(word for text in texts for word in words_of(tokenizer, text))
    return {word for word, n in counts.items() if n >= count}


def extended_tokenizer(tokenizer, texts, new_tokens, min_frequency=5, known=frozenset()):
    """`tokenizer` with up to `new_tokens` more merges (and their tokens, ids after the old ones), learnt on how it
    cuts the words of `texts`, the `known` words left out. The new merges rank after every old one, so they only join
    a word's old tokens; byte tokens are never joined. -> (tokenizer, merges added)"""
    bpe = tokenizer.model
    coded_words = {}

    def coded(text):
        words = []
        for word in words_of(tokenizer, text):
            if word in known:
                continue
            if word not in coded_words:
                coded_words[word] = "".join(
                    " " if BYTE_TOKEN.fullmatch(piece.value) else chr(PRIVATE_USE + piece.id)
                    for piece in bpe.tokenize(word)
                )
            words.append(coded_words[word])
        return " ".join(words)

    coded_texts = [coded(text) for text in texts]
    alphabet = {char for word in coded_words.values() for char in word if char != " "}
    learner = Tokenizer(models.BPE())
    learner.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(
        vocab_size=len(alphabet) + new_tokens,
        min_frequency=min_frequency,
        limit_alphabet=len(alphabet),
        show_progress=False,
    )
    learner.train_from_iterator(coded_texts, trainer=trainer)
    old_tokens = {token_id: token for token, token_id in tokenizer.get_vocab().items()}

    def decoded(chars):
        return "".join(old_tokens[ord(char) - PRIVATE_USE] for char in chars)

    spec = json.loads(tokenizer.to_str())
    vocab, merges = spec["model"]["vocab"], spec["model"]["merges"]
    new_merges = json.loads(learner.to_str())["model"]["merges"]
    for left, right in new_merges:
        left, right = decoded(left), decoded(right)
        merges.append([left, right])
        vocab.setdefault(left + right, len(vocab))
    return with_byte_fallback(Tokenizer.from_str(json.dumps(spec))), len(new_merges)


def old_spellings(old_tokenizer, new_tokenizer):
    """For each id of the new tokenizer, the old ids that spell its token: its own, where the old vocabulary has it,
    else its old pieces (its bytes, where no piece has it) -> (spellings, how many tokens the old vocabulary has)."""
    old_vocab = old_tokenizer.get_vocab()
    spellings, kept = [None] * new_tokenizer.get_vocab_size(), 0
    for token, new_id in new_tokenizer.get_vocab().items():
        if token in old_vocab:
            spellings[new_id], kept = [old_vocab[token]], kept + 1
        else:
            spellings[new_id] = [piece.id for piece in old_tokenizer.model.tokenize(token)]
    return spellings, kept


def vocabulary_rows(rows, spellings):
    """The rows of a (vocabulary, ...) tensor of old ids, one for each new id: the mean of the rows of its
    `old_spellings` (a kept token's own row, exactly)."""
    return torch.stack([rows[ids].mean(0) for ids in spellings])


def with_new_vocabulary(model, old_tokenizer, new_tokenizer):
    """A Transformer like `model` but for `new_tokenizer`: its weights indexed by token (`TOKEN_ROWS`) mapped by
    `vocabulary_rows`, the others copied -> (model, rows kept). The spellings are looked up once for all of them."""
    new_model = Transformer(replace(model.cfg, vocab_size=new_tokenizer.get_vocab_size()))
    spellings, kept = old_spellings(old_tokenizer, new_tokenizer)
    weights = model.state_dict()
    for name in TOKEN_ROWS:
        weights[name] = vocabulary_rows(weights[name], spellings)
    new_model.load_state_dict(weights)
    return new_model, kept


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m training.recipes.new_vocabulary",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", required=True, help="the trained model directory")
    p.add_argument("--train", nargs="+", required=True, help="TSV files (.tsv or .tsv.gz) to learn the vocabulary on")
    size = p.add_mutually_exclusive_group(required=True)
    size.add_argument("--vocab-size", type=positive_int, help="BPE tokens of a whole new vocabulary")
    size.add_argument(
        "--add-tokens", type=positive_int, help="keep the old vocabulary and learn up to this many more merges after it"
    )
    p.add_argument(
        "--known",
        nargs="+",
        default=[],
        help="with --add-tokens: TSV files of what the model was trained on; the words they hold --known-count times "
        "or more are left out of what the new merges are learnt on, so the new tokens go to the words it rarely saw",
    )
    p.add_argument(
        "--known-count", type=positive_int, default=5, help="how often a word of --known must occur to be left out"
    )
    p.add_argument(
        "--english-only",
        action="store_true",
        help="with --add-tokens: learn the new merges on --train's English alone, for the encoder to read; the "
        "decoder writes every Italian word from the old tokens as before",
    )
    p.add_argument("--out", required=True, help="directory of the model with the new vocabulary")
    p.add_argument(
        "--export-dtype",
        choices=DTYPES,
        default="float32",
        help="precision of the written weights (default float32: the mean rows are for training to go on from)",
    )
    args = p.parse_args(argv)
    if (args.known or args.english_only) and not args.add_tokens:
        p.error("--known and --english-only only apply to --add-tokens: --vocab-size learns every merge anew")
    return args


def main(argv=None):
    args = parse_args(argv)
    check_writable(args.out, "--out")
    base = open_model(args.model, dtype="float32", device="cpu")
    old_model, old_tokenizer = base.translator.model, base.translator.tokenizer
    texts = sentences(args.train, english_only=args.english_only)
    if args.add_tokens:
        known = known_words(old_tokenizer, sentences(args.known), args.known_count)
        new_tokenizer, _ = extended_tokenizer(old_tokenizer, texts, args.add_tokens, known=known)
    else:
        new_tokenizer = train_tokenizer(texts, args.vocab_size)
    model, kept = with_new_vocabulary(old_model, old_tokenizer, new_tokenizer)
    new_vocabulary = {
        "vocab_size": [old_model.cfg.vocab_size, model.cfg.vocab_size],
        "command": command_line("training.recipes.new_vocabulary", argv),
    }
    if args.add_tokens:
        new_vocabulary["first_new_id"] = old_model.cfg.vocab_size
    out = Path(args.out)
    save_remade_model(base, model, new_tokenizer, out, DTYPES[args.export_dtype], {"new_vocabulary": new_vocabulary})
    print(
        f"{old_model.cfg.vocab_size:,} -> {model.cfg.vocab_size:,} tokens ({kept:,} kept, "
        f"{model.cfg.vocab_size - kept:,} new from their pieces; {model.num_parameters():,} parameters) into {out}"
    )


if __name__ == "__main__":
    run_cli(main)
