"""Parallel data: reading pairs (TSV files or a Hugging Face dataset), the pairs each epoch trains on (sources
mixed by weight, some English re-typed as people type it, some pairs joined into longer ones), and batching them
by token count."""

import gzip
import json
import os
import random
import sys
from pathlib import Path

from tokenizers import Tokenizer

from transformer.tokenizer import BOS_ID, EOS_ID, encode_batch, load_tokenizer, pad_sequences, train_tokenizer

# No pair a model can learn from is this long: a side of max_len tokens (at most 256 in training.configs) holds at
# most a few kB (a BPE token is rarely over 16 bytes). Longer lines are dropped unread: tokenising a
# 10 MB line before encode_pairs dropped it cost tens of seconds and gigabytes.
MAX_LINE_BYTES = 16_384
PREPARE_DATA_HINT = "`python -m training.prepare_data --out data/en-it` rebuilds the project's data files"


def read_tsv(path):
    """`English<TAB>Italian` lines -> (pairs, skipped), from a plain or a gzip-compressed (`.gz`) file. A line
    without exactly two non-empty fields, that is not valid UTF-8, or that is over MAX_LINE_BYTES, is skipped and
    counted rather than stopping the run."""
    pairs, skipped = [], 0
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        for raw in f:
            if len(raw) > MAX_LINE_BYTES:
                skipped += 1
                continue
            try:
                line = raw.decode("utf-8-sig").rstrip("\r\n")  # -sig: a byte-order mark is not text
            except UnicodeDecodeError:
                skipped += 1
                continue
            fields = line.split("\t")
            if len(fields) != 2 or not fields[0].strip() or not fields[1].strip():
                skipped += bool(line.strip())  # blank lines are not worth a warning
                continue
            pairs.append((fields[0].strip(), fields[1].strip()))
    return pairs, skipped


def read_hf_dataset(name, config, split, src_lang, tgt_lang):
    """Pairs from a Hugging Face translation dataset (rows {"translation": {src_lang: ..., tgt_lang: ...}}),
    e.g. `opus_books` with config `en-it`. Works offline when the dataset is in the local cache."""
    from datasets import load_dataset
    from huggingface_hub.utils import logging as hub_logging

    hub_logging.set_verbosity_error()  # offline, each retry would print a warning: the error that follows says it once
    pairs, skipped = [], 0
    for row in load_dataset(name, config, split=split):
        pair = row.get("translation", row)
        src, tgt = (pair.get(src_lang) or "").strip(), (pair.get(tgt_lang) or "").strip()
        if src and tgt:
            pairs.append((src, tgt))
        else:
            skipped += 1
    return pairs, skipped


def load_pairs(spec, hf_config=None, split="train", src_lang="en", tgt_lang="it"):
    """A TSV path, or else a Hugging Face dataset id. Raises ValueError when nothing usable is found."""
    if os.path.isdir(spec):
        raise ValueError(f"{spec}: is a directory; expected a TSV file of English<TAB>Italian pairs")
    if os.path.exists(spec):
        pairs, skipped = read_tsv(spec)
    elif Path(spec).suffix in (".tsv", ".txt", ".gz"):
        raise FileNotFoundError(f"{spec}: no such file ({PREPARE_DATA_HINT})")
    else:
        print(f"{spec}: no such file; trying it as a Hugging Face dataset id", file=sys.stderr)
        try:
            pairs, skipped = read_hf_dataset(spec, hf_config, split, src_lang, tgt_lang)
        except Exception as e:  # the datasets library raises many kinds: network, missing config, bad format
            reason = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise FileNotFoundError(
                f"{spec}: no such file, and it could not be loaded as a Hugging Face dataset id "
                f"either ({reason}); {PREPARE_DATA_HINT}"
            ) from e
    if not pairs:
        raise ValueError(f"{spec}: no valid English<TAB>Italian pairs ({skipped} malformed lines)")
    return pairs, skipped


def build_tokenizer(sources, vocab_size, init_tokenizer=None):
    """-> (tokenizer, what was done): a BPE vocabulary learnt from every sentence of `sources` (lists of
    pairs), or the tokenizer file of a model training continues from."""
    if init_tokenizer is None:
        texts = (sentence for pairs in sources for pair in pairs for sentence in pair)
        tokenizer = train_tokenizer(texts, vocab_size)
        return tokenizer, f"learnt {tokenizer.get_vocab_size()} BPE tokens"
    tokenizer = load_tokenizer(init_tokenizer)
    return tokenizer, f"{tokenizer.get_vocab_size()} tokens of {init_tokenizer}"


def encode_pairs(tokenizer, pairs, max_len):
    """Token ids of both sides -> (src_ids, tgt_ids, kept): pairs longer than the model's max_len are dropped,
    `kept` are the indices of those that are not."""
    src = encode_batch(tokenizer, [s for s, _ in pairs])
    tgt = encode_batch(tokenizer, [t for _, t in pairs])
    kept = [i for i in range(len(pairs)) if len(src[i]) < max_len and len(tgt[i]) < max_len]
    return [src[i] for i in kept], [tgt[i] for i in kept], kept


FINAL_PUNCTUATION = ".!?"
RETYPINGS = (
    "lower",
    "lower, no final punctuation",
    "no final punctuation",
    "capitals",
    "capitals, no final punctuation",
)


def retype(text, how):
    """`text` as people type it into a box: lower-cased, in capitals, and/or without its final . ! or ?"""
    if "no final punctuation" in how:
        text = text.rstrip(FINAL_PUNCTUATION).rstrip() or text
    if how.startswith("lower"):
        text = text.lower()
    elif how.startswith("capitals"):
        text = text.upper()
    return text


class BPEDropout:
    """BPE-dropout (Provilkov et al., 2020): while a word is encoded, each merge is skipped with probability `p`,
    so a pair comes in another segmentation each time it is drawn ("▁tom" "ato" "es", "▁to" "m" "ato" "es"). The
    model then learns how words are built from their pieces rather than one fixed split of each, which is meant to
    help with rare words and typed input. Translation itself always uses the plain segmentation.

    It re-segments token ids (decoded to text and encoded again, which the tokenizer round-trips exactly), so
    joined and re-typed pairs get it too. A re-segmented sequence of `max_len` tokens or more stays plain. The
    tokenizers library's dropout takes no seed, so these segmentations are the one thing of an epoch that is not
    reproducible."""

    def __init__(self, tokenizer, p, max_len):
        if not 0 <= p < 1:
            raise ValueError(f"bpe_dropout is the probability of skipping a merge: 0 (never) to below 1, got {p}")
        spec = json.loads(tokenizer.to_str())
        spec["model"]["dropout"] = p
        self.tokenizer, self.dropping, self.max_len = tokenizer, Tokenizer.from_str(json.dumps(spec)), max_len

    def __call__(self, sequences):
        texts = self.tokenizer.decode_batch(sequences, skip_special_tokens=True)
        resegmented = encode_batch(self.dropping, texts)
        return [ids if len(ids) < self.max_len else plain for ids, plain in zip(resegmented, sequences)]


class TrainingData:
    """The pairs each epoch trains on, drawn afresh per epoch and reproducibly from (seed, epoch).

    - Each source is repeated by its weight (2.5: twice, plus a random half of it once more).
    - Pairs whose English has at least `long_words` words are repeated `long_weight` times as often again: real
      long sentences are rare in Tatoeba (2% of it has 11 words or more) and joined pairs do not replace them.
    - `retype_share` of the pairs get their English re-typed (`retype`: lower-cased, capitals, no final
      punctuation); the Italian target stays as written, so the model learns to restore it.
    - `join_share` of the pairs are joined with one or two other pairs into one longer pair, so inputs longer
      than a typical training sentence are not unseen. Joining token ids equals encoding the joined text, since
      every word carries its own "▁".
    - With `bpe_dropout` > 0 every pair of the epoch is then re-segmented (`BPEDropout`), before the epoch is cut
      into batches, so that batches are sized by the lengths they train on. A run resumed within such an epoch
      gets other batches from the batch where it stopped on (the same pairs, segmented afresh).
    """

    def __init__(
        self,
        sources,
        tokenizer,
        max_len,
        retype_share=0.0,
        join_share=0.0,
        long_weight=1.0,
        long_words=11,
        bpe_dropout=0.0,
        seed=0,
    ):
        if long_weight < 1:
            raise ValueError(f"long_weight must be at least 1 (1: as often as the rest), got {long_weight}")
        self.resegment = BPEDropout(tokenizer, bpe_dropout, max_len) if bpe_dropout else None
        self.tokenizer, self.max_len = tokenizer, max_len
        self.retype_share, self.join_share, self.seed = retype_share, join_share, seed
        self.pairs, self.src_ids, self.tgt_ids = [], [], []
        self.groups = []  # per source: (indices of its pairs, how often they are drawn), all pairs then the long ones
        self.too_long = 0
        for pairs, weight in sources:
            src, tgt, kept = encode_pairs(tokenizer, pairs, max_len)
            kept_pairs = [pairs[i] for i in kept]
            long = [i for i, (en, _) in enumerate(kept_pairs) if len(en.split()) >= long_words]
            self.pairs.append(kept_pairs)
            self.src_ids.append(src)
            self.tgt_ids.append(tgt)
            self.groups.append([(range(len(kept_pairs)), weight), (long, weight * (long_weight - 1))])
            self.too_long += len(pairs) - len(kept)

    def __len__(self):
        """Pairs per epoch before joining."""
        return round(sum(len(indices) * weight for groups in self.groups for indices, weight in groups))

    def _draw(self, rng):
        """(source, index) of every pair this epoch: whole repeats of each group of pairs, then a random fraction."""
        drawn = []
        for k, groups in enumerate(self.groups):
            for indices, weight in groups:
                whole, fraction = divmod(weight, 1)
                drawn += [(k, i) for _ in range(int(whole)) for i in indices]
                drawn += [(k, i) for i in rng.sample(indices, round(fraction * len(indices)))]
        return drawn

    def epoch(self, epoch):
        """-> (src_ids, tgt_ids) of this epoch's pairs, in no particular order."""
        rng = random.Random(self.seed * 1_000_003 + epoch)
        drawn = self._draw(rng)
        src = [self.src_ids[k][i] for k, i in drawn]
        tgt = [self.tgt_ids[k][i] for k, i in drawn]
        retyped = [j for j in range(len(drawn)) if rng.random() < self.retype_share]
        texts = [retype(self.pairs[drawn[j][0]][drawn[j][1]][0], rng.choice(RETYPINGS)) for j in retyped]
        for j, ids in zip(retyped, encode_batch(self.tokenizer, texts)):
            if len(ids) < self.max_len:
                src[j] = ids
        n_joined = round(self.join_share * len(drawn))
        for j in rng.sample(range(len(drawn)), n_joined) if len(drawn) > 1 else []:
            others = rng.sample(range(len(drawn)), rng.choice((1, 2)))
            joined_src = src[j] + [t for o in others for t in src[o]]
            joined_tgt = tgt[j] + [t for o in others for t in tgt[o]]
            if len(joined_src) < self.max_len and len(joined_tgt) < self.max_len:
                src.append(joined_src)
                tgt.append(joined_tgt)
        if self.resegment:
            src, tgt = self.resegment(src), self.resegment(tgt)
        return src, tgt


class TokenBatcher:
    """Batches of similar-length pairs holding at most `max_tokens` padded tokens each.

    Every epoch the pairs are shuffled, sorted by length within large pools (so batches are nearly padding-free
    yet still vary), cut into batches, and the batches shuffled. The order depends only on (seed, epoch), which
    is what lets `--resume` continue from the exact batch where a run stopped."""

    def __init__(self, src_ids, tgt_ids, max_tokens, seed=0, pool_size=50_000):
        self.src_ids, self.tgt_ids = src_ids, tgt_ids
        self.max_tokens, self.seed, self.pool_size = max_tokens, seed, pool_size

    def _width(self, i):
        return max(len(self.src_ids[i]) + 1, len(self.tgt_ids[i]) + 1)  # + EOS (source) / BOS or EOS (target)

    def epoch_batches(self, epoch):
        rng = random.Random(self.seed * 1_000_003 + epoch)
        order = list(range(len(self.src_ids)))
        rng.shuffle(order)
        batches = []
        for start in range(0, len(order), self.pool_size):
            pool = sorted(order[start : start + self.pool_size], key=self._width)
            batch, width = [], 0
            for i in pool:
                w = max(width, self._width(i))
                if batch and w * (len(batch) + 1) > self.max_tokens:
                    batches.append(batch)
                    batch, w = [], self._width(i)
                batch.append(i)
                width = w
            if batch:
                batches.append(batch)
        rng.shuffle(batches)
        return batches

    def collate(self, batch):
        return teacher_forced_batch([self.src_ids[i] for i in batch], [self.tgt_ids[i] for i in batch])


def teacher_forced_batch(src_ids, tgt_ids):
    """Token-id lists of pairs -> src (B, S) with EOS, tgt_in (B, T) = BOS + y, tgt_out (B, T) = y + EOS; all
    right-padded: what the model is fed and must predict, in training and wherever its loss is measured."""
    src = [x + [EOS_ID] for x in src_ids]
    tgt_in = [[BOS_ID] + y for y in tgt_ids]
    tgt_out = [y + [EOS_ID] for y in tgt_ids]
    return pad_sequences(src), pad_sequences(tgt_in), pad_sequences(tgt_out)
