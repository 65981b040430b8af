"""English words the model copies, or makes up Italian for, where its training pairs translate them: a decoding rule
for the lesson's `Translator`.

A word met in a handful of training pairs is one a small model half knows: part 14 wrote "Le Alps separano l'Italia
dalla Francia" and "La Sicily è l'isola più grande", though its pairs hold "Alps" nine times beside "Alpi" and never
copy it. The model directory's word counts keep, for each English word its pairs translate and rarely or never copy,
the Italian word that goes with it in them (`modeldir.seen.translations`). Where the model is about to finish copying
such a word of its English (the copy is its most likely next token), `CopiesTranslated` writes that Italian word
instead, from the letters written so far ("Al" + "pi", not "Al" + "ps"). Where a copy's letters leave the Italian
word before its last token ("▁E" + "aster" cannot become "Pasqua"), the rule looks ahead at the token where they would
leave it: it follows the model alone to the word's end, and where that spells the English word whole, it writes the
Italian word from there ("Buona Pasqua!", not "Buona Easter!"). A translation that does not copy the word is free.
Chosen on dev, dev-news and the demo set: docs/training-log.md#words-the-model-copies.

A word the model half knows is also one it makes up Italian for: "una torta con fioritorio" for "a cake with flour",
"una nuova specie di ranrogeno" for "a new species of frog". Where the word the model is about to begin is one no
Italian side of its training pairs holds, the rule follows the model to the word's end and reads which English word
its cross-attention weighed most while writing it; where the pairs translate that word and its Italian word is not
written yet, the rule writes it instead ("farina", "rana"). Chosen on dev, dev-news and the demo set:
docs/training-log.md#made-up-words-written-as-the-pairs-translate-the-english. So too after an elided article ("l'",
"dell'"), where Italian elides before the word, and for an English word the pairs copy, a loanword, as Italian writes
it ("I robot" for "I raobici"): docs/training-log.md#made-up-words-after-an-elided-article-and-loanwords. Where the
pairs' word begins with a consonant, as Italian does not elide before, the article the model would elide before the
made-up word is written in full instead ("La disoccupazione", not "L'Unemploy"):
docs/training-log.md#an-elided-article-written-in-full. So too
for a word the pairs hold that the model begins unsurely and would as soon begin as the pairs' word ("otto teste di
attenzione", not "otto mal di attenzione", for "eight attention heads"), an English word the model knows (met in
KNOWN pairs or more) left to it: docs/training-log.md#real-words-begun-unsurely.
A made-up future or conditional of the pairs' verb is written with the vowel its conjugation takes there ("riaprirà"
for "riaprerà", where the pairs give "reopen" "riaprire"): docs/training-log.md#a-future-in-its-verbs-conjugation.

A phrase Italian writes as one word is one the model splits: "Buon mattina." for "Good morning.", though its pairs
write "Buongiorno" for *good morning* (`modeldir.seen.phrase_translations`). Where the model ends a word that begins
the phrase's Italian word ("Buon") and gives the letters that go on spelling it SPLIT_PLAUSIBLE or more, the rule
writes them ("giorno"): docs/training-log.md#greetings-written-as-one-word. A phrase Italian writes with two or three
words is one the model may start and then translate word by word: "apprendimento delle macchine" for "machine
learning", though its pairs write "apprendimento automatico" (`modeldir.seen.compound_translations`). Where the model
has written the first of those words and begins another word, the rule writes the next one if the model gives it
COMPOUND_PLAUSIBLE or more: docs/training-log.md#a-phrases-italian-words.

A number in words is one the model miscounts: "La febbraio ha venti giorni" for "February has twenty-eight days".
Where the word the model begins is an Italian number the English does not say, the rule writes the first number the
English says in words that is not written yet ("ventotto"): docs/training-log.md#numbers-in-words."""

import copy
import os
import re
from collections import OrderedDict
from functools import lru_cache

import torch

from transformer.decoding import KVCache
from transformer.model import recording_attention

from .numbers import ITALIAN_NUMBERS, NUMBER_BEGINNINGS, number_words, plain
from .rules import LETTERS, SENTENCE_END, RowsOfSource, Spelling, hold

SHORTEST = 3  # letters of the shortest word followed: shorter ones ("di", "la") are written everywhere
MAX_BEGUN = 4096  # the Italian words begun that are remembered
LONGEST = 16  # tokens of one word followed ahead at most
INFINITIVE_ENDINGS = ("are", "ere", "ire")
VERB_ENDINGS = (*INFINITIVE_ENDINGS, "ato", "ito", "uto")  # an infinitive's, a participle's
VERB_ENDING = 6  # letters of a verb's longest ending after its stem: "chied" + "eranno"
# What follows a future's or a conditional's "er"/"ir": "parler" + "à", "aprir" + "ebbe"
FUTURE_ENDINGS = ("ò", "ai", "à", "emo", "ete", "anno", "ei", "esti", "ebbe", "emmo", "este", "ebbero")
CONTRACTED = ("venire", "morire")  # -ire verbs whose future drops the vowel: "verrà", "interverrà", "morrà"
VOWELS = "aeiouàèéìòù"  # how an Italian word ends
# Where the model's first token of a word, one that starts a word, is one the pairs hold as a word in OFTEN pairs or
# more, and it gives that token a probability of SURE or more, it is taken to write that word: no made-up word is
# looked for there. Chosen on dev, dev-news and the demo set:
# docs/training-log.md#made-up-words-written-as-the-pairs-translate-the-english and
# docs/training-log.md#a-sure-token-after-an-elided-article.
OFTEN, SURE = 100, 0.5
# A word the pairs hold, begun unsurely (its first token below SURE), is read as mistaken where the model would begin
# the pairs' word for the English it weighs most with PLAUSIBLE or more, fewer than COMMON pairs hold it (not "lui",
# "io"), the pairs' word is no verb form (the model's tense is its own) and the two do not begin with the same ALIKE
# letters (forms of one word: "distrusse", "distrutta"): "teste", not "mal", for "heads". Chosen on dev, dev-news and
# the demo set: docs/training-log.md#real-words-begun-unsurely.
PLAUSIBLE, COMMON, ALIKE = 0.02, 1000, 4
# An English word held by KNOWN training pairs or more is one the model knows: a real word it begins unsurely for it
# is its own choice of sense or synonym ("Tieni", "ragazza", "ammise" for "keep", "girlfriend", "admitted"), left to it.
# Chosen on dev, dev-news and the demo set: docs/training-log.md#real-words-begun-unsurely-for-words-the-model-knows.
KNOWN = 100
# Where the model ends a word that begins the Italian word of a phrase of its English, the rule writes the rest of
# that word if the model gives it SPLIT_PLAUSIBLE or more ("Buon" + "giorno": 0.01; "dopo" + "domani" after "the day
# after the party": 0.0001). Chosen on dev, dev-news and the demo set:
# docs/training-log.md#greetings-written-as-one-word.
SPLIT_PLAUSIBLE = 0.005
PHRASE_WORDS = (2, 3)  # the words of a phrase that Italian may write as one word
# Where the model has written the first words of the Italian words a phrase of its English goes with ("apprendimento"
# of "apprendimento automatico" for "machine learning") and begins another word, the rule writes the phrase's next
# word if the model gives the tokens that begin it COMPOUND_PLAUSIBLE or more ("▁aut": 0.19, against "▁delle": 0.37).
# Chosen on dev, dev-news and the demo set: docs/training-log.md#a-phrases-italian-words.
COMPOUND_PLAUSIBLE = 0.15
ELIDED = re.compile(r"[^\W\d_]['’]$")  # an elided article or preposition ends the text: "L'", "dell'"
ELIDES_BEFORE = VOWELS + "h"  # the letters Italian elides before: "l'alleanza", "l'hotel", not "l'disoccupazione"
# An article or preposition the model elides ("L'", "dell'"), and what it is before a feminine word, before a masculine
# one that takes "lo" ("lo sciopero") and before any other masculine one: written in full where the word after it
# begins with a consonant ("La disoccupazione", not "L'Unemploy").
ELIDING = {
    "l": ("la", "lo", "il"),
    "dell": ("della", "dello", "del"),
    "all": ("alla", "allo", "al"),
    "nell": ("nella", "nello", "nel"),
    "dall": ("dalla", "dallo", "dal"),
    "sull": ("sulla", "sullo", "sul"),
}
TAKES_LO = re.compile(r"^(s[^aeiouàèéìòù]|z|gn|ps|pn|x|y)")  # "lo sciopero", "lo zio", "lo gnomo", "lo psicologo"


def words_and_starts(text):
    """(word, whether it starts a sentence) for the words of `text`: runs of SHORTEST letters or more."""
    for match in LETTERS.finditer(text):
        if len(match.group()) >= SHORTEST:
            yield match.group(), SENTENCE_END.search(text, 0, match.start()) is not None


def inflected(word, italian):
    """Whether `word` is the Italian word `italian` with another ending: all of `italian` but its ending, then a
    vowel for a noun's or an adjective's ("congelati", "ordinari" for "congelato", "ordinario") or at most
    VERB_ENDING letters ending in one for a verb's (an infinitive's or a participle's -are/-ato: "dominerà",
    "addestrata" for "dominare", "addestrato"): the model's own gender, number or tense, not a made-up word
    ("ranrogeno" for "rana", "pandemico" for "pandemia")."""
    word, italian = word.lower(), italian.lower()
    verb = italian.endswith(VERB_ENDINGS)
    stem = italian[:-3] if verb else italian[:-1]
    ending = word[len(stem) :]
    return (
        word != italian and word.startswith(stem) and len(ending) <= (VERB_ENDING if verb else 1) and word[-1] in VOWELS
    )


def conjugated(word, italian):
    """`word`, the Italian verb `italian` (an infinitive) in the future or the conditional, with the vowel its
    conjugation takes there: "riaprirà" for "riaprerà" (riaprire), "parlerà" for "parlirà" (parlare). None where
    `word` is no such form of it, or takes that vowel already."""
    if not italian.lower().endswith(INFINITIVE_ENDINGS) or italian.lower().endswith(CONTRACTED):
        return None
    stem, vowel = italian[:-3], "i" if italian.lower().endswith("ire") else "e"
    rest = word[len(stem) :]
    if not word.lower().startswith(stem.lower()) or rest[:2] not in ("er", "ir") or rest[2:] not in FUTURE_ENDINGS:
        return None
    return None if rest[0] == vowel else stem + vowel + rest[1:]


def word_runs(words):
    """Each run of PHRASE_WORDS consecutive `words` (a list), joined by one space: ["i", "m", "afraid"] gives "i m",
    "m afraid", "i m afraid"."""
    return {" ".join(words[i : i + n]) for n in PHRASE_WORDS for i in range(len(words) - n + 1)}


def phrase_grams(text):
    """The phrases of `text` as the training pairs' phrases are counted by them (`modeldir.seen.phrase_translations`):
    each run of PHRASE_WORDS words, lower-cased runs of letters one space apart ("I'm afraid": "i m", "m afraid",
    "i m afraid")."""
    return word_runs([w.lower() for w in LETTERS.findall(text)])


def gender(word):
    """ "f" or "m" for the Italian singular `word` where its ending says it ("disoccupazione", "crisi", "città": "f";
    "scambio": "m"), None where it does not ("carburante"; "-ma": "la forma", "il problema")."""
    word = word.lower()
    if word.endswith(("ione", "tà", "tù", "si")) or (word.endswith("a") and not word.endswith("ma")):
        return "f"
    return "m" if word.endswith("o") else None


def full_article(elided, word):
    """The article or preposition `elided` ("L", "dell": what precedes an apostrophe) written in full before the Italian
    `word` that begins with a consonant ("La" for "disoccupazione", "dello" for "scambio", "del" for "mercato"), in
    `elided`'s case. None where it elides no article (ELIDING) or `word`'s gender is not known (`gender`)."""
    forms, kind = ELIDING.get(elided.lower()), gender(word)
    if forms is None or kind is None:
        return None
    article = forms[0] if kind == "f" else forms[1] if TAKES_LO.match(word.lower()) else forms[2]
    return capitalise(article) if elided[:1].isupper() else article


def capitalise(word):
    """`word` with its first letter in upper case, the rest as written: "Alpi", "Ventotto"."""
    return word[:1].upper() + word[1:]


def keyed_words(text):
    """The words of `text` as the training pairs are counted by them: as typed, but a sentence's first word in lower
    case, where a capital says only that a sentence starts ("Fuel", "Turkey")."""
    for word, first in words_and_starts(text):
        yield word.lower() if first else word


class CopiesTranslated(Spelling):
    """`rule(logits, ys, src)` for `decoding.apply_decoding_rules`: in place, where the most likely next token after
    the prefix `ys` (B, T) finishes copying a word of the source `src` (B, S) that `translated` (a dict: English word,
    as `keyed_words` gives it, -> Italian word) holds, forbid every token but those that go on spelling its Italian
    word from what is written; then hold the word so begun to its end, and end it there. Given the `model` and
    `italian` (a Counter: Italian word, in lower case -> training pairs that hold it), so too where the word the model
    begins is one no training pair holds (`made_up_word`); given the `model`, so too where it begins a number the
    English does not say (`wrong_number`). Given `phrases` (English phrase -> the one Italian word its pairs give it),
    so too where the model ends a word that begins a phrase's Italian word (`split_phrase`). Given `english` (a
    Counter: English word, in lower case -> training pairs that hold it), a real word the model begins unsurely for a
    word it knows is left to it (`begun_unsurely`). Given `compounds` (English phrase -> the Italian words its pairs
    give it, one space apart), so too where the model has written the first of those words and goes another way
    (`compound_word`)."""

    def __init__(
        self, tokenizer, translated, model=None, italian=None, loans=None, phrases=None, english=None, compounds=None
    ):
        super().__init__(tokenizer)
        self.english = english  # None: every English word taken for one the model half knows
        self.loans = loans or {}  # English word -> the loanword Italian writes for it ("robots" -> "robot")
        self.translated = {**self.loans, **translated}
        self.phrases = phrases or {}  # "good morning" -> "buongiorno" (`modeldir.seen.phrase_translations`)
        # "machine learning" -> ("apprendimento", "automatico") (`modeldir.seen.compound_translations`)
        self.compounds = {phrase: tuple(italian.split()) for phrase, italian in (compounds or {}).items()}
        self.model = model  # followed ahead where a copy may begin (`word_ahead`); None: not followed
        self.italian = italian  # where the model writes a word it never holds, the word is made up; None: not asked
        self.starting = {self.text[i]: i for i in self.word_starts}  # "La" -> the id of "▁La"
        self.forget()

    def forget(self):
        """Start with nothing remembered: no Italian word begun, no source read, no look-ahead kept."""
        # {(source, prefix): (Italian word, the open word then)} where this rule began an Italian word in place of a
        # copy: decoding asks again at each of its letters, and holds it to its end. The oldest go first.
        self.begun = OrderedDict()
        self.source_copies = lru_cache(maxsize=4096)(self.copies)
        self.going_on = lru_cache(maxsize=4096)(self.tokens_spelling)
        self.ahead = lru_cache(maxsize=4096)(self.word_ahead)
        self.scores_after = lru_cache(maxsize=64)(self.next_scores)
        self.encoded = lru_cache(maxsize=64)(self.encode)  # a sentence's copies are looked ahead at several steps
        self.source_words = lru_cache(maxsize=64)(self.letter_words)
        self.source_numbers = lru_cache(maxsize=4096)(self.numbers)
        self.source_phrases = lru_cache(maxsize=4096)(self.phrase_words)
        self.source_compounds = lru_cache(maxsize=4096)(self.compound_words)
        self.rows_with_copies = RowsOfSource(self.with_copies)  # [(row, (its source, its words))]

    def for_model(self, model):
        """This rule for decoding with `model` (some heads switched off: `interpretability.ablation.ablated`): the same
        words, looked ahead at with `model`, and nothing remembered from decoding with another, so that what one model
        wrote never steers another's translation."""
        other = copy.copy(self)
        other.model = model
        other.forget()
        return other

    def copies(self, source):
        """((English word, Italian word), ...) of the token ids `source` (a tuple): its words that `translated`
        holds, a sentence's first word found as typed where it is held so ("Sicily"), else in lower case."""
        found = {}
        for typed, first in words_and_starts(self.spelt(source).strip()):
            for key in (typed, typed.lower()) if first else (typed,):
                if key in self.translated:
                    found.setdefault(typed.lower(), self.translated[key])
                    break
        return tuple(found.items())

    def numbers(self, source):
        """(said, allowed) of the token ids `source` (a tuple): the Italian words of the numbers its English says in
        words, and the words a translation may write for its numbers (`numbers.number_words`)."""
        return number_words(self.spelt(source))

    def phrase_words(self, source):
        """The Italian words of the phrases of the token ids `source` (a tuple) that `phrases` holds, longest first."""
        grams = sorted(phrase_grams(self.spelt(source)), key=len, reverse=True)
        return tuple(dict.fromkeys(self.phrases[gram] for gram in grams if gram in self.phrases))

    def compound_words(self, source):
        """The Italian words (tuples) of the phrases of the token ids `source` (a tuple) that `compounds` holds."""
        grams = phrase_grams(self.spelt(source))
        return tuple(dict.fromkeys(self.compounds[gram] for gram in sorted(grams) if gram in self.compounds))

    def written_words(self, prefix):
        """The words the token ids `prefix` have written, in lower case: an Italian word among them is not written
        again."""
        return {w.lower() for w in LETTERS.findall(self.spelt(prefix))}

    def with_copies(self, source):
        """(`source`, its `copies`) when it has any, says a number in words (`numbers`) or holds a phrase of `phrases`
        or `compounds`, else (): decoding's steps then need not read `src` again."""
        copies = self.source_copies(source)
        others = self.source_numbers(source)[0] or self.source_phrases(source) or self.source_compounds(source)
        return (source, copies) if copies or others else ()

    def tokens_spelling(self, word, written, starting):
        """The ids (a tensor) of the tokens that go on spelling `word` after the open word `written`: tokens that
        start a word when `starting` (`written` is then ""), else tokens inside one. None when `written` does not
        begin `word` or is all of it."""
        if not word.lower().startswith(written.lower()) or written.lower() == word.lower():
            return None
        rest = word[len(written) :]
        if starting:
            ids = [i for i in self.word_starts if self.text[i] and rest.startswith(self.text[i])]
        else:
            ids = [i for i, text in self.inside if rest.startswith(text)]
        return torch.tensor(ids, dtype=torch.long) if ids else None

    def begun_word(self, source, prefix, written):
        """The Italian word this rule began in place of a copy, when the open word `written` of `prefix` (a list of
        ids) is one it began after the English `source` (a tuple), with nothing else written since; else None."""
        for end in range(self.last_word_start(prefix), len(prefix)):  # begun at an earlier step, not this one
            begun = self.begun.get((source, tuple(prefix[:end])))
            if begun is not None:
                italian, then = begun  # its Italian word, and the open word when it began it
                since = "".join(self.text.get(i, "") for i in prefix[end:])
                if then + since == written:
                    return italian
        return None

    def copied(self, source, copies, prefix, written, best):
        """The Italian word of the English word of `copies` that the token `best` finishes copying after the open
        word `written` ("" when `best` starts a word) of the ids `prefix`. Where the copy begins the Italian word too
        ("▁protest" may begin "protestano"), only when the model would end the word there (`copies_ahead`: "pilot",
        not "pilota"). None when it copies none."""
        spelt = (written + self.text[best]).lower()
        for english, italian in copies:
            if english != spelt or english in self.loans:
                continue  # not this word, or a loanword: written only for a made-up word
            if not italian.lower().startswith(spelt):
                return italian
            if self.model is not None and self.copies_ahead(source, prefix, best, english):
                return italian
        return None

    def encode(self, source):
        """The model's encoder output (1, S, C) and source mask for the source ids `source` (a tuple)."""
        with torch.inference_mode():
            return self.model.encode(torch.tensor([source], device=next(self.model.parameters()).device))

    def word_ahead(self, source, prefix, best):
        """(word, weights): the word the model alone writes from the token `best` after the ids `prefix` (a tuple) for
        the source ids `source` (a tuple), its most likely tokens followed to the next word, and the cross-attention
        (S,) that wrote it from `best` on, summed over those steps, layers and heads."""
        memory, src_mask = self.encoded(source)
        cache = KVCache(self.model.cfg.n_decoder_layers)
        step = torch.tensor([prefix + (best,)], device=memory.device)  # (1, T): the prefix once, then a token a pass
        word, paid = self.open_word(prefix + (best,)), memory.new_zeros(memory.size(1), dtype=torch.float32)  # (S,)
        with torch.inference_mode(), recording_attention(self.model) as recorded:
            for passes in range(min(LONGEST, self.model.cfg.max_len - len(prefix))):
                last = self.model.decoder_output(step, memory, src_mask, cache)[:, -1]  # (1, C): the next token's
                rows = torch.stack(recorded.maps("cross"))[:, 0].sum(dim=(0, 1)).float()  # (t, S): layers, heads summed
                if passes == 0:
                    paid += rows[-2]  # the query that wrote `best`
                following = int(self.model.output_projection(last).argmax())
                if following in self.word_starts or not self.text[following][:1].isalpha():
                    break  # a word, a space or a mark follows (</s> and bytes are no letters either)
                paid += rows[-1]  # the query that wrote `following`
                word += self.text[following]
                step = step.new_tensor([[following]])  # (1, 1)
        return word, paid

    def copies_ahead(self, source, prefix, best, english):
        """Whether the model alone, writing the token `best` after the ids `prefix`, goes on to write the word
        `english` and end it (`word_ahead`)."""
        return self.ahead(source, tuple(prefix), best)[0].lower() == english

    def letter_words(self, source):
        """(words, owners): the words of the source ids `source` (a tuple) as the rule reads them, runs of letters
        in lower case ("czech" and "indian" in "Czech-Indian"), and for each id the index of the word it writes
        into (-1: none, as for "-" or </s>)."""
        text, spans = "", []
        for i in source:
            piece = "" if i in self.special else self.text.get(i, "")
            text += " " if i in self.word_starts and text else ""
            spans.append((len(text), len(text) + len(piece)))
            text += piece
        found = list(LETTERS.finditer(text))
        owners = [next((k for k, m in enumerate(found) if m.start() < b and a < m.end()), -1) for a, b in spans]
        return [m.group().lower() for m in found], owners

    def made_up_word(self, source, copies, prefix, best, scores):
        """The Italian word of `copies` to write in place of the word the model begins with the token `best` after
        the ids `prefix`, where that word is made up: no Italian side of its training pairs holds it, nor does the
        English ("fioritorio"). It is the Italian word of the English word the model's cross-attention weighed most
        while writing it (`word_ahead`: "flour"), when the pairs translate that word ("farina"), its Italian word is
        not written yet, and the made-up word is not it inflected (`inflected`); a made-up future of the pairs' verb
        is written in its conjugation (`conjugated`: "riaprirà" for "riaprerà"). A word begun with the lone "▁" is
        looked ahead at as any other ("▁ ere di to": "eredito", for "heritage"); so is a word the pairs hold that
        the model begins unsurely (`begun_unsurely`: "mal" for "heads"). Not looked ahead where the model (its
        next-token `scores`, (V,)) begins surely with a word the pairs hold often ("▁della"); after an elided article
        it is, for there a token's letters only begin a word ("l'" + "e" of "ectivenessa"). None otherwise."""
        letters = self.text[best]  # "" for the lone "▁": a word no token that starts one begins ("▁ ere di to")
        if self.italian is None or self.model is None or (letters and not letters.isalpha()):
            return None
        unsaid = self.unsaid(copies, prefix)
        if not unsaid:
            return None
        probs = torch.softmax(scores.float(), -1)  # (V,): read by the check below and by `begun_unsurely`
        whole = best in self.word_starts  # after an elided article a token's letters only begin a word
        if whole and self.italian[self.text[best].lower()] >= OFTEN and probs[best] >= SURE:
            return None
        word, paid = self.ahead(source, tuple(prefix), best)
        words, owners = self.source_words(source)
        if len(word) < SHORTEST or not word.isalpha() or word.lower() in words:
            return None
        weighed = [0.0] * len(words)
        for owner, weight in zip(owners, paid.tolist()):
            if owner >= 0:
                weighed[owner] += weight
        english = words[max(range(len(words)), key=weighed.__getitem__)] if words else None
        italian = unsaid.get(english)
        if italian is not None and not self.italian[word.lower()] and (future := conjugated(word, italian)):
            return future  # the model's tense, in the vowel of the pairs' verb: "riaprirà", not "riaprerà"
        if italian is None or inflected(word, italian):
            return None
        if self.italian[word.lower()] and not self.begun_unsurely(word, english, italian, best, probs):
            return None
        return italian

    def unsaid(self, copies, prefix):
        """{English word: Italian word} of `copies` whose Italian word the ids `prefix` have not written yet."""
        said = self.written_words(prefix)
        return {english: italian for english, italian in copies if italian.lower() not in said}

    def next_scores(self, source, prefix):
        """The model's next-token scores (V,) after the ids `prefix` (a tuple) for the source ids `source` (a tuple)."""
        memory, src_mask = self.encoded(source)
        with torch.inference_mode():
            return self.model.decode(torch.tensor([prefix], device=memory.device), memory, src_mask)[0, -1]

    def article_in_full(self, source, copies, prefix, best):
        """The id of the token that writes in full ("▁La") the article or preposition that the token `best`, starting
        a word after the ids `prefix`, begins to elide ("▁L" + "'"), where the model alone would then make up the word
        after it and the Italian word written in its place begins with a consonant (`made_up_word`: "La
        disoccupazione", not "L'Unemploy"; "l'" cannot be followed by it): the model writes that word after the full
        article itself, or the rule does. None otherwise."""
        if self.italian is None or self.model is None or self.text[best].lower() not in ELIDING:
            return None
        if not self.unsaid(copies, prefix):
            return None  # no Italian word to write: the model is not followed
        after = (*prefix, best, int(self.scores_after(source, (*prefix, best)).argmax()))
        if not self.after_elision(after):
            return None  # the model writes the article whole ("▁L" + "a"), or no article
        scores = self.scores_after(source, after)
        italian = self.made_up_word(source, copies, after, int(scores.argmax()), scores)
        if italian is None or italian[0].lower() in ELIDES_BEFORE:
            return None  # none made up, or the elided article goes before it ("l'efficacia")
        article = full_article(self.text[best], italian)
        return self.starting.get(article)

    def begun_unsurely(self, word, english, italian, best, probs):
        """Whether the word `word`, which the pairs hold, is one the model begins unsurely with the token `best` (its
        next-token probabilities `probs`, (V,)) and would as soon begin as `italian`, the pairs' word for the `english`
        it weighed most while writing it: see PLAUSIBLE ("mal" for "heads", where the pairs write "teste"). Given the
        `english` counts, never for an English word the model knows (KNOWN): "Tieni" for "keep" is its own."""
        begins = self.going_on(italian, "", True)  # the tokens that begin the pairs' word
        return (
            bool(probs[best] < SURE)
            and (self.english is None or self.english[english] < KNOWN)
            and begins is not None
            and bool(probs[begins].max() >= PLAUSIBLE)
            and self.italian[word.lower()] < COMMON
            and english not in self.loans
            and not italian.lower().endswith(VERB_ENDINGS)
            and len(os.path.commonprefix([word.lower(), italian.lower()])) < ALIKE
        )

    def wrong_number(self, source, prefix, best, first):
        """The Italian number word to write in place of the one the model begins with the token `best` after the ids
        `prefix`, where that word (`word_ahead`) is a number the English `source` says in no way ("venti" for
        "twenty-eight"): the first of the numbers it says in words (`numbers.number_words`) not written yet,
        capitalised where it is the translation's `first` word. None otherwise."""
        said, allowed = self.source_numbers(source)
        begun = plain(self.open_word(list(prefix) + [best]))
        if self.model is None or begun not in NUMBER_BEGINNINGS:
            return None
        written = {plain(w) for w in LETTERS.findall(self.spelt(prefix))}
        unsaid = next((number for number in said if plain(number) not in written), None)
        if unsaid is None:
            return None  # every number of the English is written: no word is looked ahead at
        word = plain(self.ahead(source, tuple(prefix), best)[0])
        if word not in ITALIAN_NUMBERS or word in allowed:
            return None
        return capitalise(unsaid) if first else unsaid

    def split_phrase(self, source, prefix, written, best, scores):
        """The Italian word of a phrase of the English `source` (`phrase_words`: "buongiorno" for "Good morning") that
        the open word `written` of the ids `prefix` begins and the token `best` ends, a word start or a mark ("Buon"
        + "▁mattina"), where the model (its next-token `scores`, (V,)) gives the tokens that go on spelling it
        SPLIT_PLAUSIBLE or more and the prefix does not hold it yet. None otherwise: a model that inflects the word
        ("Buon" + "a") or writes it whole is free."""
        phrases = self.source_phrases(source)
        if not phrases or not written or (best not in self.word_starts and self.text[best][:1].isalpha()):
            return None
        begun = [(it, going_on) for it in phrases if (going_on := self.going_on(it, written, False)) is not None]
        if not begun:
            return None  # `written` begins no phrase's word: the prefix and the softmax are not read at this step
        said, probs = self.written_words(prefix), torch.softmax(scores.float(), -1)  # probs (V,)
        for italian, going_on in begun:
            if italian not in said and probs[going_on].sum() >= SPLIT_PLAUSIBLE:
                return written + italian[len(written) :]
        return None

    def compound_word(self, source, prefix, best, scores):
        """The next of the Italian words of a phrase of the English `source` (`compound_words`: "apprendimento
        automatico" for "machine learning") whose first words the ids `prefix` end in ("apprendimento"), where the
        token `best` begins another word or writes a mark ("▁delle") and the model (its next-token `scores`, (V,)) gives
        the tokens that begin the phrase's next word COMPOUND_PLAUSIBLE or more, the phrase not written whole yet. None
        otherwise: a model that writes the phrase, or goes on another way with it unlikely, is free."""
        compounds = self.source_compounds(source)
        if not compounds or (best not in self.word_starts and self.text[best][:1].isalpha()):
            return None
        written = [w.lower() for w in LETTERS.findall(self.spelt(prefix))]
        said, probs = " ".join(written), None
        for italian in compounds:
            begun = next((k for k in range(len(italian) - 1, 0, -1) if tuple(written[-k:]) == italian[:k]), None)
            if begun is None or f" {' '.join(italian)} " in f" {said} ":
                continue
            following = self.going_on(italian[begun], "", True)  # the tokens that begin its next word
            if following is None or (best in self.word_starts and italian[begun].startswith(self.text[best].lower())):
                continue  # none begins it, or the model begins it itself, in its own case ("▁Paese")
            probs = torch.softmax(scores.float(), -1) if probs is None else probs  # (V,)
            if probs[following].sum() >= COMPOUND_PLAUSIBLE:
                return italian[begun]
        return None

    def after_elision(self, prefix):
        """Whether the token ids `prefix` end in an elided article or preposition ("L'", "dell'"): the next letters
        begin a word, though no token that starts one writes them ("▁dell ' Ir terior")."""
        return ELIDED.search("".join(self.text.get(i, "") for i in prefix[self.last_word_start(prefix) :])) is not None

    def copy_leaving(self, source, copies, prefix, written, best):
        """The Italian word of the English word of `copies` that the token `best`, after the open word `written` of
        the ids `prefix`, goes on copying where its letters leave the Italian word's, capitals counted ("" + "E" for
        "Easter" leaves "Pasqua", "" + "T" for "Turkish" leaves "turco", "A" + "ug" for "August" "agosto"), when the
        model would copy it whole (`copies_ahead`): the last token at which the Italian word can still be written.
        None when it leaves none, or would not copy it."""
        if self.model is None:
            return None
        spelt = written + self.text[best]
        for english, italian in copies:
            leaves = english.startswith(spelt.lower()) and not italian.startswith(spelt) and english not in self.loans
            if leaves and italian.lower().startswith(written.lower()):
                if self.copies_ahead(source, prefix, best, english):
                    return italian
        return None

    def __call__(self, logits, ys, src):
        for row, (source, copies) in self.rows_with_copies(src):
            prefix = ys[row].tolist()
            written = self.open_word(prefix)
            italian = self.begun_word(source, prefix, written)
            ended = italian is not None and written.lower() == italian.lower()
            if ended:
                hold(logits, row, False, self.letters)  # the word is written whole: it ends there
            begins, starting = italian is None or ended, False
            if begins:
                best = int(logits[row].argmax())
                italian = None if ended else self.split_phrase(source, prefix, written, best, logits[row])
            if begins and italian is None:  # a phrase's next word, after one the model or this rule wrote
                italian = self.compound_word(source, prefix, best, logits[row])
                if italian is not None:
                    starting, written = True, ""  # the phrase's next word starts a word
            if ended and italian is None:
                continue
            if begins and italian is None:
                starting = best in self.word_starts
                written = "" if starting else written
                first = starting and not any(LETTERS.search(self.text[i]) for i in prefix if i not in self.special)
                if first:
                    copies = tuple((en, capitalise(it)) for en, it in copies)  # the translation's first word
                italian = self.copied(source, copies, prefix, written, best)
                if italian is None:
                    italian = self.copy_leaving(source, copies, prefix, written, best)
                if italian is None and starting:
                    article = self.article_in_full(source, copies, tuple(prefix), best)
                    if article is not None:
                        hold(logits, row, True, torch.tensor([article]))
                        continue
                    italian = self.made_up_word(source, copies, prefix, best, logits[row])
                    italian = italian or self.wrong_number(source, prefix, best, first)
                elif italian is None and not written and self.after_elision(prefix):
                    italian = self.made_up_word(source, copies, prefix, best, logits[row])
                    italian = italian if italian and italian[0].lower() in ELIDES_BEFORE else None
                if italian is None:
                    continue
            held = self.going_on(italian, written, starting)
            if held is None or not torch.isfinite(logits[row, held]).any():
                continue  # nothing writes it from here (another rule forbids it): the model goes on alone
            if begins:
                self.begun[(source, tuple(prefix))] = (italian, written)
                while len(self.begun) > MAX_BEGUN:
                    self.begun.popitem(last=False)  # one call: safe beside another thread's decoding
            hold(logits, row, True, held)
        return logits
