"""The shared English/Italian BPE tokenizer: round trips, special ids, normalisation, padding."""

import pytest
from tokenizers import Tokenizer, models, trainers

from helpers import toy_pairs
from transformer.tokenizer import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    SPECIAL_TOKENS,
    UNK_ID,
    decode,
    encode_batch,
    load_tokenizer,
    pad_sequences,
    train_tokenizer,
    with_byte_fallback,
)

ROUND_TRIP = [
    "L'ho vista all'università.",
    "Perché no? È così!",
    "C'è un caffè: 3,14 € (più o meno).",
    '"Sì", disse lui - davvero...',
    "Where's Tom's dog?",
    "Non l'ho fatto, però è già là.",
    "Città, perché, più, né, là.",
    "naïve café",
    "Hello,   world!",
    "The ticket costs 25 euros, 1990 ½ 😀 北京 שלום",
]

# Typographic forms and the plain ones the tokenizer reads them as.
TYPOGRAPHIC = [
    ("«Sì», disse lui — davvero…", '"Sì", disse lui - davvero...'),
    ("Non l’ho fatto – “mai”.", 'Non l\'ho fatto - "mai".'),
    ("10\u00a0000 euro\u200b", "10 000 euro"),
]


@pytest.fixture(scope="module")
def tokenizer():
    texts = [s for pair in toy_pairs() for s in pair] + ROUND_TRIP * 3
    return train_tokenizer(texts, vocab_size=600)


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_round_trip(tokenizer, text):
    ids = encode_batch(tokenizer, [text])[0]
    assert UNK_ID not in ids
    assert decode(tokenizer, ids) == text


def test_apostrophe_is_its_own_token(tokenizer):
    tokens = tokenizer.encode("L'ho vista all'università.", add_special_tokens=False).tokens
    assert tokens.count("'") == 2 and tokens[-1] == "."


def test_special_token_ids(tokenizer, tmp_path):
    assert SPECIAL_TOKENS == ["<pad>", "<s>", "</s>", "<unk>"]
    assert (PAD_ID, BOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3)
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    loaded = load_tokenizer(tmp_path / "tokenizer.json")
    assert [loaded.token_to_id(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3]
    assert loaded.encode("Perché no?").ids == tokenizer.encode("Perché no?").ids


def test_load_rejects_tokenizer_with_other_special_ids(tmp_path):
    other = Tokenizer(models.BPE(unk_token="<unk>"))
    other.train_from_iterator(["ciao mondo"] * 3, trainers.BpeTrainer(special_tokens=["<unk>", "<pad>", "<s>", "</s>"]))
    other.save(str(tmp_path / "tokenizer.json"))
    with pytest.raises(ValueError, match="<pad>"):
        load_tokenizer(tmp_path / "tokenizer.json")


def test_encoding_adds_no_special_tokens_and_decoding_drops_them(tokenizer):
    ids = encode_batch(tokenizer, ["io vedo il gatto."])[0]
    assert not {PAD_ID, BOS_ID, EOS_ID} & set(ids)
    assert decode(tokenizer, [BOS_ID] + ids + [EOS_ID, PAD_ID, PAD_ID]) == "io vedo il gatto."


def test_unicode_is_nfc_normalised_and_no_character_is_unknown(tokenizer):
    decomposed, composed = "citta\u0300", "città"
    assert encode_batch(tokenizer, [decomposed]) == encode_batch(tokenizer, [composed])
    ids = encode_batch(tokenizer, ["il gatto 🎉 ∑"])[0]  # characters it never saw
    assert UNK_ID not in ids
    assert tokenizer.id_to_token(ids[3]) == "<0xF0>"  # the emoji's first UTF-8 byte, after "▁il ▁gatto ▁"
    assert decode(tokenizer, ids) == "il gatto 🎉 ∑"
    assert encode_batch(tokenizer, ["", "   "]) == [[], []]


@pytest.mark.parametrize("typed, plain", TYPOGRAPHIC)
def test_typographic_characters_read_as_their_plain_forms(tokenizer, typed, plain):
    assert encode_batch(tokenizer, [typed]) == encode_batch(tokenizer, [plain])
    assert decode(tokenizer, encode_batch(tokenizer, [typed])[0]) == plain


def test_digits_are_split_one_by_one(tokenizer):
    tokens = tokenizer.encode("I was born in 1990.", add_special_tokens=False).tokens
    assert tokens[-5:] == ["▁1", "9", "9", "0", "."]


def test_byte_fallback_keeps_an_old_vocabulary_and_appends_the_bytes():
    old = Tokenizer(models.BPE(unk_token="<unk>"))
    old.train_from_iterator(["ciao mondo"] * 3, trainers.BpeTrainer(special_tokens=SPECIAL_TOKENS))
    assert decode(old, encode_batch(old, ["ciao 🙂"])[0]) != "ciao 🙂"  # the emoji is unknown to the old one
    new = with_byte_fallback(old)
    assert all(new.token_to_id(t) == i for t, i in old.get_vocab().items())
    assert new.get_vocab_size() == old.get_vocab_size() + 256
    assert new.token_to_id("<0x00>") == old.get_vocab_size()
    assert decode(new, encode_batch(new, ["ciao 🙂"])[0]) == "ciao 🙂"


def test_pad_sequences_right_pads_with_pad_id():
    batch = pad_sequences([[5, 6, 7], [8], [9, 10]])
    assert batch.tolist() == [[5, 6, 7], [8, 0, 0], [9, 10, 0]]
    assert batch.dtype.is_floating_point is False
