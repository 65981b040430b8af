"""What the model has seen: how many of its training pairs contain each word, English and Italian (`word_counts.json.gz`
in the model directory, written by the trainer at export and by `python -m training.word_counts` for a model trained
before it did). A learner sees *why* a translation fails: a word met in a handful of pairs, or never, is a word the
model guesses at.

A word is a run of letters and digits, lower-cased ("don't" is "don" and "t"); each pair counts once per word, however
often the word occurs in it. English words written capitalised ("Attention", "Boston") are counted as typed too: a
common word the model met capitalised a handful of times is read in lower case (`rarely_capitalised`,
`inputs.text.lower_rare_capitals`). The words the pairs translate rather than copy are kept with the Italian word they
give each (`translations`: "Alps" -> "Alpi"), which the translator writes where the model starts to copy one, or to make
up an Italian word no pair holds for one (`inputs.copies.CopiesTranslated`); a word the pairs hold too rarely to say is
kept apart with the Italian word a larger corpus's pairs give it (`WordCounts.with_lexicon`: Europarl's "litres" ->
"litri"), so that reading the corpus anew replaces what it gave before. The words they copy as Italian writes a loanword
("computer", "robots" -> "robot") are read from the counts (`WordCounts.loanwords`). The English phrases Italian writes
as one word are kept with it (`phrase_translations`: "good morning" -> "buongiorno"), and those they translate with
two or three Italian words (`compound_translations`: "machine learning" -> "apprendimento automatico"). Stored as
{"pairs": N, "sources": [...], "en": {word: count}, "it": {...}, "en_capitalised": {Word: count}, "translated": {word:
word}, "lexicon": [...], "from_lexicon": {word: word}, "phrases": {phrase: word}, "compounds": {phrase: "word word"}},
gzip-compressed: tens of thousands of words fit in well under the 1 MB a model directory allows them
(tests/test_shipped_model.py)."""

import gzip
import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

from inputs.copies import KNOWN, SHORTEST, VOWELS, capitalise, keyed_words, phrase_grams, word_runs
from inputs.rules import LETTERS, writes_no_word
from inputs.text import capitalised

WORD_COUNTS = "word_counts.json.gz"
WORD = re.compile(r"\w+")
RARELY_SEEN = 5  # fewer training pairs than this: the app marks the word as one the model has rarely seen
# A capitalised word met so in fewer pairs than RARELY_CAPITALISED, and in at least OFTEN_SEEN in any case, is read in
# lower case. Chosen on dev, dev-news and the demo set: docs/training-log.md#rare-capitals-read-in-lower-case.
RARELY_CAPITALISED = 20
OFTEN_SEEN = 50
# An English word is translated, not copied (`translations`), when at least TRANSLATED training pairs hold it, at most
# COPIED of them hold it in the Italian too, the vocabulary's tokens spell no Italian word of TOGETHER pairs or more
# through it, and one Italian word goes with it: in TOGETHER pairs or more, with a Dice coefficient (2 * both / (pairs
# with either counted apart)) of DICE or more. A word held by more than MOST pairs the model knows. Chosen on dev,
# dev-news and the demo set: docs/training-log.md#words-the-model-copies.
TRANSLATED, MOST, COPIED, TOGETHER, DICE = 5, 1000, 0.1, 3, 0.4
# A larger corpus's pairs (`WordCounts.with_lexicon`) are read too for the words the model's pairs hold in fewer than
# KNOWN pairs (`inputs.copies.KNOWN`: held more often, a word is one the model knows) and do not translate. Chosen on
# dev, dev-news and the demo set: docs/training-log.md#words-the-model-half-knows.
# An English phrase (`inputs.copies.phrase_grams`) is written as one Italian word (`phrase_translations`: "good
# morning" -> "buongiorno") when PHRASE_PAIRS training pairs or more hold it, one Italian word goes with it with a Dice
# coefficient of PHRASE_DICE or more, and by PHRASE_MARGIN more than with any of its words alone. Chosen on dev,
# dev-news and the demo set: docs/training-log.md#greetings-written-as-one-word.
PHRASE_PAIRS, PHRASE_DICE, PHRASE_MARGIN = 10, 0.6, 0.3
# An English phrase (`inputs.copies.phrase_grams`) of words of SHORTEST letters or more, each held by fewer than
# COMPOUND_COMMON pairs ("machine learning", not "are very fast"), goes with the two or three Italian words its pairs
# translate it with (`compound_translations`: "apprendimento automatico") when COMPOUND_PAIRS of its pairs or more,
# and COMPOUND_SHARE of them or more, hold those words one space apart, with a Dice coefficient of COMPOUND_DICE or
# more, the first and the last of COMPOUND_LETTERS letters or more ("squadra di calcio" and "squadra di football" share
# "football team": neither). Chosen on dev, dev-news and the demo set: docs/training-log.md#a-phrases-italian-words.
COMPOUND_PAIRS, COMPOUND_SHARE, COMPOUND_DICE, COMPOUND_COMMON, COMPOUND_LETTERS = 4, 0.6, 0.5, 2000, 4
ITALIAN_RUN = re.compile(r"[^\W\d_]+(?: [^\W\d_]+)*")  # letter words one space apart: "apprendimento automatico"
# An English word is a loanword (`loanwords`) when its pairs do not translate it, it or its singular ends in no vowel
# and is held by as many Italian sides as English ones, LOANED times fewer to LOANED times more, in TRANSLATED pairs or
# more, and it is written capitalised in fewer than half its pairs (no name). Chosen on dev, dev-news and the demo set:
# docs/training-log.md#made-up-words-after-an-elided-article-and-loanwords.
LOANED = 2


def words(text):
    """The words of `text` as they are counted: lower-cased runs of letters and digits."""
    return WORD.findall(text.lower())


@dataclass
class WordCounts:
    pairs: int  # training pairs counted
    english: Counter = field(default_factory=Counter)
    italian: Counter = field(default_factory=Counter)
    sources: list = field(default_factory=list)  # the files counted, as given
    capitalised: Counter = field(default_factory=Counter)  # English words as typed, capitalised ("Attention")
    # English word -> the Italian word its pairs give it, for the words they translate rather than copy (`translations`)
    translated: dict = field(default_factory=dict)
    lexicon: list = field(default_factory=list)  # the files of other pairs read for words these hold too rarely
    # English word -> the Italian word the `lexicon` files' pairs give it, for words these pairs hold too rarely
    from_lexicon: dict = field(default_factory=dict)
    # English phrase (lower-case words, one space apart) -> the one Italian word its pairs give (`phrase_translations`)
    phrases: dict = field(default_factory=dict)
    # English phrase -> the Italian words, one space apart, its pairs translate it with (`compound_translations`)
    compounds: dict = field(default_factory=dict)

    @property
    def all_translated(self):
        """{English word: Italian word} for every word the translator writes in Italian where the model would copy
        it: the training pairs' own translations, and the lexicon's for the words they hold too rarely."""
        return {**self.from_lexicon, **self.translated}

    def add(self, pairs):
        """Count the words of more (English, Italian) pairs."""
        for english, italian in pairs:
            self.pairs += 1
            self.english.update(set(words(english)))
            self.italian.update(set(words(italian)))
            self.capitalised.update({w for w in WORD.findall(english) if capitalised(w)})

    def rarely_capitalised(self, word):
        """Whether the model met `word` (capitalised) so in fewer than RARELY_CAPITALISED pairs and in any case in
        OFTEN_SEEN or more: a common word it barely knows with a capital. Counts without capitalised words (written
        before they were counted) say nothing: False."""
        if not self.capitalised:
            return False
        return self.capitalised[word] < RARELY_CAPITALISED and self.english[word.lower()] >= OFTEN_SEEN

    def never_met(self, word):
        """Whether no training pair held `word`, in any case: a name the model can only copy
        (`inputs.names.NamesAsWritten`). Counts of no pairs say nothing: False."""
        return self.pairs > 0 and self.english[word.lower()] == 0

    def loanwords(self):
        """{English word: the Italian word} for the words the pairs copy rather than translate, in Italian as a
        loanword: the word itself ("computer"), or for a plural its singular, as Italian leaves a loanword unchanged
        in the plural ("robots" -> "robot", "films" -> "film"). Where the model makes up a word for one
        ("raobici"), the translator writes that (`inputs.copies.CopiesTranslated`)."""
        loans, translated = {}, self.all_translated  # built once: the property merges two dicts
        for word, n in self.english.items():
            if n < TRANSLATED or len(word) < SHORTEST or not word.isalpha() or word in translated:
                continue
            if 2 * self.capitalised[word.title()] >= n:
                continue
            singular = [word[:-1]] if word.endswith("s") and not word.endswith("ss") and len(word) > SHORTEST else []
            for italian in [word, *singular]:
                english, held = self.english[italian] or n, self.italian[italian]
                borrowed = italian[-1] not in VOWELS  # "computer"; "come", "terminate" are Italian words
                if borrowed and held >= TRANSLATED and english <= LOANED * held and held <= LOANED * english:
                    loans[word] = italian
                    break
        return loans

    def with_lexicon(self, pairs, sources, tokenizer):
        """Translate too the words these counts hold in fewer than TRANSLATED pairs, or in fewer than KNOWN pairs
        that do not translate them, as the (English, Italian) `pairs` (a list) of another corpus, read from the files
        `sources`, translate them (`translations`): a word the model met twice or never ("litres", "Frankfurt"), or a
        few dozen times in pairs that do not agree on it ("Pope", "director"), is one it copies or makes up, and a
        larger corpus such as Europarl translates it ("litri", "Francoforte", "Papa", "direttore"). The training
        pairs' own translations are kept; a lexicon read before is replaced, so reading one anew gives the same
        counts."""
        italian = Counter()
        for _, it in pairs:
            italian.update(set(words(it)))
        own = {word.lower() for word in self.translated}

        def unread(word):
            held = self.english[word.lower()]
            return held < TRANSLATED or (held < KNOWN and word.lower() not in own)

        read = translations(pairs, italian, tokenizer, follow=unread)
        self.from_lexicon = {word: it for word, it in read.items() if word not in self.translated}
        self.lexicon = list(sources)

    def at_least(self, earlier):
        """These counts with, per word, the larger of this and `earlier`'s (the model this one was continued from):
        the parts of a model mostly train on the same files, so a sum would count their pairs twice."""
        merged = WordCounts(
            max(self.pairs, earlier.pairs),
            Counter(self.english),
            Counter(self.italian),
            self.sources + [s for s in earlier.sources if s not in self.sources],
            Counter(self.capitalised),
            {**earlier.translated, **self.translated},
            self.lexicon + [s for s in earlier.lexicon if s not in self.lexicon],
            {**earlier.from_lexicon, **self.from_lexicon},
            {**earlier.phrases, **self.phrases},
            {**earlier.compounds, **self.compounds},
        )
        for mine, theirs in (
            (merged.english, earlier.english),
            (merged.italian, earlier.italian),
            (merged.capitalised, earlier.capitalised),
        ):
            for word, count in theirs.items():
                mine[word] = max(mine[word], count)
        return merged

    def to_json(self):
        return {
            "pairs": self.pairs,
            "sources": self.sources,
            "en": by_count(self.english),
            "it": by_count(self.italian),
            "en_capitalised": by_count(self.capitalised),
            "translated": dict(sorted(self.translated.items())),
            "lexicon": self.lexicon,
            "from_lexicon": dict(sorted(self.from_lexicon.items())),
            "phrases": dict(sorted(self.phrases.items())),
            "compounds": dict(sorted(self.compounds.items())),
        }


def by_count(counts):
    """`counts` (a Counter) as a dict, the most common first and words held as often in alphabetical order: a Counter's
    ties come in the order its words were met, which a set's hashing changes from one run to the next."""
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def counted(pairs, sources, tokenizer):
    """The WordCounts of the training `pairs` (a list) read from the files `sources`, with the words they translate
    rather than copy (`translations`, by the model's `tokenizer`): what the trainer writes at export, and
    `training.word_counts` for an older model."""
    counts = WordCounts(0, sources=list(sources))
    counts.add(pairs)
    counts.translated = translations(pairs, counts.italian, tokenizer)
    counts.phrases = phrase_translations(pairs, counts.english, counts.italian)
    counts.compounds = compound_translations(pairs, counts.english)
    return counts


def co_occurring(sides, follow):
    """(held, together) of `sides`, each pair's (English keys, Italian items) as a counting function reads them:
    `held[key]`, the pairs whose English holds the key; `together[key]`, a Counter of the Italian items of those
    pairs, for the keys that `follow(key, held[key])` says to follow ("machine learning" -> {"apprendimento
    automatico": 6, ...})."""
    held = Counter()
    for keys, _ in sides:
        held.update(keys)
    followed = {key for key, n in held.items() if follow(key, n)}
    together = defaultdict(Counter)
    for keys, italian_items in sides:
        for key in keys & followed:
            together[key].update(italian_items)
    return held, together


def phrase_translations(pairs, english, italian):
    """{English phrase: the one Italian word that goes with it} for the phrases of the (English, Italian) `pairs` (a
    list) that Italian writes as one word: "good morning" -> "buongiorno", "day after tomorrow" -> "dopodomani". A
    word goes with a phrase at PHRASE_DICE or more, and by PHRASE_MARGIN more than with any of the phrase's words
    alone, so that "the police" is left to "police" -> "polizia"; a phrase inside a longer one given the same word is
    left to the longer ("day after" of "day after tomorrow", which is no "dopodomani" in "day after day").
    `english[word]`, `italian[word]`: the pairs whose sides hold the word (`WordCounts.english`, `.italian`)."""
    sides = [(phrase_grams(en), {w for w in words(it) if w.isalpha()}) for en, it in pairs]  # read once, as `italian`
    held, together = co_occurring(sides, lambda gram, n: n >= PHRASE_PAIRS)
    best = {}  # phrase -> (Dice, Italian word)
    for gram, with_it in together.items():
        scored = ((2 * k / (held[gram] + italian[w]), w) for w, k in with_it.items() if len(w) > SHORTEST)
        dice, word = max(scored, default=(0.0, None))  # none: its pairs' Italian words are all short ("Sì.")
        if dice >= PHRASE_DICE:
            best[gram] = (dice, word)
    alone = defaultdict(set)  # a phrase's English word -> the Italian words of the phrases that hold it
    for gram, (_, it) in best.items():
        for word in gram.split():
            alone[word].add(it)
    both = Counter()  # (English word, Italian word) -> pairs that hold both
    for (en, _), (_, italian_words) in zip(pairs, sides):
        both.update((w, i) for w in alone.keys() & set(words(en)) for i in alone[w] & italian_words)
    chosen = {
        gram: it
        for gram, (dice, it) in best.items()
        if all(dice >= 2 * both[w, it] / (english[w] + italian[it]) + PHRASE_MARGIN for w in gram.split())
    }
    return {
        gram: it
        for gram, it in chosen.items()
        if not any(other != gram and f" {gram} " in f" {other} " and given == it for other, given in chosen.items())
    }


def italian_grams(text):
    """The runs of Italian words one space apart (`inputs.copies.word_runs`) in `text`, in lower case
    ("L'apprendimento automatico è utile": "apprendimento automatico", "automatico è", "apprendimento automatico è",
    ...): an apostrophe, a mark or a number ends a run."""
    return set().union(*(word_runs(run.split(" ")) for run in ITALIAN_RUN.findall(text.lower())))


def compound_translations(pairs, english):
    """{English phrase: the Italian words its pairs translate it with, one space apart} for the phrases of the
    (English, Italian) `pairs` (a list) that most of their pairs translate with the same two or three words: "machine
    learning" -> "apprendimento automatico", "interest rates" -> "tassi di interesse" (see COMPOUND_PAIRS).
    `english[word]`: the pairs whose English side holds the word (`WordCounts.english`): a phrase of a word held
    everywhere ("are", "very") is left out."""

    def uncommon(gram):
        return all(len(w) >= SHORTEST and english[w] < COMPOUND_COMMON for w in gram.split())

    sides = [(phrase_grams(en), italian_grams(it)) for en, it in pairs]  # read once
    held, together = co_occurring(sides, lambda gram, n: n >= COMPOUND_PAIRS and uncommon(gram))
    italian = Counter()
    for _, its in sides:
        italian.update(its)
    chosen = {}
    for gram, with_it in together.items():
        scored = (
            (2 * k / (held[gram] + italian[it]), k, it)
            for it, k in with_it.items()
            if k >= COMPOUND_PAIRS and min(len(it.split()[0]), len(it.split()[-1])) >= COMPOUND_LETTERS
        )
        dice, k, it = max(scored, default=(0.0, 0, None))
        if dice >= COMPOUND_DICE and k >= COMPOUND_SHARE * held[gram]:
            chosen[gram] = it
    return chosen


def spelt_through(tokenizer, italian_words):
    """The beginnings of `italian_words` at which the `tokenizer` (a `tokenizers.Tokenizer`) ends a token, in lower
    case, each word read as it starts a word, in lower case and capitalised: "tenero" is "▁ten ero", so "ten" is one."""
    forms = [form for word in italian_words for form in (word, capitalise(word))]
    ends = set()
    for encoding in tokenizer.encode_batch(forms, add_special_tokens=False):
        text = ""
        for token in encoding.tokens[:-1]:
            text += token.removeprefix("▁")
            ends.add(text.lower())
    return ends


def written_form(english, forms, word):
    """How to write the Italian `word` for the English word `english`: as `forms` (a Counter: form -> times written
    inside a sentence) most often has it ("Alpi", "agosto"), in capitals only for an English acronym ("PMI" for
    "SMEs", not "CECA", the coal community, for "Czech"); `word` itself where no form fits."""
    acronym = sum(letter.isupper() for letter in english) > 1
    fitting = Counter({form: n for form, n in forms.items() if acronym or not form.isupper()})
    return fitting.most_common(1)[0][0] if fitting else word


def translations(pairs, italian, tokenizer, follow=None):
    """{English word (as `inputs.copies.keyed_words` gives it): the Italian word that goes with it} for the words of
    the (English, Italian) `pairs` (a list), whose Italian sides hold each Italian word in `italian[word]` of them
    (`WordCounts.italian`), that they translate rather than copy (TRANSLATED to DICE above), each
    Italian word written as `written_form` says. A word whose letters the model's `tokenizer` ends a token at inside
    an Italian word of TOGETHER pairs or more is left out: written, it may be that word's beginning ("▁ten" of
    "▁ten ero"), not a copy. An Italian word that goes better with a word beside the English one (`beside`) is not
    its translation. Given `follow` (English word -> whether to follow it), the pairs are another corpus's, read
    for the words the model met too rarely: only those words are followed, however often `pairs` hold them."""
    sides = [(set(keyed_words(en)), {w for w in words(it) if w.isalpha()}) for en, it in pairs]  # read once
    if follow is None:
        english, together = co_occurring(sides, lambda word, n: TRANSLATED <= n <= MOST)
    else:
        english, together = co_occurring(sides, lambda word, n: n >= TRANSLATED and follow(word))
    beginnings = spelt_through(tokenizer, [w for w, n in italian.items() if n >= TOGETHER and w.isalpha()])
    candidates = {}  # English word -> [(Dice, Italian word)], the likeliest first
    for word, with_it in together.items():
        n = english[word]
        if with_it[word.lower()] > COPIED * n or word.lower() in beginnings:  # the pairs that copy it
            continue
        scored = sorted(((2 * k / (n + italian[w]), k, w) for w, k in with_it.items()), reverse=True)
        best_dice, best_both, _ = scored[0]
        if best_both >= TOGETHER and best_dice >= DICE:
            candidates[word] = [(dice, w) for dice, k, w in scored if k >= TOGETHER and dice >= DICE]
    chosen = beside(sides, english, italian, candidates)
    forms = defaultdict(Counter)  # how each chosen Italian word is written inside a sentence
    wanted = set(chosen.values())
    for _, it in pairs:
        for match in list(LETTERS.finditer(it))[1:]:
            if match.group().lower() in wanted:
                forms[match.group().lower()][match.group()] += 1
    return {word: written_form(word, forms[best], best) for word, best in chosen.items()}


def beside(sides, english, italian, candidates):
    """{English word: the first of its `candidates` (English word -> [(Dice, Italian word)], the likeliest first) that
    no word beside it takes}. A word held by half the English word's pairs or more takes the Italian word where it goes
    with it by a larger Dice coefficient and the English word's pairs without it hold the Italian word at less than
    half the rate all its pairs do, or hold none: in Europarl "greenhouse" takes "serra" from "gases", "tower" "torre"
    from "ivory", "wheat" "grano" from "durum" (every pair holds both), but "alcoholic" leaves "bevande" to
    "beverages". `sides`: each pair's (English words, Italian words), as `translations` reads them."""
    neighbours = defaultdict(Counter)  # English word -> the English words its pairs hold beside it
    for held, _ in sides:
        for word in held & candidates.keys():
            neighbours[word].update(held - {word})
    near = {word: {other for other, k in neighbours[word].items() if 2 * k >= english[word]} for word in candidates}
    rivals = defaultdict(set)  # Italian word -> the English words that may take it
    for word, options in candidates.items():
        for _, it in options:
            rivals[it] |= near[word]
    rival_both = Counter()  # (neighbour, Italian word) -> pairs that hold both
    both, beside_both = Counter(), Counter()  # the same for an English word, and with one of its neighbours too
    for held, italian_words in sides:
        for w in italian_words & rivals.keys():
            rival_both.update((other, w) for other in rivals[w] & held)
        for word in held & candidates.keys():
            for _, w in candidates[word]:
                if w in italian_words:
                    both[word, w] += 1
                    beside_both.update((word, other, w) for other in near[word] & held)

    def takes(other, word, it, dice):
        without, without_both = english[word] - neighbours[word][other], both[word, it] - beside_both[word, other, it]
        larger = 2 * rival_both[other, it] / (english[other] + italian[it]) > dice
        return larger and (without == 0 or 2 * without_both * english[word] < both[word, it] * without)

    chosen = {}
    for word, options in candidates.items():
        for dice, it in options:
            if not any(takes(other, word, it, dice) for other in near[word]):
                chosen[word] = it
                break
    return chosen


def write_word_counts(model_dir, counts):
    """Write `counts` (a WordCounts) into the model directory; returns the file's path."""
    path = Path(model_dir) / WORD_COUNTS
    text = json.dumps(counts.to_json(), ensure_ascii=False, separators=(",", ":"))
    path.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))  # mtime 0: the same counts, the same bytes
    return path


def read_word_counts(model_dir):
    """The WordCounts of a model directory, or None when it has none; ValueError when the file is malformed."""
    path = Path(model_dir) / WORD_COUNTS
    if not path.is_file():
        return None
    try:
        values = json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as e:  # not gzip, cut short, not JSON
        raise ValueError(f"{path}: cannot read it: {e}") from e
    # "en_capitalised", "translated", "lexicon", "from_lexicon", "phrases", "compounds" are optional: files written
    # before lack them
    given = values if isinstance(values, dict) else {}
    tables = [given.get("en"), given.get("it"), given.get("en_capitalised", {})]
    translated, from_lexicon = given.get("translated", {}), given.get("from_lexicon", {})
    phrases, compounds = given.get("phrases", {}), given.get("compounds", {})
    maps = (translated, from_lexicon, phrases)
    lexicon = given.get("lexicon", [])
    if (
        not isinstance(values, dict)
        or not isinstance(values.get("pairs"), int)
        or not all(isinstance(table, dict) and all(isinstance(n, int) for n in table.values()) for table in tables)
        or not all(isinstance(kept, dict) for kept in maps)
        or not all(isinstance(w, str) and w.isalpha() for w in chain(*(kept.values() for kept in maps)))
        or not isinstance(compounds, dict)
        or not all(isinstance(ws, str) and ITALIAN_RUN.fullmatch(ws) for ws in compounds.values())
        or not isinstance(lexicon, list)
        or not all(isinstance(source, str) for source in lexicon)
    ):
        raise ValueError(
            f'{path}: expected {{"pairs": N, "en": {{word: count}}, "it": {{word: count}}, '
            '"translated": {word: word}, "lexicon": [file, ...], "from_lexicon": {word: word}, '
            '"phrases": {phrase: word}, "compounds": {phrase: "word word"}}'
        )
    english, italian, capitalised_words = map(Counter, tables)
    sources = list(values.get("sources", []))
    return WordCounts(
        values["pairs"],
        english,
        italian,
        sources,
        capitalised_words,
        translated,
        list(lexicon),
        from_lexicon,
        phrases,
        compounds,
    )


@dataclass
class SeenWords:
    """Per token of an English sentence, (word, training pairs holding it) of the word it spells, or None for a
    special token such as </s> or punctuation; `pairs`: the training pairs counted."""

    words: list
    pairs: int

    def is_rare(self, i):
        return self.words[i] is not None and self.words[i][1] < RARELY_SEEN

    def describe(self, i):
        """ " · 'word': N of M training pairs" for token i, "" for a special token."""
        if self.words[i] is None:
            return ""
        word, count = self.words[i]
        return f" · '{word}': {count:,} of {self.pairs:,} training pairs"

    def rarely_seen(self):
        """The distinct (word, count) held by fewer than RARELY_SEEN training pairs, rarest first."""
        return sorted(
            {self.words[i] for i in range(len(self.words)) if self.is_rare(i)}, key=lambda pair: (pair[1], pair[0])
        )

    def warning(self):
        """One line naming the words the model has rarely seen (at most three), or None."""
        rare = self.rarely_seen()
        if not rare:
            return None
        named = "; ".join(f"'{word}': {count:,} of {self.pairs:,} training pairs" for word, count in rare[:3])
        more = f" (and {len(rare) - 3} more)" if len(rare) > 3 else ""
        return f"{named}{more}. Translations of words it has rarely seen are guesses."


def seen_words(tokens, counts):
    """The SeenWords of an English token list (SentencePiece style: "▁" starts a word) under `counts`. A word the
    counting splits ("don't": "don", "t") is shown by its rarest part, the one the model knows least."""
    seen, spelled, members = [None] * len(tokens), "", []

    def close():
        parts = words(spelled)
        if parts:
            rarest = min(parts, key=lambda w: counts.english[w])
            for i in members:
                if words(tokens[i]):  # not a punctuation token such as "." or "-"
                    seen[i] = (rarest, counts.english[rarest])

    for i, token in enumerate(tokens):
        if writes_no_word(token):
            close()
            spelled, members = "", []
        elif token.startswith("▁") or not members:
            close()
            spelled, members = token.lstrip("▁"), [i]
        else:
            spelled, members = spelled + token, members + [i]
    close()
    return SeenWords(seen, counts.pairs)
