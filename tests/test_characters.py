"""inputs.characters.BytesAsWritten: a character the vocabulary spells in bytes is written whole, and as the English
writes it, once a translation has begun it, on the shipped vocabulary ("ø" is `<0xC3> <0xB8>`)."""

from pathlib import Path

import pytest
import torch

from inputs.characters import BytesAsWritten, character_length, characters_begun
from modeldir.directory import open_model
from transformer.tokenizer import BOS_ID, EOS_ID, load_tokenizer

MODEL_DIR = Path(__file__).resolve().parent.parent / "assets" / "model"
TOKENIZER = load_tokenizer(MODEL_DIR / "tokenizer.json")
BYTES = [f"<0x{value:02X}>" for value in range(256)]


@pytest.fixture(scope="module")
def rule():
    return BytesAsWritten(TOKENIZER)


def allowed_bytes(rule, source, tokens, among=BYTES + ["ren", "▁era", "</s>", "."]):
    """Which of the tokens `among` the rule lets follow the Italian tokens `tokens` when the English is `source`."""
    logits = torch.zeros(1, TOKENIZER.get_vocab_size())
    ys = torch.tensor([[BOS_ID] + [TOKENIZER.token_to_id(token) for token in tokens]])
    rule(logits, ys, torch.tensor([TOKENIZER.encode(source).ids + [EOS_ID]]))
    return {token for token in among if torch.isfinite(logits[0, TOKENIZER.token_to_id(token)])}


def test_a_lead_byte_says_how_long_its_character_is():
    assert [character_length(b) for b in (0x41, 0x96, 0xC3, 0xE2, 0xF0)] == [0, 0, 2, 3, 4]
    assert characters_begun(list("Søren".encode())) == (["ø".encode()], b"")
    assert characters_begun(list("Dvoř".encode())[:-1]) == ([], b"\xc5")  # ř begun, not ended
    assert characters_begun([0x96, 0xC3, 0x41]) == ([], b"")  # a stray continuation byte, a lead byte left alone


def test_the_characters_of_an_english_sentence_are_those_it_spells_in_bytes(rule):
    assert TOKENIZER.encode("Søren").tokens == ["▁S", "<0xC3>", "<0xB8>", "ren"]
    source = tuple(TOKENIZER.encode("Søren met Dvořák and Björk.").ids)
    assert rule.characters(source) == {"ø".encode(), "ř".encode()}  # "ö" is a token of the vocabulary
    assert rule.characters(tuple(TOKENIZER.encode("Tom met Mary.").ids)) == frozenset()


def test_a_character_begun_goes_on_only_as_the_englishs_does(rule):
    assert allowed_bytes(rule, "Søren Kierkegaard was Danish.", ["▁S", "<0xC3>"]) == {"<0xB8>"}
    assert allowed_bytes(rule, "The ÖVP and the SPÖ.", ["▁La", "▁S", "P", "<0xC3>"]) == {"<0x96>"}
    assert allowed_bytes(rule, "Dvořák wrote nine symphonies.", ["▁D", "vo", "<0xC5>"]) == {"<0x99>"}


def test_a_character_the_english_lacks_is_still_written_whole(rule):
    continuations = {f"<0x{value:02X}>" for value in range(0x80, 0xC0)}
    assert allowed_bytes(rule, "Tom met Mary.", ["▁Tom", "<0xC3>"]) == continuations
    assert allowed_bytes(rule, "Søren was Danish.", ["▁S", "<0xE2>"]) == continuations  # ø begins with 0xC3
    assert allowed_bytes(rule, "Tom met Mary.", ["▁Tom", "<0xE2>", "<0x82>"]) == continuations  # "€" half written


def test_after_a_whole_character_or_none_begun_every_token_is_free(rule):
    every = set(BYTES + ["ren", "▁era", "</s>", "."])
    assert allowed_bytes(rule, "Søren was Danish.", ["▁S", "<0xC3>", "<0xB8>"]) == every
    assert allowed_bytes(rule, "Søren was Danish.", ["▁S"]) == every


def test_the_shipped_model_writes_the_names_characters_as_the_english_does():
    translator = open_model(MODEL_DIR).translator
    typed = ["Dvořák wrote nine symphonies.", "The ÖVP lost the election.", "Søren Kierkegaard was Danish."]
    dvorak, party, soren = translator.translate(typed)
    assert "Dvořák" in dvorak and "ÖVP" in party  # the model alone: "Dvoūák", "L'óVP"
    assert "\ufffd" not in soren and "Sø" in soren  # the model alone: "S�ren", a lead byte left unended
    translator.rule = None  # the model alone, for comparison
    assert "Dvořák" not in translator.translate(typed[0])
