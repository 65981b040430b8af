"""inputs.copies.CopiesTranslated and modeldir.seen.translations: an English word the training pairs translate, and
the model starts to copy, or writes made-up Italian for, is written as the pairs translate it ("Le Alps" -> "Le Alpi",
"fioritorio" -> "farina"), on the shipped vocabulary."""

import math
from collections import Counter
from pathlib import Path

import pytest
import torch

from helpers import allowed_after
from inputs.copies import (
    COMMON,
    COMPOUND_PLAUSIBLE,
    KNOWN,
    OFTEN,
    PLAUSIBLE,
    SURE,
    CopiesTranslated,
    conjugated,
    full_article,
    inflected,
    keyed_words,
)
from inputs.rules import Rules
from interpretability.inspection import inspect
from modeldir.directory import open_model
from modeldir.seen import (
    MOST,
    TRANSLATED,
    WordCounts,
    counted,
    read_word_counts,
    spelt_through,
    write_word_counts,
    written_form,
)
from transformer.tokenizer import BOS_ID, EOS_ID, load_tokenizer

MODEL_DIR = Path(__file__).resolve().parent.parent / "assets" / "model"
TOKENIZER = load_tokenizer(MODEL_DIR / "tokenizer.json")
TRANSLATED_WORDS = {
    "Alps": "Alpi",
    "sicily": "Sicilia",
    "Sicily": "Sicilia",
    "protest": "protestare",
    "fuel": "carburante",
}


@pytest.fixture
def rule():
    return CopiesTranslated(TOKENIZER, TRANSLATED_WORDS)  # a new one each test: it remembers the words it began


def test_words_are_keyed_as_typed_but_a_sentence_starts_in_lower_case():
    text = "Fuel prices rose. Turkey and the Alps? I am."
    assert list(keyed_words(text)) == ["fuel", "prices", "rose", "turkey", "and", "the", "Alps"]  # "I", "am": short


def test_an_initial_ends_no_sentence():
    assert list(keyed_words("President George W. Bush. Bush spoke.")) == [
        "president",
        "George",
        "Bush",  # after "W.": the name, as typed
        "bush",  # after "Bush.": a sentence starts
        "spoke",
    ]


def test_the_pairs_translate_a_word_they_never_copy_into_the_italian_word_that_goes_with_it():
    alps = [(f"The Alps are {a}.", f"Le Alpi sono {b}.") for a, b in [("high", "alte"), ("cold", "fredde")] * 3]
    alps += [("They are here.", "Loro sono qui."), ("I see the girls.", "Vedo le ragazze.")] * 3
    pizza = [("I like pizza.", "Mi piace la pizza.")] * TRANSLATED  # copied: no translation of its own
    rare = [("The Tiber flows.", "Il Tevere scorre.")] * (TRANSLATED - 1)  # too few pairs to say
    names = [("I see Bill.", "Vedo Bill."), ("Ask Bill.", "Chiedi a Bill.")] * 3  # a name: copied
    bills = [("Pay the bill.", "Paga il conto."), ("The bill, please.", "Il conto, per favore.")] * 3
    ten = [("I have ten cats.", "Ho dieci gatti."), ("We have ten.", "Ne abbiamo dieci.")] * 3
    hold_on = [("They hold on.", "Tengono duro.")] * 3  # "▁ten gono": written, "▁ten" may begin "tengono"
    august = [("It rains in August.", "Piove in agosto."), ("See you in August.", "Ci vediamo ad agosto.")] * 3
    augustus = [("Augustus ruled Rome.", "Augusto governò Roma.")] * 3  # "▁aug usto": never through "august"
    found = counted(alps + pizza + rare + names + bills + ten + hold_on + august + augustus, [], TOKENIZER).translated
    assert found["Alps"] == "Alpi"  # written as the Italian writes it inside a sentence, with its capital
    assert found["bill"] == "conto" and "Bill" not in found
    assert {"pizza", "tiber", "Tiber", "ten"}.isdisjoint(found)
    assert found["August"] == "agosto"  # "augusto" begins with it, but its tokens never end at "august"
    assert counted(alps + ten, [], TOKENIZER).translated["ten"] == "dieci"


def test_a_word_is_left_out_where_the_vocabulary_spells_an_italian_word_through_it():
    assert spelt_through(TOKENIZER, ["tengono", "augusto"]) == {"ten", "aug", "a"}  # "▁A ug usto" capitalised


def test_a_word_the_pairs_hold_too_rarely_is_translated_as_a_larger_corpus_translates_it():
    own = [("I saw the Tiber.", "Ho visto il Tevere."), ("We love the Alps.", "Amiamo le Alpi.")] * 2
    own += [("It rains in August.", "Piove in agosto."), ("See you in August.", "Ci vediamo ad agosto.")] * 3
    counts = counted(own, ["own.tsv"], TOKENIZER)
    assert counts.translated["August"] == "agosto" and {"Tiber", "Alps"}.isdisjoint(counts.translated)  # too few
    corpus = [("The Tiber is long.", "Il Tevere è lungo."), ("Rome has the Tiber.", "Roma ha il Tevere.")] * 3
    corpus += [("The Alps are high.", "Le Alpi sono alte."), ("We saw the Alps.", "Abbiamo visto quelle Alpi.")] * 3
    corpus += [(f"{n} litres", f"{n} litri") for n in range(MOST + 1)]  # however often the corpus holds it
    corpus += [("Rain in August.", "Pioggia in Agosto."), ("August, then.", "Agosto, allora.")] * 3
    counts.with_lexicon(corpus, ["corpus.tsv"], TOKENIZER)
    read = counts.from_lexicon
    assert read["Tiber"] == "Tevere" and read["Alps"] == "Alpi" and read["litres"] == "litri"
    assert "August" not in read and counts.all_translated["August"] == "agosto"  # its own pairs': not "Agosto"
    assert counts.all_translated["Tiber"] == "Tevere" and "Tiber" not in counts.translated  # kept apart
    assert counts.lexicon == ["corpus.tsv"] and counts.sources == ["own.tsv"]
    assert counts.english["tiber"] == 2  # the counts of what the model saw stay its own
    counts.with_lexicon(corpus, ["corpus.tsv"], TOKENIZER)
    assert counts.from_lexicon == read  # read anew, the same
    counts.with_lexicon(corpus[6:], ["other.tsv"], TOKENIZER)  # a lexicon without the Tiber replaces the first
    assert "Tiber" not in counts.all_translated and counts.from_lexicon["Alps"] == "Alpi"
    assert counts.lexicon == ["other.tsv"]


def test_a_word_held_by_pairs_that_do_not_translate_it_is_read_in_the_larger_corpus_too():
    counts = WordCounts(0, sources=["own.tsv"])
    counts.add([("The Pope spoke.", "Il Pontefice parlò."), ("Fans of the Pope.", "I tifosi del papa.")] * 3)
    counts.add([("The anthem.", "L'inno.")] * KNOWN)  # held often enough to be the model's own to write
    counts.add([("The director.", "Il regista."), ("A new director.", "Un nuovo direttore.")] * 15)  # half known
    counts.translated = {"fans": "ventilatori"}  # what the model's own pairs say is kept
    corpus = [("The Pope came.", "Il Papa è venuto."), ("A new Pope.", "Un nuovo Papa.")] * 3
    corpus += [("Football fans sing.", "I tifosi cantano."), ("The fans left.", "I tifosi sono partiti.")] * 3
    corpus += [("Sing the anthem.", "Cantate l'inno."), ("An anthem plays.", "Suona un inno.")] * 3
    corpus += [("The director spoke.", "Il direttore ha parlato."), ("Our director.", "Il nostro direttore.")] * 3
    counts.with_lexicon(corpus, ["corpus.tsv"], TOKENIZER)
    assert TRANSLATED <= counts.english["pope"] < KNOWN and counts.from_lexicon["Pope"] == "Papa"
    assert 20 <= counts.english["director"] < KNOWN and counts.from_lexicon["director"] == "direttore"
    assert counts.all_translated["fans"] == "ventilatori" and "anthem" not in counts.all_translated


VERBS = [("grows", "cresce"), ("is new", "è nuovo"), ("pays", "paga"), ("works", "funziona"), ("sells", "vende")]


def test_an_italian_word_that_goes_better_with_a_word_beside_the_english_one_is_not_its_translation():
    gases = [("Greenhouse gases rise.", "I gas serra aumentano.")] * 4 + [("Gases burn.", "I gas bruciano.")] * 2
    gas = [("The gas is cheap.", "Il gas costa poco.")] * 4 + [("Dogs run.", "I cani corrono.")] * 20
    drinks = [("Alcoholic beverages.", "Bevande alcoliche.")] * 4 + [("Beverages, please.", "Bevande, grazie.")] * 2
    drinks += [("Alcoholic drinks.", "Bevande alcoliche.")] * 4
    found = counted(gases + gas + drinks, [], TOKENIZER).translated
    assert found["gases"] == "gas"  # "serra" goes with it more often, but better still with "greenhouse"
    assert found["beverages"] == "bevande"  # better with "alcoholic", but the pairs without "alcoholic" hold it too
    commerce = [(f"Electronic commerce {en}.", f"Il commercio elettronico {it}.") for en, it in VERBS]
    commerce += [("An electronic book.", "Un libro elettronico.")] * 2
    commerce += [("Trade is free.", "Il commercio è libero.")] * 20
    found = counted(commerce, [], TOKENIZER).translated
    assert "commerce" not in found  # "elettronico" is "electronic"'s, and "commercio" too often another word's
    assert found["electronic"] == "elettronico"


def test_an_italian_word_is_written_in_capitals_only_for_an_english_acronym():
    forms = Counter({"CECA": 5, "ceca": 3, "Ceca": 1})  # the coal community's acronym is the Czech word too
    assert written_form("Czech", forms, "ceca") == "ceca" and written_form("czech", forms, "ceca") == "ceca"
    assert written_form("ECSC", forms, "ceca") == "CECA" and written_form("SMEs", Counter({"PMI": 4}), "pmi") == "PMI"
    assert written_form("Alps", Counter({"Alpi": 4, "alpi": 1}), "alpi") == "Alpi"
    assert written_form("fuel", Counter({"FUEL": 2}), "fuel") == "fuel"  # no form fits: the word as counted


def test_the_translated_words_round_trip_through_the_model_directory(tmp_path):
    counts = WordCounts(0, sources=["a.tsv"])
    counts.add([("The Alps.", "Le Alpi.")])
    counts.translated = {"Alps": "Alpi"}
    write_word_counts(tmp_path, counts)
    assert read_word_counts(tmp_path).translated == {"Alps": "Alpi"}
    older = WordCounts(1, translated={"Alps": "Alpe", "fuel": "carburante"}, lexicon=["corpus.tsv"])
    older.from_lexicon = {"Tiber": "Tevere"}
    merged = counts.at_least(older)
    assert merged.translated == {"Alps": "Alpi", "fuel": "carburante"}  # this model's first
    assert merged.lexicon == ["corpus.tsv"] and merged.from_lexicon == {"Tiber": "Tevere"}
    counts.lexicon, counts.from_lexicon = ["europarl.tsv.gz"], {"Tiber": "Tevere"}
    write_word_counts(tmp_path, counts)
    read = read_word_counts(tmp_path)
    assert read.lexicon == ["europarl.tsv.gz"] and (read.translated, read.from_lexicon) == (
        {"Alps": "Alpi"},
        {"Tiber": "Tevere"},
    )


def test_the_words_of_a_source_its_pairs_translate(rule):
    assert rule.copies(tuple(TOKENIZER.encode("The Alps and the alps.").ids + [EOS_ID])) == (("alps", "Alpi"),)
    assert rule.copies(tuple(TOKENIZER.encode("Sicily is big. Fuel is dear.").ids)) == (
        ("sicily", "Sicilia"),
        ("fuel", "carburante"),
    )
    assert rule.copies(tuple(TOKENIZER.encode("I love alps and Fuel.").ids)) == ()  # not as the pairs had them


def test_a_copy_about_to_be_finished_is_written_as_the_pairs_translate_it(rule):
    source, among = "The Alps separate Italy from France.", ["ps", "pi", "p", "pe", "▁e"]
    assert TOKENIZER.encode("Le Alps").tokens == ["▁Le", "▁Al", "ps"]
    assert allowed_after(rule, TOKENIZER, source, "Le Al", among, best="ps") == {"pi", "p"}
    fresh = CopiesTranslated(TOKENIZER, TRANSLATED_WORDS)
    assert allowed_after(fresh, TOKENIZER, source, "Le Al", among, best="pi") == set(among)  # no copy: free


def test_the_italian_word_begun_is_held_to_its_end_and_ends_there(rule):
    source, among = "The Alps separate Italy from France.", ["ps", "pi", "i", "re", "ine", "▁e"]
    allowed_after(rule, TOKENIZER, source, "Le Al", among, best="ps")  # the rule begins "Alpi" after "Al"
    assert allowed_after(rule, TOKENIZER, source, "Le Alp", among, best="re") == {"i"}  # not "Alpre"
    assert allowed_after(rule, TOKENIZER, source, "Le Alpi", among) == {"▁e"}  # whole: no letter follows
    fresh = CopiesTranslated(TOKENIZER, TRANSLATED_WORDS)  # the model wrote "Alp" itself: free
    assert allowed_after(fresh, TOKENIZER, source, "Le Alp", among, best="re") == set(among)


def test_a_copy_that_begins_its_italian_word_or_a_word_not_in_the_source_is_free(rule):
    among = ["est", "ano", "▁Al"]
    assert TOKENIZER.encode("protestano").tokens == ["▁pro", "t", "est", "ano"]
    assert allowed_after(rule, TOKENIZER, "Students protest.", "Gli studenti prot", among, best="est") == set(among)
    assert allowed_after(rule, TOKENIZER, "They climb.", "Le Al", ["ps", "pi"], best="ps") == {"ps", "pi"}


def test_the_tokens_that_spell_an_italian_word_start_one_or_go_on_with_it(rule):
    starting = {TOKENIZER.id_to_token(i) for i in rule.tokens_spelling("carburante", "", True).tolist()}
    inside = {TOKENIZER.id_to_token(i) for i in rule.tokens_spelling("carburante", "car", False).tolist()}
    assert "▁car" in starting and all(token.startswith("▁c") for token in starting)
    assert "b" in inside and not any(token.startswith("▁") for token in inside)
    assert rule.tokens_spelling("carburante", "carburante", False) is None
    assert rule.tokens_spelling("carburante", "fu", False) is None


def test_a_translation_that_starts_with_the_word_starts_it_with_a_capital():
    attention = CopiesTranslated(TOKENIZER, {"attention": "attenzione"})
    among = ["▁Att", "▁attenzione", "▁atten", "▁attention"]
    assert allowed_after(attention, TOKENIZER, "Attention, please.", "", among, best="▁attention") == {"▁Att"}
    later = allowed_after(attention, TOKENIZER, "Pay attention.", "Fai", among, best="▁attention")
    assert later == {"▁attenzione", "▁atten"}


def test_each_row_follows_its_own_source_and_a_row_is_never_left_nothing(rule):
    sources = ["The Alps separate Italy.", "They separate Italy."]
    src = torch.nn.utils.rnn.pad_sequence([torch.tensor(TOKENIZER.encode(s).ids + [EOS_ID]) for s in sources]).T
    ys = torch.tensor([[BOS_ID] + TOKENIZER.encode("Le Al").ids] * 2)
    logits = torch.zeros(2, TOKENIZER.get_vocab_size())
    logits[:, TOKENIZER.token_to_id("ps")] = 1.0
    rule(logits, ys, src)
    assert torch.isinf(logits[0, TOKENIZER.token_to_id("ps")]) and torch.isfinite(logits[1]).all()
    blocked = torch.zeros(1, TOKENIZER.get_vocab_size())
    blocked[0, [TOKENIZER.token_to_id(t) for t in ("pi", "p")]] = float("-inf")  # another rule forbade "Alpi"
    blocked[0, TOKENIZER.token_to_id("ps")] = 1.0
    rule(blocked, ys[:1], src[:1])
    assert torch.isfinite(blocked[0, TOKENIZER.token_to_id("ps")])  # the copy stays: something is written


@pytest.fixture(scope="module")
def shipped():
    return open_model(MODEL_DIR)


def translated_with_copies_rule(translator, copies_rule, sentences):
    """What the shipped `translator` writes for `sentences` with its copies rule (the last of its rules) replaced by
    `copies_rule` (None: left out); its own rules are put back after."""
    ruled = translator.rule
    try:
        translator.rule = Rules(*ruled.rules[:-1], *([copies_rule] if copies_rule else []))
        return translator.translate(sentences)
    finally:
        translator.rule = ruled


def looked_ahead(source, written, best):
    """`CopiesTranslated.ahead`'s arguments: the English `source`'s ids, the Italian `written`'s, the token `best`'s."""
    source_ids, prefix = tuple(TOKENIZER.encode(source).ids + [EOS_ID]), (BOS_ID, *TOKENIZER.encode(written).ids)
    return source_ids, prefix, TOKENIZER.token_to_id(best)


def test_a_copy_whose_first_token_leaves_its_italian_word_is_seen_ahead(shipped):
    easter = CopiesTranslated(TOKENIZER, {"Easter": "Pasqua"}, shipped.translator.model)
    among = ["▁E", "▁P", "▁B"]
    assert TOKENIZER.encode("Buona Easter").tokens[-3:] == ["▁E", "as", "ter"]  # "E" cannot begin "Pasqua"
    assert allowed_after(easter, TOKENIZER, "Happy Easter!", "Buona", among, best="▁E") == {"▁P"}
    blind = CopiesTranslated(TOKENIZER, {"Easter": "Pasqua"})  # without the model, nothing is seen ahead
    assert allowed_after(blind, TOKENIZER, "Happy Easter!", "Buona", among, best="▁E") == set(among)


def test_a_word_that_leaves_the_italian_word_but_copies_nothing_is_free(shipped):
    easter = CopiesTranslated(TOKENIZER, {"Easter": "Pasqua"}, shipped.translator.model)
    among = ["▁e", "▁P"]  # "e" (and) begins "Easter" and leaves "Pasqua": the model goes on to "le uova"
    assert allowed_after(easter, TOKENIZER, "I like Easter and eggs.", "Mi piace la Pasqua", among, best="▁e") == {
        "▁e",
        "▁P",
    }
    assert easter.ahead.cache_info().misses == 1  # it was looked ahead at, once


def test_a_copy_that_begins_its_italian_word_is_translated_where_the_model_would_end_it(shipped):
    source = "Among his many records, there is also flying at 15,445 metres, above the Andes, but with a co-pilot."
    written, among = (
        "Tra i suoi molti record, anche volano al 15,445 metri, sopra le Andes, ma con un co-pil",
        ["ot", "o", "."],
    )
    pilot = CopiesTranslated(TOKENIZER, {"pilot": "pilota"}, shipped.translator.model)
    assert allowed_after(pilot, TOKENIZER, source, written, among, best="ot") == {"ot", "o"}  # "pilot" + "a"
    assert allowed_after(pilot, TOKENIZER, source, written + "ot", ["a", "o", "."]) == {"a"}
    protest = CopiesTranslated(TOKENIZER, {"protest": "protestare"}, shipped.translator.model)
    among = ["est", "ano", "e"]  # the model goes on to "protestano": the Italian word of its own
    assert allowed_after(protest, TOKENIZER, "Students protest.", "Gli studenti prot", among, best="est") == set(among)


def test_a_made_up_word_is_told_from_the_model_inflecting_the_pairs_word():
    assert not inflected("fioritorio", "farina") and not inflected("trofia", "trofeo")
    assert not inflected("sceriff", "sceriffo")  # no Italian ending: cut short, not inflected
    assert inflected("addestrata", "addestrato") and inflected("congelati", "congelato")  # gender, number
    assert inflected("dominerà", "dominare") and inflected("ordinari", "ordinario")  # tense; a plural
    assert not inflected("farina", "farina")  # the word itself is no other ending of it
    assert not inflected("ranrogeno", "rana") and not inflected("pandemico", "pandemia")  # more than a noun's vowel


def test_a_verbs_made_up_future_takes_the_vowel_of_its_conjugation():
    assert conjugated("riaprerà", "riaprire") == "riaprirà" and conjugated("Riaprerebbe", "Riaprire") == "Riaprirebbe"
    assert conjugated("parliremo", "parlare") == "parleremo" and conjugated("crediranno", "credere") == "crederanno"
    assert conjugated("riaprirà", "riaprire") is None and conjugated("parlerà", "parlare") is None  # right already
    assert conjugated("riaprono", "riaprire") is None and conjugated("riaperto", "riaprire") is None  # no future
    assert conjugated("riaprerà", "riaperto") is None  # a participle, not an infinitive: its vowel is not known
    assert conjugated("intervenerà", "intervenire") is None  # "interverrà": a future that drops the vowel


def test_a_made_up_future_of_the_pairs_verb_is_written_in_its_conjugation(shipped):
    """ "Il museo si riaprerà" for "The museum will reopen": the pairs give "reopen" "riaprire", an -ire verb, whose
    future is "riaprirà"; the model's "riaprerà" is no Italian word, and no verb the rule would leave as the model's
    own tense."""
    sentence = ["The museum will reopen next week."]
    assert shipped.word_counts.all_translated["reopen"] == "riaprire" and not shipped.word_counts.italian["riaprerà"]
    assert "riaprerà" in translated_with_copies_rule(shipped.translator, None, sentence)[0]
    assert "riaprirà" in shipped.translator.translate(sentence)[0]


def test_the_source_is_read_as_runs_of_letters_each_token_owning_its_word(rule):
    source = tuple(TOKENIZER.encode("Czech-Indian relations").ids + [EOS_ID])  # ▁C ze ch - I n di an ▁relations
    words, owners = rule.letter_words(source)
    assert words == ["czech", "indian", "relations"]
    assert owners == [0, 0, 0, -1, 1, 1, 1, 1, 2, -1]  # "-" and </s> write into no word


def test_a_made_up_word_is_written_as_the_pairs_translate_the_english_it_attends_to(shipped):
    counts, model = shipped.word_counts, shipped.translator.model
    flour = CopiesTranslated(TOKENIZER, counts.translated, model, counts.italian)
    source, written, among = "She made a cake with flour, sugar and eggs.", "Ha fatto una torta con", ["▁fi", "▁far"]
    assert TOKENIZER.encode("fioritorio").tokens[0] == "▁fi" and counts.italian["fioritorio"] == 0  # no pair holds it
    assert allowed_after(flour, TOKENIZER, source, written, among, best="▁fi") == {"▁far"}  # "farina"
    source_ids, prefix, best = looked_ahead(source, written, "▁fi")
    word, weights = flour.ahead(source_ids, prefix, best)
    assert word == "fioritorio"  # the model's own word, followed to its end
    words, owners = flour.source_words(source_ids)
    weighed = {w: sum(x for o, x in zip(owners, weights.tolist()) if o == k) for k, w in enumerate(words)}
    assert max(weighed, key=weighed.get) == "flour"  # the English its cross-attention weighed most while writing it
    without = CopiesTranslated(TOKENIZER, counts.translated, model)  # not told which Italian words the pairs hold
    assert allowed_after(without, TOKENIZER, source, written, among, best="▁fi") == set(among)
    said = "Ha fatto una torta di farina con"  # "farina" is written already: the model goes on alone
    assert allowed_after(flour, TOKENIZER, source, said, among, best="▁fi") == set(among)


def test_a_made_up_word_begun_with_the_lone_word_start_is_looked_at_too(shipped):
    """No token that starts a word begins "eredito" (the model's word for "heritage"): it starts with the lone "▁",
    whose letters are those that follow it. Looked ahead at from there, it is made up, and "patrimonio" is written."""
    counts, model = shipped.word_counts, shipped.translator.model
    rule = CopiesTranslated(TOKENIZER, counts.all_translated, model, counts.italian)
    assert counts.all_translated["heritage"] == "patrimonio" and counts.italian["eredito"] == 0
    source, written, among = "We must protect our heritage.", "Dobbiamo proteggere il nostro", ["▁", "▁pat"]
    assert TOKENIZER.encode("il nostro eredito").tokens[2:] == ["▁", "ere", "di", "to"]
    assert allowed_after(rule, TOKENIZER, source, written, among, best="▁") == {"▁pat"}
    assert rule.ahead(*looked_ahead(source, written, "▁"))[0] == "eredito"
    assert shipped.translator.translate(source) == "Dobbiamo proteggere il nostro patrimonio."


def test_a_number_word_the_english_does_not_say_is_written_as_the_number_it_says(shipped):
    """The model begins "venti" for "twenty-eight": looked ahead, that is a number the English does not say, and only
    the tokens that spell "ventotto" may follow. Once it is written, or without the model to look ahead with, the
    model goes on alone; a number the English says is free."""
    numbers = CopiesTranslated(TOKENIZER, {}, shipped.translator.model)
    source, among = "February has twenty-eight days.", ["▁venti", "▁v", "▁vento", "▁giorni"]
    assert allowed_after(numbers, TOKENIZER, source, "La febbraio ha", among, best="▁venti") == {"▁v", "▁vento"}
    written = "La febbraio ha ventotto giorni, non"
    assert allowed_after(numbers, TOKENIZER, source, written, among, best="▁venti") == set(among)
    blind = CopiesTranslated(TOKENIZER, {})
    assert allowed_after(blind, TOKENIZER, source, "La febbraio ha", among, best="▁venti") == set(among)
    twenty = "February has twenty days."
    assert allowed_after(numbers, TOKENIZER, twenty, "La febbraio ha", among, best="▁venti") == set(among)
    assert numbers.rows_with_copies(torch.tensor([TOKENIZER.encode("I see the cat.").ids])) == []  # no number said


def test_the_shipped_counts_hold_what_its_pairs_translate(shipped):
    translated, read = shipped.word_counts.translated, shipped.word_counts.from_lexicon
    assert translated["Alps"] == "Alpi" and translated["Sicily"] == "Sicilia" and translated["fuel"] == "carburante"
    assert translated["Turkey"] == "Turchia" and translated["turkey"] == "tacchino"  # the country, the bird
    assert "pizza" not in translated and "Tom" not in translated  # copied
    # too rare in its own pairs, read from Europarl's; "Czech" in lower case, not Europarl's acronym "CECA"
    counts = shipped.word_counts
    assert counts.english["frankfurt"] < TRANSLATED and read["Frankfurt"] == "Francoforte"
    assert read["Czech"] == "ceca" and counts.lexicon == ["data/en-it/train-europarl.tsv.gz"]
    # held a dozen times or a few dozen, not translated by its own pairs: Europarl's; no word of a set phrase its
    # neighbour's
    assert TRANSLATED <= counts.english["pope"] < 20 <= counts.english["foundation"] < KNOWN
    assert read["Pope"] == "Papa" and read["Foundation"] == "Fondazione" and read["statements"] == "dichiarazioni"
    assert "ivory" not in counts.all_translated and read["gases"] == "gas" and read["beverages"] == "bevande"
    assert set(translated).isdisjoint(read)  # Europarl's kept apart: read anew, it replaces what it gave
    # its own pairs counted by the rules as they stand: "Nobel" is "Nobel"'s, "Cassino" "Monte"'s, not "fierce"'s
    assert "Prize" not in counts.all_translated and translated["fierce"] == "feroce" and read["dreamt"] == "sognato"


# (English, the shipped translator's Italian, the copies rule it is compared with (None: none; "blind": without the
# model, no look ahead; "unasked": without the pairs' Italian words, no made-up words; "unloaned": without the
# loanwords, `modeldir.seen.WordCounts.loanwords`, nor Europarl's "robot" for "robots", which its pairs, a dozen, do not
# translate (fewer than `inputs.copies.KNOWN`) and which it writes too; "unread": without the words read from Europarl,
# `modeldir.seen.WordCounts.with_lexicon`), that rule's Italian, the steps the page names for the first sentence:
# (step, the model's token, the rule's))
SHIPPED_RULES = [
    (
        ["The Alps separate Italy from France.", "Sicily is the largest island in the Mediterranean."],
        ["Le Alpi separano l'Italia dalla Francia.", "La Sicilia è l'isola più grande del Mediterraneo."],
        None,
        ["Le Alps separano l'Italia dalla Francia.", "La Sicily è l'isola più grande del Mediterraneo."],
        [(2, "ps", "p"), (3, "re", "i")],
    ),
    (
        ["Happy Easter!", "Data is the fuel of artificial intelligence."],
        ["Buona Pasqua!", "Dati è il carburante dell'intelligenza artificiale."],
        "blind",
        ["Buona Easter!", "Dati è il fuel dell'intelligenza artificiale."],
        [(2, "▁E", "▁P"), (4, "ter", "qua")],
    ),
    (
        ["She made a cake with flour, sugar and eggs.", "Scientists discovered a new species of frog."],
        ["Ha fatto una torta con farina, zucchero e uova.", "Gli scienziati hanno scoperto una nuova specie di rana."],
        "unasked",
        [
            "Ha fatto una torta con fioritorio, zucchero e uova.",
            "Gli scienziati hanno scoperto una nuova specie di ranrogeno.",
        ],
        [(5, "▁fi", "▁f"), (6, "iam", "ar"), (7, "re", "ina")],  # "▁f" + "ar" + "ina" for "▁fi" + "iam" + "re"
    ),
    (
        ["Robots will not replace translators.", "We watched two films."],
        ["I robot non sostituiranno i traduttori.", "Abbiamo guardato due film."],
        "unloaned",
        ["I raobici non sostituiranno i traduttori.", "Abbiamo guardato due film."],
        [(1, "▁ra", "▁r"), (3, "ots", "ot"), (4, "t", "▁non")],  # "robot", ended where the model went on ("robott")
    ),
    (
        ["February has twenty-eight days.", "She's thirty-three."],
        ["La febbraio ha ventotto giorni di pesi.", "Ha trentatré."],
        "blind",
        ["La febbraio ha venti giorni di pesi.", "Ha trent'anni."],
        [(6, "▁venti", "▁v"), (8, "'", "otto")],  # "▁v" + "ent" + "otto" for "▁venti"
    ),
    (
        ["The book fair opens in Frankfurt.", "Turkish sources say it was sabotage."],
        ["Il libro equo apre in Francoforte.", "Le fonti turistiche dicono che era sabotaggio."],
        "unread",
        ["Il libro equo apre in Frankfurt.", "Le fonti turistiche dicono che era sabota."],
        [(8, "rank", "ran"), (9, "f", "c"), (10, "uo", "o"), (11, ".", "f"), (12, "ur", "or"), (14, ".", "e")],
    ),
]


@pytest.mark.parametrize("sentences, italian, other, others, named", SHIPPED_RULES)
def test_the_shipped_translator_writes_what_it_would_copy_or_make_up_as_its_pairs_translate_it(
    shipped, sentences, italian, other, others, named
):
    translator, counts = shipped.translator, shipped.word_counts
    translated, held, loans = counts.all_translated, counts.italian, counts.loanwords()
    unloaned = {english: word for english, word in translated.items() if english != "robots"}
    rule = {
        None: None,
        "blind": CopiesTranslated(TOKENIZER, translated),
        "unasked": CopiesTranslated(TOKENIZER, translated, translator.model),
        "unloaned": CopiesTranslated(TOKENIZER, unloaned, translator.model, held),
        "unread": CopiesTranslated(TOKENIZER, counts.translated, translator.model, held, loans),
    }[other]
    assert translator.translate(sentences) == italian
    assert translated_with_copies_rule(translator, rule, sentences) == others
    assert inspect(translator, sentences[0]).overruled == named  # the page names the steps the rule chose


def test_the_shipped_translator_sees_ahead_a_copy_in_its_own_case_and_beside_its_twin(shipped):
    translator = shipped.translator
    turkish = "But the AKP with its well-known Islamist roots represents a paradigm shift in the Turkish consensus."
    assert translator.translate(turkish).endswith(" nel consenso turco.")  # its own case: "T" leaves "turco"
    jamaica = "They agreed in Montego Bay, Jamaica."  # a row beside its twin once wrote "Bay,Giamaica"
    assert translator.translate([jamaica] * 2) == ["Hanno acconsentito a Montego Bay, Giamaica."] * 2


def test_the_shipped_translator_keeps_its_own_inflection_of_the_pairs_word(shipped):
    # "addestrata" is held by no pair; the pairs give "trained" as "addestrato"
    assert shipped.word_counts.italian["addestrata"] == 0 and shipped.word_counts.translated["trained"] == "addestrato"
    assert (
        shipped.translator.translate("The network was trained for many hours.")
        == "La rete era addestrata per molte ore."
    )


def test_a_made_up_word_after_an_elided_article_is_written_where_italian_elides(shipped):
    counts, model = shipped.word_counts, shipped.translator.model
    rule = CopiesTranslated(TOKENIZER, counts.all_translated, model, counts.italian)
    assert counts.translated["acronym"] == "acronimo" and counts.italian["acronomo"] == 0
    source, among = "I saw the acronym.", ["ac", "ad"]  # "▁l ' ac ron omo": no token that starts a word begins it
    assert allowed_after(rule, TOKENIZER, source, "Ho visto l'", among, best="ac") == {"ac"}  # "acronimo"
    assert rule.ahead.cache_info().misses == 1  # looked ahead: "acronomo", made up
    assert allowed_after(rule, TOKENIZER, source, "Ho visto l'acron", ["omo", "im"], best="omo") == {"im"}  # held
    # Italian elides before a vowel only: after "L'", "disoccupazione" is not written in place of "Unemploy" (the
    # article is written in full a step before: see the test below)
    unemployment, among = "Unemployment fell to its lowest level in ten years.", ["U", "d"]
    assert counts.translated["unemployment"] == "disoccupazione" and counts.italian["unemploy"] == 0
    assert allowed_after(rule, TOKENIZER, unemployment, "L'", among, best="U") == set(among)
    assert rule.ahead(*looked_ahead(unemployment, "L'", "U"))[0] == "Unemploy"  # made up, and left


def test_an_elided_article_is_written_in_full_as_the_gender_of_the_word_after_it_says():
    assert full_article("L", "disoccupazione") == "La" and full_article("l", "crisi") == "la"
    assert full_article("dell", "scambio") == "dello" and full_article("nell", "zaino") == "nello"
    assert full_article("l", "mercato") == "il" and full_article("sull", "tasso") == "sul"
    assert full_article("all", "città") == "alla" and full_article("dall", "prevenzione") == "dalla"
    assert full_article("l", "carburante") is None  # "-e": either gender
    assert full_article("l", "problema") is None  # "-ma": "il problema", "la forma"
    assert full_article("quell", "casa") is None  # no article this rule writes


def test_an_article_the_model_would_elide_before_a_made_up_word_is_written_in_full_before_the_pairs_word(shipped):
    """ "L'Unemploy": the model elides the article before the word it makes up for "Unemployment", and "l'" cannot
    go before the pairs' "disoccupazione". Looked ahead at "▁L", the article is written in full ("▁La"), and after it
    the model writes "disoccupazione" itself. Before a word made up where the pairs' word begins with a vowel
    ("acronimo"), or with no model to look ahead with, the article is the model's."""
    counts, model = shipped.word_counts, shipped.translator.model
    rule = CopiesTranslated(TOKENIZER, counts.all_translated, model, counts.italian)
    unemployment, among = "Unemployment fell to its lowest level in ten years.", ["▁L", "▁La", "▁Il", "▁Lo"]
    assert TOKENIZER.encode("L'Unemploy").tokens[:2] == ["▁L", "'"]
    assert allowed_after(rule, TOKENIZER, unemployment, "", among, best="▁L") == {"▁La"}
    assert shipped.translator.translate(unemployment).startswith("La disoccupazione ")
    acronym, among = "I saw the acronym.", ["▁l", "▁la", "▁il"]
    assert allowed_after(rule, TOKENIZER, acronym, "Ho visto", among, best="▁l") == set(among)
    blind = CopiesTranslated(TOKENIZER, counts.all_translated, None, counts.italian)
    assert allowed_after(blind, TOKENIZER, unemployment, "", ["▁L", "▁La"], best="▁L") == {"▁L", "▁La"}


def test_after_an_elided_article_a_sure_token_that_spells_a_common_word_is_still_looked_ahead(shipped):
    """After "l'" the model writes "e" surely: the first letter of "ectivenessa", made up for "effectiveness", not
    the word "e" (*and*) that thousands of pairs hold, which would say the model begins a word it knows. Looked ahead,
    the word is made up, and the pairs' "efficacia" is written."""
    counts, model = shipped.word_counts, shipped.translator.model
    rule = CopiesTranslated(TOKENIZER, counts.all_translated, model, counts.italian)
    assert counts.all_translated["effectiveness"] == "efficacia" and counts.italian["e"] >= OFTEN
    source, written = "We must recognize the effectiveness of the police.", "Dobbiamo riconoscere l'"
    assert rule.ahead(*looked_ahead(source, written, "e"))[0] == "ectivenessa" and counts.italian["ectivenessa"] == 0
    sure = 20.0  # the model's next token, surely: its probability above SURE
    assert math.exp(sure) / (math.exp(sure) + TOKENIZER.get_vocab_size() - 1) >= SURE
    allowed = allowed_after(rule, TOKENIZER, source, written, ["e", "a", "i", "ct"], best="e", best_score=sure)
    assert allowed == {"e"}  # "e" begins "efficacia"
    assert "l'efficacia della polizia" in shipped.translator.translate(source)


def test_a_word_the_pairs_hold_gives_way_only_where_the_model_begins_it_unsurely(shipped):
    """ "mal" for "heads" is a real word the model writes unsurely; it gives way to the pairs' "teste" where the model
    would as soon begin that, and never for a word held by COMMON pairs or more, a verb form, a form of the same word
    or a loanword."""
    counts, model = shipped.word_counts, shipped.translator.model
    rule = CopiesTranslated(TOKENIZER, counts.all_translated, model, counts.italian, counts.loanwords())
    assert counts.all_translated["heads"] == "teste" and 0 < counts.italian["mal"] < COMMON <= counts.italian["lui"]
    mal, te = TOKENIZER.token_to_id("▁mal"), TOKENIZER.token_to_id("▁t")  # "▁t este": the pairs' word begun

    def scores(p_mal, p_te):
        """Next-token probabilities: `p_mal` for "▁mal", `p_te` for "▁t", the rest on "▁di"."""
        probs = torch.zeros(TOKENIZER.get_vocab_size())
        probs[[mal, te, TOKENIZER.token_to_id("▁di")]] = torch.tensor([p_mal, p_te, 1 - p_mal - p_te])
        return probs

    unsure, plausible = SURE / 2, PLAUSIBLE * 2
    assert rule.begun_unsurely("mal", "heads", "teste", mal, scores(unsure, plausible))
    assert not rule.begun_unsurely("mal", "heads", "teste", mal, scores(SURE + 0.1, plausible))  # begun surely
    assert not rule.begun_unsurely("mal", "heads", "teste", mal, scores(unsure, PLAUSIBLE / 2))  # "teste" unlikely
    assert not rule.begun_unsurely("lui", "heads", "teste", mal, scores(unsure, plausible))  # a common word
    assert not rule.begun_unsurely("mal", "save", "salvare", mal, scores(unsure, plausible))  # a verb: tense its own
    assert not rule.begun_unsurely("testa", "heads", "teste", mal, scores(unsure, plausible))  # the same word
    assert "computer" in rule.loans and not rule.begun_unsurely(
        "mal", "computer", "teste", mal, scores(unsure, plausible)
    )
    knowing = CopiesTranslated(
        TOKENIZER, counts.all_translated, model, counts.italian, english=Counter({"heads": KNOWN - 1, "keep": KNOWN})
    )
    assert knowing.begun_unsurely("mal", "heads", "teste", mal, scores(unsure, plausible))  # half known: given way
    assert not knowing.begun_unsurely("mal", "keep", "teste", mal, scores(unsure, plausible))  # known: the model's
    translator = shipped.translator
    assert translator.translate("The model has eight attention heads.") == "Il modello ha otto teste di attenzione."
    assert translator.translate("He lives near here.") == "Lui vive qui vicino."  # "Lui": held by too many pairs
    assert counts.english["keep"] >= KNOWN and translator.translate("Keep this.") == "Tieni questo."  # not "Mantieni"


def test_a_phrase_the_model_splits_is_written_as_the_one_word_its_pairs_give_it(shipped):
    """ "Buon mattina" for "Good morning": the model ends "Buon", which begins the pairs' "buongiorno", and would go on
    spelling it with SPLIT_PLAUSIBLE or more; "dopo" in "the day after the party" is no "dopodomani", which the model
    would hardly go on to; a phrase the English does not hold, or a rule without phrases, changes nothing."""
    counts, model = shipped.word_counts, shipped.translator.model
    assert counts.phrases["good morning"] == "buongiorno" and counts.phrases["the day after"] == "dopodomani"

    def rule(phrases):
        return CopiesTranslated(TOKENIZER, counts.all_translated, model, counts.italian, counts.loanwords(), phrases)

    sentences = ["Good morning.", "Good morning, how are you?", "The day after the party, we slept.", "Good night."]
    with_phrases = translated_with_copies_rule(shipped.translator, rule(counts.phrases), sentences)
    without = translated_with_copies_rule(shipped.translator, rule({}), sentences)
    assert with_phrases[:2] == ["Buongiorno.", "Buongiorno, come stai?"]
    assert without[:2] == ["Buon mattina.", "Buon mattina, come stai?"]
    assert with_phrases[2:] == without[2:] and "dopo la festa" in without[2]
    split = rule(counts.phrases)
    source, prefix, mattina = looked_ahead("Good morning.", "Buon", "▁mattina")
    giorno = TOKENIZER.token_to_id("giorno")  # "▁Bu on giorno": the rest of "Buongiorno" in one token

    def scores(rest):
        """Next-token scores that end "Buon" with "▁mattina", and give "giorno" e^(rest - 5) of its chance."""
        logits = torch.full((TOKENIZER.get_vocab_size(),), -30.0)
        logits[[mattina, giorno]] = torch.tensor([5.0, rest])
        return logits

    assert split.split_phrase(source, list(prefix), "Buon", mattina, scores(1.0)) == "Buongiorno"  # 0.018
    assert split.split_phrase(source, list(prefix), "Buon", mattina, scores(-3.0)) is None  # 0.0003
    inflecting = TOKENIZER.token_to_id("a")  # "Buon" + "a": the model's own word
    assert split.split_phrase(source, list(prefix), "Buon", inflecting, scores(1.0)) is None
    assert split.split_phrase(source, list(prefix), "", mattina, scores(1.0)) is None  # no word begun


def test_a_phrases_next_italian_word_is_written_where_the_model_goes_another_way(shipped):
    """ "apprendimento delle macchine" for "machine learning": the model writes "apprendimento", the first of the words
    its pairs give the phrase, then begins "▁delle" though it gives "▁aut" of "automatico" COMPOUND_PLAUSIBLE or more;
    the rule writes "automatico". A model that begins the word itself, or gives it less, a phrase written whole or
    not begun, and a rule without the phrases, are free."""
    counts, model = shipped.word_counts, shipped.translator.model
    assert counts.compounds["machine learning"] == "apprendimento automatico"

    def rule(compounds):
        return CopiesTranslated(
            TOKENIZER, counts.all_translated, model, counts.italian, counts.loanwords(), counts.phrases,
            counts.english, compounds,
        )  # fmt: skip

    sentences = ["Machine learning models need a lot of data.", "The cat sleeps on the sofa."]
    with_compounds = translated_with_copies_rule(shipped.translator, rule(counts.compounds), sentences)
    without = translated_with_copies_rule(shipped.translator, rule({}), sentences)
    assert "apprendimento automatico" in with_compounds[0] and "apprendimento delle macchine" in without[0]
    assert with_compounds[1] == without[1]
    compound = rule({"machine learning": "apprendimento automatico"})
    source, prefix, delle = looked_ahead("Machine learning models need data.", "I modelli di apprendimento", "▁delle")
    aut = TOKENIZER.token_to_id("▁aut")

    def scores(chance):
        """Next-token scores that begin "▁delle", and give "▁aut" `chance` against it (`chance` < 0.5)."""
        logits = torch.full((TOKENIZER.get_vocab_size(),), -30.0)
        logits[[delle, aut]] = torch.tensor([0.0, math.log(chance / (1 - chance))])
        return logits

    assert compound.compound_word(source, list(prefix), delle, scores(COMPOUND_PLAUSIBLE + 0.01)) == "automatico"
    assert compound.compound_word(source, list(prefix), delle, scores(COMPOUND_PLAUSIBLE - 0.01)) is None
    assert compound.compound_word(source, list(prefix), aut, scores(0.4)) is None  # the model begins it itself
    inside = TOKENIZER.token_to_id("mente")  # "apprendimento" + "mente": no word begun
    assert compound.compound_word(source, list(prefix), inside, scores(0.4)) is None
    _, written, _ = looked_ahead("x", "L'apprendimento automatico e l'apprendimento", "▁delle")
    assert compound.compound_word(source, list(written), delle, scores(0.4)) is None  # the phrase is written whole
    other, _, _ = looked_ahead("Learning is fun.", "x", "▁delle")
    assert compound.compound_word(other, list(prefix), delle, scores(0.4)) is None  # the English holds no phrase
