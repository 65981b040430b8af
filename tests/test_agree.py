"""`python -m training.recipes.agree`: a teacher's translation is kept only where it agrees with a human one."""

import pytest

from helpers import write_tsv
from training.data import read_tsv
from training.recipes.agree import keep_agreeing, main, references_by_english

REFERENCES = [
    ("Good morning.", "Buongiorno."),
    ("Pleased to meet you.", "Piacere di conoscerti."),
    ("Pleased to meet you.", "Piacere di conoscerla."),
    ("The cat is sleeping.", "Il gatto sta dormendo."),
    ("The cat is sleeping.", "Il gatto dorme."),
]


def test_the_english_is_matched_whatever_its_spacing():
    references = references_by_english([("Good  morning.", "Buongiorno."), ("Good morning.", "Buon giorno.")])
    assert references == {"Good morning.": ["Buongiorno.", "Buon giorno."]}


def test_a_translation_far_from_every_reference_is_dropped_and_one_close_to_any_is_kept():
    teacher = [
        ("Good morning.", "Buon mattina."),
        ("Pleased to meet you.", "Il rilasciato di incontrarti."),
        ("Pleased to meet you.", "Piacere di conoscerla."),
        ("The cat is sleeping.", "Il gatto dorme."),
        ("The cat is sleeping.", "Il gatto sta dormendo."),
        ("A sentence no human translated.", "Una frase."),
    ]
    kept, dropped = keep_agreeing(teacher, references_by_english(REFERENCES), min_chrf=50, progress=False)
    assert dropped == 2
    assert kept == teacher[2:]


@pytest.mark.parametrize("min_chrf, dropped", [(0, 0), (100, 1)])
def test_the_threshold_decides_how_close_is_close_enough(min_chrf, dropped):
    teacher = [("The cat is sleeping.", "Il gatto dorme."), ("The cat is sleeping.", "Il gatto sta dormendo!")]
    _, n = keep_agreeing(teacher, references_by_english(REFERENCES), min_chrf=min_chrf, progress=False)
    assert n == dropped


def test_the_command_writes_the_kept_lines_and_says_how_many_were_dropped(tmp_path, capsys):
    references = write_tsv(tmp_path / "train.tsv", REFERENCES)
    distilled = write_tsv(tmp_path / "kd.tsv", [("Good morning.", "Buon mattina."), ("Good morning.", "Buongiorno.")])
    out = tmp_path / "out" / "kd-agree.tsv"
    main(["--references", str(references), "--data", str(distilled), "--out", str(out), "--no-progress"])
    assert read_tsv(out) == ([("Good morning.", "Buongiorno.")], 0)
    assert "1 pairs kept, 1 dropped" in capsys.readouterr().err


def test_the_command_will_not_overwrite_a_file_it_reads(tmp_path):
    references = write_tsv(tmp_path / "train.tsv", REFERENCES)
    with pytest.raises(ValueError, match="--out"):
        main(["--references", str(references), "--data", str(references), "--out", str(references)])
