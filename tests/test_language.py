"""inputs.language: the rule that warns when an input is not English, on clear cases, and its false
alarms on the English test set when the data is there."""

import pytest

from bench.common import DATA_DIR
from inputs.language import check_language, looks_like_english, words_of


@pytest.mark.parametrize(
    "text, language",
    [
        ("Je voudrais un café, s'il vous plaît.", "French"),
        ("Ich habe heute keine Zeit.", "German"),
        ("¿Dónde está el baño?", "Spanish"),
        ("Ciao, come stai?", "Italian"),
        ("C'è un gatto sul tavolo.", "Italian"),
        ("ICH HABE HEUTE KEINE ZEIT", "German"),
        ("Grazie", "Italian"),
    ],
)
def test_other_languages_are_flagged_and_named(text, language):
    check = check_language(text)
    assert not check.looks_english and check.language == language
    assert language in check.warning and "English" in check.warning
    assert not looks_like_english(text)


@pytest.mark.parametrize(
    "text",
    [
        "Good morning, how are you?",
        "Hello.",
        "Thanks!",
        "Tom",
        "José",
        "Café",
        "Die Hard",
        "Come home early.",
        "I'd like a café au lait, please.",
        "My friend is Maria de la Cruz.",
        "I LOVE YOU",
        "WHERE IS THE STATION?",
        "12:30",
        "3.14 + 2 = 5.14",
        "",
        "   ",
        "Bread, cheese and tomatoes.",
        "Attention is all you need.",
        "Tom runs as fast as you.",
    ],
)
def test_english_names_numbers_and_capitals_are_not_flagged(text):
    check = check_language(text)
    assert check.looks_english and check.language is None and check.warning is None


@pytest.mark.parametrize("value", [None, 3, ["Hello"]])
def test_a_value_that_is_not_text_is_refused_clearly(value):
    with pytest.raises(ValueError, match="text must be a string"):
        check_language(value)


def test_foreign_words_outnumbering_english_ones_decide():
    assert check_language("Das ist gut.").looks_english is False  # two German words, none English
    assert check_language("Das ist what I said.").looks_english is True  # English words outnumber them
    # one foreign word among many others is not enough
    assert check_language("We ate at a little place called Le Bistro last night.").looks_english


def test_an_accented_word_counts_only_beside_a_foreign_function_word():
    assert check_language("Résumé écrit.").looks_english  # no function word: accents alone never warn
    check = check_language("Le résumé écrit.")
    assert not check.looks_english and check.foreign_words == ("le", "résumé", "écrit")


def test_elided_articles_are_words_of_their_own_but_english_contractions_stay_whole():
    assert words_of("L'apprentissage, s'il vous plaît") == ["l'", "apprentissage", "s'", "il", "vous", "plaît"]
    assert words_of("I'm sure it’s Tom's") == ["i'm", "sure", "it's", "tom's"]


@pytest.mark.skipif(
    not (DATA_DIR / "test-tatoeba.tsv").exists(), reason="needs data/en-it (python -m training.prepare_data)"
)
def test_false_alarms_on_the_english_test_set_are_at_most_one_percent():
    from bench.common import read_pairs
    from bench.language_check import false_alarms

    english = [en for en, _ in read_pairs(DATA_DIR / "test-tatoeba.tsv")]
    assert len(false_alarms(english)) <= len(english) / 100


def test_the_bench_counts_false_alarms_and_detections(tmp_path, capsys):
    import json

    from bench.language_check import main

    english = tmp_path / "english.tsv"
    english.write_text("Good morning.\tBuongiorno.\nDas ist gut.\tVa bene.\nI see.\tCapisco.\n", encoding="utf-8")
    foreign = tmp_path / "foreign.tsv"
    foreign.write_text(
        "language\tsentence\nGerman\tIch habe heute keine Zeit.\nFrench\tBon appétit !\n"
        "Spanish\t¿Dónde está el baño?\n",
        encoding="utf-8",
    )
    main(["--english", str(english), "--foreign", str(foreign)])
    results = {(r["data"], r["kind"]): r for r in json.loads(capsys.readouterr().out.strip().splitlines()[-1])}
    assert results["english.tsv", "English"]["warned"] == 1
    assert results["foreign.tsv", "all"] == {
        "data": "foreign.tsv",
        "kind": "all",
        "n": 3,
        "warned": 2,
        "detected_percent": 66.67,
        "language_named_right": 2,
    }
    assert results["foreign.tsv", "French"]["warned"] == 0
