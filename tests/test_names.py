"""inputs.names.NamesAsWritten: a name the model never met is spelled as the English spells it once a translation has
begun writing it, on the shipped vocabulary (a rare name in pieces, "▁Mol tere r")."""

from pathlib import Path

import pytest
import torch

from helpers import allowed_after
from inputs.names import PREFIX, NamesAsWritten
from inputs.numbers import NumbersAsWritten
from inputs.rules import Rules
from interpretability.inspection import inspect
from modeldir.directory import open_model
from modeldir.seen import WordCounts
from transformer.tokenizer import BOS_ID, EOS_ID, load_tokenizer

MODEL_DIR = Path(__file__).resolve().parent.parent / "assets" / "model"
TOKENIZER = load_tokenizer(MODEL_DIR / "tokenizer.json")
NEVER_MET = {"Molterer", "Dirndl", "Wildbiesler", "Ixo"}


@pytest.fixture(scope="module")
def rule():
    return NamesAsWritten(TOKENIZER, NEVER_MET.__contains__)


def ids(text):
    return TOKENIZER.encode(text).ids


def test_the_names_of_an_english_sentence_are_its_capitalised_words_never_met(rule):
    assert TOKENIZER.encode("Molterer").tokens == ["▁Mol", "tere", "r"]
    assert rule.names(tuple(ids("Wilhelm Molterer wears a Dirndl (a dress) in London."))) == {"Molterer", "Dirndl"}
    assert rule.names(tuple(ids("So Bob is one of those `Wildbiesler.'"))) == {"Wildbiesler"}
    assert rule.names(tuple(ids("molterer, dirndl"))) == set()  # not capitalised: not a name
    assert len("Ixo") <= PREFIX and rule.names(tuple(ids("Ixo is here."))) == set()  # too short to be begun


@pytest.mark.parametrize(
    "written, word",
    [("Wilhelm Mol", "Mol"), ("una Dirndl", "Dirndl"), ("dell'Arab", "Arab"), ("Molterer,", ""), ("Costa 60", "")],
)
def test_the_word_being_written_is_the_letters_the_prefix_ends_in(rule, written, word):
    assert rule.open_word(ids(written)) == word


def test_a_name_begun_goes_on_only_as_the_name_does_and_ends_with_it(rule):
    source = "The minister Wilhelm Molterer resigned."
    among = ["ter", "t", "ta", "r", "er", "</s>", "▁ha", ","]
    assert allowed_after(rule, TOKENIZER, source, "Il ministro Wilhelm Mol", among) == {"ter", "t"}
    assert allowed_after(rule, TOKENIZER, source, "Il ministro Wilhelm Molt", among) == {"er"}
    assert allowed_after(rule, TOKENIZER, source, "Il ministro Wilhelm Molter", among) == {"er"}
    whole = allowed_after(rule, TOKENIZER, source, "Il ministro Wilhelm Molterer", among)
    assert whole == {"</s>", "▁ha", ","}  # the name ends: no letters after it ("Guildfordford")
    both = NamesAsWritten(TOKENIZER, {"Molterer", "Moltereri"}.__contains__)  # a whole name, or another begun
    assert allowed_after(both, TOKENIZER, "Molterer met Moltereri.", "Molterer", ["i", "▁ha", "ter"]) == {
        "i",
        "▁ha",
        "ter",
    }


def test_words_that_begin_no_name_the_model_never_met_are_free(rule):
    among = ["ter", "ta", "</s>", "▁ha"]
    source = "The minister Wilhelm Molterer resigned."
    assert allowed_after(rule, TOKENIZER, source, "Il ministro Wilhelm Mo", among) == set(
        among
    )  # fewer than PREFIX letters
    assert allowed_after(rule, TOKENIZER, source, "Il ministro Wilhelm mol", among) == set(
        among
    )  # not with its capital
    assert allowed_after(rule, TOKENIZER, "The minister resigned.", "Il ministro Mol", among) == set(
        among
    )  # no such name
    met = NamesAsWritten(TOKENIZER, lambda word: False)  # the model met every word: "London" may be "Londra"
    assert allowed_after(met, TOKENIZER, source, "Il ministro Wilhelm Mol", among) == set(among)


def test_each_row_is_held_to_its_own_source_and_a_row_never_left_nothing(rule):
    src = torch.nn.utils.rnn.pad_sequence(
        [torch.tensor(ids(s) + [EOS_ID]) for s in ("She wears a Dirndl.", "She wears a dress.")], batch_first=True
    )
    ys = torch.tensor([[BOS_ID] + ids("Indossa una Dir")] * 2)
    logits = torch.zeros(2, TOKENIZER.get_vocab_size())
    rule(logits, ys, src)
    assert torch.isfinite(logits[1]).all()  # no name in the second source
    assert torch.isfinite(logits[0]).sum() < 10 and torch.isfinite(logits[0, TOKENIZER.token_to_id("nd")])
    logits = torch.full((1, TOKENIZER.get_vocab_size()), float("-inf"))
    logits[0, TOKENIZER.token_to_id("l")] = 0.0  # another rule left only "l": the name's rule leaves it
    rule(logits, ys[:1], src[:1])
    assert torch.isfinite(logits).sum() == 1


def test_the_rules_together_hold_the_numbers_and_the_names():
    rules = Rules(NumbersAsWritten(TOKENIZER), NamesAsWritten(TOKENIZER, NEVER_MET.__contains__))
    source = "Molterer paid 600 euros."
    assert allowed_after(rules, TOKENIZER, source, "Molterer ha pagato 60", ["0", "▁e"]) == {"0"}
    assert allowed_after(rules, TOKENIZER, source, "Mol", ["ter", "ta"]) == {"ter"}


def test_a_name_is_never_met_when_no_training_pair_held_it_in_any_case():
    counts = WordCounts(0)
    counts.add([("Tom met Boston's mayor.", "x"), ("the molterer", "x")])
    assert counts.never_met("Dirndl") and not counts.never_met("Boston") and not counts.never_met("Molterer")
    assert not WordCounts(0).never_met("Dirndl")  # no pairs counted: nothing known either way


def test_the_shipped_translator_spells_a_name_it_never_met():
    """Alone, the shipped model writes "Il ministro Wilhelm Molt più dimensioni." and "Lei indossa una Dirl."; under
    the rule it spells both names, and the inspection names the steps where the rule overruled it."""
    translator = open_model(MODEL_DIR).translator
    assert translator.translate(["The minister Wilhelm Molterer resigned.", "She wears a Dirndl."]) == [
        "Il ministro Wilhelm Molterer ha dato le dimissioni.",
        "Lei indossa una Dirndl.",
    ]
    inspection = inspect(translator, "She wears a Dirndl.")
    assert [(first, written) for _, first, written in inspection.overruled] == [("l", "nd")]
    translator.rule = NumbersAsWritten(translator.tokenizer)
    assert "Dirndl" not in translator.translate("She wears a Dirndl.")
