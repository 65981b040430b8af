"""Parallel data: reading pairs (TSV files or a Hugging Face dataset) and batching them by token count."""

import os
import random
from pathlib import Path

from transformer.tokenizer import BOS_ID, EOS_ID, pad_sequences


def read_tsv(path):
    """`English<TAB>Italian` lines -> (pairs, skipped). A line without exactly two non-empty fields, or that is
    not valid UTF-8, is skipped and counted rather than stopping the run."""
    pairs, skipped = [], 0
    with open(path, "rb") as f:
        for raw in f:
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
    if os.path.exists(spec):
        pairs, skipped = read_tsv(spec)
    elif Path(spec).suffix in (".tsv", ".txt"):
        raise FileNotFoundError(f"{spec}: no such file")
    else:
        pairs, skipped = read_hf_dataset(spec, hf_config, split, src_lang, tgt_lang)
    if not pairs:
        raise ValueError(f"{spec}: no valid English<TAB>Italian pairs ({skipped} malformed lines)")
    return pairs, skipped


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
        """-> src (B, S) with EOS, tgt_in (B, T) = BOS + y, tgt_out (B, T) = y + EOS; all right-padded."""
        src = [self.src_ids[i] + [EOS_ID] for i in batch]
        tgt_in = [[BOS_ID] + self.tgt_ids[i] for i in batch]
        tgt_out = [self.tgt_ids[i] + [EOS_ID] for i in batch]
        return pad_sequences(src), pad_sequences(tgt_in), pad_sequences(tgt_out)
