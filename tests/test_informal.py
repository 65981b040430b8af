"""`python -m training.recipes.informal`: one register for "you" — the informal singular where the references offer
it."""

import pytest

from helpers import write_tsv
from training.data import read_tsv
from training.recipes.informal import informal_english, is_informal_singular, keep_informal, main, speaks_to_one_person

REFERENCES = [
    ("I love you.", "Ti amo."),
    ("I love you.", "Vi amo."),
    ("I love you.", "La amo."),
    ("What is your name?", "Qual è il Suo nome?"),
    ("What is your name?", "Come ti chiami?"),
    ("What is your name?", "Come vi chiamate?"),
    ("How are you?", "Come sta?"),  # no informal reference: every translation stays
    ("How are you?", "Come state?"),
    ("I miss you guys.", "Mi mancate."),  # several people: voi is right
    ("I miss you guys.", "Tu mi manchi."),
    ("I see the cat.", "Vedo il gatto."),
]


@pytest.mark.parametrize(
    "italian, informal",
    [
        ("Ti amo.", True),
        ("Come ti chiami?", True),
        ("Qual è il tuo nome?", True),
        ("Puoi aiutarmi?", True),
        ("Piacere di conoscerti.", True),
        ("Sei stanco?", True),
        ("Vi amo.", False),
        ("Qual è il vostro nome?", False),
        ("Siete stanchi?", False),
        ("Piacere di conoscervi.", False),
        ("Qual è il Suo nome?", False),
        ("Lei è stanco?", False),
        ("Vedo il gatto.", False),
        ("Ti amo, e voi?", False),  # both registers: not one way of saying it
    ],
)
def test_the_informal_singular_is_recognised_by_its_pronouns_possessives_and_verbs(italian, informal):
    assert is_informal_singular(italian) is informal


def test_speaking_to_several_people_is_not_speaking_to_one():
    assert speaks_to_one_person("Is this your book?") and speaks_to_one_person("Help yourself.")
    assert not speaks_to_one_person("Help yourselves.") and not speaks_to_one_person("Are you guys ready?")
    assert not speaks_to_one_person("I see the cat.") and not speaks_to_one_person("The young man left.")


def test_only_sentences_with_an_informal_reference_lose_their_other_translations():
    english = informal_english(REFERENCES)
    assert english == {"I love you.", "What is your name?"}
    kept, dropped = keep_informal(REFERENCES, english)
    assert dropped == 4
    assert kept == [
        ("I love you.", "Ti amo."),
        ("What is your name?", "Come ti chiami?"),
        ("How are you?", "Come sta?"),
        ("How are you?", "Come state?"),
        ("I miss you guys.", "Mi mancate."),
        ("I miss you guys.", "Tu mi manchi."),
        ("I see the cat.", "Vedo il gatto."),
    ]


def test_a_teachers_translations_are_filtered_by_the_human_references(tmp_path, capsys):
    references = write_tsv(tmp_path / "train.tsv", REFERENCES)
    distilled = write_tsv(
        tmp_path / "kd.tsv",
        [("I love you.", "Vi amo."), ("What is your name?", "Come ti chiami?"), ("How are you?", "Come state?")],
    )
    out = tmp_path / "out" / "kd-tu.tsv"
    main(["--references", str(references), "--data", str(distilled), "--out", str(out)])
    assert read_tsv(out) == ([("What is your name?", "Come ti chiami?"), ("How are you?", "Come state?")], 0)
    assert "2 pairs kept, 1 dropped" in capsys.readouterr().err


def test_the_references_are_written_again_by_default_and_never_overwritten(tmp_path):
    references = write_tsv(tmp_path / "train.tsv", REFERENCES)
    out = tmp_path / "train-tu.tsv"
    main(["--references", str(references), "--out", str(out)])
    assert len(read_tsv(out)[0]) == len(REFERENCES) - 4
    with pytest.raises(ValueError, match="must not be one of the files it reads"):
        main(["--references", str(references), "--out", str(references)])
