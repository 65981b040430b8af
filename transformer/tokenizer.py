"""Subword tokenizer: one byte-pair-encoding vocabulary shared by English and Italian.

Why shared: both languages use the Latin alphabet and share names ("Tom"), numbers, punctuation and many
cognates, so one vocabulary lets the source embedding, the target embedding and the output projection be one
tied matrix (paper, section 3.4), which makes a small model smaller still. Words are split at spaces and marked
with "▁" (SentencePiece's metaspace), so decoding restores spacing, apostrophes and accents exactly, and the
tokens read well in the attention plots ("▁all", "'", "univers", "ità").
"""

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
SPECIAL_TOKENS = [PAD, BOS, EOS, UNK]  # ids 0, 1, 2, 3 in this order
PAD_ID, BOS_ID, EOS_ID, UNK_ID = range(4)


def _empty_tokenizer():
    tokenizer = Tokenizer(models.BPE(unk_token=UNK))
    tokenizer.normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Strip()])
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always"), pre_tokenizers.Punctuation()]
    )
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    return tokenizer


def train_tokenizer(texts, vocab_size, min_frequency=2):
    """Learn a BPE vocabulary of `vocab_size` entries from an iterator over English and Italian sentences."""
    tokenizer = _empty_tokenizer()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=SPECIAL_TOKENS,
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return tokenizer


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
