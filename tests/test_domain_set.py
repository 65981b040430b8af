"""The domain set (data/domain/*.tsv): well-formed pairs, large enough, and sharing no sentence and no 5-word sequence
with the demo sets (data/demo/*.tsv), so that training on it leaves the demo set a measurement."""

import csv
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOMAIN_DIR = ROOT / "data" / "domain"
DEMO_DIR = ROOT / "data" / "demo"


def words(text):
    """Lower-cased word tokens: case, spacing and punctuation do not count."""
    return tuple(re.findall(r"\w+", text.lower()))


def five_grams(text):
    w = words(text)
    return {w[i : i + 5] for i in range(len(w) - 4)}


def read_domain_file(path):
    pairs = []
    with open(path, encoding="utf-8", newline="") as f:
        for number, line in enumerate(f, 1):
            assert line.endswith("\n") and not line.endswith("\r\n"), f"{path.name}:{number}: not an LF line"
            fields = line[:-1].split("\t")
            assert len(fields) == 2 and all(x.strip() == x and x for x in fields), f"{path.name}:{number}: {line!r}"
            pairs.append(tuple(fields))
    return pairs


def demo_sentences(directory=DEMO_DIR):
    """Every English, Italian or other-language sentence of the demo sets."""
    sentences = []
    for path in sorted(directory.glob("*.tsv")):
        with open(path, encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
                sentences += [row[column] for column in ("english", "italian", "sentence") if row.get(column)]
    return sentences


def overlaps(pairs, sentences):
    """The pairs that share a sentence (either side) or a 5-word sequence with `sentences`, with what they share."""
    held = {words(s) for s in sentences}
    held_grams = set().union(*(five_grams(s) for s in sentences))
    found = []
    for pair in pairs:
        for side in pair:
            shared = sorted(" ".join(g) for g in five_grams(side) & held_grams)
            if words(side) in held or shared:
                found.append((side, shared))
    return found


@pytest.fixture(scope="module")
def domain():
    files = sorted(DOMAIN_DIR.glob("*.tsv"))
    assert files, "no data/domain/*.tsv"
    return {path.name: read_domain_file(path) for path in files}


def test_the_domain_set_is_well_formed_large_enough_and_its_english_unique(domain):
    english = [words(en) for pairs in domain.values() for en, _ in pairs]
    assert len(english) >= 1500
    assert len(set(english)) == len(english), "an English sentence twice (ignoring case and punctuation)"
    assert all(len(pairs) >= 100 for pairs in domain.values())


def test_no_pair_shares_a_sentence_or_a_five_word_sequence_with_the_demo_sets(domain):
    sentences = demo_sentences()
    assert len(sentences) > 500
    assert overlaps([p for pairs in domain.values() for p in pairs], sentences) == []


def test_the_overlap_check_finds_a_demo_sentence_and_a_shared_sequence(tmp_path):
    demo = ["Good night, see you tomorrow.", "The model was trained on a single computer."]
    pairs = [
        ("good night see you tomorrow", "Buonanotte."),  # the same sentence, case and punctuation aside
        ("Yesterday the model was trained on two GPUs.", "Ieri il modello è stato addestrato su due GPU."),
        ("The model was trained.", "Il modello è stato addestrato."),
    ]
    assert overlaps(pairs, demo) == [
        ("good night see you tomorrow", ["good night see you tomorrow"]),
        (pairs[1][0], ["the model was trained on"]),
    ]
    (tmp_path / "demo.tsv").write_text(
        "english\titalian\trequired\tkind\nHi.\tCiao.\tciao\tgreeting\n", encoding="utf-8"
    )
    (tmp_path / "other.tsv").write_text("language\tsentence\nFrench\tBonjour.\n", encoding="utf-8")
    assert demo_sentences(tmp_path) == ["Hi.", "Ciao.", "Bonjour."]


def test_the_readme_counts_are_the_files(domain):
    table = dict(
        re.findall(r"^\| `?([\w.-]+?)`? \| (\d+) \|", (DOMAIN_DIR / "README.md").read_text(encoding="utf-8"), re.M)
    )
    assert table == {
        **{name: str(len(pairs)) for name, pairs in domain.items()},
        "all": str(sum(map(len, domain.values()))),
    }


# What a user tried in issue 48 and the round-5 model is to be tested on: training on them would make those tests
# measure nothing.
ISSUE_SENTENCES = [
    "Attention is all you need.",
    "Good morning.",
    "Good night, see you tomorrow.",
    "Stock markets fall as inflation fears grow in Europe",
    "My grandmother is eighty years old.",
]


def test_the_sentences_the_model_is_tested_on_are_not_in_it(domain):
    english = {words(en) for pairs in domain.values() for en, _ in pairs}
    assert not english & {words(sentence) for sentence in ISSUE_SENTENCES}
