"""Characters the vocabulary lacks, in a translation as the English writes them: a decoding rule for the lesson's
`Translator`.

A character outside the vocabulary reaches the model as its UTF-8 bytes ("ø" is `<0xC3> <0xB8>`), and a small model
that begins such a character rarely ends it as the English did: part 14 wrote "Dvoūák" for "Dvořák", "L'óVP" for
"The ÖVP", and for "Søren" a lead byte with no byte after it, which the page shows as "S�ren". Where the model has
begun a character in bytes (a UTF-8 lead byte, and fewer continuation bytes than it announces), `BytesAsWritten`
lets only the bytes go on that continue a character the English spells in bytes, and where the English spells none
so, any continuation byte: every character the translation writes is whole, and one the English holds is written as
the English writes it. Chosen on dev, dev-news and the demo set: docs/training-log.md#characters-spelt-in-bytes."""

from functools import lru_cache

import torch

from transformer.tokenizer import BYTE_TOKEN

from .rules import hold

MAX_CHARACTER = 4  # bytes of UTF-8's longest character
CONTINUATIONS = range(0x80, 0xC0)  # the bytes that go on with a character a lead byte began


def character_length(lead):
    """The bytes of the UTF-8 character the byte `lead` begins (2 to 4), or 0 for a byte that begins none (ASCII, or a
    continuation byte: 0x80 to 0xBF)."""
    return 2 if 0xC0 <= lead < 0xE0 else 3 if 0xE0 <= lead < 0xF0 else 4 if lead >= 0xF0 else 0


def characters_begun(values):
    """(characters, begun): the whole characters the byte `values` spell that begin with a lead byte (each a bytes
    object), and the bytes of the one they end inside ("" when they end none)."""
    whole, begun = [], b""
    for value in values:
        if character_length(value):
            begun = bytes([value])
        elif value in CONTINUATIONS and begun:
            begun += bytes([value])
        else:
            begun = b""
        if begun and len(begun) == character_length(begun[0]):
            whole.append(begun)
            begun = b""
    return whole, begun


class BytesAsWritten:
    """`rule(logits, ys, src)` for `decoding.apply_decoding_rules`: in place, after each prefix `ys` (B, T) that ends
    inside a character begun in bytes, forbid every token but the continuation bytes that go on spelling a character
    its source `src` (B, S) spells in bytes, or any continuation byte where none does."""

    def __init__(self, tokenizer):
        vocab = tokenizer.get_vocab()
        self.value = {i: int(token[3:5], 16) for token, i in vocab.items() if BYTE_TOKEN.fullmatch(token)}  # id -> byte
        self.byte_id = {value: i for i, value in self.value.items()}
        self.continuations = torch.tensor([i for i, v in self.value.items() if v in CONTINUATIONS], dtype=torch.long)
        self.source_characters = lru_cache(maxsize=4096)(self.characters)  # decoding asks at each step

    def characters(self, source):
        """The characters the token ids `source` (a tuple) spell in bytes (a frozenset of bytes objects): a token that
        is no byte (read as 0) ends any character begun."""
        return frozenset(characters_begun([self.value.get(i, 0) for i in source])[0])

    def going_on(self, characters, begun):
        """The ids (a tensor) of the bytes that may follow the bytes `begun` of a character, given the source's
        `characters`: those that go on spelling one of them, else any continuation byte."""
        ids = {self.byte_id[c[len(begun)]] for c in characters if c.startswith(begun) and len(c) > len(begun)}
        return torch.tensor(sorted(ids), dtype=torch.long) if ids else self.continuations

    def __call__(self, logits, ys, src):
        for row, last in enumerate(ys[:, -1].tolist()):
            if last not in self.value:
                continue  # the prefix ends in no byte: no character is begun
            tail = ys[row, -(MAX_CHARACTER - 1) :].tolist()
            _, begun = characters_begun([self.value.get(i, 0) for i in tail])
            if begun:
                hold(logits, row, True, self.going_on(self.source_characters(tuple(src[row].tolist())), begun))
        return logits
