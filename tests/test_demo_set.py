"""training.demo_set: the required-words rule, the per-kind report, the comparison of two models, the command on
the tiny model; and the committed demo sets themselves (format always, no overlap with the test sets when the data
is there)."""

import csv
import json
import re

import pytest

from bench.common import DATA_DIR
from helpers import toy_pairs
from training.demo_set import (
    SETS,
    DemoSentence,
    changes,
    contains_words,
    main,
    missing_requirements,
    parse_required,
    read_demo_set,
    score_demo_set,
    sign_test,
)

DEMO_DIR = SETS["demo"].parent
KINDS = {"greeting", "ml", "nlp", "numbers", "travel", "food", "news"}


def sentence(english, italian, required, kind="greeting"):
    return DemoSentence(english, italian, parse_required(required), kind)


# --- the rule -----------------------------------------------------------------------------------------------------


def test_required_words_are_requirements_of_alternatives():
    assert parse_required("Buongiorno|buon giorno; come stai ;; agosto|") == (
        ("buongiorno", "buon giorno"),
        ("come stai",),
        ("agosto",),
    )


@pytest.mark.parametrize(
    "text, phrase, found",
    [
        ("Buongiorno, come stai?", "buongiorno", True),
        ("BUONGIORNO!", "buongiorno", True),  # case
        ("Buon giorno a te", "buon giorno", True),  # a phrase
        ("Buon  giorno", "buon giorno", False),  # a phrase's words as written
        ("L'anno scorso", "anno", True),  # after an elided article
        ("L’anno scorso", "l'anno", True),  # typographic apostrophe
        ("Mi sono annoiato", "anno", False),  # not inside a word
        ("Il 1992 e il 19920", "1992", True),
        ("Nel 19920", "1992", False),
        ("È finita", "è", True),
    ],
)
def test_required_words_match_whole_words_after_lower_casing(text, phrase, found):
    assert contains_words(text, phrase) is found


def test_a_translation_is_right_when_each_requirement_has_an_alternative():
    required = parse_required("buongiorno|buon giorno; come stai|come va")
    assert missing_requirements("Buon giorno, come va?", required) == []
    assert missing_requirements("Buon mattina, come stai?", required) == ["buongiorno|buon giorno"]
    assert missing_requirements("Ciao.", required) == ["buongiorno|buon giorno", "come stai|come va"]


# --- the report and the comparison --------------------------------------------------------------------------------

SENTENCES = [
    sentence("Good morning.", "Buongiorno.", "buongiorno|buon giorno"),
    sentence("Thanks.", "Grazie.", "grazie"),
    sentence("It costs 20 euros.", "Costa 20 euro.", "20|venti; euro", "numbers"),
]


def test_the_report_gives_the_share_right_overall_and_per_kind():
    result = score_demo_set(SENTENCES, ["Buon mattina.", "Grazie.", "Costa venti euro."])
    assert (result["all"]["right"], result["all"]["n"], result["all"]["right_percent"]) == (2, 3, 66.7)
    assert {k: (v["right"], v["n"]) for k, v in result["by_kind"].items()} == {"greeting": (1, 2), "numbers": (1, 1)}
    assert result["by_kind"]["greeting"]["right_percent"] == 50.0
    assert [row["missing"] for row in result["sentences"]] == [["buongiorno|buon giorno"], [], []]
    perfect = score_demo_set(SENTENCES, [s.italian for s in SENTENCES])
    assert perfect["all"]["chrf"] == 100 and perfect["all"]["bleu"] == 100
    assert result["all"]["chrf"] < perfect["all"]["chrf"]


def test_the_comparison_lists_what_went_right_to_wrong_and_back():
    before = score_demo_set(SENTENCES, ["Buon mattina.", "Grazie.", "Costa venti euro."])
    after = score_demo_set(SENTENCES, ["Buongiorno.", "Prego.", "Costa venti euro."])
    assert changes(before, after) == {
        "right_to_wrong": [{"english": "Thanks.", "before": "Grazie.", "after": "Prego."}],
        "wrong_to_right": [{"english": "Good morning.", "before": "Buon mattina.", "after": "Buongiorno."}],
    }
    assert changes(after, after) == {"right_to_wrong": [], "wrong_to_right": []}


# --- the command ----------------------------------------------------------------------------------------------------


def write_demo_tsv(path, rows):
    path.write_text("english\titalian\trequired\tkind\n" + "".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_the_command_scores_a_model_and_compares_it(tiny_model_dir, tmp_path, capsys):
    rows = [(en, it, it.split()[-1].rstrip("."), "toy") for en, it in toy_pairs()[:12]]  # the object noun
    rows.append(("I see the cat.", "io vedo il gatto.", "cane", "other"))  # a requirement no right answer meets
    data = write_demo_tsv(tmp_path / "toy-demo.tsv", rows)
    out = tmp_path / "scores.json"
    main(
        [
            "--model",
            str(tiny_model_dir),
            "--data",
            str(data),
            "--show-wrong",
            "--compare",
            str(tiny_model_dir),
            "--json",
            str(out),
        ]
    )
    printed = capsys.readouterr().out
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["by_kind"]["other"]["right"] == 0 and result["by_kind"]["toy"]["n"] == 12
    assert result["by_kind"]["toy"]["right"] >= 10  # the tiny model has learnt the toy corpus
    assert result["all"]["right"] == result["by_kind"]["toy"]["right"]
    assert len(result["sentences"]) == 13 and result["sentences"][-1]["missing"] == ["cane"]
    assert result["changes"] == {"right_to_wrong": [], "wrong_to_right": []}  # a model against itself
    assert result["compare"]["all"] == result["all"] and result["sign_test_p"] == 1.0
    assert "sign test: 0 gained, 0 lost, p = 1 (two-sided)" in printed
    assert "[other] I see the cat." in printed and "missing: cane" in printed
    assert re.search(r"^other\s+0/1\s+right\s+0\.0%", printed, re.M)


@pytest.mark.parametrize(
    "gained, lost, p",
    [(0, 0, 1.0), (2, 0, 0.5), (0, 3, 0.25), (3, 1, 0.625), (5, 5, 1.0), (10, 0, 2 / 1024), (9, 1, 22 / 1024)],
)
def test_the_sign_test_weighs_how_unevenly_the_changes_split(gained, lost, p):
    assert sign_test(gained, lost) == pytest.approx(p)


def test_a_malformed_demo_file_is_refused_with_its_line(tmp_path):
    bad = write_demo_tsv(tmp_path / "bad.tsv", [("Hello.", "Ciao.", "ciao", "greeting"), ("Hi.", "Ciao.", " ; ", "x")])
    with pytest.raises(ValueError, match=r"bad.tsv:3: no required words"):
        read_demo_set(bad)
    short = write_demo_tsv(tmp_path / "short.tsv", [("Hello.", "Ciao.", "ciao")])
    with pytest.raises(ValueError, match=r"short.tsv:2: expected 4"):
        read_demo_set(short)
    (tmp_path / "noheader.tsv").write_text("Hello.\tCiao.\tciao\tgreeting\n", encoding="utf-8")
    with pytest.raises(ValueError, match="header"):
        read_demo_set(tmp_path / "noheader.tsv")
    with pytest.raises(ValueError, match="no sentences"):
        read_demo_set(write_demo_tsv(tmp_path / "empty.tsv", []))


def test_bad_arguments_are_rejected(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--model", "m", "--set", "test"])
    assert exit_info.value.code == 2 and "argument --set" in capsys.readouterr().err


# --- the committed sets -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_sets():
    return {name: read_demo_set(path) for name, path in SETS.items()}


def test_the_committed_sets_are_large_enough_and_of_the_same_kinds(demo_sets):
    assert len(demo_sets["demo"]) >= 200 and len(demo_sets["heldout"]) >= 60
    for sentences in demo_sets.values():
        counts = {kind: sum(s.kind == kind for s in sentences) for kind in KINDS}
        assert set(s.kind for s in sentences) == KINDS and min(counts.values()) >= 8


def test_every_reference_meets_its_own_rule_and_sentences_are_unique(demo_sets):
    everything = [s for sentences in demo_sets.values() for s in sentences]
    for s in everything:
        assert missing_requirements(s.italian, s.required) == [], s.english
        assert all(alt == alt.lower() and alt == alt.strip() for alts in s.required for alt in alts), s.english
    english = [s.english.lower() for s in everything]
    assert len(set(english)) == len(english)  # none twice, and none in both sets


def test_the_not_english_lists_are_labelled():
    for name in ("not-english.tsv", "not-english-heldout.tsv"):
        with open(DEMO_DIR / name, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        assert {r["language"] for r in rows} == {"French", "German", "Spanish", "Italian"}
        assert all(r["sentence"].strip() for r in rows)


def comparable(text):
    """Lower-cased, without punctuation: "Goodbye!" and "goodbye." are the same sentence."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


@pytest.mark.skipif(not DATA_DIR.is_dir(), reason="needs data/en-it (python -m training.prepare_data)")
def test_no_demo_sentence_is_in_a_test_or_dev_set(demo_sets):
    held = set()
    for name in ("test-tatoeba.tsv", "dev.tsv", "dev-news.tsv"):
        with open(DATA_DIR / name, encoding="utf-8") as f:
            held |= {comparable(line.split("\t")[0]) for line in f}
    overlap = [s.english for sentences in demo_sets.values() for s in sentences if comparable(s.english) in held]
    assert overlap == []
