"""inputs.numbers.NumbersAsWritten and CenturiesAsWritten: the digits and Roman numerals of a translation are the
English's numbers and centuries, on the shipped vocabulary (digits and numerals one by one, "▁6 0 0", "▁ X I X");
and the numbers an English sentence says in words, in Italian words (`number_words`, which
`inputs.copies.CopiesTranslated` writes: tests/test_copies.py)."""

from pathlib import Path

import pytest
import torch

from helpers import allowed_after
from inputs.numbers import (
    ITALIAN_NUMBERS,
    CenturiesAsWritten,
    NumbersAsWritten,
    english_numbers,
    italian_number,
    number_words,
)
from interpretability.inspection import inspect
from modeldir.directory import open_model
from transformer.tokenizer import BOS_ID, EOS_ID, load_tokenizer

MODEL_DIR = Path(__file__).resolve().parent.parent / "assets" / "model"
TOKENIZER = load_tokenizer(MODEL_DIR / "tokenizer.json")


@pytest.fixture(scope="module")
def rule():
    return NumbersAsWritten(TOKENIZER)


def ids(text):
    return TOKENIZER.encode(text).ids


@pytest.mark.parametrize(
    "english, numbers",
    [
        ("It costs 600 euros.", {"600"}),
        ("1,000,000 people", {"1|000|000"}),
        ("With 29.8 percent in 2009.", {"29|8", "2009", "09"}),  # a year's last two digits: "gli anni '80"
        ("at least 40 000 volunteers", {"40", "000", "40|000"}),  # a space between groups of three, or none
        ("Call 555 123, not 555 12.", {"555", "123", "555|123", "12"}),
        ("one fiftieth is 0.02", {"0|02"}),
        ("At 7:30.", {"7", "30"}),
        ("I see the cat.", set()),
    ],
)
def test_the_numbers_of_an_english_sentence(rule, english, numbers):
    assert rule.numbers(tuple(ids(english))) == numbers


def test_a_number_goes_on_until_it_is_one_of_the_englishs(rule):
    digits = ["0", "00", "5", "▁5", "▁6", ",", "."]
    assert allowed_after(rule, TOKENIZER, "It costs 600 euros.", "Costa 60", digits + ["</s>", "▁anni"]) == {"0"}
    after = allowed_after(rule, TOKENIZER, "It costs 600 euros.", "Costa 600", digits + ["</s>", "▁anni"])
    assert after == {"▁6", ",", ".", "</s>", "▁anni"}  # done: no more digits, but it may start another 600
    assert allowed_after(rule, TOKENIZER, "It costs 600 euros.", "Costa", digits) == {"▁6", ",", "."}


def test_separators_may_change_but_not_move(rule):
    english = "an area of 75,000 square kilometers"
    assert allowed_after(rule, TOKENIZER, english, "un'area di 75", ["0", ".", ",", "▁anni"]) == {".", ","}
    assert allowed_after(rule, TOKENIZER, english, "un'area di 75.", ["0", "00", "000", "5", ".", "▁anni"]) == {
        "0",
        "00",
        "000",
    }
    assert (
        allowed_after(rule, TOKENIZER, english, "un'area di 7", [".", ","]) == set()
    )  # "7.5" is no number of the English


def test_a_sentence_without_digits_is_decoded_as_the_model_alone_decodes_it(rule):
    src = torch.tensor([ids("I see the cat.") + [EOS_ID], ids("It costs 600 euros.") + [EOS_ID]][:1])
    logits = torch.randn(1, TOKENIZER.get_vocab_size())
    before = logits.clone()
    rule(logits, torch.tensor([[BOS_ID] + ids("Vedo")]), src)
    assert torch.equal(logits, before)


def test_every_row_is_held_to_its_own_source(rule):
    src = torch.tensor([ids("It costs 600 euros."), ids("It costs 650 euros.")])
    ys = torch.tensor([[BOS_ID] + ids("Costa 6")] * 2)
    logits = torch.zeros(2, TOKENIZER.get_vocab_size())
    rule(logits, ys, src)
    zero, five = TOKENIZER.token_to_id("0"), TOKENIZER.token_to_id("5")
    assert logits[0, zero] == 0 and torch.isinf(logits[0, five])
    assert logits[1, five] == 0 and torch.isinf(logits[1, zero])


def test_a_prefix_it_did_not_write_is_left_to_the_model(rule):
    """A prefix no number of the English starts (decoded without the rule) leaves the rule nothing to allow: the
    row is left as it was, never without a token to write."""
    logits = torch.zeros(1, TOKENIZER.get_vocab_size())
    rule(logits, torch.tensor([[BOS_ID] + ids("Costa 7")]), torch.tensor([ids("It costs 600 euros.")]))
    assert torch.isfinite(logits).all()


@pytest.mark.parametrize("beam", [1, 4])
def test_the_inspection_names_the_steps_where_the_rule_overruled_the_model(beam):
    """The shipped model alone writes "Costa 60 euro.": the step where it ranked "▁e" (of "euro") first, after "60",
    is where the rule wrote "0"; what the page's status line names. A sentence without digits, and the translator
    without the rule, overrule nothing."""
    translator = open_model(MODEL_DIR).translator
    inspection = inspect(translator, "It costs 600 euros.", beam=beam)
    assert "600" in inspection.translation
    steps = inspection.overruled
    assert steps and all(written in {"0", "00"} and first != written for _, first, written in steps)
    assert all(inspection.target_tokens[step + 1] == written for step, _, written in steps)
    assert inspect(translator, "I see the cat.", beam=beam).overruled == []
    translator.rule = None
    assert inspect(translator, "It costs 600 euros.", beam=beam).overruled == []


@pytest.fixture(scope="module")
def centuries():
    return CenturiesAsWritten(TOKENIZER)


@pytest.mark.parametrize(
    "english, numerals",
    [
        ("It happened in the 15th century.", {"XV"}),
        ("18th-century art", {"XVIII"}),
        ("Between the 15th and 16th centuries.", {"XV", "XVI"}),
        ("The XX century was violent.", {"XX"}),
        ("John Paul II lived in the 20th century.", {"XX", "II"}),  # the English's own numerals stay writable
        ("World War II ended in 1945.", set()),  # no century named: decoded as the model alone decodes it
        ("The 21st of May.", set()),
    ],
)
def test_the_centuries_an_english_sentence_names(centuries, english, numerals):
    assert centuries.numerals(tuple(ids(english))) == numerals


LETTERS = ["I", "V", "X", "▁sec", "</s>", "ta"]


def test_a_numeral_goes_on_until_it_is_the_centurys(centuries):
    english = "It happened in the 15th century."
    assert allowed_after(centuries, TOKENIZER, english, "È successo nel X", LETTERS) == {"V"}  # "X" after a space
    assert allowed_after(centuries, TOKENIZER, english, "È successo nel XV", LETTERS) == {"▁sec", "</s>", "ta"}
    assert allowed_after(centuries, TOKENIZER, english, "È successo nell'X", LETTERS) == set(LETTERS) - {"I", "X"}
    third = "He lived in the 3rd century."
    assert allowed_after(centuries, TOKENIZER, third, "Ha vissuto nel II", LETTERS) == {"I"}  # not "II secolo"
    assert allowed_after(centuries, TOKENIZER, third, "Ha vissuto nel III", LETTERS) == {"▁sec", "</s>", "ta"}


def test_one_letter_after_a_words_start_or_an_apostrophe_may_end_as_a_word(centuries):
    """ "I" is also the article ("I robot") and "l'I" begins "l'Italia": one letter is held to the numerals only
    after a lone space."""
    english = "Italy in the 19th century."
    assert allowed_after(centuries, TOKENIZER, english, "I", LETTERS) == {"▁sec", "</s>", "ta"}  # "IX": no
    assert allowed_after(centuries, TOKENIZER, english, "L'I", LETTERS) == {"▁sec", "</s>", "ta"}
    assert allowed_after(centuries, TOKENIZER, english, "Il M", ["I", "V", "X"]) == {"I", "V", "X"}  # in a word


def test_a_sentence_without_a_century_is_decoded_as_the_model_alone_decodes_it(centuries):
    logits = torch.randn(1, TOKENIZER.get_vocab_size())
    before = logits.clone()
    centuries(
        logits, torch.tensor([[BOS_ID] + ids("Il papa Giovanni Paolo I")]), torch.tensor([ids("Pope John Paul II")])
    )
    assert torch.equal(logits, before)


@pytest.mark.parametrize(
    "english, numeral, alone",
    [
        ("It happened in the 15th century.", "XV secolo", "XVI secolo"),
        ("He lived in the 3rd century.", "III secolo", "II secolo"),
    ],
)
def test_the_shipped_model_writes_the_englishs_century(english, numeral, alone):
    """The shipped model alone miscounts the numerals ("XVI" for the 15th); under the rule it writes the English's,
    and the inspection names the steps the rule wrote."""
    translator = open_model(MODEL_DIR).translator
    inspection = inspect(translator, english)
    assert numeral in inspection.translation
    assert inspection.overruled
    translator.rule = None
    assert alone in translator.translate(english)


@pytest.mark.parametrize(
    "number, italian",
    [
        (2, "due"),
        (13, "tredici"),
        (21, "ventuno"),  # the tens lose their vowel before "uno" and "otto"
        (23, "ventitré"),
        (28, "ventotto"),
        (80, "ottanta"),
        (100, "cento"),
        (108, "centotto"),
        (180, "centottanta"),
        (250, "duecentocinquanta"),
        (1000, "mille"),
        (2000, "duemila"),
        (2024, "duemilaventiquattro"),
        (12000, "dodicimila"),
    ],
)
def test_a_number_in_italian_is_one_word(number, italian):
    assert italian_number(number) == italian


@pytest.mark.parametrize(
    "english, numbers",
    [
        ("February has twenty-eight days.", [28]),
        ("It cost two hundred and fifty euros.", [250]),
        ("A hundred and one dalmatians.", [101]),
        ("three thousand two hundred", [3200]),
        ("Italy has about sixty million inhabitants.", [60]),  # "sessanta milioni"
        ("I have two brothers and three sisters.", [2, 3]),
        ("The train arrives at ten past six.", [10, 6]),
        ("nineteen eighty-four", [19, 84]),
        ("I called twice in 3 days.", [2, 3]),
        ("Thousands of homes. The hundred days.", []),  # no number said
    ],
)
def test_the_numbers_an_english_sentence_says(english, numbers):
    assert english_numbers(english) == numbers


def test_the_italian_words_of_the_numbers_an_english_sentence_says():
    """What the copies rule writes (said in words) and what it lets the model write (in words or digits, the tens
    elided, "cento" beside "percent")."""
    said, allowed = number_words("February has twenty-eight days.")
    assert said == ("ventotto",) and {"ventotto", "ventott"} <= allowed
    said, allowed = number_words("He is thirty-three, twice my age.")
    assert said == ("trentatré", "due") and {"trentatre", "due"} <= allowed  # allowed without accents
    said, allowed = number_words("It costs 600 euros, twice as much.")
    assert said == ("due",) and "seicento" in allowed  # in digits: written as the model writes them, words too
    assert "cento" in number_words("Prices rose by three percent.")[1]  # "tre per cento"
    assert number_words("I see the cat.") == ((), frozenset())
    assert "trent" in ITALIAN_NUMBERS and "ventitre" in ITALIAN_NUMBERS  # "trent'anni"; plain, without accents
    assert "sei" not in ITALIAN_NUMBERS and "settimana" not in ITALIAN_NUMBERS  # "sei" is also "you are"
