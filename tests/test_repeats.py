"""inputs.repeats.NoWordThrice: a translation never writes a word of letters three times in a row, unless the English
does, on the shipped vocabulary and the shipped model."""

from pathlib import Path

import pytest
import torch

from inputs.repeats import NoWordThrice
from inputs.rules import Rules
from interpretability import inspect
from modeldir.directory import open_model
from transformer.tokenizer import BOS_ID, EOS_ID, PAD_ID, load_tokenizer

MODEL_DIR = Path(__file__).resolve().parent.parent / "assets" / "model"
TOKENIZER = load_tokenizer(MODEL_DIR / "tokenizer.json")


@pytest.fixture(scope="module")
def rule():
    return NoWordThrice(TOKENIZER)


def forbidden(rule, source, italian, others_allowed=True):
    """The tokens the rule forbids after the Italian `italian` (its tokens, as the vocabulary spells it) for the
    English `source`."""
    logits = torch.zeros(1, TOKENIZER.get_vocab_size())
    if not others_allowed:
        logits[:] = float("-inf")
        logits[0, TOKENIZER.token_to_id("▁secondo")] = 0.0
    ys = torch.tensor([[BOS_ID] + TOKENIZER.encode(italian).ids])
    rule(logits, ys, torch.tensor([TOKENIZER.encode(source).ids + [EOS_ID]]))
    return {TOKENIZER.id_to_token(i) for i in torch.isinf(logits[0]).nonzero().flatten().tolist()}


def test_a_word_written_twice_in_a_row_is_not_written_a_third_time(rule):
    source = "The second market was the Old Continent."
    assert TOKENIZER.encode("il secondo secondo").tokens == ["▁il", "▁secondo", "▁secondo"]
    assert forbidden(rule, source, "il secondo secondo") == {"▁secondo"}
    assert forbidden(rule, source, "il secondo") == set()  # twice in a row is Italian now and then ("molto molto")
    assert forbidden(rule, source, "secondo il secondo") == set()  # not in a row


def test_a_word_of_several_tokens_is_stopped_at_its_last_token(rule):
    assert TOKENIZER.encode("ah ah a").tokens == ["▁a", "h", "▁a", "h", "▁a"]
    assert forbidden(rule, "He laughed.", "ah ah a") == {"h"}
    assert forbidden(rule, "He laughed.", "ah ah") == set()  # "▁a" may begin another word


def test_only_words_of_letters_count(rule):
    assert forbidden(rule, "It is far.", "è . .") == set()
    assert forbidden(rule, "Call 555 555.", "Chiama 5 5") == set()  # digits are the numbers' rule's


def test_an_english_that_says_a_word_three_times_may_be_followed(rule):
    assert forbidden(rule, "Ha ha ha, very funny.", "ah ah a") == set()
    assert forbidden(rule, "Ha ha, very funny.", "ah ah a") == {"h"}  # twice in the English is not thrice


def test_a_padded_source_in_a_batch_is_read_as_its_words(rule):
    """Padding is no word: "<pad> <pad> <pad>" after a short English is not a word said three times."""
    short, long = (
        TOKENIZER.encode(text).ids + [EOS_ID] for text in ("Two markets.", "The second market was the Old Continent.")
    )
    src = torch.tensor([short + [PAD_ID] * (len(long) - len(short)), long])  # (2, S)
    ys = torch.tensor([[BOS_ID] + TOKENIZER.encode("il secondo secondo").ids] * 2)
    logits = torch.zeros(2, TOKENIZER.get_vocab_size())
    rule(logits, ys, src)
    assert torch.isinf(logits[:, TOKENIZER.token_to_id("▁secondo")]).all()


def test_a_row_is_never_left_nothing_to_write(rule):
    assert forbidden(rule, "The second market.", "il secondo secondo", others_allowed=False) == (
        {TOKENIZER.id_to_token(i) for i in range(TOKENIZER.get_vocab_size())} - {"▁secondo"}
    )


@pytest.fixture(scope="module")
def translator():
    return open_model(MODEL_DIR).translator


@pytest.mark.parametrize(
    ("english", "looped"),
    [
        ("Their second market was the Old Continent, with about a million cars sold in five years.", "secondo"),
        ("The name represented the choir's ability to tackle whatever music was presented to it.", "music"),
    ],
)
def test_the_shipped_model_loops_on_a_word_no_more(translator, english, looped):
    ruled = translator.rule
    assert any(isinstance(rule, NoWordThrice) for rule in ruled.rules)
    try:
        translator.rule = Rules(*(rule for rule in ruled.rules if not isinstance(rule, NoWordThrice)))
        alone = translator.translate(english)
    finally:
        translator.rule = ruled
    assert f"{looped} {looped} {looped}" in alone  # the model alone writes it three times in a row, or more
    words = translator.translate(english).split()
    assert not any(a == b == c for a, b, c in zip(words, words[1:], words[2:]))


def test_the_page_names_the_word_not_written_a_third_time(translator):
    """The status line's overruled steps (`Inspection.overruled`) hold the step where the model alone would have
    written "secondo" a third time."""
    english = "Their second market was the Old Continent, with about a million cars sold in five years."
    overruled = inspect(translator, english).overruled
    assert any(first == "▁secondo" and written != "▁secondo" for _, first, written in overruled)
