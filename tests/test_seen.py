"""What the model has seen (modeldir/seen.py): how many training pairs hold each word, written by the trainer beside
the model and read back; each English token's word and count; the page's chips and the line naming the words the
model has rarely seen."""

import gzip
import html
import json
import os
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from helpers import toy_pairs, write_tsv
from modeldir.directory import open_model
from modeldir.loading import TOKENIZER
from modeldir.seen import (
    COMPOUND_COMMON,
    COMPOUND_PAIRS,
    LOANED,
    OFTEN_SEEN,
    PHRASE_PAIRS,
    RARELY_CAPITALISED,
    RARELY_SEEN,
    TRANSLATED,
    WORD_COUNTS,
    WordCounts,
    compound_translations,
    italian_grams,
    phrase_translations,
    read_word_counts,
    seen_words,
    words,
    write_word_counts,
)
from training.word_counts import main as word_counts_main
from web_helpers import served_translator  # noqa: F401 (fixture: served)
from webapp import translation

SHIPPED = "assets/model"


def test_each_pair_counts_once_per_word_whatever_its_case():
    counts = WordCounts(0)
    counts.add([("The cat sees the cat.", "Il gatto vede il gatto."), ("A dog!", "Un cane!")])
    assert counts.pairs == 2
    assert counts.english["the"] == 1 and counts.english["cat"] == 1 and counts.english["dog"] == 1
    assert counts.italian["gatto"] == 1 and counts.english["pandemic"] == 0
    assert words("Don't STOP, 2 cats") == ["don", "t", "stop", "2", "cats"]


def test_capitalised_english_words_are_counted_as_typed():
    counts = WordCounts(0)
    counts.add([("The Machine saw NATO. The end", "x"), ("the machine", "x"), ("I see", "x")])
    assert counts.capitalised == Counter({"The": 1, "Machine": 1})  # not "NATO", not "I": not capitalised
    assert counts.english["machine"] == 2


def test_a_word_is_rarely_capitalised_when_met_so_in_few_pairs_and_often_in_any_case():
    counts = WordCounts(0)
    counts.add([("the machine", "x")] * OFTEN_SEEN + [("Machine", "x")] * (RARELY_CAPITALISED - 1))
    counts.add([("Happy", "x")] * RARELY_CAPITALISED + [("happy", "x")] * OFTEN_SEEN)
    assert counts.rarely_capitalised("Machine") and not counts.rarely_capitalised("Happy")
    counts.add([("Zorblax", "x")])
    assert not counts.rarely_capitalised("Zorblax")  # a name, or a word met too rarely to know in any case
    assert not WordCounts(1, Counter({"machine": OFTEN_SEEN})).rarely_capitalised("Machine")  # nothing counted so


def test_a_loanword_is_a_word_the_pairs_copy_and_its_plural_is_its_singular():
    counts = WordCounts(0)
    n = TRANSLATED
    counts.add([("the computer", "il computer"), ("a robot", "un robot"), ("robots", "i robot")] * n)
    counts.add([("it comes", "viene"), ("come here", "vieni qui"), ("how", "come")] * n)  # "come": an Italian word
    counts.add([("the cat", "il gatto"), ("the Tom cat", "il gatto di Tom")] * n + [("Tom", "Tom")] * n)
    counts.add([("a club", "un club")] * n + [("a club", "un circolo")] * (LOANED * n + 1))  # translated more often
    counts.translated = {"cat": "gatto"}
    assert counts.loanwords() == {"computer": "computer", "robot": "robot", "robots": "robot"}
    # not: a word the pairs translate ("cat"), a name ("Tom"), an Italian word ("come"), one copied too rarely ("club")
    counts.from_lexicon = {"computer": "elaboratore"}
    assert "computer" not in counts.loanwords()  # a larger corpus's translation counts as the pairs' own


def test_a_phrase_italian_writes_as_one_word_is_kept_with_it():
    """ "good morning" -> "buongiorno": no word of the phrase goes with it alone ("good" is "buono", "morning"
    "mattina"); not "the cat", which "cat" explains alone; not "day after", inside "day after tomorrow" with the same
    word; not a phrase held by fewer than PHRASE_PAIRS pairs, nor one whose pairs hold only short Italian words."""
    n = PHRASE_PAIRS
    pairs = [("Good morning, Tom.", "Buongiorno, Tom."), ("Good morning!", "Buongiorno!")] * n
    pairs += [("A good book.", "Un buon libro."), ("Good food.", "Cibo buono."), ("This morning.", "Stamattina.")] * n
    pairs += [("Every morning.", "Ogni mattina."), ("The morning.", "La mattina.")] * n
    pairs += [
        ("The cat sleeps.", "Il gatto dorme."),
        ("The cat eats.", "Il gatto mangia."),
        ("A cat.", "Un gatto."),
    ] * n
    pairs += [("See you the day after tomorrow.", "Ci vediamo dopodomani."), ("Tomorrow.", "Domani.")] * n
    pairs += [("I leave the day after tomorrow.", "Parto dopodomani."), ("A day.", "Un giorno.")] * n
    pairs += [("See you tomorrow.", "A domani."), ("Tomorrow morning.", "Domani mattina.")] * n
    pairs += [("Every day.", "Ogni giorno."), ("What a day!", "Che giornata!")] * n
    pairs += [("After you.", "Dopo di te."), ("A cat after a dog.", "Un gatto dopo un cane.")] * n
    pairs += [("Good grief.", "Santo cielo.")] * (n - 1) + [("Yes, sir.", "Sì.")] * n
    pairs += [("Run dh_make now.", "Esegui dh_make ora.")] * n  # the manuals' tool: "dh_make" is one word, not "make"
    counts = WordCounts(0)
    counts.add(pairs)
    phrases = phrase_translations(pairs, counts.english, counts.italian)
    assert phrases["good morning"] == "buongiorno" and phrases["day after tomorrow"] == "dopodomani"
    assert "the cat" not in phrases  # "gatto" goes with "cat" alone as well
    assert "day after" not in phrases and "after tomorrow" not in phrases  # left to "day after tomorrow"
    assert "good grief" not in phrases  # held by too few pairs
    assert "yes sir" not in phrases  # its pairs' Italian words are all too short to be one for it
    assert phrases.get("dh make") != "make"  # the Italian read as the counts read it: no "make" in "dh_make"


def test_the_italian_words_of_a_phrase_are_runs_one_space_apart():
    """An apostrophe, a mark or a number ends a run: "L'apprendimento automatico" gives "apprendimento automatico",
    never "l apprendimento"."""
    grams = italian_grams("L'apprendimento automatico è utile, 3 volte.")
    assert {"apprendimento automatico", "automatico è", "apprendimento automatico è", "è utile"} <= grams
    assert not any(gram.startswith("l ") or "utile volte" in gram or "3" in gram for gram in grams)


def test_a_phrase_its_pairs_translate_with_the_same_italian_words_is_kept_with_them():
    """ "machine learning" -> "apprendimento automatico", the words its pairs hold, elided or not; not "football team",
    whose pairs split between "squadra di calcio" and "squadra di football"; not a phrase of a word held everywhere
    (COMPOUND_COMMON), one held by fewer than COMPOUND_PAIRS pairs, nor one whose Italian words end in a short one."""
    n = COMPOUND_PAIRS
    pairs = [("Machine learning is useful.", "L'apprendimento automatico è utile.")] * n
    pairs += [("I study machine learning.", "Studio apprendimento automatico.")] * n
    pairs += [("The football team won.", "La squadra di calcio ha vinto.")] * n
    pairs += [("The football team lost.", "La squadra di football ha perso.")] * n
    pairs += [("Computers are very fast.", "I computer sono molto veloci.")] * (2 * n)
    pairs += [("Olive oil is good.", "L'olio d'oliva è buono."), ("I buy olive oil.", "Compro olio d'oliva.")] * n
    pairs += [("Deep learning is new.", "L'apprendimento profondo è nuovo.")] * (n - 1)
    counts = WordCounts(0)
    counts.add(pairs)
    english = counts.english + Counter({"are": COMPOUND_COMMON})  # as in any corpus: "are" is everywhere
    compounds = compound_translations(pairs, english)
    assert compounds["machine learning"] == "apprendimento automatico"
    assert "football team" not in compounds  # neither rendering holds COMPOUND_SHARE of its pairs
    assert "are very" not in compounds and "are very fast" not in compounds
    assert "very fast" in compounds  # a phrase of uncommon words: the rule reads it
    assert "olive oil" not in compounds  # "olio d": the run ends at the apostrophe, on a short word
    assert "deep learning" not in compounds  # held by too few pairs
    assert compound_translations(pairs, counts.english)["are very fast"] == "sono molto veloci"


def test_counts_round_trip_through_the_model_directory(tmp_path):
    counts = WordCounts(0, sources=["a.tsv"])
    counts.add([("I see you.", "Ti vedo."), ("I see Tom.", "Vedo Tom.")])
    path = write_word_counts(tmp_path, counts)
    assert path.name == WORD_COUNTS and path.read_bytes() == write_word_counts(tmp_path, counts).read_bytes()
    read = read_word_counts(tmp_path)
    assert (read.pairs, read.english, read.italian, read.sources) == (2, counts.english, counts.italian, ["a.tsv"])
    counts.phrases = {"good morning": "buongiorno"}
    write_word_counts(tmp_path, counts)
    assert read_word_counts(tmp_path).phrases == {"good morning": "buongiorno"}
    counts.compounds = {"machine learning": "apprendimento automatico"}
    write_word_counts(tmp_path, counts)
    assert read_word_counts(tmp_path).compounds == {"machine learning": "apprendimento automatico"}
    assert read.capitalised == counts.capitalised == Counter({"Tom": 1})  # "I" is one letter
    assert read_word_counts(tmp_path / "nowhere") is None


def test_the_same_counts_are_written_byte_for_byte_whatever_order_their_words_were_met_in(tmp_path):
    """A Counter keeps words held as often in the order it met them, and `WordCounts.add` meets a pair's words in a
    set's order, which hashing changes from run to run: the file must not."""
    met, other = WordCounts(1), WordCounts(1)
    met.english.update(["www", "com", "ugly", "bright"])
    other.english.update(["bright", "ugly", "com", "www"])
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = write_word_counts(tmp_path / "a", met).read_bytes()
    assert first == write_word_counts(tmp_path / "b", other).read_bytes()
    assert list(json.loads(gzip.decompress(first))["en"]) == ["bright", "com", "ugly", "www"]


def test_a_counts_file_written_before_capitalised_words_were_counted_still_reads(tmp_path):
    old = {"pairs": 2, "en": {"machine": 2}, "it": {"macchina": 2}}
    (tmp_path / WORD_COUNTS).write_bytes(gzip.compress(json.dumps(old).encode(), mtime=0))
    read = read_word_counts(tmp_path)
    assert read.english == Counter({"machine": 2}) and read.capitalised == Counter()
    assert read.translated == read.from_lexicon == read.phrases == read.compounds == {} and read.lexicon == []


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"not gzip", "cannot read it"),
        (gzip.compress(b"{oops", mtime=0), "cannot read it"),
        (gzip.compress(json.dumps({"pairs": 2, "en": {"a": "x"}, "it": {}}).encode(), mtime=0), "expected"),
        (gzip.compress(json.dumps([1, 2]).encode(), mtime=0), "expected"),
        (
            gzip.compress(json.dumps({"pairs": 2, "en": {}, "it": {}, "translated": {"cat": 3}}).encode(), mtime=0),
            "expected",
        ),
        (
            gzip.compress(json.dumps({"pairs": 2, "en": {}, "it": {}, "lexicon": "ep.tsv"}).encode(), mtime=0),
            "expected",
        ),
        (
            gzip.compress(json.dumps({"pairs": 2, "en": {}, "it": {}, "from_lexicon": ["Tevere"]}).encode(), mtime=0),
            "expected",
        ),
        (
            gzip.compress(json.dumps({"pairs": 2, "en": {}, "it": {}, "from_lexicon": {"a": "2 b"}}).encode(), mtime=0),
            "expected",
        ),
        (
            gzip.compress(json.dumps({"pairs": 2, "en": {}, "it": {}, "phrases": {"a b": "c d"}}).encode(), mtime=0),
            "expected",
        ),
        (
            gzip.compress(json.dumps({"pairs": 2, "en": {}, "it": {}, "compounds": {"a b": "c'd"}}).encode(), mtime=0),
            "expected",
        ),
    ],
    ids=[
        "not gzip",
        "not JSON",
        "a count not a number",
        "not an object",
        "a translation not a word",
        "a lexicon not a list",
        "the lexicon's translations not an object",
        "a lexicon's translation not a word",
        "a phrase's translation not a word",
        "a compound's translation not words one space apart",
    ],
)
def test_a_malformed_counts_file_is_a_clear_error(tmp_path, content, problem):
    (tmp_path / WORD_COUNTS).write_bytes(content)
    with pytest.raises(ValueError, match=f"{WORD_COUNTS}: {problem}"):
        read_word_counts(tmp_path)


def test_a_continued_model_keeps_the_larger_count_of_each_word():
    earlier, now = WordCounts(0, sources=["train.tsv"]), WordCounts(0, sources=["train.tsv", "news.tsv"])
    earlier.add([("the cat", "il gatto")] * 3)
    now.add([("the cat", "il gatto"), ("the pandemic", "la pandemia")])
    earlier.add([("The cat", "Il gatto")] * 2)
    now.add([("The pandemic", "La pandemia")])
    merged = now.at_least(earlier)
    assert merged.english == Counter({"the": 5, "cat": 5, "pandemic": 2}) and merged.pairs == 5
    assert merged.capitalised == Counter({"The": 2})
    assert merged.sources == ["train.tsv", "news.tsv"]


def test_each_token_gets_the_word_it_spells_and_a_split_word_its_rarest_part():
    counts = WordCounts(0)
    counts.add([("the cat", "x")] * 9 + [("self", "x")] * 6 + [("attention", "x")] * 2)
    seen = seen_words(["▁the", "▁self", "-", "att", "ention", "▁c", "at", ".", "</s>"], counts)
    assert seen.words == [
        ("the", 9),
        ("attention", 2),
        None,
        ("attention", 2),
        ("attention", 2),
        ("cat", 9),
        ("cat", 9),
        None,
        None,
    ]
    assert [seen.is_rare(i) for i in range(9)] == [False, True, False, True, True, False, False, False, False]
    assert seen.describe(0) == " · 'the': 9 of 17 training pairs" and seen.describe(8) == ""
    assert seen.warning() == (
        "'attention': 2 of 17 training pairs. Translations of words it has rarely seen are guesses."
    )


def test_the_warning_names_the_three_rarest_and_counts_the_rest():
    counts = WordCounts(0)
    counts.add([("common", "x")] * RARELY_SEEN + [("b", "x")] * (RARELY_SEEN - 1))
    seen = seen_words(["▁zeta", "▁alpha", "▁b", "▁common", "▁gamma", "▁delta"], counts)
    assert seen.rarely_seen()[:3] == [("alpha", 0), ("delta", 0), ("gamma", 0)]
    assert seen.warning().startswith(
        "'alpha': 0 of 9 training pairs; 'delta': 0 of 9 training pairs; 'gamma': 0 of 9 training pairs (and 2 more)."
    )
    assert seen_words(["▁common"], counts).warning() is None


def test_the_trainer_writes_the_counts_of_its_training_pairs(tiny_model_dir, toy_corpus):
    counts = read_word_counts(tiny_model_dir)
    pairs = toy_pairs()
    # the other test process may have trained it, on its own copy of the toy corpus
    assert counts.pairs == len(pairs) and [Path(s).name for s in counts.sources] == [toy_corpus[0].name]
    assert counts.english["cat"] == sum("cat" in words(en) for en, _ in pairs) > 0
    assert counts.italian["gatto"] == sum("gatto" in words(it) for _, it in pairs) > 0
    assert open_model(tiny_model_dir).word_counts.english == counts.english
    assert counts.translated["cat"] == "gatto"  # what its pairs translate, not copy


def test_the_command_counts_a_model_trained_before_the_trainer_did(tmp_path, capsys):
    data = write_tsv(tmp_path / "train.tsv", [("Good morning.", "Buongiorno."), ("Good night.", "Buona notte.")])
    with pytest.raises(ValueError, match=r"tokenizer\.json: cannot read tokenizer"):  # it reads by the vocabulary
        word_counts_main(["--model", str(tmp_path), "--train", str(data)])
    shutil.copy(Path(SHIPPED) / TOKENIZER, tmp_path / TOKENIZER)
    word_counts_main(["--model", str(tmp_path), "--train", str(data)])
    assert read_word_counts(tmp_path).english == Counter({"good": 2, "morning": 1, "night": 1})
    assert re.search(r"3 English and 3 Italian words in 2 pairs, 0 English words translated", capsys.readouterr().out)
    more = write_tsv(tmp_path / "more.tsv", [("Morning!", "Buongiorno!")])
    word_counts_main(["--model", str(tmp_path), "--train", str(more), "--add"])
    added = read_word_counts(tmp_path)
    assert added.english == Counter({"good": 2, "morning": 1, "night": 1}) and added.pairs == 2  # kept, the larger
    assert added.capitalised == Counter({"Good": 2, "Morning": 1}) and added.sources == [str(more), str(data)]
    tiber = [("The Tiber is long.", "Il Tevere è lungo."), ("Rome has the Tiber.", "Roma ha il Tevere.")] * 3
    corpus = write_tsv(tmp_path / "corpus.tsv", tiber)
    word_counts_main(["--model", str(tmp_path), "--add", "--lexicon", str(corpus)])  # the counts kept as they are
    lexicon = read_word_counts(tmp_path)
    assert lexicon.from_lexicon["Tiber"] == "Tevere" and lexicon.lexicon == [str(corpus)]
    assert lexicon.english == added.english and lexicon.sources == added.sources
    out = capsys.readouterr().out
    assert re.search(rf"in 2 pairs, 0 English words translated, not copied, and {len(lexicon.from_lexicon)} more", out)
    written = (tmp_path / WORD_COUNTS).read_bytes()
    word_counts_main(["--model", str(tmp_path), "--add", "--lexicon", str(corpus)])
    assert (tmp_path / WORD_COUNTS).read_bytes() == written  # read anew: the same counts, byte for byte


def test_the_command_needs_pairs_to_count_or_counts_to_keep(tmp_path, capsys):
    shutil.copy(Path(SHIPPED) / TOKENIZER, tmp_path / TOKENIZER)
    corpus = write_tsv(tmp_path / "corpus.tsv", [("The Tiber flows.", "Il Tevere scorre.")] * 5)
    with pytest.raises(SystemExit):
        word_counts_main(["--model", str(tmp_path), "--lexicon", str(corpus)])
    assert "give the --train files, or --add" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        word_counts_main(["--model", str(tmp_path), "--add", "--lexicon", str(corpus)])
    assert "has no word counts to keep" in capsys.readouterr().err
    assert read_word_counts(tmp_path) is None  # nothing written


def test_the_shipped_model_says_what_it_has_rarely_seen():
    assert os.path.getsize(f"{SHIPPED}/{WORD_COUNTS}") <= 1_000_000
    counts = read_word_counts(SHIPPED)
    # "councilmen": the demo set's Winograd sentence ("pandemic", once rare, is in the domain set's news now)
    assert counts.english["the"] > 50_000 and counts.english["councilmen"] < RARELY_SEEN
    assert counts.pairs > 300_000


def test_the_page_marks_rarely_seen_words_on_the_chips_and_says_it(served):
    served.directory.word_counts = counts = WordCounts(0)
    counts.add([("I see the cat.", "io vedo il gatto.")] * RARELY_SEEN + [("we love the dog.", "noi amiamo il cane.")])
    try:
        _, status, chips, _ = translation.translate(served, "we see the dog.", "greedy", 4, 1.0, 0, 0)
    finally:
        served.directory.word_counts = None
    rare = re.findall(r'<span class="chip[^"]* rare"[^>]*>([^<]*)</span>', chips)
    assert rare == ["▁we", "▁dog"]  # 1 pair each; "see" was in RARELY_SEEN, "the" in all
    assert f"'dog': 1 of {RARELY_SEEN + 1} training pairs; 'we': 1 of {RARELY_SEEN + 1} training pairs." in status
    assert f"'see': {RARELY_SEEN} of {RARELY_SEEN + 1} training pairs" in html.unescape(chips)
    _, status, chips, _ = translation.translate(served, "we see the dog.", "greedy", 4, 1.0, 0, 0)
    assert " rare" not in chips and "Rarely seen" not in status  # a model directory without counts


def test_the_page_names_the_dates_percentages_amounts_decimals_and_initials_it_read_otherwise(served):
    _, status, _, _ = translation.translate(served, "See you on March 3rd, or the 12th of May.", "greedy", 1, 1.0, 0, 0)
    assert "Read as the model knows them best: 'March 3rd' as '3 March', '12th of May' as '12 May'" in status
    _, status, _, _ = translation.translate(served, "See you in the 19th century.", "greedy", 1, 1.0, 0, 0)
    assert "Read as the model" not in status  # no month: no date, and a century in digits is read as typed
    _, status, _, _ = translation.translate(served, "Built in the nineteenth century.", "greedy", 1, 1.0, 0, 0)
    assert "Read as the model knows them best: 'nineteenth century' as '19th century'" in status
    _, status, _, _ = translation.translate(served, "Prices rose by 3 percent.", "greedy", 1, 1.0, 0, 0)
    assert "Read as the model knows them best: '3 percent' as '3%'" in status
    _, status, _, _ = translation.translate(served, "It costs €20, not $ 25.", "greedy", 1, 1.0, 0, 0)
    assert "Read as the model knows them best: '€20' as '20 euros', '$ 25' as '25 dollars'" in status
    _, status, _, _ = translation.translate(served, "It costs $31.25, from 7.30.", "greedy", 1, 1.0, 0, 0)
    assert (
        "Read as the model knows them best: '$31.25' as '31.25 dollars', '31.25' as '31,25'" in status
    )  # not the time
    _, status, _, _ = translation.translate(
        served, "The UK left the E.U. and the UN Security Council.", "greedy", 1, 1.0, 0, 0
    )
    assert "Read as the model knows them best: 'UK' as 'United Kingdom', 'E.U.' as 'European Union'." in status


def test_the_page_says_which_capitalised_words_it_read_in_lower_case(served):
    counted = served.translator.rare_capital
    served.translator.rare_capital = {"Cat"}.__contains__  # as counts where "Cat" was met capitalised rarely
    try:
        _, status, chips, _ = translation.translate(served, "Cat sees the dog.", "greedy", 1, 1.0, 0, 0)
    finally:
        served.translator.rare_capital = counted
    assert "Read in lower case: 'Cat'. The model met it capitalised" in status
    assert ">▁cat<" in chips  # the token the model read
