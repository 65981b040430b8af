"""Subword tokenizer: one byte-pair-encoding vocabulary shared by English and Italian.

Why shared: both languages use the Latin alphabet and share names ("Tom"), numbers, punctuation and many
cognates, so one vocabulary lets the source embedding, the target embedding and the output projection be one
tied matrix (paper, section 3.4), which makes a small model smaller still. Words are split at spaces and marked
with "▁" (SentencePiece's metaspace), so decoding restores spacing, apostrophes and accents exactly, and the
tokens read well in the attention plots ("▁all", "'", "univers", "ità").

Why no input is ever unknown: a character outside the vocabulary falls back to its UTF-8 bytes (`<0xF0>` ...),
256 tokens at the end of the vocabulary. Digits are split one by one ("▁1", "9", "9", "0"), so a number is
copied digit by digit instead of being one rare token the model has to memorise. Typographic quotes, dashes,
ellipses and unusual spaces are normalised to their plain forms, which is how most training sentences write them.
"""

import json
import re

import torch
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
SPECIAL_TOKENS = [PAD, BOS, EOS, UNK]  # ids 0, 1, 2, 3 in this order
PAD_ID, BOS_ID, EOS_ID, UNK_ID = range(4)
BYTE_TOKENS = [f"<0x{b:02X}>" for b in range(256)]  # byte fallback, the names Hugging Face's ByteFallback decodes
BYTE_TOKEN = re.compile(r"<0x[0-9A-F]{2}>")

TYPOGRAPHIC = [  # (pattern, plain replacement)
    ("[‘’‚‛′`]", "'"),
    ("[“”„‟″«»]", '"'),
    ("[‐‑‒–—―−]", "-"),
    ("…", "..."),
    ("[\u00a0\u2000-\u200a\u202f\u205f\u3000]", " "),  # no-break and other fixed-width spaces
    ("[\u200b-\u200d\u2060\ufeff]", ""),  # zero-width characters
]


def _set_pipeline(tokenizer):
    """The text pipeline around the BPE model: normalise, split into words/punctuation/digits, decode back."""
    tokenizer.normalizer = normalizers.Sequence(
        [normalizers.NFC()]
        + [normalizers.Replace(Regex(pattern), plain) for pattern, plain in TYPOGRAPHIC]
        + [normalizers.Strip()]
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always"),
            pre_tokenizers.Punctuation(),
            pre_tokenizers.Split(Regex(r"\d"), behavior="merged_with_previous"),  # "▁1990" -> "▁1" "9" "9" "0"
        ]
    )
    tokenizer.decoder = decoders.Sequence(
        [decoders.ByteFallback(), decoders.Metaspace(replacement="▁", prepend_scheme="always")]
    )
    return tokenizer


def with_byte_fallback(tokenizer):
    """The same BPE vocabulary and merges in the current pipeline, with the byte tokens appended (ids after the
    existing ones, so a model trained on `tokenizer` keeps every embedding row it has)."""
    spec = json.loads(tokenizer.to_str())
    vocab = spec["model"]["vocab"]
    for token in BYTE_TOKENS:
        vocab.setdefault(token, len(vocab))
    spec["model"]["byte_fallback"] = True
    return _set_pipeline(Tokenizer.from_str(json.dumps(spec)))


def train_tokenizer(texts, vocab_size, min_frequency=2, alphabet_size=200):
    """Learn a BPE vocabulary of `vocab_size` entries (byte tokens included) from an iterator over English and
    Italian sentences. Only the `alphabet_size` most frequent characters get tokens of their own; rarer ones
    are spelled in bytes."""
    tokenizer = _set_pipeline(Tokenizer(models.BPE(unk_token=UNK)))
    trainer = trainers.BpeTrainer(
        vocab_size=max(len(SPECIAL_TOKENS) + 1, vocab_size - len(BYTE_TOKENS)),
        min_frequency=min_frequency,
        limit_alphabet=alphabet_size,
        special_tokens=SPECIAL_TOKENS,
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return with_byte_fallback(tokenizer)


def load_tokenizer(path):
    tokenizer = Tokenizer.from_file(str(path))
    for token_id, token in enumerate(SPECIAL_TOKENS):
        if tokenizer.token_to_id(token) != token_id:
            raise ValueError(f"{path}: special token {token!r} must have id {token_id}")
    return tokenizer


def encode_batch(tokenizer, texts):
    """Token ids of each text, without special tokens."""
    return [e.ids for e in tokenizer.encode_batch(list(texts), add_special_tokens=False)]


def decode(tokenizer, ids):
    return tokenizer.decode(list(ids), skip_special_tokens=True)


def pad_sequences(sequences):
    """Right-pad lists of token ids into one (B, T) tensor."""
    width = max(len(s) for s in sequences)
    return torch.tensor([list(s) + [PAD_ID] * (width - len(s)) for s in sequences], dtype=torch.long)
